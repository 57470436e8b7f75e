"""tools/mdfio-report on real fio runs: figures recomputed here from fio's
JSON, every format read back by a parser written from its description, and
bad input."""
import json
import math
import os
import random
import re
import signal
import subprocess
import time

import pytest

from mdfio.hosts import fio_servers

from conftest import SOURCE_ROOT, client_env, fio_env, io_uring_missing, job, run_fio

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
OPS = ("create", "stat", "read", "delete")
SLOT = {"create": ("write", "clat_ns"), "read": ("read", "clat_ns"),
        "delete": ("trim", "clat_ns"), "stat": ("sync", "lat_ns")}



def phase_s(job, slot):
    """A process's phase time: the engine's exact one (slat_ns of the
    phase's slot, one sample), else fio's runtime."""
    exact = job[slot]["slat_ns"]
    return exact["max"] / 1e9 if exact["N"] == 1 else job[slot]["runtime"] / 1000 or None

def report(path, *args, user=None):
    cmd = [str(REPORT), *args, str(path)]
    if user:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Real runs, made once: numjobs 1 and 3 with repeats, and read-only."""
    out = {}
    for name, numjobs, extra in (("n1", 1, {}), ("n3", 3, {}), ("ro", 2, {"read_only": 1})):
        base = tmp_path_factory.mktemp(name)
        root = base / "root"
        root.mkdir()
        opts = dict(numjobs=numjobs, datasets=2, precreate_per_set=40, steps_per_set=25, bs=1000)
        phases = ["precreate", "benchmark", "benchmark", "benchmark", "cleanup"]
        if extra:
            run_fio(job(["precreate"], root, **opts), base, check=True)
            phases = ["benchmark", "benchmark"]
        run = run_fio(job(phases, root, **opts, **extra), base, args=["--output-format=json+"], check=True)
        path = sorted(base.glob("job-*.json"))[-1]
        if extra:
            run_fio(job(["cleanup"], root, **opts), base, check=True)
        out[name] = (path, run.json, numjobs, extra)
    return out


def sorted_samples(lat):
    """The samples a histogram stands for, in order (independent of the
    tool's cumulative scan)."""
    values = []
    for v, c in sorted(lat["bins"].items(), key=lambda x: int(x[0])):
        values += [int(v)] * c
    return values


def ior_quantiles(samples, lo, hi):
    """IOR's quantiles of the bucket values, clamped into the exact [lo, hi]."""
    n = len(samples)
    q = lambda x: samples[round(x * (n - 1) + 0.49)]
    med = samples[n // 2] if n % 2 else (samples[n // 2] + samples[n // 2 - 1]) / 2
    return [min(max(v, lo), hi) for v in (q(0.25), med, q(0.75), q(0.90), q(0.99))]


def expected_records(doc, read_only=False):
    """md-workbench.md's formulas applied to fio's JSON, section by section."""
    sections, order = {}, []
    for j in doc["jobs"]:
        if j["jobname"] not in sections:
            order.append(j["jobname"])
            sections[j["jobname"]] = []
        sections[j["jobname"]].append(j)
    out, repeat = [], 0
    for name in order:
        jobs = sections[name]
        phase = name.rsplit("-", 1)[0]
        head = {"precreate": "write", "benchmark": "read", "cleanup": "trim"}[phase]
        times = [phase_s(j, head) for j in jobs]
        t = max(times)
        count = {op: sum(j[SLOT[op][0]][SLOT[op][1]]["N"] for j in jobs) for op in OPS}
        repeat = repeat + 1 if phase == "benchmark" else 0
        rec = {"phase": phase, "repeat": repeat, "t_max_s": t, "t_min_s": min(times),
               "ranks": len(jobs), "errors": 0}
        dsets = 2 * len(jobs)
        if phase == "benchmark":
            rec.update(objects=count["read"], obj_per_s=count["read"] / t,
                       iops=count["read"] * (2 if read_only else 4) / t,
                       tp_mib_per_s=(count["create"] + count["read"]) * 1000 / t / 2**20)
        elif phase == "precreate":
            rec.update(objects=count["create"], obj_per_s=count["create"] / t, dsets=dsets,
                       iops=(count["create"] + dsets) / t, tp_mib_per_s=count["create"] * 1000 / t / 2**20)
        else:
            rec.update(objects=count["delete"], obj_per_s=count["delete"] / t, dsets=dsets,
                       iops=(count["delete"] + dsets) / t)
        if len(times) > 1:
            mean = sum(times) / len(times)
            rec["t_stddev_s"] = math.sqrt(sum((x - mean) ** 2 for x in times) / (len(times) - 1))
        for op in OPS:
            rec[f"{op}_count"] = count[op]
            if not count[op]:
                continue
            lats = [j[SLOT[op][0]][SLOT[op][1]] for j in jobs]
            samples = sorted(v for lat in lats for v in sorted_samples(lat))
            lo, hi = min(l["min"] for l in lats if l["N"]), max(l["max"] for l in lats if l["N"])
            rec[f"{op}_min_s"], rec[f"{op}_max_s"] = lo / 1e9, hi / 1e9
            for k, v in zip(("q1_s", "median_s", "q3_s", "q90_s", "q99_s"), ior_quantiles(samples, lo, hi)):
                rec[f"{op}_{k}"] = v / 1e9
        out.append(rec)
    return out


@pytest.mark.parametrize("name", ["n1", "n3", "ro"])
def test_json_figures_match_the_formulas(runs, name):
    path, doc, numjobs, extra = runs[name]
    proc = report(path, "--json")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)["records"]
    want = expected_records(doc, read_only=bool(extra))
    assert [r["phase"] for r in got] == [r["phase"] for r in want]
    for g, w in zip(got, want):
        for k, v in w.items():
            if isinstance(v, str):
                assert g[k] == v, k
            else:
                assert g[k] == pytest.approx(v, rel=1e-9), (g["phase"], g["repeat"], k)
    if not extra:
        assert [r["repeat"] for r in got] == [0, 1, 2, 3, 0]
        assert got[0]["objects"] == numjobs * 2 * 40 and got[1]["objects"] == numjobs * 2 * 25


def test_quantiles_lie_between_min_and_max(runs):
    """fio's histogram gives bucket midpoints, within 1/128 of a sample but
    possibly beyond the exact min and max of few samples: the report clamps
    them (docs/reports.md). The runs hold such buckets, so this shows it."""
    beyond = 0
    for path, doc, _, _ in runs.values():
        for j in doc["jobs"]:
            for slot, kind in SLOT.values():
                lat = j[slot][kind]
                if lat["N"]:
                    buckets = [int(v) for v in lat["bins"]]
                    beyond += max(buckets) > lat["max"] or min(buckets) < lat["min"]
                    assert all(abs(b - lat["min"]) <= lat["min"] / 128 for b in buckets if b < lat["min"])
                    assert all(abs(b - lat["max"]) <= lat["max"] / 128 for b in buckets if b > lat["max"])
        for rec in json.loads(report(path, "--json", "--process-reports").stdout)["records"]:
            for op in OPS:
                if rec[f"{op}_count"]:
                    lat = [rec[f"{op}_{k}"] for k in ("min_s", "q1_s", "median_s", "q3_s", "q90_s", "q99_s", "max_s")]
                    assert lat == sorted(lat), (rec["phase"], rec["process"], op, lat)
    assert beyond


def test_process_records(runs):
    path, doc, numjobs, _ = runs["n3"]
    got = json.loads(report(path, "--json", "--process-reports").stdout)["records"]
    bench = [r for r in got if r["phase"] == "benchmark" and r["repeat"] == 1]
    assert [r["process"] for r in bench] == ["all", 0, 1, 2]
    assert sum(r["objects"] for r in bench[1:]) == bench[0]["objects"]
    assert max(r["t_max_s"] for r in bench[1:]) == bench[0]["t_max_s"]


# --- parsers written from the formats' descriptions (md-workbench.md) -----

NUM = r"([-+0-9.e]+|inf|n/a)"
LAT7 = r"\(" + ", ".join([NUM + "s"] * 7) + r"\)"


def parse_md_workbench(text):
    recs = []
    for line in text.splitlines():
        m = re.match(r"(?:(\d+): )?(precreate|benchmark|cleanup) process max:" + NUM + r"s (.*)$", line)
        if not m:
            continue
        rec = {"process": int(m.group(1)) if m.group(1) else "all", "phase": m.group(2),
               "t_max_s": float(m.group(3))}
        rest = m.group(4)
        for key, pat in (("t_min_s", r"min:" + NUM + "s"), ("t_mean_s", r"mean: " + NUM + "s"),
                         ("balance_pct", r"balance:" + NUM), ("t_stddev_s", r"stddev:" + NUM),
                         ("iops", r"rate:" + NUM + " iops/s"), ("objects", r"objects:(\d+)"),
                         ("dsets", r"dsets: (\d+)"), ("obj_per_s", r"rate:" + NUM + " obj/s"),
                         ("dset_per_s", r"rate:" + NUM + " dset/s"), ("tp_mib_per_s", r"tp:" + NUM + " MiB/s"),
                         ("op_max_s", r"op-max:" + NUM + "s"), ("errors", r"\((\d+) errs")):
            mm = re.search(pat, rest)
            if mm:
                rec[key] = float(mm.group(1))
        for op in OPS:
            mm = re.search(rf" {op}" + LAT7, rest)
            if mm:
                for k, v in zip(("min_s", "q1_s", "median_s", "q3_s", "q90_s", "q99_s", "max_s"), mm.groups()):
                    rec[f"{op}_{k}"] = float(v)
        recs.append(rec)
    return recs


def parse_md_real_io(text, era):
    iops = r" " + NUM + r" iops/s" if era == 2017 else ""
    pats = {
        "precreate": r"precreate " + NUM + r"s" + iops + r" (\d+) dset (\d+) obj " + NUM + r" dset/s " + NUM +
                     r" obj/s " + NUM + r" Mib/s \((\d+) errs\)$",
        "benchmark": r"benchmark " + NUM + r"s" + iops + r" (\d+) obj " + NUM + r" obj/s " + NUM +
                     r" Mib/s \((\d+) errs\)$",
        "cleanup": r"cleanup " + NUM + r"s" + iops + r" (\d+) obj (\d+) dset " + NUM + r" obj/s " + NUM +
                   r" dset/s \((\d+) errs\)$",
    }
    keys = {"precreate": ["t", "iops", "dsets", "objects", "dset_rate", "obj_rate", "tp", "errors"],
            "benchmark": ["t", "iops", "objects", "obj_rate", "tp", "errors"],
            "cleanup": ["t", "iops", "objects", "dsets", "obj_rate", "dset_rate", "errors"]}
    recs, footer = [], None
    for line in text.splitlines():
        proc = "all"
        m = re.match(r"(\d+): (.*)$", line)
        if m:
            proc, line = int(m.group(1)), m.group(2)
        for phase, pat in pats.items():
            mm = re.fullmatch(pat, line)
            if mm:
                k = [x for x in keys[phase] if era == 2017 or x != "iops"]
                recs.append({"phase": phase, "process": proc, **dict(zip(k, map(float, mm.groups())))})
        mm = re.fullmatch(r"Total runtime: (\d+)s time: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", line)
        if mm:
            footer = int(mm.group(1))
    return recs, footer


def close(a, b, decimals):
    return abs(a - b) <= 0.5 * 10 ** -decimals + 1e-12 * abs(b)


@pytest.mark.parametrize("name", ["n1", "n3", "ro"])
def test_md_workbench_format_round_trips(runs, name):
    path = runs[name][0]
    truth = json.loads(report(path, "--json", "--process-reports").stdout)["records"]
    proc = report(path, "--process-reports")
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("Args: md-workbench ") and lines[2].startswith("MD-Workbench total objects: ")
    parsed = parse_md_workbench(proc.stdout)
    assert len(parsed) == len(truth)
    for p, t in zip(parsed, truth):
        assert (p["phase"], p["process"]) == (t["phase"], t["process"])
        for k, v in p.items():
            if k in ("phase", "process"):
                continue
            dec = {"t_max_s": 2, "t_min_s": 2, "t_mean_s": 2, "balance_pct": 1, "t_stddev_s": 1,
                   "dset_per_s": 3, "objects": 0, "dsets": 0, "errors": 0}.get(k)
            if k == "op_max_s" or k.startswith(OPS):
                assert v == pytest.approx(t[k], rel=1e-4), k
            else:
                assert close(v, t[k], 1 if dec is None else dec), (k, v, t[k])


@pytest.mark.parametrize("era", [2016, 2017])
@pytest.mark.parametrize("name", ["n1", "n3"])
def test_md_real_io_formats_round_trip(runs, name, era):
    path, doc, numjobs, _ = runs[name]
    truth = json.loads(report(path, "--json", "--process-reports").stdout)["records"]
    proc = report(path, "--format", f"md-real-io-{era}", "--process-reports")
    assert proc.returncode == 0
    head = proc.stdout.splitlines()[0]
    assert re.fullmatch(r"MD-REAL-IO total objects: \d+" + (r" workingset size: [0-9.]+ MiB" if era == 2017 else "")
                        + r" \(version: \S+\) time: \d{4}-\d\d-\d\d \d\d:\d\d:\d\d", head), head
    parsed, footer = parse_md_real_io(proc.stdout, era)
    assert footer is not None and footer >= 0
    assert len(parsed) == len(truth)
    for p, t in zip(parsed, truth):
        assert (p["phase"], p["process"]) == (t["phase"], t["process"])
        assert close(p["t"], t["t_max_s"], 1)
        if p["phase"] == "benchmark":
            # that era's obj is the created objects; iops = 4 per object
            created = t["create_count"]
            assert p["objects"] == created
            assert close(p["obj_rate"], created / t["t_max_s"], 1)
            if era == 2017:
                assert close(p["iops"], 4 * created / t["t_max_s"], 1)
        else:
            assert p["objects"] == t["objects"] and p["dsets"] == t["dsets"]
            assert close(p["obj_rate"], t["obj_per_s"], 1) and close(p["dset_rate"], t["dset_per_s"], 3)
            if era == 2017:
                assert close(p["iops"], t["iops"], 1)
        if "tp" in p:
            assert close(p["tp"], t["tp_mib_per_s"], 1)


def test_csv_matches_json(runs):
    path = runs["n3"][0]
    truth = json.loads(report(path, "--json", "--process-reports").stdout)["records"]
    rows = report(path, "--csv", "--process-reports").stdout.splitlines()
    header = rows[0].split(",")
    assert header[:3] == ["phase", "repeat", "process"] and len(rows) == len(truth) + 1
    for row, t in zip(rows[1:], truth):
        for k, cell in zip(header, row.split(",")):
            v = t[k]
            if v is None:
                assert cell == ""
            elif isinstance(v, float):
                assert float(cell) == v
            else:
                assert cell == str(v)


def test_concatenated_documents_and_stdin(runs, tmp_path):
    path = runs["n1"][0]
    text = path.read_text()
    doc = text[text.index("{"):]
    early = json.loads(doc)
    for j in early["jobs"]:
        j["read"]["clat_ns"]["N"] = 0     # an interim report: must not count
    both = tmp_path / "interval.json"
    both.write_text(json.dumps(early) + "\n" + doc)
    assert report(both, "--json").stdout == report(path, "--json").stdout
    proc = subprocess.run([str(REPORT), "--json"], input=doc, capture_output=True, text=True)
    assert proc.stdout == report(path, "--json").stdout
    # bytes that are not UTF-8, whatever the locale's error handling
    proc = subprocess.run([str(REPORT)], input=b"\xff\xfe junk\n" + doc.encode(), capture_output=True,
                          env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"})
    assert proc.returncode == 0 and proc.stdout.decode() == report(path).stdout, proc.stderr


def over_a_fio_server(tmp_path, jobtext):
    """fio --client of one fio server on loopback running jobtext, with
    json+ into tmp_path/cs.json: (the client's CompletedProcess, that
    path). The client starts once the server listens: with --output, fio
    writes a failed connect into that file, not to stderr."""
    jobfile = tmp_path / "cs.fio"
    jobfile.write_text(jobtext)
    out = tmp_path / "cs.json"
    with fio_servers(1, tmp_path, env=fio_env()) as (server,):
        proc = subprocess.run(["fio", server.client_arg, "--output-format=json+", f"--output={out}", str(jobfile)],
                              capture_output=True, text=True, env=client_env())
    return proc, out


def test_client_server_json(tmp_path, tmpfs):
    proc, out = over_a_fio_server(tmp_path, job(["precreate", "benchmark", "cleanup"], tmpfs, numjobs=2,
                                                datasets=2, precreate_per_set=20, steps_per_set=10, bs=500))
    assert proc.returncode == 0, proc.stderr
    assert "client_stats" in out.read_text()
    got = json.loads(report(out, "--json").stdout)["records"]
    assert [(r["phase"], r["objects"], r["ranks"]) for r in got] == \
        [("precreate", 80, 2), ("benchmark", 40, 2), ("cleanup", 80, 2)]
    # a client's JSON has no 'elapsed': fio's run time, and so its start, are unknown
    assert "elapsed" not in json.loads(out.read_text())["client_stats"][0]
    text = report(out, "--format", "md-real-io-2017").stdout.splitlines()
    assert text[0].endswith(" time: n/a") and re.fullmatch(r"Total runtime: n/a time: [0-9: -]{19}", text[-1])


# --- bad input -------------------------------------------------------------

def one_line_exit_2(proc, name):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"mdfio-report: {name}"), proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""


def test_bad_inputs(runs, tmp_path, tmpfs):
    good = runs["n1"][0].read_text()
    cases = {"notjson.txt": "this is fio's text output\n", "truncated.json": good[: len(good) // 2],
             "empty.json": "", "blank.json": "\n\n", "list.json": "[1, 2]\n",
             "deep.json": '{"jobs": ' + "[" * 100000 + "]" * 100000 + "}\n"}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        one_line_exit_2(report(tmp_path / name), str(tmp_path / name))
    one_line_exit_2(report(tmp_path), str(tmp_path))
    one_line_exit_2(report(tmp_path / "absent.json"), str(tmp_path / "absent.json"))
    # a device is refused at its first NUL byte, not read until memory
    # runs out; so is binary data after a good document
    one_line_exit_2(report("/dev/zero"), "/dev/zero")
    (tmp_path / "nul.json").write_bytes(good.encode() + b"\0" * 10)
    one_line_exit_2(report(tmp_path / "nul.json"), str(tmp_path / "nul.json"))
    secret = tmp_path / "secret.json"
    secret.write_text(good)
    secret.chmod(0o600)
    tmp_path.chmod(0o755)
    tmp_path.parent.chmod(0o755)
    tmp_path.parent.parent.chmod(0o755)
    one_line_exit_2(report(secret, user=65534), str(secret))

    # a real fio run that used no mdfio engine
    run_fio("[j]\nioengine=null\nsize=1m\nrw=read\n", tmp_path, check=True)
    path = sorted(tmp_path.glob("job-*.json"))[-1]
    proc = report(path)
    one_line_exit_2(proc, str(path))
    assert "no mdfio job" in proc.stderr

    # a process missing from a phase
    doc = json.loads(good[good.index("{"):])
    doc["jobs"][0]["job options"]["numjobs"] = "2"
    path = tmp_path / "missing.json"
    path.write_text(json.dumps(doc))
    proc = report(path)
    one_line_exit_2(proc, str(path))
    assert "process is missing" in proc.stderr


def test_a_phase_refused_before_its_first_unit_is_not_run(tmp_path, tmpfs):
    """A benchmark the engine refuses (no precreate before it) is a run
    with errors, not bad input: its line says it did not run and why,
    naming the rank and its fio error (exit 1)."""
    run = run_fio(job(["benchmark"], tmpfs, steps_per_set=5, precreate_per_set=5), tmp_path, check=False)
    (j,) = run.jobs()
    path = sorted(tmp_path.glob("job-*.json"))[-1]
    proc = report(path)
    assert proc.returncode == 1, proc.stderr
    host = re.search(r"host=(\S+?);", j["desc"])[1]
    lines = proc.stdout.splitlines()
    assert lines[3] == (f"benchmark not run (repeat 1, job benchmark-0): rank 0 (host {host}) ended with fio "
                        f"error {j['error']} before its first unit") and j["error"], lines
    assert lines[-1].startswith("Total runtime: ") and len(lines) == 5, lines
    assert proc.stderr == (f"mdfio-report: {path}: not every rank completed every phase (the report marks them): "
                           "benchmark-0 (not run)\n")
    rec = json.loads(report(path, "--json").stdout)["records"]
    assert [(r["status"], r["objects"], r["t_max_s"]) for r in rec] == [("not run", None, None)]


def test_a_run_fio_refused_says_why(tmp_path):
    """A root whose parent is missing: the run creates nothing. fio itself
    refuses a directory= (its JSON output file holds its messages alone);
    the engine refuses a root= before any job starts, and fio's JSON then
    has every job, each with error 0 and nothing begun. Neither is a
    report of phases without errors: one line says what failed (quoting
    fio's messages where the file holds them), and the exit status is
    not 0."""
    missing = tmp_path / "no-parent" / "root"
    opts = dict(numjobs=2, datasets=2, precreate_per_set=5, steps_per_set=3, bs=100)
    text = job(["precreate", "cleanup"], missing, **opts)
    run = run_fio(text, tmp_path, args=["--output-format=json+"], check=False)
    assert run.json is None and f"fio: {missing} is not a directory" in run.stderr, run.stderr
    path = sorted(tmp_path.glob("job-*.json"))[-1]
    proc = report(path)
    one_line_exit_2(proc, str(path))
    assert f"fio wrote no JSON document, only its messages: 'fio: {missing} is not a directory'" in proc.stderr

    run = run_fio(text.replace("directory=", "root="), tmp_path, args=["--output-format=json+"], check=False)
    said = f"mdfio: directory={missing}: cannot create it: No such file or directory"
    assert run.rc and said in run.stderr and not missing.parent.exists(), run.stderr
    assert [(j["jobname"], j["error"]) for j in run.jobs()] == [("precreate-0", 0)] * 2 + [("cleanup-1", 0)] * 2
    path = sorted(tmp_path.glob("job-*.json"))[-1]
    for fmt in ([], ["--json"], ["--csv"]):
        proc = report(path, *fmt)
        assert proc.returncode == 1 and "(0 errs)" not in proc.stdout, proc.stdout + proc.stderr
        assert proc.stderr.splitlines()[0] == (
            f"mdfio-report: {path}: no rank began any phase and no job has a fio error: fio or the engine "
            "refused the run before its first unit; the line on fio's stderr says why (fio: ... or mdfio: ...)")
    # the same with fio's stderr in the file, as 2>&1 puts it there
    both = tmp_path / "both.json"
    both.write_text(run.stderr + path.read_text())
    proc = report(both)
    assert proc.returncode == 1 and proc.stderr.splitlines()[0] == (
        f"mdfio-report: {both}: no rank began any phase and no job has a fio error: fio or the engine refused "
        f"the run before its first unit: '{said} (mdfio creates only the last component of the root; create "
        "its parent first)'"), proc.stderr


def test_a_run_fio_servers_refused_says_why(tmp_path):
    """Over a fio server, a directory= whose parent is missing: the server
    drops the job, and the client exits 0 with a JSON of no job, after the
    server's messages. The report quotes them; it does not ask for an mdfio
    job as if the jobfile had none."""
    missing = tmp_path / "no-parent" / "root"
    proc, out = over_a_fio_server(tmp_path, job(["precreate", "cleanup"], missing, numjobs=2, datasets=2,
                                                precreate_per_set=5))
    assert proc.returncode == 0 and '"client_stats" : [' in out.read_text(), proc.stderr
    proc = report(out)
    one_line_exit_2(proc, str(out))
    assert re.search(r"no mdfio job in this fio run; fio said: '<[^>]+> fio: " + re.escape(str(missing)) +
                     " is not a directory'$", proc.stderr), proc.stderr


@pytest.mark.parametrize("literal, needle", [("NaN", "NaN in it"), ("-Infinity", "-Infinity in it"),
                                             ("1e400", "beyond any number"), ("1" * 21, "longer than fio writes")])
def test_numbers_fio_never_writes(runs, tmp_path, literal, needle):
    """fio prints integers with %lld and floats with %f: Python's json
    would take NaN and Infinity, and make inf of 1e400."""
    good = runs["n1"][0].read_text()
    path = tmp_path / "number.json"
    path.write_text(re.sub(r'"runtime" : \d+', f'"runtime" : {literal}', good, count=1))
    for fmt in ([], ["--json"], ["--csv"]):
        proc = report(path, *fmt)
        one_line_exit_2(proc, str(path))
        assert needle in proc.stderr


def _first_job(doc):
    return doc["jobs"][0]


def _fewer_stats_made(doc):
    bench = next(j for j in doc["jobs"] if j["sync"]["lat_ns"]["N"])
    bench["sync"]["total_ios"] = bench["sync"]["lat_ns"]["N"] - 1


# a change to a real run's JSON that fio could not have written, and what
# the one line says
INCONSISTENT = {
    "negative count": (lambda d: _first_job(d)["write"]["clat_ns"].update(N=-1), "'N' is -1"),
    "float count": (lambda d: _first_job(d)["write"].update(drop_ios=2.5), "'drop_ios' is 2.5"),
    "min above max": (lambda d: _first_job(d)["write"]["clat_ns"].update(min=10**9, max=1), "is above max"),
    "bins short of N": (lambda d: _first_job(d)["write"]["clat_ns"]["bins"].popitem(), "bins hold"),
    "percentiles falling": (lambda d: _first_job(d)["write"]["clat_ns"]["percentile"].update(
        {"25.000000": 10**12}), "do not grow"),
    "no sync slot": (lambda d: _first_job(d).pop("sync"), "no 'sync'"),
    "no runtime": (lambda d: _first_job(d)["write"].pop("runtime"), "no 'runtime'"),
    "line break in a name": (lambda d: _first_job(d).update(jobname="pre\ncreate"), "control characters"),
    "no timestamp": (lambda d: d.pop("timestamp"), "no 'timestamp'"),
    "timestamp of no era": (lambda d: d.update(timestamp=10**18), "not a time of this era"),
    "elapsed before 1970": (lambda d: _first_job(d).update(elapsed=d["timestamp"] + 1), "more than the time since"),
    "more stats than made": (_fewer_stats_made, "is more than total_ios"),
    # options the engine refuses: no run has them
    "no datasets": (lambda d: d["global options"].update(datasets="0"), "datasets='0', expected an integer from 1"),
    "read_only=2": (lambda d: d["global options"].update(read_only="2"),
                    "read_only='2', expected an integer from 0 to 1"),
    "negative numjobs": (lambda d: d["global options"].update(numjobs="-1"), "numjobs='-1'"),
}


@pytest.mark.parametrize("case", sorted(INCONSISTENT))
def test_json_fio_could_not_have_written(runs, tmp_path, case):
    """Values are checked against what fio writes (stat.c): types, counts,
    the consistency of a latency object, the keys it always writes."""
    text = runs["n1"][0].read_text()
    doc = json.loads(text[text.index("{"):])
    change, needle = INCONSISTENT[case]
    change(doc)
    path = tmp_path / "inconsistent.json"
    path.write_text(json.dumps(doc))
    for fmt in ([], ["--json"], ["--csv"]):
        proc = report(path, *fmt)
        one_line_exit_2(proc, str(path))
        assert needle in proc.stderr, proc.stderr


@pytest.mark.parametrize("job_index", [0, 1, 2])
def test_a_phase_time_of_0_is_one_line(runs, tmp_path, job_index):
    """The engine's exact phase time (slat_ns of the phase's slot, one
    sample) is never 0 ns: a JSON that says so is refused in one line
    naming the file, the job and the phase, by every format, --follow and
    mdfio-plot, not a ZeroDivisionError in the rates. Of rank 0 (a phase's
    T is 0), and of rank 1 alone (its own line's rates)."""
    text = runs["n3"][0].read_text()
    doc = json.loads(text[text.index("{"):])
    bench = [j for j in doc["jobs"] if j["jobname"].startswith("benchmark")]
    if job_index == 0:
        for j in bench[:3]:
            j["read"]["slat_ns"].update(min=0, max=0, mean=0.0)
    else:
        bench[job_index]["read"]["slat_ns"].update(min=0, max=0, mean=0.0)
    name = bench[job_index]["jobname"]
    path = tmp_path / "zero.json"
    path.write_text(json.dumps(doc))
    for fmt in ([], ["--json"], ["--csv"], ["--process-reports"]):
        proc = report(path, *fmt)
        one_line_exit_2(proc, str(path))
        assert f"job {name}: phase benchmark: " in proc.stderr and "time of 0 ns" in proc.stderr, proc.stderr
    proc = subprocess.run([str(REPORT), "--follow", "-"], input=path.read_text(), capture_output=True, text=True)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(f"mdfio-report: <stdin>: job {name}: phase benchmark: ")
    proc = subprocess.run([str(SOURCE_ROOT / "tools" / "mdfio-plot"), str(path), "--logs", str(tmp_path / "lat"),
                           "--out", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith(f"mdfio-plot: {path}: job {name}: "), proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and "Traceback" not in proc.stderr


def test_a_running_jobs_histogram_may_be_ahead_of_its_count(runs, tmp_path):
    """fio reads a running job's figures while the job adds to them, for
    its reports during the run (--status-interval; the last one when fio
    was killed): a histogram a sample ahead of its N, or more stats timed
    than counted, is fio's there, not in a job that has ended its phase
    (whose phase time the engine has recorded)."""
    text = runs["n1"][0].read_text()
    doc = json.loads(text[text.index("{"):])
    bench = next(j for j in doc["jobs"] if j["jobname"].startswith("benchmark"))
    bins = bench["write"]["clat_ns"]["bins"]
    bins[next(iter(bins))] += 1
    bench["sync"]["total_ios"] -= 1
    path = tmp_path / "ahead.json"
    path.write_text(json.dumps(doc))
    assert "bins hold" in report(path).stderr
    # the same job still in its phase (no phase time yet): no refusal,
    # and no figures either: the phase is marked as not completed
    bench["read"]["slat_ns"].update(N=0, min=0, max=0, mean=0.0)
    path.write_text(json.dumps(doc))
    proc = report(path, "--json")
    assert proc.returncode == 1, proc.stderr
    rec = json.loads(proc.stdout)["records"][1]
    assert (rec["phase"], rec["status"], rec["create_count"], rec["t_max_s"]) == ("benchmark", "incomplete", None, None)
    assert re.fullmatch(r"rank 0 \(host \S+\) was still in it at its fio's last report \(that fio died, was "
                        r"stopped, or still runs\)", rec["reason"]), rec["reason"]


@pytest.mark.parametrize("args, needle", [(["--format", "x"], "argument --format: invalid choice: 'x'"),
                                          (["--bogus"], "unrecognized arguments: --bogus"),
                                          (["-", "other.json"], "'-' (stdin) is the only input")])
def test_bad_options_in_one_line(args, needle):
    proc = subprocess.run([str(REPORT), *args], capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.splitlines() == [f"mdfio-report: {proc.stderr.split(': ', 1)[1].rstrip()}"]
    assert needle in proc.stderr and proc.stderr.endswith(" (see mdfio-report --help)\n")


def test_a_closed_output_ends_the_tool_quietly(runs):
    """As `mdfio-report run.json | head` when head has gone: the pipe's
    reader is closed before the tool writes, so its first write gets
    SIGPIPE, which ends it as it ends coreutils: no traceback, no message."""
    path = runs["n1"][0]
    for cmd in ([str(REPORT), str(path)], [str(REPORT), "--json", str(path)],
                [str(SOURCE_ROOT / "tools" / "mdfio-plot"), "--help"]):
        r, w = os.pipe()
        os.close(r)
        proc = subprocess.run(cmd, stdout=w, stderr=subprocess.PIPE, text=True)
        os.close(w)
        assert proc.returncode == -signal.SIGPIPE and proc.stderr == "", (cmd, proc.returncode, proc.stderr)


def test_the_largest_values_the_engine_takes_cost_no_time(runs, tmp_path):
    """datasets=2^32-1 over ranks on two hosts (reads across hosts counted
    per dataset), and a million ranks on 100000 listed hosts, of which one
    reported (missing ranks named by host): answers in seconds, not hours."""
    text = runs["n3"][0].read_text()
    doc = json.loads(text[text.index("{"):])
    doc["global options"]["datasets"] = str(2**32 - 1)
    for j in doc["jobs"]:
        rank = int(re.search(r"rank=(\d+)", j["desc"])[1])
        j["desc"] = f"mdfio rank={rank} ranks=3 host=h{rank % 2}"
    path = tmp_path / "datasets.json"
    path.write_text(json.dumps(doc))
    proc = subprocess.run([str(REPORT), "--json", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # rank r reads dataset d of rank r-(d+1) mod 3: on the other host for r-(d+1) odd, d mod 3 in 0..2
    want = sum(((2**32 - 1) - d + 2) // 3 * sum(1 for r in range(3) if (r - d - 1) % 3 % 2 != r % 2)
               for d in range(3))
    assert json.loads(proc.stdout)["parameters"]["reads-cross-hosts"] == f"some ({want} of {3 * (2**32 - 1)})"
    doc = json.loads(text[text.index("{"):])
    # 64 ranks per host: host h0's fio reported all its clones (fio lists
    # every job it runs), no other host anything
    per_host = 64
    doc["global options"].update(numjobs=str(per_host), hosts=",".join(f"h{i}" for i in range(100000)))
    sections = [j for j in doc["jobs"] if "rank=0 " in j["desc"]]
    doc["jobs"] = []
    for j in sections:
        for r in range(per_host):
            doc["jobs"].append({**j, "desc": f"mdfio rank={r} ranks={2**20} host=h0"})
    path = tmp_path / "ranks.json"
    path.write_text(json.dumps(doc))
    proc = subprocess.run([str(REPORT), str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr
    marks = [line for line in proc.stdout.splitlines() if " incomplete (" in line]
    hosts = 2**20 // per_host
    assert len(marks) == len(sections), proc.stdout[:1000]
    for m in marks:
        assert f"): {2**20 - per_host} of {2**20} ranks missing: ranks 64-127 (host h1); ranks 128-191 (host h2); " in m
        assert f"; ranks {2**20 - per_host}-{2**20 - 1} (host h{hosts - 1}): hosts h1,h2," in m
        assert m.endswith(f",h{hosts - 1} did not report them (it died, or its fio JSON is not among the files)")
    doc["jobs"][0]["desc"] = f"mdfio rank=0 ranks={2**20 + 1} host=h0"
    path.write_text(json.dumps(doc))
    proc = subprocess.run([str(REPORT), str(path)], capture_output=True, text=True, timeout=60)
    one_line_exit_2(proc, str(path))
    assert "more than the engine's 1048576 ranks" in proc.stderr


def test_a_bug_is_not_taken_for_bad_input(runs, monkeypatch):
    """Only input of another structure is reported as bad input; a
    programming error inside the figures propagates (a traceback)."""
    import mdfio.figures
    import mdfio.report

    def broken(bins, n):
        raise TypeError("a bug in the quantiles")
    monkeypatch.setattr(mdfio.figures, "ior_quantiles", broken)
    with pytest.raises(TypeError, match="a bug in the quantiles"):
        mdfio.report.main(["--json", str(runs["n1"][0])])


def test_a_run_with_errors_reports_them_and_exits_1(tmpfs, tmp_path):
    opts = dict(numjobs=2, datasets=2, precreate_per_set=10, steps_per_set=5, bs=100)
    run_fio(job(["precreate"], tmpfs, **opts), tmp_path, check=True)
    (tmpfs / "1_0" / "file-2").unlink()
    run_fio(job(["benchmark"], tmpfs, **opts), tmp_path, args=["--output-format=json+"], check=False)
    path = sorted(tmp_path.glob("job-*.json"))[-1]
    proc = report(path)
    assert proc.returncode == 1, proc.stderr
    assert "(1 errs!!!)" in proc.stdout
    # md-workbench -q keeps the error count when there are errors
    assert "(1 errs!!!)" in report(path, "-q").stdout
    # and --print-detailed-stats prints the error counts in place of the counts
    detailed = report(path, "--print-detailed-stats").stdout.splitlines()
    assert detailed[4] == "benchmark err\t0\t0\t0\t0\t1\t0", detailed
    rec = json.loads(report(path, "--json").stdout)["records"][0]
    assert (rec["stat_errors"], rec["errors"], rec["objects"]) == (1, 1, 2 * 2 * 5 - 1)


def no_constant(name):
    raise ValueError(f"{name} is not JSON")


def test_a_phase_in_which_every_unit_fails(tmp_path):
    """Every object removed after precreate: every stat of the benchmark
    and every delete of the cleanup fails. fio measures no runtime for such
    a phase (it counts it only while bytes move), but the engine's exact
    time is there: T is real, a rate of no objects is 0, the datasets'
    rate is over T; never inf."""
    root = tmp_path / "root"
    root.mkdir()
    opts = dict(numjobs=2, datasets=2, precreate_per_set=5, steps_per_set=3, bs=100)
    run_fio(job(["precreate"], root, **opts), tmp_path, check=True)
    for obj in root.glob("*_*/file-*"):
        obj.unlink()
    paths, times = {}, {}
    for phase in ("benchmark", "cleanup"):
        run = run_fio(job([phase], root, **opts), tmp_path, args=["--output-format=json+"], check=False)
        assert all(j["error"] for j in run.jobs()) and not any(j["read"]["runtime"] or j["trim"]["runtime"]
                                                              for j in run.jobs())
        slot = "read" if phase == "benchmark" else "trim"
        times[phase] = [phase_s(j, slot) for j in run.jobs()]
        assert all(t and t > 0 for t in times[phase])
        paths[phase] = sorted(tmp_path.glob("job-*.json"))[-1]
    recs = {}
    for phase, path in paths.items():
        for fmt in ([], ["--format", "md-real-io-2017"], ["--format", "md-real-io-2016"], ["--csv"]):
            proc = report(path, *fmt, "--process-reports")
            assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
            assert not re.search(r"\b(-?inf|nan)\b", proc.stdout, re.I), proc.stdout
        proc = report(path, "--json", "--process-reports")
        assert proc.returncode == 1
        recs[phase] = json.loads(proc.stdout, parse_constant=no_constant)["records"]
    bench, clean = recs["benchmark"][0], recs["cleanup"][0]
    for phase, rec in (("benchmark", bench), ("cleanup", clean)):
        assert (rec["t_max_s"], rec["t_min_s"]) == (max(times[phase]), min(times[phase]))
        assert (rec["objects"], rec["obj_per_s"]) == (0, 0.0)
    assert (bench["iops"], bench["tp_mib_per_s"], bench["stat_errors"]) == (0.0, 0.0, 2 * 2 * 3)
    t = clean["t_max_s"]
    assert (clean["iops"], clean["dset_per_s"], clean["dsets"], clean["delete_errors"]) == \
        (4 / t, 4 / t, 4, 2 * 2 * 5)


def test_a_process_in_which_every_unit_fails(tmp_path):
    """Rank 1 reads rank 0's dataset, whose objects are gone: fio measures
    no runtime for rank 1, but its exact phase time is there, so the
    phase's min, mean, balance and stddev are real."""
    root = tmp_path / "root"
    root.mkdir()
    opts = dict(numjobs=2, datasets=1, precreate_per_set=5, steps_per_set=3, bs=100)
    run_fio(job(["precreate"], root, **opts), tmp_path, check=True)
    for obj in root.glob("0_0/file-*"):
        obj.unlink()
    run = run_fio(job(["benchmark"], root, **opts), tmp_path, args=["--output-format=json+"], check=False)
    ranks = sorted(run.jobs(), key=lambda j: j["read"]["runtime"])
    assert ranks[0]["read"]["runtime"] == 0 < ranks[1]["read"]["runtime"]
    path = sorted(tmp_path.glob("job-*.json"))[-1]
    proc = report(path, "--json", "--process-reports")
    assert proc.returncode == 1
    phase, *procs = json.loads(proc.stdout, parse_constant=no_constant)["records"]
    times = [phase_s(j, "read") for j in ranks]
    t = max(times)
    assert (phase["t_max_s"], phase["t_min_s"], phase["objects"], phase["obj_per_s"]) == (t, min(times), 3, 3 / t)
    failed = next(p for p in procs if p["objects"] == 0)
    assert (failed["t_max_s"], failed["obj_per_s"], failed["stat_errors"]) == (times[0], 0.0, 3)


def test_mutated_and_truncated_json_never_gives_a_traceback(runs, tmp_path):
    rng = random.Random(1234)
    base = runs["n3"][0].read_text()
    doc = json.loads(base[base.index("{"):])
    values = [None, 0, -1, 1e308, "x", "", [], {}, True, "3|", "|"]

    def paths(node, prefix=()):
        if isinstance(node, dict):
            for k, v in node.items():
                yield prefix + (k,)
                yield from paths(v, prefix + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node):
                yield prefix + (i,)
                yield from paths(v, prefix + (i,))
    all_paths = list(paths(doc))
    for n in range(150):
        mutated = json.loads(json.dumps(doc))
        for _ in range(rng.randint(1, 4)):
            p = rng.choice(all_paths)
            node = mutated
            try:
                for k in p[:-1]:
                    node = node[k]
                if rng.random() < 0.3 and isinstance(node, dict):
                    del node[p[-1]]
                else:
                    node[p[-1]] = rng.choice(values)
            except (KeyError, IndexError, TypeError):
                pass
        text = json.dumps(mutated)
        if n % 3 == 0:
            text = text[: rng.randrange(len(text))]
        path = tmp_path / f"m{n}.json"
        path.write_text(text)
        for fmt in (["--json"], ["--format", "md-real-io-2016"], []):
            proc = report(path, *fmt, "--process-reports")
            assert proc.returncode in (0, 1, 2), proc.stderr
            assert "Traceback" not in proc.stderr, (path, proc.stderr)
            if proc.returncode == 2:
                assert len(proc.stderr.splitlines()) == 1, proc.stderr


def test_object_size_is_fios_default_bs_when_the_jobfile_sets_none(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    text = job(["precreate", "cleanup"], root, datasets=1, precreate_per_set=10)
    run = run_fio("".join(l for l in text.splitlines(keepends=True) if not l.startswith("bs=")), tmp_path,
                  check=True)
    assert "bs" not in run.json["global options"]
    assert all(j["write"]["io_bytes"] in (0, 10 * 4096) for j in run.jobs())
    path = sorted(tmp_path.glob("job-*.json"))[-1]
    lines = report(path).stdout.splitlines()
    assert lines[0] == args_line(["-a", "POSIX", "-D", "1", "-P", "10", "-I", "1000", "-S", "4096", "-R", "0",
                                  "-O", "1", "-o", str(root), "-G", "0", "-1", "-3"])
    # md-workbench's default -I 1000 is more than -P 10: its warning, as md-workbench -1 -3 prints it
    assert lines[3] == "WARNING: num > precreate, this may cause the situation that no objects are available to read"
    assert "\tobject-size=4096 \n" in report(path, "--format", "md-workbench-2020").stdout
    pre = json.loads(report(path, "--json").stdout)["records"][0]
    assert pre["tp_mib_per_s"] == pytest.approx(10 * 4096 / pre["t_max_s"] / 2**20)


def test_units_in_flight_are_a_parameter(runs, tmpfs, tmp_path):
    """md-workbench has no iodepth; an mdfio report names it, since it
    changes what the rates mean."""
    run_fio(job(["precreate", "benchmark", "cleanup"], tmpfs, engine="uring", iodepth=8, datasets=2,
                precreate_per_set=20, steps_per_set=20), tmp_path, args=["--output-format=json+"], check=True)
    path = sorted(tmp_path.glob("job-*.json"))[-1]
    assert "\tiodepth=8\n" in report(path, "--format", "md-workbench-2020").stdout
    assert json.loads(report(path, "--json").stdout)["parameters"]["iodepth"] == 8
    assert "\tiodepth=1\n" in report(runs["n1"][0], "--format", "md-workbench-2020").stdout


def test_dsets_count_the_datasets_a_cleanup_removed(tmp_path):
    """A foreign file keeps one dataset: the cleanup's dsets is one less
    than datasets x ranks, and its delete errors count the failed rmdir."""
    root = tmp_path / "root"
    root.mkdir()
    opts = dict(numjobs=2, datasets=2, precreate_per_set=5, steps_per_set=3, bs=100)
    run_fio(job(["precreate"], root, **opts), tmp_path, check=True)
    (root / "1_1" / "notes.txt").write_text("mine")
    run_fio(job(["cleanup"], root, **opts), tmp_path, check=False)
    path = sorted(tmp_path.glob("job-*.json"))[-1]
    proc = report(path, "--json")
    assert proc.returncode == 1, proc.stderr
    (rec,) = json.loads(proc.stdout, parse_constant=no_constant)["records"]
    assert (rec["dsets"], rec["objects"], rec["delete_errors"]) == (3, 20, 1)
    assert rec["dset_per_s"] == 3 / rec["t_max_s"]


# --- md-workbench's header, footer, -q and --print-detailed-stats ----------

def local(epoch):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


def args_line(args):
    return "Args: md-workbench" + "".join(f' "{a}"' for a in args)


def expected_args(path, extra, repeats=None):
    """md-workbench's arguments of the runs fixture's run."""
    read_only = bool(extra)
    args = ["-a", "POSIX", "-D", "2", "-P", "40", "-I", "25", "-S", "1000", "-R",
            str(repeats or (2 if read_only else 3)), "-O", "1", "-o", str(path.parent / "root"), "-G", "0"]
    return args + (["--read-only", "-2"] if read_only else [])


@pytest.mark.parametrize("name", ["n1", "n3", "ro"])
def test_header_and_footer_are_md_workbenchs(runs, name):
    path, doc, numjobs, extra = runs[name]
    repeats = 2 if extra else 3
    elapsed = max(j["elapsed"] for j in doc["jobs"])
    proc = report(path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == args_line(expected_args(path, extra))
    assert lines[1] == "Nodemap: " + "1" * numjobs
    assert lines[2] == (f"MD-Workbench total objects: {2 * (25 * repeats + 40) * numjobs} workingset size: "
                        f"{numjobs * 2 * 40 * 1000 / 2**20:.3f} MiB (version: mdfio-0.1.0/{doc['fio version']}) "
                        f"time: {local(doc['timestamp'] - elapsed)}")
    phases = [ln.split(" ", 1)[0] for ln in lines[3:-1]]
    assert phases == (["benchmark"] * 2 if extra else ["precreate"] + ["benchmark"] * 3 + ["cleanup"])
    assert lines[-1] == f"Total runtime: {elapsed}s time: {local(doc['timestamp'])}"


@pytest.mark.parametrize("issue", [None, "ring", "syscall", "auto"])
def test_the_header_names_issue_auto(tmpfs, tmp_path, issue):
    """mdfio-uring issues every call through the ring unless its jobfile
    says otherwise; where a job chose (issue=auto), the header says so, after
    md-workbench's lines, and -q keeps md-workbench's Args alone."""
    if io_uring_missing():
        pytest.skip(f"mdfio-uring needs io_uring: {io_uring_missing()}")
    opts = dict(datasets=2, precreate_per_set=10, steps_per_set=5, iodepth=4, **({"issue": issue} if issue else {}))
    run_fio(job(["precreate", "benchmark", "cleanup"], tmpfs, engine="uring", **opts), tmp_path,
            args=["--output-format=json+"], check=True)
    path = sorted(tmp_path.glob("job-*.json"))[-1]
    lines = report(path).stdout.splitlines()
    named = [ln for ln in lines if ln.startswith("mdfio-uring issue=auto:")]
    assert named == ([] if issue != "auto" else [
        "mdfio-uring issue=auto: each job chose between io_uring and system calls, and one that moved to the "
        "ring mid-phase said so on fio's error output"]), lines
    assert lines[2].startswith("MD-Workbench total objects: ") and lines[4 if named else 3].startswith("precreate ")
    assert not [ln for ln in report(path, "-q").stdout.splitlines() if ln.startswith("mdfio-uring")]


def test_quiet_is_md_workbenchs(runs):
    """md-workbench -q prints Args (before it reads -q) and the Nodemap,
    no header or footer, and no error count without errors."""
    path = runs["n3"][0]
    full = report(path, "--process-reports").stdout.splitlines()
    proc = report(path, "-q", "--process-reports")
    assert proc.returncode == 0, proc.stderr
    quiet = proc.stdout.splitlines()
    assert quiet[:2] == full[:2]
    assert all(" (0 errs)" in ln for ln in full[3:-1])
    assert quiet[2:] == [ln.replace(" (0 errs)", "") for ln in full[3:-1]]
    assert report(path, "--quiet", "--process-reports").stdout == proc.stdout


def test_detailed_stats_from_the_raw_json(runs):
    path, doc, numjobs, _ = runs["n3"]
    jobs = doc["jobs"]
    want = ["phase\t\td name\tcreate\tdelete\tob nam\tcreate\tread\tstat\tdelete\tt_inc_b\tt_no_bar\tthp\tmax_t"]
    head = {"precreate": "write", "benchmark": "read", "cleanup": "trim"}
    names = list(dict.fromkeys(j["jobname"] for j in jobs))
    for name in names:
        group = [j for j in jobs if j["jobname"] == name]
        phase = name.rsplit("-", 1)[0]
        count = {op: sum(j[SLOT[op][0]][SLOT[op][1]]["N"] for j in group) for op in OPS}
        t = max(phase_s(j, head[phase]) for j in group)
        op_max = max(j[SLOT[op][0]][SLOT[op][1]]["max"] for j in group for op in OPS if j[SLOT[op][0]][SLOT[op][1]]["N"])
        tp = (count["create"] + count["read"]) * 1000 / t / 2**20
        dsets = 2 * numjobs
        made, removed = {"precreate": (dsets, 0), "cleanup": (0, dsets)}.get(phase, (0, 0))
        want.append(f"{phase} \t{made}\t{removed}\t{count['create']}\t{count['read']}\t{count['stat']}\t"
                    f"{count['delete']}\t{t:.3f}s\t{t:.3f}s\t{tp:.2f} MiB/s {op_max / 1e9:.4e}")
    proc = report(path, "--print-detailed-stats")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[3:-1] == want
    quiet = report(path, "--print-detailed-stats", "-q").stdout.splitlines()
    assert quiet == lines[:2] + want[1:]
    per_process = report(path, "--print-detailed-stats", "--process-reports").stdout.splitlines()
    assert [ln.split(":")[0] for ln in per_process if re.match(r"\d+: ", ln)] == [str(r) for r in range(numjobs)] * len(names)


def test_md_workbench_2020_prints_its_options_as_lines(runs):
    path, doc, numjobs, extra = runs["ro"]
    root = path.parent / "root"
    lines = report(path, "--format", "md-workbench-2020").stdout.splitlines()
    engine = doc["global options"]["ioengine"] if "ioengine" in doc.get("global options", {}) else \
        doc["jobs"][0]["job options"]["ioengine"]
    assert lines[0] == args_line(expected_args(path, extra))
    assert lines[1].startswith("MD-Workbench total objects: ")
    blank = lines.index("")
    assert lines[2:blank] == ["\toffset=1 ", "\tapi=POSIX", "\tobj-per-proc=25 ", "\tlatency=",
                              "\tprecreate-per-set=40 ", "\tdata-sets=2 ", f"\to={root}", "\tobject-size=1000 ",
                              "\titerations=2 ", "\twaiting-time=0.000000 ", "\tstonewall-timer=0 ",
                              "\tstart-item=0", "\trun-info-file=md-workbench.status", "\trun-benchmark",
                              "\tread-only", f"\tinterface={engine}", "\tiodepth=1", f"\tranks={numjobs}"]
    # min and mean with one decimal, as md-workbench printed them then
    assert all(re.search(r" min:[0-9.]+s mean: [0-9.]+s ", ln) and re.search(r" min:\d+\.\ds ", ln)
               for ln in lines[blank + 1:-1])
    assert lines[-1].startswith("Total runtime: ")
    quiet = report(path, "--format", "md-workbench-2020", "-q").stdout.splitlines()
    assert quiet[0] == lines[0] and all(ln.startswith("benchmark process max:") for ln in quiet[1:])


@pytest.mark.parametrize("args", [["--json", "-q"], ["--csv", "--print-detailed-stats"],
                                  ["--format", "md-real-io-2017", "-q"]])
def test_quiet_and_detailed_need_an_md_workbench_format(runs, args):
    proc = report(runs["n1"][0], *args)
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "expected with --format md-workbench" in proc.stderr


def with_options(doc, path, options):
    """doc with each job's options updated by options(jobname), written to
    path: the JSON of a run whose jobfile set them."""
    for j in doc["jobs"]:
        j["job options"].update(options(j["jobname"]))
    path.write_text(json.dumps(doc))
    return path


def test_args_name_every_option_that_differs_from_md_workbenchs(runs, tmp_path):
    """The engine options of md-workbench's -w -W -t -L --latency-all
    --run-info-file --ignore-precreate-errors -v --dataPacketType
    --start-item, as a jobfile sets them."""
    path, doc, _, _ = runs["n1"]
    opts = {"stonewall_timer": "5", "stonewall_wear_out": "1", "latency_all": "true",
            "run_info_file": "pos.txt", "ignore_precreate_errors": "yes", "verbose": "2", "data_packet_type": "r",
            "start_index": "7", "latency_log": "/tmp/lat", "random_seed": "-5"}
    edited = with_options(json.loads(json.dumps(doc)), tmp_path / "o.json",
                          lambda name: {**opts, **({"waiting_factor": "0.25"} if name.startswith("benchmark") else {})})
    lines = report(edited).stdout.splitlines()
    base = expected_args(path, {})
    base[base.index("-G") + 1] = "-5"
    assert lines[0] == args_line(base + ["--dataPacketType", "r", "--start-item", "7", "-w", "5", "-W",
                                         "-t", "0.25", "-L", "/tmp/lat", "--latency-all", "--ignore-precreate-errors",
                                         "--run-info-file", "pos.txt", "-v", "-v"])
    bad = with_options(json.loads(json.dumps(doc)), tmp_path / "b.json", lambda name: {"waiting_factor": "fast"})
    proc = report(bad)
    assert proc.returncode == 2 and "waiting_factor='fast', expected a number from 0 to 1e6" in proc.stderr


def test_adaptive_waiting_is_minus_t_capital(tmpfs, tmp_path):
    """Eight benchmark sections per repeat with md-workbench -T's factors
    and adaptive_waiting=1 (tools/mdfio-jobfile -T) are -T; the same factor
    in every section is -t."""
    opts = dict(numjobs=1, datasets=1, precreate_per_set=20, steps_per_set=2, bs=100)
    run = run_fio(job(["precreate"] + ["benchmark"] * 16 + ["cleanup"], tmpfs, **opts), tmp_path,
                  args=["--output-format=json+"], check=True)
    factors = ["0", "0.0625", "0.125", "0.25", "0.5", "1", "2", "4"] * 2
    names = [j["jobname"] for j in run.json["jobs"] if j["jobname"].startswith("benchmark")]
    adaptive = with_options(json.loads(json.dumps(run.json)), tmp_path / "t.json",
                            lambda name: {"waiting_factor": factors[names.index(name)], "adaptive_waiting": "1"}
                            if name in names else {})
    lines = report(adaptive).stdout.splitlines()
    assert '"-R" "2"' in lines[0] and lines[0].endswith('"-G" "0" "-T"'), lines[0]
    same = with_options(json.loads(json.dumps(run.json)), tmp_path / "s.json",
                        lambda name: {"waiting_factor": "0.5"} if name in names else {})
    assert report(same).stdout.splitlines()[0].endswith(f'"-R" "16" "-O" "1" "-o" "{tmpfs}" "-G" "0" "-t" "0.5"')
