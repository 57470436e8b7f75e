"""md-workbench's stonewall timer (stonewall_timer, -w) and wear-out
(stonewall_wear_out, -W), through every engine and across fio processes.

Where the timer stops a rank is made certain rather than timed: the objects
a rank reads at a chosen step stay real objects, but their opens wait
(fanotify permission events, FAN_OPEN_PERM) until the test allows them,
more than the timer after every blocked rank has reached them. A rank then
stops at the first step boundary after its blocked units, on every
machine. (Named pipes did this once; the engines now refuse a pipe at an
object's name without waiting on it.)"""
import ctypes
import json
import os
import re
import select
import subprocess
import threading
import time
from pathlib import Path

import pytest

import mdfio.fio
from conftest import SOURCE_ROOT, engine_path, fio_env, job, namespace, not_on_s3, run_fio

N, D, P, I, BS = 3, 2, 40, 20, 3901
# the step at which each rank is blocked
BLOCKED_AT = {0: 0, 1: 5, 2: 3}
TIMER = 1


def depth(engine):
    """Units of a rank in flight: mdfio-uring keeps iodepth of them; the
    others' opens are synchronous, so one blocked open holds the rank."""
    return 4 if engine == "uring" else 1


def stopped_after(engine, step):
    """The steps a rank blocked at step does before the timer stops it:
    its units in flight then end a step boundary or two later."""
    return step + (depth(engine) + D - 1) // D


def stops(engine, step):
    """Where a rank blocked at step may stop: mdfio-uring's blocked open
    holds the thread that submits it, so only the units of its batch
    behind it are in flight (all of them in the first batch, as few as
    none later, as fio refills the ring): from one step on to as many as
    its depth allows. The others: exactly stopped_after."""
    return range(step + 1 if engine == "uring" and step else stopped_after(engine, step),
                 stopped_after(engine, step) + 1)


def read_rank(r, d, n):
    return (r - (d + 1)) % n


def block(root, ranks, blocked_at, per_rank):
    """The objects the first per_rank units of step blocked_at[r] of rank
    r read, each with the rank that reads it."""
    return {Path(root) / f"{read_rank(r, k % D, ranks)}_{k % D}" / f"file-{k // D}": r
            for r, step in blocked_at.items() for k in range(step * D, step * D + per_rank)}


LIBC = ctypes.CDLL(None, use_errno=True)
LIBC.fanotify_mark.argtypes = [ctypes.c_int, ctypes.c_uint, ctypes.c_uint64, ctypes.c_int, ctypes.c_char_p]
FAN_CLOEXEC, FAN_CLASS_CONTENT, FAN_MARK_ADD, FAN_OPEN_PERM, FAN_ALLOW = 0x1, 0x4, 0x1, 0x10000, 0x1
AT_FDCWD = -100
EVENT = 24          # struct fanotify_event_metadata: len, vers, reserved, metadata_len, mask, fd, pid


class Release(threading.Thread):
    """Holds every open of the given files (fanotify permission events):
    once every rank has an opener waiting at one of them, waits longer than
    the timer and then allows them all, so the blocked ranks go on past
    stonewall_timer; later opens pass at once. (mdfio-uring's first open of
    a batch holds the thread that submits it, so its other units of the
    batch wait behind it rather than at their own files.)"""

    def __init__(self, files, ranks, hold=TIMER + 0.1):
        super().__init__(daemon=True)
        self.files, self.ranks, self.hold, self.error = files, ranks, hold, None
        self.fd = LIBC.fanotify_init(FAN_CLOEXEC | FAN_CLASS_CONTENT, os.O_RDONLY)
        if self.fd < 0:
            raise OSError(ctypes.get_errno(), "fanotify_init")
        for f in files:
            if LIBC.fanotify_mark(self.fd, FAN_MARK_ADD, FAN_OPEN_PERM, AT_FDCWD, str(f).encode()):
                raise OSError(ctypes.get_errno(), f"fanotify_mark {f}")

    def allow(self, fd):
        os.write(self.fd, fd.to_bytes(4, "little", signed=True) + FAN_ALLOW.to_bytes(4, "little"))
        os.close(fd)

    def run(self):
        held, deadline = {}, time.monotonic() + 120
        try:
            while len({self.files[f] for f in held.values()}) < self.ranks:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"not every rank opened one of {[str(f) for f in self.files]}")
                if not select.select([self.fd], [], [], 1)[0]:
                    continue
                data = os.read(self.fd, 4096)
                for at in range(0, len(data), EVENT):
                    fd = int.from_bytes(data[at + 16:at + 20], "little", signed=True)
                    name = Path(os.readlink(f"/proc/self/fd/{fd}"))
                    if name in held.values() or name not in self.files:
                        self.allow(fd)      # not a first open of a held file
                    else:
                        held[fd] = name
            time.sleep(self.hold)
        except Exception as e:     # noqa: BLE001 (reported by the test)
            self.error = e
        finally:
            for fd in held:
                self.allow(fd)
            os.close(self.fd)      # the marks go with it


