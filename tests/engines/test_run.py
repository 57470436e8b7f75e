"""One md-workbench run over several "hosts" sharing one root: fio servers,
each in a UTS namespace of its own (its own host name) on its own loopback
address, driven by one fio client; and one fio process per rank under
mpirun. Ranks, barriers, status and recovery across processes and hosts."""
import fcntl
import os
import re
import signal
import socket
import struct
import subprocess
import threading
import time
from pathlib import Path

import pytest

import mdfio.fio
from conftest import (MPIRUN, MPIRUN_MPICH, MPI_ENV, SANITIZER_REPORT, client_env, engine_path, expected, fio_client,
                      fio_env, namespace, need_mpich, need_mpirun, rank_file_looks)
from mdfio.fiojson import read_documents

D, P, I = 3, 8, 3
TIMEOUT = 300       # s, any one fio client or mpirun


def client(servers, text, tmp_path, per_host=False, check=None):
    return fio_client(servers, text, tmp_path, per_host=per_host, check=check, timeout=TIMEOUT)


def job(phases, root, hosts, clones, **opts):
    return mdfio.fio.jobfile(phases, root, engine_path(), numjobs=clones, hosts=",".join(hosts),
                             datasets=D, precreate_per_set=P, steps_per_set=I, verify_read=1,
                             join_timeout=5, **opts)


def ranks(run, phase_pos):
    """{global rank: host name} of one section, from the engine's job
    descriptions; each rank once, every job error-free."""
    found = {}
    for j in run.jobs(mdfio.fio.jobname(*phase_pos)):
        m = re.fullmatch(r"mdfio rank=(\d+) ranks=(\d+) host=(\S+); .+", j["desc"])
        assert m, j["desc"]
        assert int(m[1]) not in found, j["desc"]
        assert j["error"] == 0, j
        found[int(m[1])] = m[3]
    return found


@pytest.mark.parametrize("nhosts,clones,offset", [(2, 1, 1), (2, 2, 2), (2, 3, 3), (4, 1, 1), (4, 2, 2),
                                                   (8, 1, 1)])
