"""latency_log= (md-workbench -L) written by the engine, and fio's own
latency logs, against the operations in the same run's JSON."""
import os
import re
import subprocess

import pytest

from conftest import job, run_fio

SLOT = {"create": ("write", "clat_ns"), "read": ("read", "clat_ns"),
        "delete": ("trim", "clat_ns"), "stat": ("sync", "lat_ns")}


def rows(path):
    lines = path.read_text().splitlines()
    assert lines[0] == "time,runtime"
    out = []
    for line in lines[1:]:
        assert re.fullmatch(r"\d+\.\d{9},\d+\.\d{9}", line), line
        t, d = line.split(",")
        out.append((float(t), float(d)))
    return out


PLAN = {"precreate-0": (0, {"precreate": "create"}),
        "benchmark-1": (0, {op: op for op in ("read", "stat", "create", "delete")}),
        "benchmark-2": (1, {op: op for op in ("read", "stat", "create", "delete")}),
        "cleanup-3": (2, {"cleanup": "delete"})}
HEAD = {"precreate": "write", "benchmark": "read", "cleanup": "trim"}


def check_rank_log(path, j, section, op):
    """path holds exactly rank j's operations op of section, in time order."""
    got = rows(path)
    slot, kind = SLOT[op]
    lat = j[slot][kind]
    assert len(got) == lat["N"], (path, len(got), lat["N"])
    assert [t for t, _ in got] == sorted(t for t, _ in got)
    assert round(min(d for _, d in got) * 1e9) == lat["min"]
    assert round(max(d for _, d in got) * 1e9) == lat["max"]
    assert sum(d for _, d in got) * 1e9 / len(got) == pytest.approx(lat["mean"], rel=1e-6)
    # every row starts within the phase (its headline runtime)
    assert max(t for t, _ in got) < j[HEAD[section.split("-")[0]]]["runtime"] / 1000 + 0.05
    return got


def test_default_logs_are_rank_0s_alone_as_md_workbench_writes_them(tmpfs, tmp_path):
    """Without latency_all, md-workbench writes rank 0's own log of each
    operation under the plain name, and nothing of the other ranks."""
    root, logs = tmpfs / "root", tmpfs / "logs"
    root.mkdir()
    logs.mkdir()
    run = run_fio(job(["precreate", "benchmark", "benchmark", "cleanup"], root, numjobs=3, datasets=2,
                      precreate_per_set=30, steps_per_set=10, bs=200, latency_log=logs / "lat"),
                  tmp_path, check=True)
    expected_files = set()
    for section, (it, names) in PLAN.items():
        rank0 = run.jobs(section)[0]     # fio lists the clone of rank 0 first
        for name, op in names.items():
            path = logs / f"lat-0.00-{it}-{name}.csv"
            expected_files.add(path.name)
            check_rank_log(path, rank0, section, op)
    assert {p.name for p in logs.iterdir()} == expected_files
    assert os.listdir(root) == []


def test_latency_all_logs_every_rank_and_merges_them(tmpfs, tmp_path):
    """latency_all=1 (md-workbench --latency-all): the "-all" log of every
    operation holds every rank's rows in time order; no plain file; each
    rank's own file stays beside it."""
    root, logs = tmpfs / "root", tmpfs / "logs"
    root.mkdir()
    logs.mkdir()
    run = run_fio(job(["precreate", "benchmark", "benchmark", "cleanup"], root, numjobs=3, datasets=2,
                      precreate_per_set=30, steps_per_set=10, bs=200, latency_log=logs / "lat",
                      latency_all=1), tmp_path, check=True)
    expected_files = set()
    for section, (it, names) in PLAN.items():
        jobs = run.jobs(section)
        ranks = [0] + list(range(len(jobs) - 1, 0, -1))   # fio's order of clones
        for name, op in names.items():
            merged = []
            for rank, j in zip(ranks, jobs):
                path = logs / f"lat-0.00-{it}-{name}-rank{rank}.csv"
                expected_files.add(path.name)
                merged += check_rank_log(path, j, section, op)
            allfile = logs / f"lat-0.00-{it}-{name}-all.csv"
            expected_files.add(allfile.name)
            got = rows(allfile)
            # in time order (ties keep rank order) and every rank's row once
            assert [t for t, _ in got] == sorted(t for t, _ in got)
            assert sorted(got) == sorted(merged)
    assert {p.name for p in logs.iterdir()} == expected_files
    assert os.listdir(root) == []


