"""A run that no one is left to receive the results of stops (engines/
orphan.c): a fio killed with SIGKILL mid-benchmark, whose job processes
(each in a session of its own) would otherwise run the benchmark and the
cleanup unattended, and a fio client killed with SIGKILL, whose servers
would run its whole job list. Every rank stops at its next step, the later
phases (the cleanup) never run, the namespace stays as it was, and a new
fio's cleanup removes it."""
import re
import subprocess
import time

import pytest

import mdfio.fio
from conftest import (MPI_ENV, MPIRUN, SANITIZER_REPORT, client_env, engine_path, fio_env, job, namespace,
                      need_mpirun, wait_ended)
from mdfio.hosts import fio_servers, need_unshare

D, P, I = 2, 20, 20
# the benchmark runs for minutes unless stopped: each operation is followed
# by a wait of 10^4 times its time (md-workbench -t), a sleep in slices
SLOW = {"waiting_factor": 10000}
PHASES = ["precreate", "benchmark", "cleanup"]
STOPS_WITHIN = 30   # s from the kill until every job has ended (bounded, not a timing)


def benchmarking(root, ranks, proc, deadline=60):
    """Waits until every rank is in the benchmark (the status says so)."""
    status = root / "mdfio.status"
    end = time.monotonic() + deadline
    while not status.exists() or status.read_text().count("benchmarking") < ranks:
        assert time.monotonic() < end and proc.poll() is None, "the benchmark did not start"
        time.sleep(0.01)


def check_kept_then_cleaned(root, ranks, cleanup):
    """The namespace stays whole (no cleanup ran), and the status still
    names the ranks; a new fio's cleanup removes it."""
    found = namespace(root)
    assert sorted(found) == sorted(f"{r}_{d}" for r in range(ranks) for d in range(D)), found
    assert (root / "mdfio.status").exists()
    run = cleanup()
    assert run.rc == 0, run.stderr + run.stdout
    assert namespace(root) == {} and not (root / "mdfio.status").exists()


def test_a_killed_fio_leaves_no_job_running(tmpfs, tmp_path):
    root = tmpfs / "root"
    root.mkdir()
    text = job(PHASES, root, numjobs=2, datasets=D, precreate_per_set=P, steps_per_set=I, join_timeout=5)
    text = text.replace("phase=benchmark\n", "phase=benchmark\n" + "".join(f"{k}={v}\n" for k, v in SLOW.items()))
    jobfile = tmp_path / "job.fio"
    jobfile.write_text(text)
    err = tmp_path / "fio.stderr"
    with open(err, "w") as e:
        fio = subprocess.Popen(["fio", "--output-format=json", str(jobfile)], stdout=subprocess.DEVNULL, stderr=e,
                               env=fio_env())
    try:
        benchmarking(root, 2, fio)
        jobs = mdfio.fio.descendants(fio.pid) - {fio.pid}
        assert len(jobs) == 2, jobs
        fio.kill()
        fio.wait()
        wait_ended(jobs, STOPS_WITHIN, "the fio they report to")
    finally:
        if fio.poll() is None:
            fio.kill()
            fio.wait()
    said = err.read_text()
    assert not SANITIZER_REPORT.search(said), said
    assert f"mdfio: rank 0 benchmark: fio's main process (pid {fio.pid}) is gone; the run stops here" in said, said
    check_kept_then_cleaned(root, 2, lambda: mdfio.fio.run(
        tmp_path / "cleanup.fio", job(["cleanup"], root, numjobs=2, datasets=D, precreate_per_set=P, steps_per_set=I), env=fio_env(), timeout=120))


