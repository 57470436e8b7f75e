"""fio's running reports (--status-interval) during an mdfio run. For each
report fio asks every job that has not exited for its resource usage, and
waits for each answer while it holds the lock that a job takes when its I/O
loop ends (stat.c, __show_running_run_stats); fio's own loop answers only
between io_us. A rank waiting inside the engine (for the previous section's
clones, at the barrier) must answer as well: else the report waits for it,
every job that ends meanwhile gives up on the lock after a few seconds
("fio seems to be stuck grabbing stat_sem") and the run fails.

Each run here is two fio processes of one run (as srun starts them), the
second started only after the first one's ranks have waited at the
barrier across a report: so on any machine a report is asked for while
ranks wait at the barrier and later sections wait for earlier ones, and
it is still pending when the earlier sections' jobs end."""
import json
import os
import re
import subprocess
import time

import pytest

from conftest import SANITIZER_REPORT, SOURCE_ROOT, engine_path, fio_env
from mdfio.fiojson import read_documents

JOBFILE = SOURCE_ROOT / "jobfiles" / "md-workbench.fio"
REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
STUCK = "stuck grabbing stat_sem"
N, D, P, I, R = 2, 3, 200, 100, 2
TIMEOUT = 300       # s, any one fio
# a record of the rank file: the rank and the phase it entered
RECORD = re.compile(r"^rank (\d+) value \d+ host \S+ pid \d+ arrived \d+ phase (\S+) ", re.M)


def shipped(engine):
    """The shipped jobfile, loading the engine under test (the way the
    README says: by replacing its name)."""
    text = JOBFILE.read_text()
    line = "ioengine=external:./build/engines/mdfio-posix.so"
    assert line in text
    return text.replace(line, f"ioengine=external:{engine_path(engine)}")


def mdw_env(root, **more):
    return {"MDW_ROOT": str(root), "MDW_N": str(N), "MDW_D": str(D), "MDW_P": str(P), "MDW_I": str(I),
            "MDW_R": str(R), **more}


def at_barrier(root, ranks, phase="precreate-0"):
    """Whether every rank of ranks has entered phase's barrier."""
    try:
        text = (root / "mdfio.ranks").read_text(errors="replace")
    except FileNotFoundError:
        return False
    entered = {int(r) for r, ph in RECORD.findall(text) if ph == phase}
    return set(ranks) <= entered


def wait_for(what, cond, timeout):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


def hold_first_at_barrier(root, first, interval, out=None):
    """Until the first fio's ranks wait at the barrier for the second's, and
    then for a report: until one is in out (fio writes it once every job
    has answered), or for longer than the report's interval. Returns
    whether out holds a report, written while the ranks waited."""
    wait_for("the first fio's ranks did not reach the barrier", lambda: at_barrier(root, range(N)), 60)
    deadline = time.monotonic() + interval + 5
    reported = False
    while time.monotonic() < deadline and first.poll() is None and not reported:
        time.sleep(0.05)
        reported = out is not None and out.exists() and "\n}" in out.read_text(errors="replace")
    assert first.poll() is None, "the first fio ended before the second started"
    return reported


def last_documents(paths, tmp_path):
    """Each file's last JSON document alone, in a file of its own."""
    out = []
    for p in paths:
        q = tmp_path / f"last-{p.name}"
        q.write_text(json.dumps(read_documents(p.read_text(), str(p))[-1]))
        out.append(q)
    return out


@pytest.mark.parametrize("engine,interval", [("posix", 1), ("posix", 5), ("uring", 1), ("aio", 1),
                                             ("null", 1)])