def opts(engine, **more):
    return {**dict(numjobs=N, datasets=D, precreate_per_set=P, steps_per_set=I, iodepth=depth(engine)), **more}


def rank_of(j):
    return int(re.match(r"mdfio rank=(\d+)", j["desc"]).group(1))


def rank_steps(jobs):
    """{rank: steps} of fio's JSON jobs: a rank's units (read's total_ios)
    over D, by the rank each job's description names."""
    out = {}
    for j in jobs:
        assert j["read"]["total_ios"] % D == 0, j["read"]
        out[rank_of(j)] = j["read"]["total_ios"] // D
    return out


def positions(root):
    """Each rank's FIFO position in the status file."""
    text = (Path(root) / "mdfio.status").read_text()
    return {int(m[1]): int(m[2]) for m in re.finditer(r"^rank (\d+) \w+ (\d+) ", text, re.M)}


def holds(n, pos):
    """What every dataset holds when each rank r has moved from 0 to
    pos[r]: what its reader (rank X+1+d) has not deleted, up to what its
    writer (rank X-1-d) has created."""
    return {f"{x}_{d}": list(range(pos[(x + d + 1) % n], pos[(x - d - 1) % n] + P))
            for x in range(n) for d in range(D)}


def blocked_benchmark(tmpfs, tmp_path, engine, **extra):
    """A precreate, then a benchmark in which the ranks are blocked at
    BLOCKED_AT past the timer; returns the benchmark's FioRun."""
    run_fio(job(["precreate"], tmpfs, **opts(engine), engine=engine), tmp_path, check=True)
    release = Release(block(tmpfs, N, BLOCKED_AT, depth(engine)), len(BLOCKED_AT))
    release.start()
    run = run_fio(job(["benchmark"], tmpfs, **opts(engine, stonewall_timer=TIMER, **extra), engine=engine),
                  tmp_path, check=True)
    release.join()
    assert release.error is None, release.error
    return run


def report(*paths, args=()):
    return subprocess.run([str(SOURCE_ROOT / "tools" / "mdfio-report"), *args, *map(str, paths)],
                          capture_output=True, text=True)


@not_on_s3("the test holds ranks at their objects' opens (fanotify): a store's keys are not files")
def test_timer_alone_stops_each_rank_at_its_step_and_a_cleanup_empties_the_namespace(tmpfs, tmp_path, engine):
    run = blocked_benchmark(tmpfs, tmp_path, engine)
    steps = rank_steps(run.jobs())
    assert all(steps[r] in stops(engine, b) for r, b in BLOCKED_AT.items()) and len(steps) == N, steps
    assert run.mdfio_lines() == []
    # each rank moved by the steps it did (md-workbench: one fewer), and
    # every dataset holds a contiguous FIFO between its reader and writer
    assert positions(tmpfs) == steps
    assert namespace(tmpfs) == holds(N, steps)
    # stonewall-iter: the most steps of a rank the timer stopped
    rep = report(tmp_path / "job-1.json")
    assert rep.returncode == 0, rep.stderr
    line = next(x for x in rep.stdout.splitlines() if x.startswith("benchmark "))
    assert f"(0 errs) stonewall-iter:{max(steps.values())} " in line
    rec = json.loads(report(tmp_path / "job-1.json", args=["--json", "--process-reports"]).stdout)["records"]
    assert [r["stonewall_iter"] for r in rec] == [max(steps.values())] + [steps[r] for r in range(N)]

    # a benchmark whose steps could read beyond what a writer made is
    # refused, before anything is touched
    spread = max(steps.values()) - min(steps.values())
    before = namespace(tmpfs)
    too_far = run_fio(job(["benchmark"], tmpfs, **opts(engine, steps_per_set=P - spread + 1), engine=engine),
                      tmp_path, check=False)
    assert f"use steps_per_set={P - spread} at most, or phase=cleanup" in too_far.stderr, too_far.stderr
    assert namespace(tmpfs) == before and positions(tmpfs) == steps

    # the next repeat goes on from each rank's own position; then the
    # cleanup removes every object of every rank, and every dataset
    more = run_fio(job(["benchmark", "cleanup"], tmpfs, **opts(engine, stonewall_timer=TIMER), engine=engine),
                   tmp_path, check=True)
    for j in more.jobs("benchmark-0"):
        assert all(j[k]["drop_ios"] == 0 for k in ("read", "write", "trim")), j
    for j in more.jobs("cleanup-1"):
        assert j["trim"]["drop_ios"] == 0 and j["trim"]["short_ios"] == 0, j["trim"]
    assert [x for x in more.mdfio_lines() if "differ (ranks ended a benchmark after different numbers of steps: a stonewall_timer" not in x] == []
    assert os.listdir(tmpfs) == []


