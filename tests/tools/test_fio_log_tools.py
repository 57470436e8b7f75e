"""fio's own log and histogram tools on what fio writes for mdfio's jobs
(docs/reports.md, fio's own tools): fio_jsonplus_clat2csv as Debian's fio
package installs it, and fio-histo-log-pctiles.py, fiologparser_hist.py
and fiologparser.py from the fio source trees here: the one the engines
are built against (MDFIO_FIO_SRC), Debian's (.deps/fio) and the newest
release's (.deps/fio-newest, ./setup --newest-fio), each distinct copy of
a tool once. One real run of every phase writes json+, fio's clat log and
its histogram log; each tool's output is checked against the engine's own
samples: every row of the clat log, which the first test ties to the json+
distributions."""
import math
import os
import re
import subprocess
from collections import Counter
from pathlib import Path

import pytest

import mdfio.fio
from conftest import SOURCE_ROOT, fio_env, job

FIO_SRC = Path(os.environ.get("MDFIO_FIO_SRC", SOURCE_ROOT / ".deps" / "fio"))
TREES = [t for t in (FIO_SRC, SOURCE_ROOT / ".deps" / "fio", SOURCE_ROOT / ".deps" / "fio-newest")
         if (t / "tools").is_dir()]
# fio's tools run with Debian's Python, where python3-pandas is
PYTHON = "/usr/bin/python3"
DEBIAN_CLAT2CSV = Path("/usr/bin/fio_jsonplus_clat2csv")
NUMJOBS = 2
OPTS = dict(datasets=2, precreate_per_set=300, steps_per_set=150, bs=100)
PHASES = ("precreate", "benchmark", "cleanup")
# fio's data directions: read, write, trim; mdfio's read, create, delete
SLOTS = ("read", "write", "trim")
OPS = {"precreate": {1: "create"}, "benchmark": {0: "read", 1: "create", 2: "delete"},
       "cleanup": {2: "delete"}}
PCTS = (0.0, 25.0, 50.0, 75.0, 90.0, 99.0, 100.0)
# docs/reports.md's command for one operation's records, as direction 0
SELECT = "awk -F', ' -v OFS=', ' -v d={d} '$2 == d {{ $2 = 0; print }}'"


# fio's latency histogram (its stat.h): 64 buckets per power of two, one
# nanosecond wide below 128 ns
def bucket(ns):
    if ns < 128:
        return ns
    shift = ns.bit_length() - 7
    return ((shift + 1) << 6) + ((ns >> shift) & 63)


def edges(idx):
    """[lower, upper) of a bucket, in ns."""
    if idx < 128:
        return idx, idx + 1
    shift = (idx >> 6) - 1
    lo = (1 << (shift + 6)) + ((idx & 63) << shift)
    return lo, lo + (1 << shift)


def midpoint(idx):
    """The value fio reports for a bucket (json+ bins, percentiles)."""
    lo, hi = edges(idx)
    return lo if idx < 128 else (lo + hi) // 2


def tree_version(tree):
    text = (tree / "FIO-VERSION-GEN").read_text()
    return re.search(r"^DEF_VER=(\S+)", text, re.M).group(1)


def tools(name):
    """pytest params of each distinct copy of tools/<name> in the trees,
    named by the fio release: (release, path)."""
    seen, out = set(), []
    for tree in TREES:
        path = tree / "tools" / name
        if path.is_file() and path.read_bytes() not in seen:
            seen.add(path.read_bytes())
            out.append(pytest.param((tree_version(tree), path), id=tree_version(tree)))
    assert out, f"tools/{name} is in none of {TREES}"
    return out


PCTILES = tools("hist/fio-histo-log-pctiles.py")


def rank(n, p):
    """The 0-based indices of the sorted samples a percentile p of n lies
    at: the sample whose count first exceeds p %, and the one before where
    p % of n is a whole number."""
    i = min(n - 1, math.floor(p * n / 100))
    return (i - 1 if i and p * n % 100 == 0 else i), i


def run_tool(*args, check=True):
    proc = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300)
    if check:
        assert proc.returncode == 0, f"{args}: {proc.stdout}{proc.stderr}"
    return proc


def hist_records(path):
    """[(time ms, direction, [bucket counts])] of a histogram log."""
    out = []
    for line in path.read_text().splitlines():
        v = [int(x) for x in line.split(",")]
        out.append((v[0], v[1], v[3:]))
    return out


