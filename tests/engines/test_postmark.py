"""mdfio-postmark, PostMark's workload in fio (docs/postmark.md): for the same
parameters and seed, the same files created, read, appended and deleted, in
the same order, as lib/postmark's sequence and as Debian's postmark (both
under strace); the counts of fio's JSON are those of mdfio-report's
PostMark report and of postmark's; block sizes honoured in the system
calls; nothing it did not make touched; bad options refused in one line."""
import re
import subprocess
import sys

import pytest

from conftest import SOURCE_ROOT, engine_path, run_fio
from test_postmark_sequence import report_counts, sequence

sys.path.insert(0, str(SOURCE_ROOT / "tools"))
from mdfio import fiojson  # noqa: E402
from mdfio import postmark as pm  # noqa: E402

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
# postmark's commands, and the same as mdfio-postmark's options
COMMANDS = ["set number 40", "set transactions 300", "set subdirectories 3", "set size 100 3000",
            "set read 700", "set write 300", "set buffering false", "set seed 1234"]
OPTIONS = dict(pm_files=40, pm_transactions=300, pm_subdirectories=3, pm_size_low=100, pm_size_high=3000,
               pm_read_block=700, pm_write_block=300, pm_buffering="false", pm_seed=1234)
PARAMS = dict(number=40, transactions=300, subdirectories=3, size_low=100, size_high=3000,
              read_block=700, write_block=300, buffered=0, seed=1234)


def job(root, phases=("pool", "transactions", "delete"), **opts):
    lines = ["[global]", f"ioengine=external:{engine_path('postmark')}", f"directory={root}"]
    lines += [f"{k}={v}" for k, v in {**OPTIONS, **opts}.items()]
    for phase in phases:
        lines += ["", f"[{phase}]", "stonewall", f"phase={phase}"]
    return "\n".join(lines) + "\n"


# an openat or unlinkat of strace -y below the root: (dir, name, flags)
CALL = re.compile(r'^\d+\s+(openat|unlinkat)\((\d+)<([^>]*)>, "([^"]*)"(?:, ([A-Z_|]+))?')


def traced_ops(trace, root):
    """(kind, name below root) of the engine's file operations, in order."""
    ops = []
    for line in trace.read_text().splitlines():
        m = CALL.match(line)
        if not m or not m.group(3).startswith(str(root)) or m.group(4).startswith(".mdfio-postmark"):
            continue
        flags = m.group(5) or ""
        if "O_DIRECTORY" in flags or "AT_REMOVEDIR" in flags:
            continue
        below = m.group(3)[len(str(root)):].strip("/")
        name = f"{below}/{m.group(4)}" if below else m.group(4)
        kind = ("delete" if m.group(1) == "unlinkat" else "append" if "O_APPEND" in flags
                else "create" if "O_CREAT" in flags else "read")
        ops.append((kind, name))
    return ops


