"""md-workbench's waiting time (waiting_factor, -t; adaptive_waiting, -T)
and its -v output (verbose), with real fio on tmpfs."""
import os

import pytest

from conftest import ENGINES, job, run_fio

SLOT = {"create": ("write", "clat_ns"), "read": ("read", "clat_ns"),
        "delete": ("trim", "clat_ns"), "stat": ("sync", "lat_ns")}


@pytest.mark.parametrize("engine", ENGINES)
def test_each_benchmark_operation_is_followed_by_its_wait(tmpfs, tmp_path, engine):
    """The rank waits F times each operation's time after it: outside the
    operation's latency, inside the phase's time, so the phase lasts at
    least F times the sum of its operations' latencies (every wait is at
    least its share, whatever the machine's speed); the precreate and
    cleanup do not wait."""
    factor = 4
    run = run_fio(job(["precreate", "benchmark", "cleanup"], tmpfs, engine=engine, numjobs=2, datasets=2,
                      precreate_per_set=20, steps_per_set=10, bs=100, waiting_factor=factor), tmp_path,
                  check=True)
    for j in run.jobs("benchmark-1"):
        ops = sum(j[slot][kind]["mean"] * j[slot][kind]["N"] for slot, kind in SLOT.values())
        assert all(j[slot][kind]["N"] == 20 for slot, kind in SLOT.values()), j
        assert j["read"]["slat_ns"]["max"] >= factor * ops, (j["read"]["slat_ns"], ops)


@pytest.mark.parametrize("engine", ["uring", "aio"])
def test_a_waiting_factor_with_units_in_flight_is_one_line(tmpfs, tmp_path, engine):
    """md-workbench waits after each operation of one process: with units
    in flight a wait would hold up the completions of the others and be
    counted in their times, so waiting_factor needs iodepth=1."""
    run = run_fio(job(["precreate", "benchmark"], tmpfs, engine=engine, numjobs=2, datasets=1,
                      precreate_per_set=2, steps_per_set=1, iodepth=4, waiting_factor=0.5), tmp_path, check=False)
    assert run.rc != 0
    assert run.mdfio_lines() == ["mdfio: waiting_factor=0.5 needs iodepth=1 (md-workbench -t waits after each "
                                 "operation of one process; with units in flight a wait would be counted in the "
                                 "times of the others)"], run.stderr
    assert os.listdir(tmpfs) == []


@pytest.mark.parametrize("value", ["-1", "nan", "inf", "1e7", "x", "0.5x"])
def test_a_waiting_factor_out_of_range_is_one_line(tmpfs, tmp_path, value):
    run = run_fio(job(["precreate"], tmpfs, datasets=1, precreate_per_set=2, waiting_factor=value),
                  tmp_path, check=False)
    assert run.rc != 0
    lines = run.mdfio_lines()
    assert len(lines) == 1 and lines[0].startswith(f"mdfio: waiting_factor={value}: expected a number from 0 to "), \
        run.stderr
    assert os.listdir(tmpfs) == []


def md_workbench_trace(root, rank):
    """What IOR's md-workbench -v -v prints for rank of 2 ranks with -D 2
    -P 2 -I 1 -R 1 (recorded from the real program, its -o root)."""
    other = 1 - rank
    r = f"{root}"
    pre = [f"{rank}: write {r}/{rank}_1:{r}/{rank}_{d}/file-{i} (0) pretend: {rank}" for i in (0, 1) for d in (0, 1)]
    # dataset d reads from rank (r - (d+1)) mod 2 and writes to (r + d + 1) mod 2
    peer = {0: other, 1: rank}
    bench = []
    for d in (0, 1):
        bench += [f"{rank}: stat {r}/{peer[d]}_{d}/file-0 (0)", f"{rank}: read {r}/{peer[d]}_{d}/file-0 pretend: {peer[d]}",
                  f"{rank}: delete {r}/{peer[d]}_{d}/file-0", f"{rank}: write {r}/{peer[d]}_{d}/file-2 (0) pretend: {peer[d]}"]
    clean = []
    for d in (0, 1):
        clean += [f"{rank}: delete {r}/{rank}_{d}/file-1", f"{rank}: delete {r}/{rank}_{d}/file-2",
                  f"{rank}: delete dset {r}/{rank}_{d}"]
    return pre + bench + clean