def test_a_killed_fio_client_leaves_no_job_running(tmp_path):
    """Two hosts (fio servers), one rank each: the client killed in the
    benchmark. The servers stay up, and run the next client's cleanup."""
    if need_unshare():
        pytest.skip(need_unshare())
    root = tmp_path / "root"
    root.mkdir()
    with fio_servers(2, tmp_path, env=fio_env()) as servers:
        names = ",".join(s.name for s in servers)
        hosts = tmp_path / "hosts.list"
        hosts.write_text("".join(f"ip:{s.address},{s.port}\n" for s in servers))
        text = mdfio.fio.jobfile(PHASES, root, engine_path(), datasets=D, precreate_per_set=P, steps_per_set=I,
                                 join_timeout=5, hosts=names, rank_offset=1)
        text = text.replace("phase=benchmark\n",
                            "phase=benchmark\n" + "".join(f"{k}={v}\n" for k, v in SLOW.items()))
        jobfile = tmp_path / "job.fio"
        jobfile.write_text(text)
        client = subprocess.Popen(["fio", f"--client={hosts}", "--output-format=json",
                                   f"--output={tmp_path}/job.json", str(jobfile)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=client_env())
        try:
            benchmarking(root, 2, client)
            table = mdfio.fio.processes()
            # below each server: its process for the client's connection,
            # fio's main process of the run, and the rank's job
            below = {s.name: mdfio.fio.descendants(s.proc.pid, table) - {s.proc.pid} for s in servers}
            assert all(len(pids) == 3 for pids in below.values()), below
            client.kill()
            client.wait()
            wait_ended(set().union(*below.values()), STOPS_WITHIN, "the fio they report to")
        finally:
            if client.poll() is None:
                client.kill()
                client.wait()
        for s in servers:
            log = s.log.read_text()
            # fio itself, its client gone, fails an assertion as it starts
            # the next section (fio_server_send_start) and frees its
            # options twice on the way out: no report may be the engine's
            assert not [r for r in log.split("=" * 65) if SANITIZER_REPORT.search(r) and "mdfio-" in r], log
            assert "the fio client is gone (this fio server's connection to it, pid" in log, log
            assert s.proc.poll() is None, f"server {s.name} died"

        def cleanup():
            return mdfio.fio.run(tmp_path / "cleanup.fio",
                                 mdfio.fio.jobfile(["cleanup"], root, engine_path(), datasets=D, precreate_per_set=P,
                                                   steps_per_set=I, hosts=names, join_timeout=5),
                                 args=[f"--client={hosts}"], env=client_env(), timeout=120)
        check_kept_then_cleaned(root, 2, cleanup)


# a launcher of two fio processes that numbers them as Slurm's srun does
# and, once killed, leaves them running (MPICH's proxy kills the fio it
# started when mpiexec goes, so it shows nothing of this)
PARENT = ["python3", "-c", "import os, subprocess, sys\n"
          "procs = [subprocess.Popen(['sh', '-c', sys.argv[1]], env=dict(os.environ, SLURM_PROCID=str(r), "
          "SLURM_STEP_NUM_TASKS='2')) for r in range(2)]\n"
          "[p.wait() for p in procs]"]


@pytest.mark.parametrize("launcher", ["mpirun", "parent"])
def test_a_killed_launcher_leaves_no_job_running(tmpfs, tmp_path, launcher):
    """mpirun (or any launcher) killed with SIGKILL mid-benchmark leaves the
    fio processes it started running, with no one to collect their output:
    each notices that its parent, the launcher's process, is gone, and
    stops its ranks."""
    if launcher == "mpirun":
        need_mpirun()
        command, rank = [*MPIRUN, "--bind-to", "none", "-np", "2", "sh", "-c"], "OMPI_COMM_WORLD_RANK"
    else:
        command, rank = PARENT, "SLURM_PROCID"
    root = tmpfs / "root"
    root.mkdir()
    text = job(PHASES, root, numjobs=1, datasets=D, precreate_per_set=P, steps_per_set=I, join_timeout=5)
    text = text.replace("phase=benchmark\n", "phase=benchmark\n" + "".join(f"{k}={v}\n" for k, v in SLOW.items()))
    jobfile = tmp_path / "job.fio"
    jobfile.write_text(text)
    out = tmp_path / "job"
    proc = subprocess.Popen([*command, f'exec fio --output-format=json --output="{out}.${rank}.json" "{jobfile}" '
                                       f'2>"{out}.${rank}.stderr"'],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=fio_env(MPI_ENV))
    try:
        benchmarking(root, 2, proc)
        table = mdfio.fio.processes()
        jobs = {p for p in mdfio.fio.descendants(proc.pid, table) if table[p][0] == "fio"}
        fios = {p for p in jobs if table.get(table[p][2], ("",))[0] != "fio"}
        assert len(fios) == 2 and len(jobs) == 4, (fios, jobs)
        proc.kill()
        proc.wait()
        wait_ended(jobs, STOPS_WITHIN, "the fio they report to")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    why = rf"the launcher that started this fio is gone \(fio's parent, pid \d+, has ended; {rank} numbered the ranks\)"
    for r in range(2):
        said = out.with_suffix(f".{r}.stderr").read_text()
        assert not SANITIZER_REPORT.search(said), said
        assert re.search(rf"mdfio: rank {r} benchmark: {why}; the run stops here", said), said
    check_kept_then_cleaned(root, 2, lambda: mdfio.fio.run(
        tmp_path / "cleanup.fio", job(["cleanup"], root, numjobs=2, datasets=D, precreate_per_set=P, steps_per_set=I),
        env=fio_env(), timeout=120))
