"""mdfio-report on the JSON of mdfio-tree, the tree study: each phase's
time, names per second, MiB/s and operation quantiles as fio's JSON holds
them (read through fiojson, as md-workbench's are), a run with errors
exiting 1, and what the report cannot do for the study refused in one
line."""
import json
import os
import subprocess
import sys

import pytest

from conftest import SOURCE_ROOT, engine_path, run_fio

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
PHASES = [("copy", {}), ("find", {"find_iname": "*a*:*e*"}), ("read", {"numjobs": 3}),
          ("rewrite", {"numjobs": 2}), ("delete", {})]
HEADLINE = {"copy": "write", "find": "read", "read": "read", "rewrite": "write", "delete": "trim"}


def jobtext(root, src, phases=PHASES):
    lines = ["[global]", f"ioengine=external:{engine_path('tree')}", f"directory={root}"]
    for i, (phase, opts) in enumerate(phases):
        lines += ["", f"[{phase}-{i}]", "stonewall", f"phase={phase}"]
        lines += [f"tree_source={src}"] if phase == "copy" else []
        lines += [f"{k}={v}" for k, v in opts.items()]
    return "\n".join(lines) + "\n"


def report(*args):
    return subprocess.run([sys.executable, str(REPORT), *map(str, args)], capture_output=True, text=True,
                          timeout=60)


@pytest.fixture
def study(tmp_path):
    src = tmp_path / "src"
    for d in range(4):
        (src / f"dir{d}").mkdir(parents=True)
        for f in range(12):
            (src / f"dir{d}" / f"file-{f}.txt").write_bytes(os.urandom(100 * (f + 1)))
    os.symlink("dir0", src / "link")
    root = tmp_path / "fs"
    root.mkdir()
    run = run_fio(jobtext(root, src), tmp_path, args=["--output-format=json+"], check=True)
    return run, tmp_path / "job-0.json"


def nth(bins, k):
    """The k-th sample of a json+ histogram, counted out one by one."""
    samples = [int(v) for v, c in sorted(bins.items(), key=lambda kv: int(kv[0])) for _ in range(c)]
    return samples[k]


