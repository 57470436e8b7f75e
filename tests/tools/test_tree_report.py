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
