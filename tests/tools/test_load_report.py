"""tools/mdfio-report on a run of md-workbench under data load
(tools/mdfio-jobfile --under-load): its comparison recomputed here from
fio's JSON, a data job's error and a data job outside the loaded benchmark
said with exit status 1. The jobfile itself: tests/jobfiles/
test_md_workbench_under_load.py."""
import json
import subprocess

import pytest

from conftest import SOURCE_ROOT, mounted_tmpfs, run_under_load

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
OPS = ("create", "stat", "read", "delete")
SLOT = {"create": ("write", "clat_ns"), "read": ("read", "clat_ns"),
        "delete": ("trim", "clat_ns"), "stat": ("sync", "lat_ns")}
QUANTILES = ("q1_s", "median_s", "q3_s", "q90_s", "q99_s")


def report(path, *args):
    return subprocess.run([str(REPORT), *args, str(path)], capture_output=True, text=True, timeout=60)


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """One run of one benchmark repeat: (path of its json+ output, the JSON)."""
    with mounted_tmpfs() as fs:
        _, path = run_under_load(fs, tmp_path_factory.mktemp("load-report"), repeats=1)
    return path, json.loads(path.read_text())


def job(doc, name):
    (j,) = [j for j in doc["jobs"] if j["jobname"] == name]
    return j


def samples(lat):
    out = []
    for v, c in sorted(lat["bins"].items(), key=lambda x: int(x[0])):
        out += [int(v)] * c
    return out