def test_waiting_factor_names_the_logs_as_md_workbench(tmpfs, tmp_path):
    """md-workbench -t F names every log with F as "%.2f" of its float,
    precreate and cleanup too, where it does not wait."""
    root, logs = tmpfs / "root", tmpfs / "logs"
    root.mkdir()
    logs.mkdir()
    run_fio(job(["precreate", "benchmark", "cleanup"], root, numjobs=2, datasets=2, precreate_per_set=6,
                steps_per_set=3, bs=100, latency_log=logs / "w", waiting_factor=0.125), tmp_path, check=True)
    assert sorted(p.name for p in logs.iterdir()) == sorted(
        ["w-0.12-0-precreate.csv", "w-0.12-1-cleanup.csv"] +
        [f"w-0.12-0-{op}.csv" for op in ("read", "stat", "create", "delete")])


def test_read_only_logs_no_create_or_delete(tmpfs, tmp_path):
    root, logs = tmpfs / "root", tmpfs / "logs"
    root.mkdir()
    logs.mkdir()
    opts = dict(datasets=2, precreate_per_set=10, steps_per_set=5, bs=100)
    run_fio(job(["precreate"], root, **opts), tmp_path, check=True)
    run_fio(job(["benchmark"], root, read_only=1, latency_log=logs / "ro", **opts), tmp_path, check=True)
    assert sorted(p.name for p in logs.iterdir()) == [f"ro-0.00-0-{op}.csv" for op in ("read", "stat")]
    run_fio(job(["cleanup"], root, **opts), tmp_path, check=True)


def test_an_existing_log_is_never_replaced(tmpfs, tmp_path):
    root, logs = tmpfs / "root", tmpfs / "logs"
    root.mkdir()
    logs.mkdir()
    mine = logs / "lat-0.00-0-precreate.csv"
    mine.write_text("precious\n")
    run = run_fio(job(["precreate"], root, datasets=2, precreate_per_set=10, latency_log=logs / "lat"),
                  tmp_path, check=False)
    assert run.rc != 0
    lines = run.mdfio_lines()
    assert len(lines) == 1 and f"cannot create {mine}: File exists" in lines[0], run.stderr
    assert mine.read_text() == "precious\n" and os.listdir(root) == []


@pytest.mark.parametrize("phase", ["precreate", "benchmark"])
def test_one_rank_refused_stops_every_rank_before_anything_is_touched(tmpfs, tmp_path, phase):
    """One rank of three cannot create its latency log: no rank may start
    the phase, so the namespace is exactly as before (never half made or
    marked as interrupted) and the next run goes on from it."""
    root, logs = tmpfs / "root", tmpfs / "logs"
    root.mkdir()
    logs.mkdir()
    opts = dict(numjobs=3, datasets=2, precreate_per_set=10, steps_per_set=5, bs=100)
    if phase == "benchmark":
        run_fio(job(["precreate"], root, **opts), tmp_path, check=True)
    # the rank file is the runs' own bookkeeping: every other file counts
    def files():
        return {p.name: p.read_bytes() for p in root.rglob("*") if p.is_file() and p.name != "mdfio.ranks"}
    before = files()
    op = "precreate" if phase == "precreate" else "read"
    mine = logs / f"lat-0.00-0-{op}-rank2.csv"
    mine.write_text("precious\n")
    run = run_fio(job([phase], root, latency_log=logs / "lat", latency_all=1, **opts), tmp_path, check=False)
    assert run.rc != 0
    # one line: the refusing rank's; the others stop with it; no unit counts
    lines = run.mdfio_lines()
    assert len(lines) == 1 and f"cannot create {mine}: File exists" in lines[0], run.stderr
    assert all(j[s]["total_ios"] == 0 for j in run.jobs() for s in ("read", "write", "trim")), run.stdout
    assert mine.read_text() == "precious\n" and os.listdir(logs) == [mine.name]
    assert files() == before
    run_fio(job(["benchmark", "cleanup"] if phase == "benchmark" else ["precreate", "cleanup"], root, **opts),
            tmp_path, check=True)
    assert os.listdir(root) == []


