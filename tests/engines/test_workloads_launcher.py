"""The study workloads mdfio-mdtest and mdfio-tree under Open MPI's mpirun
have what the core engines have under a launcher (core/reserve.c's
reservation of no ranks, over core/launcher.c and core/orphan.c): their
ranks wait at the barrier in the launcher's PMIx_Fence instead of polling
the rank file, and a killed mpirun stops the ranks it left running at their
barrier, with one line, not after join_timeout."""
import os
import re
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

import mdfio.fio
from conftest import (MPI_ENV, MPIRUN, SANITIZER_REPORT, engine_path, fio_env, job, need_mpirun, rank_file_looks,
                      wait_ended)
from mdfio.hosts import alive

# the rank file's header read under a shared lock: the barrier's look at it
TIMEOUT = 120
STOPS_WITHIN = 20   # s from the kill until every fio has ended (bounded, not a timing)


def mdtest_run(root, tmp_path):
    """tree_create and tree_remove: a barrier before each, and one after
    the tree is removed."""
    return job(["tree_create", "tree_remove"], root, engine="mdtest", numjobs=1, items="2",
               join_timeout="30"), 3


def tree_run(root, tmp_path):
    """The copy of a small tree (rank 0's) and its read: two barriers each."""
    src = tmp_path / "src"
    if not src.exists():
        (src / "dir").mkdir(parents=True)
        for f in range(5):
            (src / "dir" / f"file-{f}").write_bytes(os.urandom(100 * (f + 1)))
    text = "\n".join(["[global]", f"ioengine=external:{engine_path('tree')}", f"directory={root}",
                      "join_timeout=30", "", "[copy]", "stonewall", "phase=copy", f"tree_source={src}",
                      "", "[read]", "stonewall", "phase=read"]) + "\n"
    return text, 4


@pytest.mark.parametrize("workload", [mdtest_run, tree_run], ids=["mdtest", "tree"])
def test_under_mpirun_the_barrier_waits_in_pmix_fence(tmp_path, workload):
    """Three fio processes, the last started LATE seconds after the others,
    so that theirs wait at the first barrier: with PMIx they look at the
    rank file once per barrier, without it (PMIX_NAMESPACE taken away) they
    poll it while they wait."""
    need_mpirun()
    LATE = 3
    looks = {}
    for pmix in (True, False):
        root = tmp_path / f"out-{pmix}"
        root.mkdir()
        jobfile = tmp_path / f"job-{pmix}.fio"
        text, barriers = workload(root, tmp_path)
        jobfile.write_text(text)
        looks[pmix] = rank_file_looks(jobfile, tmp_path / f"pmix-{pmix}", pmix, LATE, TIMEOUT)
        # the last rank out removed the rank file
        assert not (root / "mdfio.ranks").exists()
    # at most one look at each barrier (the fence completes once every
    # rank has arrived, and the last to arrive has released it); polling,
    # the early ranks look many times while the late one starts
    assert all(n <= barriers for n in looks[True]), looks
    assert all(n > barriers for n in looks[False][:2]), looks


def test_a_killed_mpirun_stops_the_rank_waiting_at_the_barrier(tmp_path):
    """mpirun killed with SIGKILL while rank 0 waits in the fence of
    tree_remove's barrier for rank 1, whose process ran tree_create alone
    and sleeps: rank 0's fio sees that the launcher that started it is gone
    and stops with one line, long before join_timeout would have ended the
    wait."""
    need_mpirun()
    root = tmp_path / "out"
    root.mkdir()
    jobfiles = []
    for r, phases in enumerate((["tree_create", "tree_remove"], ["tree_create"])):
        jobfiles.append(tmp_path / f"job-{r}.fio")
        jobfiles[r].write_text(job(phases, root, engine="mdtest", numjobs=1, items="2", join_timeout="120"))
    out = tmp_path / "out"
    proc = subprocess.Popen([*MPIRUN, "--bind-to", "none", "-np", "2", "sh", "-c",
                             f'if [ "$OMPI_COMM_WORLD_RANK" = 1 ]; then fio --output=/dev/null "{jobfiles[1]}"; '
                             'exec sleep 120; fi; '
                             f'exec fio --output-format=json --output="{out}.json" "{jobfiles[0]}" 2>"{out}.stderr"'],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=fio_env(MPI_ENV))
    left = set()
    try:
        # rank 1 is done with tree_create, which began with the first
        # fence: rank 0's PMIx client is up, and its next barrier waits
        end = time.monotonic() + 60
        while True:
            table = mdfio.fio.processes()
            tree = mdfio.fio.descendants(proc.pid, table)
            if any(table[p][0] == "sleep" for p in tree):
                break
            assert time.monotonic() < end and proc.poll() is None, "rank 1 did not finish tree_create"
            time.sleep(0.05)
        fios = {p for p in tree if table[p][0] == "fio"}
        left = tree - {proc.pid} - fios
        assert fios, tree
        proc.kill()
        proc.wait()
        wait_ended(fios, STOPS_WITHIN, "the mpirun that started them")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for p in left:
            if alive(p):
                os.kill(p, signal.SIGKILL)
    said = Path(f"{out}.stderr").read_text()
    assert not SANITIZER_REPORT.search(said), said
    lines = [line for line in said.splitlines() if line.startswith("mdfio:")]
    why = (rf"mdfio: {re.escape(str(root))}: rank 0 \(host {re.escape(socket.gethostname())}\), mdtest tree_remove: "
           r"the launcher that started this fio is gone \(fio's parent, pid \d+, has ended; "
           r"OMPI_COMM_WORLD_RANK numbered the ranks\); the run stops here")
    assert len(lines) == 1 and re.fullmatch(why, lines[0]), said
