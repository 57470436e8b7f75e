"""jobfiles/md-workbench-under-load.fio (tools/mdfio-jobfile --under-load)
run by fio on a tmpfs: md-workbench alone, the data jobs alone, then both,
the data jobs beside the loaded benchmark repeats and nowhere else."""
import os
import subprocess
import sys

import pytest

from conftest import SOURCE_ROOT, UNDER_LOAD, UNDER_LOAD_MDW, fio_env, mounted_tmpfs, run_under_load

SHIPPED = SOURCE_ROOT / "jobfiles" / "md-workbench-under-load.fio"
REPEATS = 2


def test_the_shipped_jobfile_is_what_mdfio_jobfile_writes():
    """Written by the tool with every LOAD_* default and 3 repeats, so
    that the two never drift apart."""
    env = {k: v for k, v in fio_env().items() if not k.startswith("LOAD_") and k != "MDW_R"}
    proc = subprocess.run([sys.executable, str(SOURCE_ROOT / "tools" / "mdfio-jobfile"), "--under-load"],
                          capture_output=True, text=True, env=env, check=True, timeout=60)
    assert proc.stdout == SHIPPED.read_text()


@pytest.fixture(scope="module")
def loaded(tmp_path_factory):
    """One run of the jobfile, REPEATS benchmark repeats: (fio's JSON, the
    file system's entries after it, the entries of its data directory)."""
    with mounted_tmpfs() as fs:
        run, _ = run_under_load(fs, tmp_path_factory.mktemp("under-load"), REPEATS)
        yield run.json, sorted(os.listdir(fs)), sorted(os.listdir(fs / "out.load"))


def jobs(doc, prefix=""):
    return [j for j in doc["jobs"] if j["jobname"].startswith(prefix)]


def test_the_sections_run_in_order_each_in_its_stonewall_group(loaded):
    doc, _, _ = loaded
    names = [j["jobname"] for j in doc["jobs"]]
    bench = [f"benchmark-{k}" for k in range(1, REPEATS + 1)]
    assert names == (["load-read-layout", "precreate", *bench, "cleanup", "load-write-alone", "load-randread-alone",
                      "loaded-precreate", *(f"loaded-{b}" for b in bench), "load-write", "load-randread",
                      "loaded-cleanup"])
    group = {j["jobname"]: j["groupid"] for j in doc["jobs"]}
    # fio runs its groups one after another, in their order
    assert group["load-read-layout"] < group["precreate"] < group["benchmark-1"] < group["cleanup"] \
        < group["load-write-alone"] < group["loaded-precreate"] < group["loaded-benchmark-1"] \
        < group["loaded-cleanup"]
    assert all(j["error"] == 0 for j in doc["jobs"])


def test_the_data_jobs_ran_only_beside_the_loaded_benchmark(loaded):
    """fio 3.33's JSON has no start time per job: its stonewall group is
    what places a job in time. The data jobs under load share a group with
    the loaded benchmark repeats and with no other md-workbench section,
    and ran for LOAD_TIME per repeat, no longer than the repeats' time."""
    doc, _, _ = loaded
    mdfio = [j for j in doc["jobs"] if not j["jobname"].startswith("load-")]
    bench = {j["groupid"] for j in mdfio if j["jobname"].startswith("loaded-benchmark-")}
    others = {j["groupid"] for j in mdfio if not j["jobname"].startswith("loaded-benchmark-")}
    assert len(bench) == 1 and not bench & others
    under = [j for j in jobs(doc, "load-") if not j["jobname"].endswith(("-alone", "-layout"))]
    alone = [j for j in jobs(doc, "load-") if j["jobname"].endswith("-alone")]
    assert [j["jobname"] for j in under] == ["load-write", "load-randread"]
    assert all(j["groupid"] in bench for j in under)
    assert all(j["groupid"] not in bench | others for j in alone)
    # the exact phase time of each repeat (one rank): slat_ns of read
    bench_s = sum(j["read"]["slat_ns"]["max"] / 1e9 for j in mdfio if j["jobname"].startswith("loaded-benchmark-"))
    window_ms = REPEATS * int(UNDER_LOAD["LOAD_TIME"]) * 1000
    # the stonewall timer, not the steps, ended each repeat: fewer steps
    # than D x I, and a time of LOAD_TIME but for the end of a step
    steps = int(UNDER_LOAD_MDW["MDW_D"]) * int(UNDER_LOAD_MDW["MDW_I"])
    assert all(j["read"]["total_ios"] < steps for j in mdfio if j["jobname"].startswith("loaded-benchmark-"))
    assert bench_s >= window_ms / 1000 - 0.001 * REPEATS
    for j in under + alone:
        assert window_ms <= j["job_runtime"] <= bench_s * 1000 + 100, (j["jobname"], j["job_runtime"], bench_s)
    # the data jobs did I/O, each in its own slot
    assert all(j["write"]["io_bytes"] > 0 for j in under + alone if "write" in j["jobname"])
    assert all(j["read"]["io_bytes"] > 0 for j in under + alone if "randread" in j["jobname"])


def test_nothing_is_left_but_the_empty_data_directory(loaded):
    _, entries, data = loaded
    assert entries == ["out.load"] and data == []