def test_fios_own_latency_log_carries_create_read_delete(tmpfs, tmp_path):
    root = tmpfs / "root"
    root.mkdir()
    prefix = tmpfs / "fio"
    run = run_fio(job(["precreate", "benchmark", "cleanup"], root, datasets=2, precreate_per_set=10,
                      steps_per_set=4, bs=100, write_lat_log=prefix), tmp_path, check=True)
    counts = []
    for n in (1, 2, 3):
        ddirs = [int(line.split(",")[2]) for line in (tmpfs / f"fio_clat.{n}.log").read_text().splitlines()]
        counts.append({d: ddirs.count(d) for d in set(ddirs)})
    # ddir 0 = read, 1 = write (create), 2 = trim (delete); stat has no log
    pre, bench, clean = (run.jobs(s)[0] for s in ("precreate-0", "benchmark-1", "cleanup-2"))
    assert counts[0] == {1: pre["write"]["clat_ns"]["N"]}
    assert counts[1] == {0: 8, 1: 8, 2: 8}
    assert counts[2] == {2: clean["trim"]["clat_ns"]["N"]}


def test_start_index_is_checked_against_the_fifo_and_names_the_logs(tmpfs, tmp_path):
    """A namespace precreated at start_index=5: a benchmark without
    start_index goes on from the status, and its logs are md-workbench's
    iteration 0; one given a start_index that is neither the namespace's
    first index nor where the FIFO is gets one line naming both and changes
    nothing; either of those is taken."""
    root, logs = tmpfs / "root", tmpfs / "logs"
    root.mkdir()
    logs.mkdir()
    opts = dict(datasets=2, precreate_per_set=10, steps_per_set=5, bs=100)
    run_fio(job(["precreate"], root, start_index=5, **opts), tmp_path, check=True)
    run_fio(job(["benchmark"], root, latency_log=logs / "a", **opts), tmp_path, check=True)
    assert (logs / "a-0.00-0-read.csv").exists()
    status = (root / "mdfio.status").read_text()
    for given in (4, 0, 15):
        run = run_fio(job(["benchmark"], root, start_index=given, latency_log=logs / f"b{given}", **opts),
                      tmp_path, check=False)
        assert run.rc != 0
        lines = run.mdfio_lines()
        assert len(lines) == 1 and f"start_index={given}: the namespace in {root} starts at 5 and rank 0's FIFO " \
            "is at 10; give one of them" in lines[0], run.stderr
        assert (root / "mdfio.status").read_text() == status
    run_fio(job(["benchmark"], root, start_index=10, latency_log=logs / "c", **opts), tmp_path, check=True)
    assert (logs / "c-0.00-1-read.csv").exists()
    assert not list(logs.glob("b*"))
    run_fio(job(["benchmark"], root, start_index=5, latency_log=logs / "d", **opts), tmp_path, check=True)
    assert (logs / "d-0.00-2-read.csv").exists()
    run_fio(job(["cleanup"], root, start_index=20, **opts), tmp_path, check=True)
    assert os.listdir(root) == []


@pytest.mark.parametrize("latency_all", [0, 1])
def test_a_log_cut_short_by_a_full_file_system_fails_the_job(tmpfs, tmp_path, latency_all):
    """Logs on a tmpfs of 16 KiB hold a few hundred rows of a precreate's
    2000: one line names the log and ENOSPC, and the job fails (fio's exit
    status and the job's error), where both used to say the run was fine."""
    logs = tmp_path / "logs"
    logs.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(logs)], check=True)
    try:
        run = run_fio(job(["precreate"], tmpfs, datasets=2, precreate_per_set=1000, bs=100,
                          latency_log=logs / "lat", latency_all=latency_all), tmp_path, check=False)
    finally:
        subprocess.run(["umount", "-l", str(logs)], check=False)
    assert run.rc != 0
    (j,) = run.jobs()
    assert j["error"] != 0
    # with latency_all the merge into -all, on the same full file system,
    # says so too
    lines = run.mdfio_lines()
    assert lines and all(l.startswith(f"mdfio: latency log {logs}/lat-0.00-0-precreate") and
                         "No space left on device" in l for l in lines), run.stderr
    assert len(lines) == 1 + latency_all, run.stderr