def benchmark_figures(j):
    """md-workbench's figures of a one-rank benchmark section, from fio's
    JSON: T is the engine's exact phase time (slat_ns of read), a step is
    4 operations, quantiles as IOR takes them from the histogram."""
    t = j["read"]["slat_ns"]["max"] / 1e9
    objects = j["read"]["clat_ns"]["N"]
    out = {"t_max_s": t, "iops": objects * 4 / t, "obj_per_s": objects / t,
           "tp_mib_per_s": (j["write"]["clat_ns"]["N"] + objects) * 3901 / t / 2**20}
    for op in OPS:
        lat = j[SLOT[op][0]][SLOT[op][1]]
        s, n = samples(lat), lat["N"]
        q = lambda x: s[round(x * (n - 1) + 0.49)]
        med = s[n // 2] if n % 2 else (s[n // 2] + s[n // 2 - 1]) / 2
        for k, v in zip(QUANTILES, (q(0.25), med, q(0.75), q(0.90), q(0.99))):
            out[f"{op}_{k}"] = min(max(v, lat["min"]), lat["max"]) / 1e9
    return out


def data_figures(j, slot):
    """A data job's figures as fio wrote them."""
    s = j[slot]
    return {"mib_per_s": s["bw_bytes"] / 2**20, "iops": s["iops"],
            "p50_s": s["clat_ns"]["percentile"]["50.000000"] / 1e9,
            "p99_s": s["clat_ns"]["percentile"]["99.000000"] / 1e9, "runtime_s": j["job_runtime"] / 1000}


def test_the_comparison_is_fio_s_json(loaded):
    path, doc = loaded
    proc = report(path, "--json")
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    got = json.loads(proc.stdout)
    (bench,) = got["benchmark"]
    alone, under = (benchmark_figures(job(doc, name)) for name in ("benchmark-1", "loaded-benchmark-1"))
    for key in alone:
        assert bench["alone"][key] == pytest.approx(alone[key], rel=1e-12), key
        assert bench["loaded"][key] == pytest.approx(under[key], rel=1e-12), key
        assert bench["ratio"][key] == pytest.approx(under[key] / alone[key], rel=1e-12), key
    assert [(d["job"], d["slot"]) for d in got["data"]] == [("load-write", "write"), ("load-randread", "read")]
    for d in got["data"]:
        a, b = (data_figures(job(doc, name), d["slot"]) for name in (d["job"] + "-alone", d["job"]))
        for key in a:
            assert d["alone"][key] == pytest.approx(a[key], rel=1e-12), (d["job"], key)
            assert d["loaded"][key] == pytest.approx(b[key], rel=1e-12), (d["job"], key)
            assert d["ratio"][key] == pytest.approx(b[key] / a[key], rel=1e-12), (d["job"], key)
    assert got["window"]["fio_groups"] == [job(doc, "loaded-benchmark-1")["groupid"]]
    assert got["problems"] == []


def test_the_text_has_the_same_figures(loaded):
    path, doc = loaded
    proc = report(path)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("md-workbench under data load (version: ")
    assert lines[1].startswith('Args: md-workbench "-a" "POSIX" "-D" "4" "-P" "10000" "-I" "10000"')
    alone, under = (benchmark_figures(job(doc, name)) for name in ("benchmark-1", "loaded-benchmark-1"))
    rows = {tuple(line.split()[:-3]): line.split()[-3:] for line in lines if line.startswith("  ")}
    assert rows[("rate", "iops/s")] == [f"{alone['iops']:.1f}", f"{under['iops']:.1f}",
                                        f"{under['iops'] / alone['iops']:.3f}"]
    assert rows[("read", "q99")][:2] == [f"{alone['read_q99_s']:.4e}s", f"{under['read_q99_s']:.4e}s"]
    a, b = (data_figures(job(doc, name), "write") for name in ("load-write-alone", "load-write"))
    i = lines.index(next(line for line in lines if line.startswith("data load-write (write)")))
    assert lines[i + 1].split() == ["MiB/s", f"{a['mib_per_s']:.1f}", f"{b['mib_per_s']:.1f}",
                                    f"{b['mib_per_s'] / a['mib_per_s']:.3f}"]
    longest = max(job(doc, name)["job_runtime"] for name in ("load-write", "load-randread")) / 1000
    bench_s = job(doc, "loaded-benchmark-1")["read"]["slat_ns"]["max"] / 1e9
    assert lines[-2] == (f"data jobs under load: in fio group {job(doc, 'load-write')['groupid']} with the loaded "
                         f"benchmark repeats; the longest ran {longest:.3f} s, the benchmark {bench_s:.3f} s")
    assert lines[-1].startswith("Total runtime: ")


def test_a_data_job_error_is_said(tmp_path):
    """The write jobs' file is a directory: fio fails them, md-workbench
    runs as ever; the report says which data job failed, exit status 1."""
    with mounted_tmpfs() as fs:
        (fs / "out.load" / "write.dat").mkdir(parents=True)
        run, path = run_under_load(fs, tmp_path, repeats=1, check=False)
    assert run.rc != 0
    assert job(run.json, "load-write")["error"] != 0 and job(run.json, "loaded-benchmark-1")["error"] == 0
    proc = report(path)
    assert proc.returncode == 1, proc.stderr
    error = job(run.json, "load-write")["error"]
    said = f"data job load-write (under load) ended with fio error {error}: its figures are not the workload's"
    assert f"PROBLEM: {said}" in proc.stdout.splitlines()
    assert f"mdfio-report: {path}: {said}" in proc.stderr.splitlines()
    assert json.loads(report(path, "--json").stdout)["problems"][:2] == [
        f"data job load-write-alone (alone) ended with fio error {error}: its figures are not the workload's", said]


def edited(tmp_path, doc, change):
    doc = json.loads(json.dumps(doc))
    change(doc)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(doc))
    return path


def test_a_data_job_beside_another_phase_is_said(loaded, tmp_path):
    """A data job in the loaded precreate's group, or longer than the
    loaded benchmark, did not run only beside it: exit status 1."""
    _, doc = loaded
    group = job(doc, "loaded-precreate")["groupid"]
    path = edited(tmp_path, doc, lambda d: job(d, "load-randread").update(groupid=group))
    proc = report(path)
    assert proc.returncode == 1
    assert (f"data job load-randread ran in fio group {group}, not (only) in the loaded benchmark's "
            f"({job(doc, 'loaded-benchmark-1')['groupid']})") in proc.stderr
    longer = job(doc, "loaded-benchmark-1")["read"]["slat_ns"]["max"] // 10**6 + 500
    path = edited(tmp_path, doc, lambda d: job(d, "load-write").update(job_runtime=longer))
    proc = report(path)
    assert proc.returncode == 1 and f"data job load-write ran {longer / 1000:.3f} s, beyond the loaded" in proc.stderr


@pytest.mark.parametrize("args", [["--csv"], ["--format", "md-real-io-2017"], ["--process-reports"], ["-q"]])
def test_what_the_comparison_has_not_is_refused(loaded, args):
    path, _ = loaded
    proc = report(path, *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.endswith("a run under data load is reported as its comparison (text or --json), and not "
                                "recorded\n"), proc.stderr