def test_one_run_over_hosts(servers, tmpfs, tmp_path, nhosts, clones, offset):
    """The namespace after each phase is the one a single fio with the same
    total N makes; most reads cross hosts (offset = clones: all but the
    datasets whose d+1 is a multiple of nhosts) and verify_read proves each
    object read was written by the rank md-workbench says."""
    hosts = servers(nhosts)
    names = [s.name for s in hosts]
    n = nhosts * clones
    run = client(hosts, job(["precreate", "benchmark", "benchmark"], tmpfs, names, clones,
                            rank_offset=offset), tmp_path, check=True)
    assert namespace(tmpfs) == expected(n, D, I * 2, P)
    want = {r: names[r // clones] for r in range(n)}
    for pos, phase in enumerate(["precreate", "benchmark", "benchmark"]):
        assert ranks(run, (phase, pos)) == want
    for j in run.jobs():
        if j["jobname"].startswith("benchmark"):
            assert (j["read"]["total_ios"], j["read"]["clat_ns"]["N"], j["read"]["drop_ios"]) == (D * I, D * I, 0)
    run = client(hosts, job(["benchmark", "cleanup"], tmpfs, names, clones, rank_offset=offset),
                 tmp_path, per_host=True, check=True)
    assert ranks(run, ("cleanup", 1)) == want
    assert os.listdir(tmpfs) == []


def test_latency_logs_of_every_host_merge_into_one(servers, tmpfs, tmp_path):
    """latency_all=1: each rank's log on the shared file system, and
    md-workbench's -all file merged by the last rank out, whichever host it
    is on (and no plain file: that is rank 0's alone, without latency_all)."""
    hosts = servers(2)
    root, logs = tmpfs / "root", tmpfs / "logs"
    root.mkdir()
    logs.mkdir()
    run = client(hosts, job(["precreate", "benchmark", "cleanup"], root, [s.name for s in hosts], 2,
                            rank_offset=2, latency_log=logs / "lat", latency_all=1), tmp_path, check=True)
    plan = {("precreate", 0): (0, "precreate", "write", "clat_ns"),
            ("benchmark", 1): (0, "read", "read", "clat_ns"),
            ("cleanup", 2): (1, "cleanup", "trim", "clat_ns")}
    for (phase, pos), (it, name, slot, kind) in plan.items():
        by_rank = {int(re.search(r"rank=(\d+)", j["desc"])[1]): j for j in run.jobs(mdfio.fio.jobname(phase, pos))}
        assert sorted(by_rank) == [0, 1, 2, 3]
        total = 0
        for rank, j in by_rank.items():
            lines = (logs / f"lat-0.00-{it}-{name}-rank{rank}.csv").read_text().splitlines()
            assert lines[0] == "time,runtime" and len(lines) - 1 == j[slot][kind]["N"] > 0
            total += len(lines) - 1
        merged = (logs / f"lat-0.00-{it}-{name}-all.csv").read_text().splitlines()
        assert merged[0] == "time,runtime" and len(merged) - 1 == total
        times = [float(line.split(",")[0]) for line in merged[1:]]
        assert times == sorted(times)
        assert not (logs / f"lat-0.00-{it}-{name}.csv").exists()


def test_two_runs_on_one_root_never_precreate_twice(servers, tmpfs, tmp_path):
    """Two clients, each with two hosts of the same names, precreate the
    same root at once: at most one succeeds, and the root holds exactly one
    namespace or nothing."""
    hosts = servers(4, names=["host1", "host2", "host1", "host2"])
    text = mdfio.fio.jobfile(["precreate"], tmpfs, engine_path(), numjobs=2, hosts="host1,host2", datasets=D,
                             precreate_per_set=2000, join_timeout=3)
    runs = [None, None]

    def go(k):
        (tmp_path / f"pair{k}").mkdir()
        runs[k] = client(hosts[2 * k:2 * k + 2], text, tmp_path / f"pair{k}")

    threads = [threading.Thread(target=go, args=(k,)) for k in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    ok = [r.rc == 0 for r in runs]
    assert ok.count(True) <= 1, [r.messages for r in runs]
    for r, good in zip(runs, ok):
        if not good:
            assert re.search(r"another fio run is using this namespace|already exists|did not join",
                             r.messages), r.messages
    assert namespace(tmpfs) in ({}, expected(4, D, 0, 2000))
    if any(ok):
        assert namespace(tmpfs) == expected(4, D, 0, 2000)


def test_a_listed_host_that_never_starts_stops_every_rank_before_anything_is_made(servers, tmpfs, tmp_path):
    """...and one that starts after the others gave up waits one
    join_timeout alone (nothing the hosts share tells it from the first
    host of a new run, docs/hosts.md), names the hosts it waited for and
    leaves nothing behind either."""
    hosts = servers(3)
    text = job(["precreate", "benchmark", "cleanup"], tmpfs, ["host1", "host2", "host3"], 2)
    run = client(hosts[:2], text, tmp_path, check=False)
    gave_up = [line for line in run.messages.splitlines() if "did not join" in line]
    assert len(gave_up) == 4, run.messages
    for line in gave_up:
        assert line.endswith("ranks 4-5 of 6 did not join within 5 s; no rank of host host3 has started; "
                             "nothing was started"), line
    assert os.listdir(tmpfs) == []
    late = client(hosts[2:], text, tmp_path, check=False)
    gave_up = [line for line in late.messages.splitlines() if "did not join" in line]
    assert len(gave_up) == 2, late.messages
    for line in gave_up:
        assert line.endswith("ranks 0-3 of 6 did not join within 5 s; no rank of host host1,host2 has started; "
                             "nothing was started"), line
    assert os.listdir(tmpfs) == []


def test_a_late_host_of_a_named_run_is_refused_at_once(servers, tmpfs, tmp_path):
    """With run_id= the failed run keeps its reason in mdfio.ranks: a host
    of it that starts after the others gave up is refused at once, with
    that reason, and touches nothing; a run of another name takes the root
    over and leaves it empty."""
    hosts = servers(3)
    text = job(["precreate", "benchmark", "cleanup"], tmpfs, ["host1", "host2", "host3"], 2, run_id="nightly-7")
    run = client(hosts[:2], text, tmp_path, check=False)
    why = "ranks 4-5 of 6 did not join within 5 s; no rank of host host3 has started"
    gave_up = [line for line in run.messages.splitlines() if "did not join" in line]
    assert len(gave_up) == 4 and all(line.endswith(why + "; nothing was started") for line in gave_up), run.messages
    assert os.listdir(tmpfs) == ["mdfio.ranks"]
    kept = (tmpfs / "mdfio.ranks").read_bytes()
    late = client(hosts[2:], text, tmp_path, check=False)
    refused = [line for line in late.messages.splitlines() if "run_id=" in line]
    assert refused == [f"<host3> mdfio: {tmpfs}: host host3: run_id=nightly-7 stopped before this fio joined it: "
                       f"{why} (another run here needs another run_id, or mdfio.ranks removed once no fio of "
                       "this run is left)"], \
        late.messages
    assert not re.search(r"\(host host3\), entering", late.messages), late.messages
    assert os.listdir(tmpfs) == ["mdfio.ranks"] and (tmpfs / "mdfio.ranks").read_bytes() == kept
    client(hosts, text.replace("run_id=nightly-7", "run_id=nightly-8"), tmp_path, check=True)
    assert os.listdir(tmpfs) == []


@pytest.mark.parametrize("named", [False, True])
def test_a_host_slower_than_join_timeout_is_named_late_not_gone(servers, tmpfs, tmp_path, named):
    """After a barrier every rank passed, a host whose fio lives but comes
    to the next one past join_timeout (here: a job of its own first) is
    late, not gone; the others still give up after one join_timeout. The
    late host, which was in the run, then meets the failure its file kept
    as a later phase of the run, named or not: not as a host come too late
    to join it, nor as the first of a new run."""
    hosts = servers(2)
    names = [s.name for s in hosts]
    text = job(["precreate", "benchmark", "cleanup"], tmpfs, names, 2, **({"run_id": "n-1"} if named else {}))
    stall = "[stall]\nioengine=null\nstonewall\nsize=1g\ntime_based\nruntime=12\n\n"
    jobs = [tmp_path / "on-time.fio", tmp_path / "late.fio"]
    jobs[0].write_text(text)
    jobs[1].write_text(text.replace("[benchmark-1]", stall + "[benchmark-1]"))
    run = mdfio.fio.run(jobs[1], args=[hosts[0].client_arg, jobs[0], hosts[1].client_arg], env=client_env(),
                        timeout=TIMEOUT)
    messages = jobs[1].with_suffix(".json").read_text()
    messages = messages[:messages.find("\n{")] + run.stdout + run.stderr
    assert run.rc != 0, messages
    gave_up = [line for line in messages.splitlines() if "did not join" in line and "<host1>" in line]
    assert len(gave_up) == 2, messages
    for line in gave_up:
        assert line.endswith("entering benchmark repeat 1: ranks 2-3 of 4 did not join within 5 s; host host2 is late "
                             "(its fio still holds its ranks, but none came); nothing was started"), line
    if named:
        assert "joined it" not in messages, messages
    # named or not, the late fio, which was in the run, meets the failure
    # the rank file kept, and says so once: it does not start the run
    # afresh to wait for host1, ended, and call it gone
    late = [line for line in messages.splitlines() if "<host2> mdfio:" in line]
    assert len(late) == 1 and late[0].endswith(
        ": this run stopped before this phase (ranks 2-3 of 4 did not join within 5 s; host host2 is late "
        "(its fio still holds its ranks, but none came)); nothing was started"), messages


def test_two_hosts_with_one_name_are_refused(servers, tmpfs, tmp_path):
    hosts = servers(2, names=["host1", "host1"])
    run = client(hosts, job(["precreate"], tmpfs, ["host1", "host2"], 2), tmp_path, check=False)
    assert re.search(r"another fio run is using this namespace \(rank [01]: host host1, fio pid \d+\)",
                     run.messages), run.messages
    assert "ranks 2-3 of 4 did not join within 5 s; no rank of host host2 has started" in run.messages
    assert os.listdir(tmpfs) == []


def test_an_unlisted_host_is_refused_by_name(servers, tmpfs, tmp_path):
    hosts = servers(2)
    run = client(hosts, job(["precreate", "cleanup"], tmpfs, ["host1"], 1), tmp_path, check=False)
    assert "hosts=host1: this host (host2) is not listed, so it would take no ranks" in run.messages
    assert run.rc != 0


def test_a_host_that_dies_mid_benchmark(servers, tmpfs, tmp_path):
    """The client fails naming the host; a later cleanup over both hosts
    (the dead one restarted) leaves the root empty."""
    hosts = servers(2)
    names = [s.name for s in hosts]
    big = dict(precreate_per_set=4000, steps_per_set=4000)
    client(hosts, mdfio.fio.jobfile(["precreate"], tmpfs, engine_path(), numjobs=2, hosts=",".join(names),
                                    datasets=D, join_timeout=5, **big), tmp_path, check=True)
    status = tmpfs / "mdfio.status"
    job_text = mdfio.fio.jobfile(["benchmark"], tmpfs, engine_path(), numjobs=2, hosts=",".join(names),
                                 datasets=D, join_timeout=5, **big)
    jobpath = tmp_path / "dies.fio"
    jobpath.write_text(job_text)
    hostfile = tmp_path / "dies.hosts"
    hostfile.write_text("".join(f"ip:{s.address},{s.port}\n" for s in hosts))
    proc = subprocess.Popen(["fio", f"--client={hostfile}", "--output-format=json", f"--output={tmp_path}/dies.json",
                             str(jobpath)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=client_env())
    deadline = time.monotonic() + 60
    while status.read_text().count("benchmarking") < 4:
        assert time.monotonic() < deadline and proc.poll() is None, "the benchmark did not start"
        time.sleep(0.01)
    hosts[1].kill()
    out, _ = proc.communicate(timeout=TIMEOUT)
    out += (tmp_path / "dies.json").read_text()
    assert proc.returncode != 0
    assert "client: host=127.0.0.3 disconnected" in out, out
    hosts[1].restart()
    client(hosts, mdfio.fio.jobfile(["cleanup"], tmpfs, engine_path(), numjobs=2, hosts=",".join(names),
                                    datasets=D, join_timeout=5, **big), tmp_path, check=True)
    assert os.listdir(tmpfs) == []


@pytest.mark.parametrize("last", [0, 1])
def test_run_info_file_and_a_root_mdfio_made_over_two_hosts(servers, tmpfs, tmp_path, last):
    """Over two hosts sharing the root: the run-info file is written once per
    phase, when the last rank is out, with md-workbench's position; the root
    a precreate made goes with the cleanup that empties the namespace, with
    either host's jobs ending 3 s after the other's (exec_postrun). (That
    the last fio out removes it also where another fio's rank removed the
    status is test_rankfile.c's: no jobfile can order that.)"""
    hosts = servers(2)
    names = ",".join(s.name for s in hosts)
    root = tmpfs / "made"
    info = tmp_path / "run-info"
    opts = dict(numjobs=2, hosts=names, datasets=D, precreate_per_set=P, steps_per_set=I, run_info_file=info)

    def rooted(phases, **extra):
        # fio's own directory= refuses a missing directory when it parses
        return mdfio.fio.jobfile(phases, "/unused", engine_path(), **opts, **extra).replace(
            "directory=/unused", f"root={root}")

    client(hosts, rooted(["precreate"]), tmp_path, check=True)
    assert info.read_text() == "pos: 0\n"
    assert "root created-by-mdfio" in (root / "mdfio.status").read_text()
    client(hosts, rooted(["benchmark"]), tmp_path, check=True)
    assert info.read_text() == f"pos: {I}\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith("run-info")) == ["run-info"]
    text = rooted(["cleanup"], stonewall=False)
    jobs = [tmp_path / "cleanup-first.fio", tmp_path / "cleanup-last.fio"]
    jobs[0].write_text(text)
    # fio runs exec_postrun before it closes the engine, where a job ends
    jobs[1].write_text(text.replace("phase=cleanup", "phase=cleanup\nexec_postrun=sleep 3"))
    order = [jobs[0], jobs[1]] if last else [jobs[1], jobs[0]]
    run = mdfio.fio.run(order[1], args=[hosts[0].client_arg, str(order[0]), hosts[1].client_arg],
                        env=fio_env(), timeout=TIMEOUT)
    output = order[1].with_suffix(".json").read_text()
    assert run.rc == 0, output[:output.find("\n{")] + run.stdout + run.stderr
    assert not root.exists(), os.listdir(root)
    assert info.read_text() == f"pos: {I}\n"


def mpirun(np, text, tmp_path, check=None, mpi="openmpi"):
    """mpirun -np np fio (Open MPI's, or MPICH's mpirun.mpich): one fio per
    rank, each its own JSON."""
    job = tmp_path / f"mpi-{len(list(tmp_path.glob('mpi-*.fio')))}.fio"
    job.write_text(text)
    out = job.with_suffix("")
    if mpi == "mpich":
        need_mpich()
        launcher, rank = MPIRUN_MPICH, "PMI_RANK"
    else:
        need_mpirun()
        launcher, rank = [*MPIRUN, "--bind-to", "none"], "OMPI_COMM_WORLD_RANK"
    env = fio_env(MPI_ENV)
    proc = subprocess.run([*launcher, "-np", str(np), "sh", "-c",
                           f'exec fio --output-format=json --output="{out}.${rank}.json" "{job}"'],
                          capture_output=True, text=True, env=env, timeout=TIMEOUT)
    assert not SANITIZER_REPORT.search(proc.stdout + proc.stderr), proc.stderr
    if check is not None:
        assert (proc.returncode == 0) == check, f"rc={proc.returncode}\n{proc.stdout}\n{proc.stderr}"
    return proc, [out.with_suffix(f".{r}.json") for r in range(np)]


@pytest.mark.parametrize("mpi", ["openmpi", "mpich"])
@pytest.mark.parametrize("np,clones,offset", [(4, 1, 1), (2, 2, 2)])
def test_one_run_under_mpirun(tmpfs, tmp_path, np, clones, offset, mpi):
    """Open MPI's ranks from OMPI_COMM_WORLD_RANK, MPICH's from PMI_RANK:
    the fio of process p runs ranks p*clones onwards."""
    n = np * clones
    text = mdfio.fio.jobfile(["precreate", "benchmark", "benchmark", "cleanup"], tmpfs, engine_path(),
                             numjobs=clones, datasets=D, precreate_per_set=P, steps_per_set=I,
                             rank_offset=offset, verify_read=1, join_timeout=5)
    _, outputs = mpirun(np, text, tmp_path, check=True, mpi=mpi)
    seen = {}
    for p, path in enumerate(outputs):
        doc = read_documents(path.read_text(), str(path))[-1]
        for j in doc["jobs"]:
            m = re.fullmatch(r"mdfio rank=(\d+) ranks=(\d+) host=(\S+); .+", j["desc"])
            assert m and int(m[2]) == n and j["error"] == 0, j["desc"]
            assert p * clones <= int(m[1]) < (p + 1) * clones, (path, j["desc"])
            seen.setdefault(j["jobname"], set()).add(int(m[1]))
    assert all(v == set(range(n)) for v in seen.values()) and len(seen) == 4, seen
    assert os.listdir(tmpfs) == []


# the rank file's header read under a shared lock: the barrier's look at it


def test_under_mpirun_the_barrier_waits_in_pmix_fence(tmpfs, tmp_path):
    """Open MPI's mpirun serves PMIx to the fio processes it starts: the
    ranks of a barrier wait in PMIx_Fence and look at the rank file once it
    completes, where without PMIx they poll it. Three fio processes, the
    last started LATE seconds after the others, so that theirs wait at the
    first barrier; side by side, with PMIX_NAMESPACE taken away (no PMIx)."""
    need_mpirun()
    LATE = 3
    phases = ["precreate", "benchmark", "cleanup"]
    text = mdfio.fio.jobfile(phases, tmpfs, engine_path(), numjobs=1, datasets=D, precreate_per_set=P,
                             steps_per_set=I, join_timeout=30)
    job = tmp_path / "job.fio"
    job.write_text(text)
    looks = {}
    for pmix in (True, False):
        looks[pmix] = rank_file_looks(job, tmp_path / f"pmix-{pmix}", pmix, LATE, TIMEOUT)
        assert os.listdir(tmpfs) == []
    # each phase starts with two barriers: at most one look at each (the
    # fence completes once every rank has arrived, and the last to arrive
    # has released it); polling, the early ranks look many times while the
    # late one starts
    barriers = 2 * len(phases)
    assert all(n <= barriers for n in looks[True]), looks
    assert all(n > barriers for n in looks[False][:2]), looks


def test_mpirun_namespace_matches_one_fio(tmpfs, tmp_path):
    text = mdfio.fio.jobfile(["precreate", "benchmark"], tmpfs, engine_path(), numjobs=1, datasets=D,
                             precreate_per_set=P, steps_per_set=I, rank_offset=1, verify_read=1, join_timeout=5)
    mpirun(4, text, tmp_path, check=True)
    assert namespace(tmpfs) == expected(4, D, I, P)


def test_a_second_fio_cannot_take_the_ranks_of_a_live_run(tmpfs, tmp_path):
    """A cleanup started while a benchmark runs on the same root is refused
    before it touches anything, naming the live holder; the benchmark goes
    on to the end."""
    # a benchmark long enough to outlast the start of a second fio
    big = dict(datasets=D, precreate_per_set=20000, steps_per_set=20000)
    mdfio.fio.run(tmp_path / "pre.fio", mdfio.fio.jobfile(["precreate"], tmpfs, engine_path(), numjobs=2, **big),
                  env=fio_env(), timeout=TIMEOUT)
    bench = tmp_path / "bench.fio"
    bench.write_text(mdfio.fio.jobfile(["benchmark"], tmpfs, engine_path(), numjobs=2, **big))
    proc = subprocess.Popen(["fio", "--output-format=json", f"--output={tmp_path}/bench.json", str(bench)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=fio_env())
    status = tmpfs / "mdfio.status"
    deadline = time.monotonic() + 60
    while status.read_text().count("benchmarking") < 2:
        assert time.monotonic() < deadline and proc.poll() is None, "the benchmark did not start"
        time.sleep(0.01)
    cleanup = mdfio.fio.run(tmp_path / "cleanup.fio",
                            mdfio.fio.jobfile(["cleanup"], tmpfs, engine_path(), numjobs=2, join_timeout=2, **big),
                            env=fio_env(), timeout=TIMEOUT)
    _, err = proc.communicate(timeout=TIMEOUT)
    assert proc.returncode == 0, err
    assert cleanup.rc != 0
    assert cleanup.mdfio_lines() == [
        f"mdfio: {tmpfs}: host {socket.gethostname()}: another fio run is using this namespace "
        f"(rank 0: host {socket.gethostname()}, fio pid {proc.pid})"], cleanup.stderr
    assert namespace(tmpfs) == expected(2, D, 20000, 20000)


def test_a_clone_refused_its_rank_stops_its_sibling_at_once(tmpfs, tmp_path):
    """A clone that cannot claim its rank (another open file holds the lock
    of its record) says so once, and its sibling, which has claimed, does
    not wait for it at the barrier for ever, nor for join_timeout: the run
    stops with that one line, leaves the holder's lock alone and makes
    nothing."""
    fd = os.open(tmpfs / "mdfio.ranks", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        # rank 1's record but its last byte (a fio's reservation): after
        # the header record and the 1024 bytes of a failure, 160 bytes a rank
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK,
                    struct.pack("hh4xqqi4x", fcntl.F_WRLCK, os.SEEK_SET, 160 + 1024 + 160, 159, 0))
        run = mdfio.fio.run(tmp_path / "pre.fio",
                            mdfio.fio.jobfile(["precreate"], tmpfs, engine_path(), numjobs=2, datasets=D,
                                              precreate_per_set=10, join_timeout=600),
                            env=fio_env(), timeout=60)
    finally:
        os.close(fd)
    assert run.rc != 0
    lines = run.mdfio_lines()
    assert len(lines) == 1 and lines[0].startswith(
        f"mdfio: {tmpfs}: host {socket.gethostname()}: rank 1 is taken by a live fio"), run.stderr
    assert os.listdir(tmpfs) == ["mdfio.ranks"]


def test_no_other_fio_runs_between_the_phases_of_a_live_run(tmpfs, tmp_path):
    """Between two stonewalled sections no job of a fio holds its ranks; its
    fio does, until it exits. A cleanup started in that gap is refused,
    naming the live fio, and the run ends with every phase done; once it
    has exited the same cleanup runs."""
    opts = dict(numjobs=2, datasets=D, precreate_per_set=P, steps_per_set=I)
    text = mdfio.fio.jobfile(["precreate", "benchmark"], tmpfs, engine_path("null"), **opts)
    # a second benchmark that fio starts only after a pause
    text += "\n[benchmark-2]\nstonewall\nstartdelay=4\nphase=benchmark\nrepeat=2\nrepeats=2\n"
    live = tmp_path / "live.fio"
    live.write_text(text)
    proc = subprocess.Popen(["fio", "--output-format=json", f"--output={tmp_path}/live.json", str(live)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=fio_env())
    try:
        deadline = time.monotonic() + 30
        # the gap: the first benchmark is over everywhere, the second has not begun
        def text(name):
            try:
                return (tmpfs / name).read_text()
            except FileNotFoundError:
                return ""
        while text("mdfio.status").count(f"ready {I}") < 2 or "benchmark-1" not in text("mdfio.ranks"):
            assert time.monotonic() < deadline and proc.poll() is None, "the first benchmark did not end"
            time.sleep(0.01)
        cleanup = tmp_path / "cleanup.fio"
        cleanup.write_text(mdfio.fio.jobfile(["cleanup"], tmpfs, engine_path("null"), join_timeout=1, **opts))
        refused = mdfio.fio.run(cleanup, env=fio_env(), timeout=TIMEOUT)
        _, err = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert refused.rc != 0
    assert refused.mdfio_lines() == [
        f"mdfio: {tmpfs}: host {socket.gethostname()}: another fio run is using this namespace "
        f"(rank 0: host {socket.gethostname()}, fio pid {proc.pid})"], refused.stderr
    assert proc.returncode == 0, err
    status = (tmpfs / "mdfio.status").read_text()
    assert status.count(f"ready {2 * I}") == 2, status
    mdfio.fio.run(cleanup, env=fio_env(), timeout=TIMEOUT)
    assert os.listdir(tmpfs) == []


def test_two_mdfio_engines_on_one_root_in_one_fio_are_refused(tmpfs, tmp_path):
    """fio holds a root's ranks for one engine's jobs: a section of another
    mdfio engine on the same root is refused, in one line, before any job
    starts."""
    text = mdfio.fio.jobfile(["precreate", "benchmark"], tmpfs, engine_path(), datasets=D, precreate_per_set=P,
                             steps_per_set=I)
    text = text.replace("[benchmark-1]", f"[benchmark-1]\nioengine=external:{engine_path('null')}")
    run = mdfio.fio.run(tmp_path / "mixed.fio", text, env=fio_env(), timeout=TIMEOUT)
    assert run.rc != 0
    assert run.mdfio_lines() == [
        f"mdfio: directory={tmpfs}: jobs precreate-0 and benchmark-1 use different mdfio engines "
        "(mdfio-posix, mdfio-null); run each engine in a fio of its own"], run.stderr
    assert os.listdir(tmpfs) == []


def test_a_clone_still_busy_is_waited_for_beyond_join_timeout(tmpfs, tmp_path):
    """Two fio processes of 2 clones each (as srun starts them): one clone of
    the first is held for twice join_timeout in its precreate while its
    sibling has ended, so no rank of the second fio's benchmark may give up,
    and no phase may meet another at a barrier. The second fio does not
    wait silently: after join_timeout one of its ranks names the busy one."""
    text = mdfio.fio.jobfile(["precreate", "benchmark", "benchmark", "cleanup"], tmpfs, engine_path(),
                             numjobs=2, bs=64, datasets=1, precreate_per_set=30000, steps_per_set=10,
                             join_timeout=2)
    job = tmp_path / "busy.fio"
    job.write_text(text)
    procs = [subprocess.Popen(["fio", "--eta=never", "--output-format=json", f"--output={tmp_path}/busy{p}.json",
                               str(job)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                              env=fio_env({"SLURM_PROCID": str(p), "SLURM_NTASKS": "2",
                                           "SLURM_STEP_NUM_TASKS": "2"})) for p in (0, 1)]
    # the status file exists once the precreate's barrier is passed: hold
    # a clone in mid-precreate, so that its sibling ends first
    deadline = time.monotonic() + 30
    while True:
        kids = subprocess.run(["pgrep", "-P", str(procs[0].pid)], capture_output=True, text=True).stdout.split()
        if len(kids) == 2 and (tmpfs / "mdfio.status").exists():
            break
        assert time.monotonic() < deadline, "the first fio's precreate did not start"
        time.sleep(0.001)
    held = max(kids, key=int)
    os.kill(int(held), signal.SIGSTOP)
    time.sleep(4)
    os.kill(int(held), signal.SIGCONT)
    errs = [p.communicate(timeout=TIMEOUT)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errs
    assert os.listdir(tmpfs) == []
    said = re.compile(rf"mdfio: {re.escape(str(tmpfs))}: rank [23] \(host \S+\) has waited \d+ s to enter "
                      rf"benchmark-\d+ \(barrier \d+\): [12] of 4 ranks ha(s|ve) not arrived: .*"
                      rf"\b[01] \(host \S+, busy since it entered precreate-0-go\)")
    assert any(said.fullmatch(line) for line in errs[1].splitlines()), errs[1]


def children(pid):
    """Child pids of pid, oldest first (fio forks its jobs in jobfile order)."""
    out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return sorted(map(int, out))


def gone(pid):
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


@pytest.mark.parametrize("where", ["waiting for the previous section", "at the barrier"])
def test_jobs_of_a_killed_fio_end(tmpfs, tmp_path, where):
    """fio's main process dies (SIGKILL) and leaves its jobs running: a job
    waiting for the previous section's clones, one of which was killed too,
    or a job at the barrier whose sibling never comes (both look present
    through the open file fio shared with them) ends in one line instead of
    waiting for ever; join_timeout is far away."""
    text = mdfio.fio.jobfile(["precreate", "benchmark"], tmpfs, engine_path(), stonewall=False, numjobs=2,
                             bs=64, datasets=1, precreate_per_set=60000, steps_per_set=10, join_timeout=600)
    job = tmp_path / "orphans.fio"
    job.write_text(text)
    err = tmp_path / "orphans.err"
    with open(err, "w") as errf:
        proc = subprocess.Popen(["fio", "--eta=never", str(job)], stdout=subprocess.DEVNULL, stderr=errf,
                                env=fio_env(), start_new_session=True)
    kids = []

    def wait_for(what, done, seconds=60):
        deadline = time.monotonic() + seconds
        while not done():
            assert time.monotonic() < deadline, f"{what}: {err.read_text()}"
            time.sleep(0.01)

    try:
        def started():
            kids[:] = children(proc.pid)
            return len(kids) == 4 and "precreating" in text_of(tmpfs / "mdfio.status")

        wait_for("the precreate did not start", started)
        pre0, pre1, bench0, bench1 = kids
        # bench1 will never reach the barrier
        os.kill(bench1, signal.SIGSTOP)
        if where == "at the barrier":
            wait_for("rank 0 did not reach the benchmark's barrier",
                     lambda: " phase benchmark-" in text_of(tmpfs / "mdfio.ranks"))
            os.kill(proc.pid, signal.SIGKILL)
            needle = (f"rank 0 (host {socket.gethostname()}), entering benchmark repeat 1: fio's main process "
                      f"(pid {proc.pid}, host "
                      f"{socket.gethostname()}) is gone; nothing was started")
        else:
            # pre1 dies before its end, with fio: nobody sees it end
            os.kill(pre1, signal.SIGSTOP)
            os.kill(proc.pid, signal.SIGKILL)
            os.kill(pre1, signal.SIGKILL)
            needle = (f"job benchmark-1: fio's main process (pid {proc.pid}) is gone while it waited for job "
                      "precreate-0 to end")
        proc.wait()
        wait_for("orphaned jobs still running", lambda: gone(pre0) and gone(bench0))
        lines = [l for l in err.read_text().splitlines() if l.startswith("mdfio:")]
        assert any(needle in l for l in lines), lines
    finally:
        for pid in [proc.pid, *kids]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


def text_of(path):
    try:
        return path.read_text()
    except FileNotFoundError:
        return ""