def test_same_files_as_postmark_and_the_sequence(tmp_path, postmark):
    deb = tmp_path / "deb"
    deb.mkdir()
    stdout, made = postmark(COMMANDS, deb)
    root = tmp_path / "root"
    root.mkdir()
    trace = tmp_path / "mdfio.strace"
    run = run_fio(job(root), tmp_path, check=True, timeout=120,
                  prefix=["strace", "-f", "-qq", "-y", "-o", trace, "-e", "trace=openat,unlinkat,read,write"])
    ops, counts, _, _ = sequence(**PARAMS)
    assert traced_ops(trace, root) == made == [(kind, name) for _, kind, name, *_ in ops]
    assert not any(root.iterdir())
    # read and write calls of at most the block sizes (buffering=false)
    sizes = {"read": set(), "write": set()}
    for line in trace.read_text().splitlines():
        m = re.match(rf'^\d+\s+(read|write)\(\d+<{re.escape(str(root))}/s\d/\d+>, .*\) = (\d+)$', line)
        if m:
            sizes[m.group(1)].add(int(m.group(2)))
    assert max(sizes["read"]) == 700 and max(sizes["write"]) == 300
    # the JSON's counts are postmark's report's and mdfio-report's
    phases = fiojson.postmark_phases(run.json, "run")
    assert [p.phase for p in phases] == ["pool", "transactions", "delete"]
    n = {op: sum(p.latency[op].n for p in phases) for op in fiojson.POSTMARK_OPS}
    want = report_counts(stdout)
    assert (n["create"], n["read"], n["append"], n["delete"]) == \
        (want["created"], want["read"], want["appended"], want["deleted"])
    assert phases[2].latency["delete"].n == want["deleted_alone"] == counts["deleted_alone"]
    assert all(p.seconds and not any(p.errors.values()) for p in phases)
    out = subprocess.run([sys.executable, REPORT, tmp_path / "job-0.json"], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert report_counts(out.stdout) == want
    # the Data lines' amounts are postmark's to the digit
    assert [line.split(" (")[0] for line in out.stdout.split("Data:")[1].splitlines()[1:3]] == \
        [line.split(" (")[0] for line in stdout.split("Data:")[1].splitlines()[1:3]]
    assert "Exact (mdfio):" in out.stdout and re.search(r"\tappend: \d+ 0 ", out.stdout)
    bad = subprocess.run([sys.executable, REPORT, "--json", tmp_path / "job-0.json"], capture_output=True,
                         text=True, timeout=60)
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1 and "--format json" in bad.stderr


def test_phases_in_separate_runs_buffered(tmp_path):
    """Each phase in a fio run of its own replays the earlier ones; the
    buffered mode (C stdio) makes the same files."""
    root = tmp_path / "root"
    root.mkdir()
    counts = {}
    for phase in ("pool", "transactions", "delete"):
        run = run_fio(job(root, (phase,), pm_buffering="true"), tmp_path, check=True, timeout=120)
        p, = fiojson.postmark_phases(run.json, phase)
        counts[phase] = {op: p.latency[op].n for op in fiojson.POSTMARK_OPS}
    _, want, _, _ = sequence(**dict(PARAMS, buffered=1))
    assert counts["pool"]["create"] == 40
    assert sum(c["create"] for c in counts.values()) == want["created"]
    assert counts["transactions"]["append"] == want["appended"]
    assert counts["delete"]["delete"] == want["deleted_alone"]
    assert not any(root.iterdir())


def test_foreign_files_kept(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    (root / "mine").write_text("not postmark's")
    run = run_fio(job(root), tmp_path, check=False, timeout=120)
    assert any("not empty (it holds mine)" in line for line in run.mdfio_lines()), run.stderr
    assert sorted(p.name for p in root.iterdir()) == ["mine"]
    # a later phase runs only where its pool ran
    other = tmp_path / "other"
    other.mkdir()
    run = run_fio(job(other, ("transactions",)), tmp_path, check=False, timeout=120)
    assert any("run phase=pool there first" in line for line in run.mdfio_lines()), run.stderr
    # a file put among postmark's between the phases is left, and its
    # subdirectory with it; one of postmark's names taken fails its create
    pmdir = root.parent / "pm"
    pmdir.mkdir()
    run_fio(job(pmdir, ("pool",)), tmp_path, check=True, timeout=120)
    (pmdir / "s1" / "foreign").write_text("keep me")
    run = run_fio(job(pmdir, ("transactions", "delete")), tmp_path, check=True, timeout=120)
    assert (pmdir / "s1" / "foreign").read_text() == "keep me"
    assert sorted(p.name for p in pmdir.iterdir()) == ["s1"]
    assert any("s1: left" in line for line in run.mdfio_lines())


def test_sync_depth_figures_as_fio_sync_engine(tmp_path):
    """pm_io=sync makes one call at a time: fio's JSON says so as it does
    for its own psync engine (submit and complete of 1 per call, depth 1),
    although the engine's table has a commit for pm_io=uring, for which fio
    leaves these figures to the engine."""
    keys = ("iodepth_level", "iodepth_submit", "iodepth_complete")
    data = tmp_path / "data"
    run = run_fio(f"[psync]\nioengine=psync\nrw=write\nbs=4k\nsize=256k\nfilename={data}\n", tmp_path,
                  check=True, timeout=60)
    want = {k: run.jobs()[0][k] for k in keys}
    assert want["iodepth_submit"]["4"] == want["iodepth_complete"]["4"] == 100.0, want
    root = tmp_path / "root"
    root.mkdir()
    run = run_fio(job(root, pm_io="sync"), tmp_path, check=True, timeout=120)
    for j in run.jobs():
        assert {k: j[k] for k in keys} == want, j["jobname"]


@pytest.mark.parametrize("opt, value, why", [
    ("pm_files", "abc", "pm_files=abc: expected an integer"),
    ("pm_size_high", "50", "pm_size_high=50: expected at least pm_size_low=100"),
    ("pm_bias_read", "11", "pm_bias_read=11: expected an integer from -1 to 10"),
    ("pm_buffering", "maybe", "pm_buffering=maybe: expected true or false"),
    ("pm_transactions", "5", "pm_transactions=5: expected 10 or more"),
    ("phase", "run", "phase=run: expected pool, transactions or delete"),
    ("numjobs", "2", "numjobs: expected 1"),
])
def test_bad_option_one_line(tmp_path, opt, value, why):
    root = tmp_path / "root"
    root.mkdir()
    text = job(root, ("pool",)).replace("phase=pool", f"phase=pool\n{opt}={value}")
    run = run_fio(text, tmp_path, check=False, timeout=120)
    assert run.rc != 0
    lines = set(run.mdfio_lines())     # one line, said by each clone
    assert len(lines) == 1 and why in lines.pop(), run.stderr
    assert not any(root.iterdir())


def test_report_of_postmark_layout():
    """The whole seconds of the report are those of phases run back to
    back from a whole second, and the exact times are printed too."""
    class Phase:
        def __init__(self, phase, seconds, counts):
            self.phase, self.seconds = phase, seconds
            self.expected = dict(number=2, transactions=10, out_of_files=0, bytes_read=10, bytes_written=20)
            self.latency = {op: type("L", (), {"n": counts.get(op, 0), "min": 1, "max": 9, "percentile": {}})()
                            for op in fiojson.POSTMARK_OPS}
            self.errors = dict.fromkeys(fiojson.POSTMARK_OPS, 0)
    run, seconds = pm.run_of([Phase("pool", 0.6, {"create": 2}), Phase("transactions", 0.7, {"read": 3}),
                              Phase("delete", 0.8, {"delete": 2})])
    assert (run.start, run.t_start, run.t_end, run.end) == (0, 0, 1, 2)
    assert seconds == {"pool": 0.6, "transactions": 0.7, "delete": 0.8}