@pytest.mark.parametrize("engine", ENGINES)
def test_verbose_2_traces_every_operation_as_md_workbench(tmpfs, tmp_path, engine):
    root = tmpfs / "r"
    root.mkdir()
    run = run_fio(job(["precreate", "benchmark", "cleanup"], root, engine=engine, numjobs=2, datasets=2,
                      precreate_per_set=2, steps_per_set=1, bs=100, verbose=2), tmp_path, check=True)
    lines = run.stderr.splitlines()
    for rank in (0, 1):
        assert [x for x in lines if x.startswith(f"{rank}: ")] == md_workbench_trace(root, rank), run.stderr
    assert all(x.startswith(("0: ", "1: ")) or not x.strip() for x in lines), run.stderr
    assert '"jobs"' in (tmp_path / "job-0.json").read_text()


def test_verbose_1_says_md_workbench_s_error_lines_only(tmpfs, tmp_path):
    """A stat that fails (an object gone) is md-workbench's ERROR line at
    -v; nothing is traced; without verbose there is no such line."""
    opts = dict(numjobs=1, datasets=1, precreate_per_set=3, steps_per_set=2, bs=100)
    run_fio(job(["precreate"], tmpfs, **opts), tmp_path, check=True)
    (tmpfs / "0_0" / "file-0").unlink()
    run = run_fio(job(["benchmark"], tmpfs, verbose=1, **opts), tmp_path, check=False)
    assert run.rc != 0     # the failed stat fails the job, as every error does
    lines = [x for x in run.stderr.splitlines() if not x.startswith("mdfio:") and x.strip()]
    assert lines == [f"ERROR: 0: Error while stating the obj: {tmpfs}/0_0/file-0"], run.stderr
    (tmpfs / "0_0" / "file-2").unlink()
    run = run_fio(job(["benchmark"], tmpfs, **opts), tmp_path, check=False)
    assert run.rc != 0
    assert [x for x in run.stderr.splitlines() if not x.startswith("mdfio:") and x.strip()] == [], run.stderr


# md-workbench -T: per iteration its plain run, then these factors
ADAPTIVE = [0, 0.0625, 0.125, 0.25, 0.5, 1, 2, 4]


def adaptive_jobfile(root, logs, repeats):
    """The jobfile shape of md-workbench -T (docs/engines.md): 8 benchmark
    sections per repeat, all with that repeat= and adaptive_waiting=1, each
    with its waiting_factor; the cleanup with adaptive_waiting=1 and the
    factor md-workbench is left with (8)."""
    from conftest import engine_path
    lines = ["[global]", f"ioengine=external:{engine_path()}", f"directory={root}", "numjobs=2", "bs=100",
             "datasets=1", "precreate_per_set=4", "steps_per_set=1", f"repeats={repeats}",
             f"latency_log={logs}", "", "[precreate]", "phase=precreate"]
    for k in range(1, repeats + 1):
        for m, f in enumerate(ADAPTIVE):
            lines += ["", f"[benchmark-{k}-{m}]", "stonewall", "phase=benchmark", f"repeat={k}",
                      "adaptive_waiting=1", f"waiting_factor={f}"]
    lines += ["", "[cleanup]", "stonewall", "phase=cleanup", "adaptive_waiting=1", "waiting_factor=8"]
    return "\n".join(lines) + "\n"


def test_adaptive_waiting_shape_names_logs_and_reports_as_md_workbench(tmpfs, tmp_path):
    import subprocess
    import sys
    from conftest import SOURCE_ROOT
    root, logs = tmpfs / "r", tmpfs / "logs"
    root.mkdir()
    logs.mkdir()
    run_fio(adaptive_jobfile(root, logs / "lat", 2), tmp_path, check=True)
    names = {"0.00-0-precreate.csv", "8.00-2-cleanup.csv"}
    for it in (0, 1):
        for f in ("0.00", "0.06", "0.12", "0.25", "0.50", "1.00", "2.00", "4.00"):
            names |= {f"{f}-{it}-{op}.csv" for op in ("read", "stat", "create", "delete")}
    assert sorted(p.name for p in logs.iterdir()) == sorted(f"lat-{n}" for n in names)
    assert os.listdir(root) == []
    report = subprocess.run([sys.executable, str(SOURCE_ROOT / "tools" / "mdfio-report"), str(tmp_path / "job-0.json")],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    # md-workbench's header counts -R iterations: D*(I*R+P)*N objects
    assert report[0].startswith('Args: md-workbench ') and ' "-R" "2" ' in report[0] and '"-T"' in report[0], report
    assert report[2].startswith("MD-Workbench total objects: 12 "), report
    bench = [x for x in report if x.startswith("benchmark ")]
    assert len(bench) == 16
    for line, f in zip(bench, ADAPTIVE * 2):
        assert ("waiting_factor:" in line) == (f > 0), line
        if f:
            assert " op-max:" in line and f" waiting_factor:{f:.2f} (0 errs)" in line, line