def test_figures_are_fios(study):
    run, path = study
    out = report("--json", path)
    assert out.returncode == 0, out.stderr
    phases = json.loads(out.stdout)["phases"]
    assert [p["phase"] for p in phases] == [p for p, _ in PHASES]
    for p in phases:
        jobs = run.jobs(p["section"])
        head = HEADLINE[p["phase"]]
        t = max(j[head]["slat_ns"]["max"] for j in jobs) / 1e9
        assert p["ranks"] == len(jobs) and p["t_s"] == t
        names = (sum(j["read"]["short_ios"] for j in jobs) if p["phase"] == "find"
                 else sum(j[head]["total_ios"] for j in jobs))
        assert p["names"] == names and p["names_per_s"] == names / t
        moved = sum(j[head]["io_bytes"] for j in jobs)
        assert p["bytes"] == moved
        assert p["mib_per_s"] == (None if p["phase"] in ("find", "delete") else moved / 2**20 / t)
        first = p["ops"][0]
        lat = [j[head]["clat_ns"] for j in jobs]
        n = sum(x["N"] for x in lat)
        assert first["count"] == n and first["errors"] == 0
        assert first["min_s"] == min(x["min"] for x in lat if x["N"]) / 1e9
        assert first["max_s"] == max(x["max"] for x in lat if x["N"]) / 1e9
        bins = {}
        for x in lat:
            for v, c in x["bins"].items():
                bins[v] = bins.get(v, 0) + c
        median = nth(bins, n // 2) if n % 2 else (nth(bins, n // 2 - 1) + nth(bins, n // 2)) / 2
        median = min(max(median, first["min_s"] * 1e9), first["max_s"] * 1e9)
        assert first["median_s"] == median / 1e9
    assert phases[1]["matched"] == run.jobs("find-1")[0]["write"]["short_ios"] > 0
    # the lines say the same
    lines = report(path).stdout.splitlines()
    copy = lines[1].split()
    assert copy[0] == "copy-0" and int(copy[3]) == phases[0]["names"]
    assert copy[2] == f"{phases[0]['t_s']:.6f}"


def test_a_run_with_errors_exits_1(study, tmp_path):
    _, _ = study
    src, root = tmp_path / "src", tmp_path / "fs2"
    root.mkdir()
    run_fio(jobtext(root, src, [("copy", {})]), tmp_path, check=True)
    victim = root / "tree" / "dir1" / "file-3.txt"
    os.rename(victim, tmp_path / "kept")
    victim.write_text("not the copy's\n")
    run_fio(jobtext(root, src, [("rewrite", {})]), tmp_path, args=["--output-format=json+"], check=False)
    out = report(tmp_path / "job-2.json")
    assert out.returncode == 1
    row = out.stdout.splitlines()[1].split()
    assert row[0] == "rewrite-0" and row[-1] == "1"
    assert "ended with fio error 5" in out.stderr
    assert victim.read_text() == "not the copy's\n"


@pytest.mark.parametrize("args, says", [
    (["--format", "md-real-io-2016"], "--format md-real-io-2016 is md-workbench's"),
    (["--csv"], "--format csv is md-workbench's"),
    (["--process-reports"], "--process-reports is md-workbench's"),
    (["--record", "{tmp}/h.db", "--html", "{tmp}/p.html"], "--html: a run of tree has no page"),
])
def test_what_the_study_has_not_is_refused(study, tmp_path, args, says):
    _, path = study
    out = report(*[a.format(tmp=tmp_path) for a in args], path)
    assert out.returncode == 2 and out.stdout == ""
    assert out.stderr.count("\n") == 1 and says in out.stderr, out.stderr


@pytest.fixture
def no_share(tmp_path):
    """A run whose read and rewrite have more ranks than the copy made
    files: two ranks of each have no share."""
    src = tmp_path / "few"
    (src / "d").mkdir(parents=True)
    for f in range(3):
        (src / "d" / f"file-{f}").write_bytes(os.urandom(300 * (f + 1)))
    root, out = tmp_path / "fs-few", tmp_path / "few-run"
    root.mkdir()
    out.mkdir()
    phases = [("copy", {}), ("read", {"numjobs": 5}), ("rewrite", {"numjobs": 5, "rewrite_size": 700}),
              ("delete", {})]
    run = run_fio(jobtext(root, src, phases), out, args=["--output-format=json+"], check=True)
    return run, out / "job-0.json"


def split_phases(doc):
    """The read's and rewrite's jobs of a run's document, by section."""
    return {s: [j for j in doc["jobs"] if j["jobname"] == s] for s in ("read-1", "rewrite-2")}


def test_ranks_with_no_share_count_in_the_figures(no_share):
    """A rank with no file of a split phase reports no unit and its own
    time, from the barrier's release to its end at once: the phase's
    figures are its ranks' with it, T the largest time of them all."""
    run, path = no_share
    out = report("--json", path)
    assert out.returncode == 0, out.stderr
    phases = {p["section"]: p for p in json.loads(out.stdout)["phases"]}
    for section, jobs in split_phases({"jobs": run.jobs()}).items():
        head = HEADLINE[phases[section]["phase"]]
        assert sorted(j[head]["total_ios"] for j in jobs) == [0, 0, 1, 1, 1]
        assert all(j[head]["slat_ns"]["N"] == 1 and j["error"] == 0 for j in jobs)
        t = max(j[head]["slat_ns"]["max"] for j in jobs) / 1e9
        p = phases[section]
        assert (p["ranks"], p["names"], p["t_s"], p["names_per_s"], p["errors"]) == (5, 3, t, 3 / t, 0)
        assert p["bytes"] == (300 + 600 + 900 if head == "read" else 3 * 700)
        assert p["mib_per_s"] == p["bytes"] / 2**20 / t
        assert (p["ops"][0]["count"], p["ops"][0]["errors"]) == (3, 0)


def test_a_phase_time_of_0_only_for_a_rank_with_no_unit(no_share, tmp_path):
    """The engine records 0 ns only for a rank with no unit of its phase
    (its clock may not have moved by its end): such a time is read as
    it is; of a rank with a unit, it is refused in one line naming the
    file, the job and the phase."""
    _, path = no_share
    text = path.read_text()
    doc = json.loads(text[text.index("{"):])
    idle = [j for j in split_phases(doc)["read-1"] if not j["read"]["total_ios"]]
    idle[0]["read"]["slat_ns"].update(min=0, max=0, mean=0.0)
    zero = tmp_path / "idle-0.json"
    zero.write_text(json.dumps(doc))
    out = report("--json", zero)
    assert out.returncode == 0, out.stderr
    read = [p for p in json.loads(out.stdout)["phases"] if p["section"] == "read-1"][0]
    assert read["t_s"] == max(j["read"]["slat_ns"]["max"] for j in split_phases(doc)["read-1"]) / 1e9
    assert read["names"] == 3

    worker = [j for j in split_phases(doc)["read-1"] if j["read"]["total_ios"]][0]
    worker["read"]["slat_ns"].update(min=0, max=0, mean=0.0)
    bad = tmp_path / "worker-0.json"
    bad.write_text(json.dumps(doc))
    for fmt in ([], ["--json"]):
        out = report(*fmt, bad)
        assert out.returncode == 2 and out.stdout == "" and out.stderr.count("\n") == 1, out.stderr
        assert out.stderr.startswith(f"mdfio-report: {bad}: job read-1: phase read: a phase time of 0 ns "), \
            out.stderr
        assert "attempted 1 operation (total_ios)" in out.stderr, out.stderr