@not_on_s3("the test holds ranks at their objects' opens (fanotify): a store's keys are not files")
def test_wear_out_takes_every_rank_to_the_most_steps_of_any(tmpfs, tmp_path, engine):
    run = blocked_benchmark(tmpfs, tmp_path, engine, stonewall_wear_out=1)
    most = max(rank_steps(run.jobs()).values())
    assert most in range(min(min(stops(engine, b)) for b in BLOCKED_AT.values()),
                         max(stopped_after(engine, b) for b in BLOCKED_AT.values()) + 1), most
    assert most >= max(min(stops(engine, b)) for b in BLOCKED_AT.values()), most
    assert rank_steps(run.jobs()) == {r: most for r in range(N)}
    assert run.mdfio_lines() == []
    assert positions(tmpfs) == {r: most for r in range(N)}
    assert namespace(tmpfs) == holds(N, {r: most for r in range(N)})
    rep = report(tmp_path / "job-1.json")
    assert f"(0 errs) stonewall-iter:{most} " in rep.stdout, rep.stdout
    run_fio(job(["cleanup"], tmpfs, **opts(engine), engine=engine), tmp_path, check=True)
    assert os.listdir(tmpfs) == []


def test_wear_out_without_the_timer_never_hits_still_does_every_step(tmpfs, tmp_path):
    """-W with a timer the benchmark never reaches: every rank does all
    steps, and md-workbench's stonewall-iter is then steps_per_set."""
    run_fio(job(["precreate"], tmpfs, **opts("posix")), tmp_path, check=True)
    run = run_fio(job(["benchmark"], tmpfs, **opts("posix", stonewall_timer=3600, stonewall_wear_out=1)),
                  tmp_path, check=True)
    assert rank_steps(run.jobs()) == {r: I for r in range(N)}
    assert f"(0 errs) stonewall-iter:{I} " in report(tmp_path / "job-1.json").stdout