class Run:
    def __init__(self, d):
        self.dir = d
        root = d / "root"
        root.mkdir()
        # 1 ms windows: a phase of a few ms still writes histogram lines,
        # and fio's lines after a pause (same time, few samples) turn up
        text = job(list(PHASES), root, numjobs=NUMJOBS, write_lat_log=d / "lat", write_hist_log=d / "hist",
                   log_hist_msec=1, **OPTS)
        self.fio = mdfio.fio.run(d / "run.fio", text, output_format="json+", env=fio_env(), timeout=600)
        assert self.fio.rc == 0, self.fio.stderr
        self.json = self.fio.json

    def threads(self, phase):
        """fio's thread numbers of a phase's ranks, which name its logs."""
        k = PHASES.index(phase)
        return range(k * NUMJOBS + 1, (k + 1) * NUMJOBS + 1)

    def clat_log(self, n):
        return self.dir / f"lat_clat.{n}.log"

    def hist_log(self, n):
        return self.dir / f"hist_clat_hist.{n}.log"

    def samples(self, n):
        """{direction: [ns, in the order fio logged them]} of one job's clat log."""
        out = {}
        for line in self.clat_log(n).read_text().splitlines():
            f = [int(x) for x in line.split(",")]
            out.setdefault(f[2], []).append(f[1])
        return out

    def jobs(self, phase):
        return self.fio.jobs(mdfio.fio.jobname(phase, PHASES.index(phase)))

    def logged(self, n, d, drop_repeats=False):
        """The samples of direction d that job n's histogram log holds: the
        first ones of its clat log, as many as its records count, each
        record checked to hold exactly its share of them. With drop_repeats,
        without those of a record whose time is its predecessor's, which
        fio-histo-log-pctiles.py skips."""
        samples = self.samples(n).get(d, [])
        out, pos, last = [], 0, None
        for t, rd, counts in hist_records(self.hist_log(n)):
            if rd != d:
                continue
            share = samples[pos:pos + sum(counts)]
            assert len(share) == sum(counts), f"job {n}: a record holds more samples than the clat log"
            got = Counter(bucket(ns) for ns in share)
            assert {i: c for i, c in enumerate(counts) if c} == got, f"job {n}: record at {t} ms"
            pos += len(share)
            if not (drop_repeats and t == last):
                out += share
            last = t
        return sorted(out)


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    return Run(tmp_path_factory.mktemp("fio-tools"))


def test_fios_logs_and_json_hold_the_engines_samples(run):
    """Every create, read and delete is a row of fio's clat log, in its
    direction; the rows are exactly the json+ distributions of the slots
    (N, min, max, every bin), and stat has no row. The slat log holds each
    job's phase time, the lat log nothing."""
    for phase in PHASES:
        slot = SLOTS[max(OPS[phase])] if phase != "benchmark" else "read"
        times = []
        for n in run.threads(phase):
            assert run.dir.joinpath(f"lat_lat.{n}.log").read_text() == ""
            lines = run.dir.joinpath(f"lat_slat.{n}.log").read_text().splitlines()
            assert len(lines) == 1 and int(lines[0].split(",")[2]) == SLOTS.index(slot)
            times.append(int(lines[0].split(",")[1]))
        assert sorted(times) == sorted(j[slot]["slat_ns"]["max"] for j in run.jobs(phase))
        rows = {}
        for n in run.threads(phase):
            for d, values in run.samples(n).items():
                rows.setdefault(d, []).extend(values)
        assert set(rows) == set(OPS[phase]), phase
        for d, values in rows.items():
            stats = [j[SLOTS[d]]["clat_ns"] for j in run.jobs(phase)]
            assert len(values) == sum(s["N"] for s in stats) > 0
            assert min(values) == min(s["min"] for s in stats)
            assert max(values) == max(s["max"] for s in stats)
            bins = Counter()
            for s in stats:
                bins.update({int(k): v for k, v in s["bins"].items()})
            assert Counter(midpoint(bucket(ns)) for ns in values) == bins, (phase, d)


def clat2csv_tools():
    """Debian's, and any copy in the trees that differs from it."""
    out = [pytest.param(DEBIAN_CLAT2CSV, id="debian")]
    for p in tools("fio_jsonplus_clat2csv"):
        version, path = p.values[0]
        if path.read_bytes() != DEBIAN_CLAT2CSV.read_bytes():
            out.append(pytest.param(path, id=version))
    return out