def test_status_interval_while_ranks_wait(tmpfs, tmp_path, engine, interval):
    """The shipped jobfile as two fio processes of 2 ranks each, the first
    with --status-interval: every rank ends without an error, each
    interim report is fio JSON of every job, and mdfio-report reads the
    files (their last documents count)."""
    job = tmp_path / "md-workbench.fio"
    job.write_text(shipped(engine))
    outs = [tmp_path / f"run{p}.json" for p in (0, 1)]
    depth = ["--iodepth=4"] if engine in ("uring", "aio") else []
    procs = []
    try:
        for p in (0, 1):
            args = ["fio", "--eta=never", "--output-format=json+", f"--output={outs[p]}", *depth]
            if p == 0:
                args.append(f"--status-interval={interval}")
            procs.append(subprocess.Popen([*args, str(job)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                          text=True, env=fio_env(mdw_env(tmpfs, SLURM_PROCID=str(p),
                                                                         SLURM_NTASKS="2",
                                                                         SLURM_STEP_NUM_TASKS="2"))))
            if p == 0:
                reported = hold_first_at_barrier(tmpfs, procs[0], interval, outs[0])
        ends = [p.communicate(timeout=TIMEOUT) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    errs = [e for _, e in ends]
    assert not any(STUCK in e for e in errs), errs
    assert not any(SANITIZER_REPORT.search(e) for e in errs), errs
    assert [p.returncode for p in procs] == [0, 0], errs
    assert reported, "no report while the ranks waited at the barrier"
    docs = read_documents(outs[0].read_text(), str(outs[0]))
    # one report at least while the ranks waited, and fio's final one
    assert len(docs) >= 2, len(docs)
    final = {j["jobname"] for j in docs[-1]["jobs"]}
    for doc in docs:
        assert {j["jobname"] for j in doc["jobs"]} == final and len(doc["jobs"]) == len(docs[-1]["jobs"])
    for j in docs[-1]["jobs"]:
        assert j["error"] == 0 and all(j[d]["drop_ios"] == 0 for d in ("read", "write", "trim")), j
    rep = subprocess.run([str(REPORT), *outs], capture_output=True, text=True)
    assert rep.returncode == 0, rep.stdout + rep.stderr
    assert len(re.findall(r"^(precreate|benchmark|cleanup) .*\(0 errs\)", rep.stdout, re.M)) == 2 + R, rep.stdout
    last = subprocess.run([str(REPORT), *last_documents(outs, tmp_path)], capture_output=True, text=True)
    assert last.returncode == 0 and last.stdout == rep.stdout, last.stdout + last.stderr
    assert os.listdir(tmpfs) == []


def test_status_interval_over_fio_servers(servers, tmpfs, tmp_path):
    """Two hosts (fio servers), each driven by a fio client of its own with
    --status-interval=1 (the per-host form), the second started after the
    first host's ranks have waited at the barrier across a report: every
    rank ends without an error. A fio client lists every report of a job
    in client_stats, the final one last."""
    hosts = servers(2)
    job = tmp_path / "md-workbench.fio"
    job.write_text(shipped("posix"))
    env = fio_env(mdw_env(tmpfs, MDW_HOSTS=",".join(s.name for s in hosts), MDW_O=str(N)))
    outs = [tmp_path / f"client{h}.json" for h in (0, 1)]
    procs = []
    try:
        for h, server in enumerate(hosts):
            # options after --client= are the server's
            procs.append(subprocess.Popen(["fio", "--output-format=json+", f"--output={outs[h]}",
                                           server.client_arg, "--status-interval=1", str(job)],
                                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env))
            if h == 0:
                hold_first_at_barrier(tmpfs, procs[0], 1)
        ends = [p.communicate(timeout=TIMEOUT) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    # what a server prints reaches its client's output file, before the JSON
    said = [o + e + (out.read_text() if out.exists() else "") for (o, e), out in zip(ends, outs)]
    assert not any(STUCK in s for s in said), said
    assert not any(SANITIZER_REPORT.search(s) for s in said), said
    assert [p.returncode for p in procs] == [0, 0], said
    for h, out in enumerate(outs):
        doc = read_documents(out.read_text(), str(out))[-1]
        jobs = [j for j in doc["client_stats"] if j["jobname"] != "All clients"]
        last = {}
        for j in jobs:
            last[(j["jobname"], j["desc"])] = j
        # the first host's reports while its ranks waited, and the final
        # one of each job
        assert h or len(jobs) > len(last), len(jobs)
        ranks = {int(re.search(r"rank=(\d+)", d)[1]) for _, d in last}
        assert ranks == {h * N + c for c in range(N)}, ranks
        for j in last.values():
            assert j["error"] == 0 and all(j[d]["drop_ios"] == 0 for d in ("read", "write", "trim")), j
    assert os.listdir(tmpfs) == []