def test_wear_out_across_two_fio_processes(tmpfs, tmp_path):
    """Two fio processes of two clones each share the root (as srun starts
    them): the ranks of both agree on the most steps of any. Rank 0 is not
    blocked: it does every step, then waits in the exchange for the blocked
    ranks, past the timer, and that wait is not its phase time (as
    md-workbench leaves its MPI_Allreduce out of T)."""
    n, blocked_at = 4, {1: 2, 2: 6, 3: 4}
    common = dict(numjobs=2, datasets=D, precreate_per_set=P, steps_per_set=I)

    def both(phases, **more):
        text = mdfio.fio.jobfile(phases, tmpfs, engine_path(), **common, **more)
        jobfile = tmp_path / f"{phases[0]}.fio"
        jobfile.write_text(text)
        procs = [subprocess.Popen(["fio", "--eta=never", "--output-format=json",
                                   f"--output={tmp_path}/{phases[0]}{p}.json", str(jobfile)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                                  env=fio_env({"SLURM_PROCID": str(p), "SLURM_NTASKS": "2",
                                               "SLURM_STEP_NUM_TASKS": "2"})) for p in (0, 1)]
        errs = [p.communicate(timeout=300)[1] for p in procs]
        assert [p.returncode for p in procs] == [0, 0], errs
        assert not any(line.startswith("mdfio:") for e in errs for line in e.splitlines()), errs
        return [tmp_path / f"{phases[0]}{p}.json" for p in (0, 1)]

    both(["precreate"])
    release = Release(block(tmpfs, n, blocked_at, 1), len(blocked_at))
    release.start()
    outs = both(["benchmark"], stonewall_timer=TIMER, stonewall_wear_out=1)
    release.join()
    assert release.error is None, release.error
    jobs = [j for out in outs for j in json.loads(out.read_text())["jobs"]]
    assert rank_steps(jobs) == {r: I for r in range(n)}
    assert positions(tmpfs) == {r: I for r in range(n)}
    free = next(j for j in jobs if rank_of(j) == 0)
    # its fio ran until the blocked ranks came, more than the timer; its
    # phase time is its steps alone
    assert free["read"]["runtime"] > TIMER * 1000
    assert free["read"]["slat_ns"]["max"] < TIMER * 1e9
    rep = report(*outs)
    assert rep.returncode == 0 and f"(0 errs) stonewall-iter:{I} " in rep.stdout, rep.stdout + rep.stderr
    both(["cleanup"])
    assert os.listdir(tmpfs) == []


def test_wear_out_gives_up_on_a_rank_still_busy_join_timeout_past_the_timer(tmpfs, tmp_path):
    """Every rank reaches the wear-out's exchange by the timer and the
    steps it has in flight then: one held in a step join_timeout past the
    timer is stuck, and the ranks waiting for it there end with a line
    naming it rather than wait for ever; so does it, once it comes."""
    join = 2
    run_fio(job(["precreate"], tmpfs, **opts("posix")), tmp_path, check=True)
    release = Release(block(tmpfs, N, {0: 0}, 1), 1, hold=TIMER + join + 3)
    release.start()
    run = run_fio(job(["benchmark"], tmpfs, **opts("posix", stonewall_timer=TIMER, stonewall_wear_out=1,
                                                   join_timeout=join)), tmp_path, check=False)
    release.join()
    assert release.error is None, release.error
    lines = run.mdfio_lines()
    stuck = f"ranks 0 (busy since it entered benchmark-1-go) of {N} have not arrived by the time all must have"
    bound = f"(stonewall_timer={TIMER} s, then join_timeout={join} s for the steps in flight)"
    # each rank says so: those that waited, and the stuck one when it came
    said = [x for x in lines if "stonewall_wear_out: " in x]
    assert run.rc != 0 and len(said) == N, run.stderr
    assert all(stuck in x and bound in x for x in said), said
    assert {re.search(r"rank (\d+) \(host", x).group(1) for x in said} == {str(r) for r in range(N)}, said


@pytest.mark.parametrize("opt,line", [
    (dict(stonewall_wear_out=1),
     "mdfio: stonewall_wear_out=1 needs stonewall_timer=<seconds> > 0: the wear-out starts when the timer "
     "stops the ranks (md-workbench -W with -w)"),
    (dict(stonewall_timer="soon"), "mdfio: stonewall_timer=soon: expected an integer from 0 to 4294967295"),
    (dict(stonewall_timer=1, stonewall_wear_out=2), "mdfio: stonewall_wear_out=2: expected an integer from 0 to 1"),
    (dict(runtime=10), "mdfio: runtime must not be set: fio's clock would stop a phase in mid-step and leave "
     "the namespace interrupted; use stonewall_timer=<seconds> instead (md-workbench -w, which stops the "
     "benchmark at a step boundary), with stonewall_wear_out=1 for -W"),
    (dict(time_based=1), "mdfio: time_based must not be set: fio's clock would stop a phase in mid-step and "
     "leave the namespace interrupted; use stonewall_timer=<seconds> instead (md-workbench -w, which stops the "
     "benchmark at a step boundary), with stonewall_wear_out=1 for -W"),
])
def test_refusals_are_one_line_and_touch_nothing(tmpfs, tmp_path, opt, line):
    run = run_fio(job(["precreate", "benchmark"], tmpfs, **opts("posix", **opt)), tmp_path, check=False)
    assert run.mdfio_lines() == [line], run.stderr
    assert os.listdir(tmpfs) == []