@pytest.mark.parametrize("tool", clat2csv_tools())
def test_fio_jsonplus_clat2csv_gives_reads_creates_and_deletes(run, tool, tmp_path):
    """One CSV per job whose read, write and trim columns are the job's
    reads, creates and deletes, exactly the json+ bins (the tool's own
    --validate agrees), from which fio's percentiles follow: the first
    bucket whose cumulative count reaches p % of N."""
    out = tmp_path / "clat.csv"
    proc = run_tool(PYTHON, tool, run.dir / "run.json", out)
    jobs = run.json["jobs"]
    assert proc.stdout.count(" generated") == len(jobs) == NUMJOBS * len(PHASES)
    proc = run_tool(PYTHON, tool, run.dir / "run.json", out, "--validate")
    assert proc.stdout.count(" validated") == len(jobs)
    for k, j in enumerate(jobs):
        lines = (tmp_path / f"clat_job{k}.csv").read_text().splitlines()
        header = [c.strip() for c in lines[0].split(",") if c.strip()]
        # stat, fio's sync slot, is not among them
        assert {c.split("_")[0] for c in header[1:]} == set(SLOTS)
        rows = [[c.strip() for c in line.split(",")] for line in lines[1:] if line.strip()]
        for slot in SLOTS:
            stats = j[slot]["clat_ns"]
            count, cumulative = header.index(f"{slot}_clat_ns_count"), header.index(f"{slot}_clat_ns_cumulative")
            mine = [(int(r[0]), int(r[count]), int(r[cumulative])) for r in rows if r[count]]
            assert sum(c for _, c, _ in mine) == stats["N"]
            if not stats["N"]:
                continue
            assert {ns: c for ns, c, _ in mine} == {int(k): v for k, v in stats["bins"].items()}
            for p, value in stats["percentile"].items():
                need = float(p) * stats["N"] / 100
                first = next(ns for ns, _, cum in mine if cum >= need - 1e-9)
                after = next(ns for ns, _, cum in mine if cum >= need + 1e-9 or cum == stats["N"])
                assert value in (first, after), (j["jobname"], slot, p)


def pctiles(tool, files, groups):
    proc = run_tool(PYTHON, tool, "--time-quantum", "3600",
                    "--bucket-groups", groups, "--percentiles", *PCTS, "--", *files)
    lines = proc.stdout.splitlines()
    assert lines[-2].startswith("msec-since-start, samples, min, ")
    f = [x.strip() for x in lines[-1].split(",")]
    # one interval of the whole run: its samples and each percentile, in us
    return int(f[1]), [float(x) * 1000 for x in f[2:]]


def check_pctiles(samples, count, values):
    assert count == len(samples)
    for p, v in zip(PCTS, values):
        a, b = rank(len(samples), p)
        lo, hi = edges(bucket(samples[a]))[0], edges(bucket(samples[b]))[1]
        # the tool interpolates within the bucket that holds the percentile
        assert lo - 1e-6 <= v <= hi + 1e-6, (p, v, lo, hi)


def groups(path):
    """fio's histogram groups, from the width of a record."""
    return (len(path.read_text().split("\n", 1)[0].split(",")) - 3) // 64


@pytest.mark.parametrize("tool", PCTILES)
def test_fio_histo_log_pctiles_reads_a_precreates_log(run, tool):
    """A precreate's histogram log, creates only (direction 1), as it is:
    the creates' percentiles over both ranks."""
    files = [run.hist_log(n) for n in run.threads("precreate")]
    count, values = pctiles(tool[1], files, groups(files[0]))
    check_pctiles(sorted(sum((run.logged(n, 1, drop_repeats=True) for n in run.threads("precreate")), [])),
                  count, values)


@pytest.mark.parametrize("tool", PCTILES)
@pytest.mark.parametrize("phase", ["benchmark", "cleanup"])
def test_fio_histo_log_pctiles_refuses_deletes(run, phase, tool):
    """Deletes are fio's trims, direction 2, which the tool does not know:
    it stops at the first such record (the same for any fio job's trims)."""
    n = run.threads(phase)[0]
    first = next(k for k, (_, d, _) in enumerate(hist_records(run.hist_log(n))) if d == 2)
    proc = run_tool(PYTHON, tool[1], run.hist_log(n), check=False)
    assert proc.returncode == 1
    # the tool numbers the record one past its line
    assert f"ERROR: invalid I/O direction in histogram record {first + 2} file" in proc.stdout


def test_the_docs_give_the_command_tested():
    assert SELECT.format(d=2) in (SOURCE_ROOT / "docs" / "reports.md").read_text()


@pytest.mark.parametrize("tool", PCTILES)
@pytest.mark.parametrize("phase,d", [("benchmark", 0), ("benchmark", 1), ("benchmark", 2), ("cleanup", 2)])
def test_fio_histo_log_pctiles_on_one_operation_at_a_time(run, phase, d, tmp_path, tool):
    """docs/reports.md's awk command keeps one direction's records as
    direction 0; the tool then gives that operation's percentiles."""
    command = SELECT.format(d=d)
    files = []
    for n in run.threads(phase):
        files.append(tmp_path / f"{OPS[phase][d]}.{n}.log")
        subprocess.run(f"{command} {run.hist_log(n)} > {files[-1]}", shell=True, check=True)
    count, values = pctiles(tool[1], files, groups(files[0]))
    check_pctiles(sorted(sum((run.logged(n, d, drop_repeats=True) for n in run.threads(phase)), [])),
                  count, values)


@pytest.mark.parametrize("tool", tools("hist/fiologparser_hist.py"))
@pytest.mark.parametrize("phase", ["benchmark", "cleanup"])
def test_fiologparser_hist_gives_each_operation(run, phase, tool):
    """--directions rwt: a row per operation (r reads, w creates, t deletes)
    of every sample the logs hold; its figures stand for a bucket by its
    upper edge, so each lies within a bucket above the samples'."""
    if subprocess.run([PYTHON, "-c", "import pandas"], capture_output=True).returncode:
        pytest.fail("fiologparser_hist.py needs pandas: install python3-pandas (./setup does)")
    files = [run.hist_log(n) for n in run.threads(phase)]
    proc = run_tool(PYTHON, tool[1], "--directions", "rwt", "--noweight",
                    "-i", "3600000", "--group_nr", groups(files[0]), "--percentiles", "25:75:90:99", *files)
    lines = proc.stdout.splitlines()
    assert lines[0] == "end-time, dir, samples, min, avg, median, 25%, 75%, 90%, 99%, max"
    rows = {f[1]: f for f in ([x.strip() for x in line.split(",")] for line in lines[1:])}
    assert set(rows) == {"rwt"[d] for d in OPS[phase]}
    for d in OPS[phase]:
        samples = sorted(sum((run.logged(n, d) for n in run.threads(phase)), []))
        f = rows["rwt"[d]]
        assert int(f[2]) == len(samples)
        for p, v in zip((0.0, 50.0, 25.0, 75.0, 90.0, 99.0, 100.0), [f[3]] + f[5:]):
            a, b = rank(len(samples), p)
            lo = edges(bucket(samples[max(a - 1, 0)]))[0]
            top = edges(bucket(samples[min(b + 1, len(samples) - 1)]))
            assert lo <= float(v) <= top[1] + (top[1] - top[0]), (phase, d, p, v)


def plain_fio_clat_log(tmp_path):
    """fio's clat log of a job without mdfio, over some 50 ms."""
    proc = subprocess.run(["fio", "--name=plain", "--ioengine=null", "--rw=read", "--size=400k", "--bs=4k",
                           "--rate_iops=2000", f"--write_lat_log={tmp_path / 'plain'}", "--output-format=terse"],
                          capture_output=True, text=True, cwd=tmp_path, env=fio_env())
    assert proc.returncode == 0, proc.stderr
    return tmp_path / "plain_clat.1.log"


@pytest.mark.parametrize("tool", tools("fiologparser.py"))
def test_fiologparser(run, tmp_path, tool):
    """fio 3.33's fiologparser.py takes 4 columns of a row, and fio 3.33
    writes 5: it fails on every log, fio's own as well as mdfio's. Later
    ones read a row's time and value: their sum over one interval is every
    value weighted by the time since the row before (a bandwidth log's
    model), whatever the row's direction. Their -A fails under Python 3 on
    any log."""
    version, tool = tool
    mine = run.clat_log(run.threads("benchmark")[0])
    plain = plain_fio_clat_log(tmp_path)
    if version == "fio-3.33":
        for log in (mine, plain):
            proc = run_tool(PYTHON, tool, log, check=False)
            assert proc.returncode == 1
            assert "ValueError: too many values to unpack (expected 4)" in proc.stderr
        return
    rows = [[int(x) for x in line.split(",")[:2]] for line in mine.read_text().splitlines()]
    end = max(t for t, _ in rows)
    weighted, before = 0, 0
    for t, v in rows:
        weighted += v * (t - before)
        before = t
    proc = run_tool(PYTHON, tool, "-s", "-i", end + 1, mine)
    t, total = proc.stdout.split(", ")
    assert int(t) == end
    assert float(total) == pytest.approx(weighted / end, abs=0.001)
    for log in (mine, plain):
        proc = run_tool(PYTHON, tool, "-A", log, check=False)
        assert proc.returncode == 1
        assert "TypeError: list indices must be integers or slices, not float" in proc.stderr
