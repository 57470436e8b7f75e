"""What only mdfio-uring promises: with issue=ring every object call goes
through the ring, with issue=syscall none, and issue=auto makes system
calls at iodepth 1, in a cleanup on xfs, and on tmpfs below iodepth 8 or
without a CPU to spare; from iodepth 8 where the job has more CPUs than
the host has ranks it goes through the ring (on tmpfs, for all but the
transfers and closes and a share of a cleanup's deletes), and elsewhere makes
system calls until they wait for the device; every choice
performs the same calls with the same results;
each kernel feature it uses can be switched, and a kernel that lacks one
is refused at job start with one line."""
import itertools
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

import mdfio.fio

from conftest import (MPI_ENV, MPIRUN, OBJECT_SIZE, engine_path, expected, fio_env, job, namespace, need_mpirun,
                      run_fio)

OBJECT_CALLS = "newfstatat,stat,statx,open,openat,read,write,close,unlink,unlinkat"

def has_cpus(*cpus):
    return set(cpus) <= os.sched_getaffinity(0)


def needs_cpus(*cpus):
    """issue=auto's choice depends on the CPUs a job may use (cpus_allowed)."""
    return pytest.mark.skipif(not has_cpus(*cpus), reason=f"needs CPUs {cpus} to run on")


needs_two_cpus = needs_cpus(0, 1)


def traced(tmpfs, tmp_path, opts, phase):
    """strace's lines of one phase run by mdfio-uring, each as "<pid> <call>":
    one file per thread (-ff), so that no call is split into
    '<unfinished ...>' and '<... resumed>' lines by another thread's."""
    trace = tmp_path / f"strace-{phase}"
    run_fio(job([phase], tmpfs, engine="uring", **opts), tmp_path, check=True,
            prefix=["strace", "-ff", "-qq", "-o", str(trace), "-e",
                    f"trace={OBJECT_CALLS},io_uring_enter,io_uring_setup,io_uring_register"])
    return [f"{f.suffix[1:]} {line}" for f in sorted(tmp_path.glob(f"{trace.name}.*"))
            for line in f.read_text().splitlines()]


@pytest.mark.parametrize("issue", ["ring", pytest.param("auto", marks=needs_two_cpus)])
@pytest.mark.parametrize("linked", [0, 1])
def test_with_issue_ring_every_object_call_goes_through_the_ring(tmpfs, loopfs, tmp_path, linked, issue):
    """issue=ring, and issue=auto from iodepth 8 on a file system on a
    device (ext4 here) for one rank on 2 CPUs: no object call but through
    the ring."""
    root = tmpfs if issue == "ring" else loopfs("ext4")
    opts = dict(datasets=2, precreate_per_set=20, steps_per_set=20, iodepth=8, linked=linked, issue=issue,
                **({"cpus_allowed": "0-1"} if issue == "auto" else {}))
    for phase in ("precreate", "benchmark", "cleanup"):
        lines = traced(root, tmp_path, opts, phase)
        assert not [l for l in lines if '"file-' in l or "/file-" in l], phase
        assert sum("io_uring_enter(" in l for l in lines) > 0, phase
        registered = [l for l in lines if "io_uring_register(" in l]
        assert any("IORING_REGISTER_BUFFERS" in l for l in registered)
        assert any("IORING_REGISTER_FILES" in l for l in registered) == bool(linked)
    assert [n for n in os.listdir(root) if n != "lost+found"] == []


def count_calls(lines, pattern):
    """{system call: count} of strace's lines that match pattern, whose
    first group is the call's name."""
    calls = {}
    for line in lines:
        m = re.search(pattern, line)
        if m:
            calls[m.group(1)] = calls.get(m.group(1), 0) + 1
    return calls


def object_calls(lines):
    """{system call: count} of the calls on objects ("file-<i>")."""
    return count_calls(lines, r"^\d+\s+(\w+)\(.*\"file-\d+\"")


@pytest.mark.parametrize("issue,iodepth,cpus", [
    ("syscall", 8, None), ("auto", 1, None), ("auto", 4, None),
    pytest.param("auto", 16, "0", marks=needs_cpus(0)),
], ids=["syscall", "auto at iodepth 1", "auto at iodepth 4", "auto at iodepth 16 on 1 CPU"])
def test_issued_as_system_calls_no_object_call_goes_through_the_ring(tmpfs, tmp_path, issue, iodepth, cpus):
    """issue=syscall always, issue=auto at iodepth 1 (where a call handed to
    a worker could overlap with nothing) and on tmpfs below iodepth 8 or
    with no CPU to spare (where no call waits for a device): mdfio-posix's
    calls, one per object call, and no ring is set up (so no io_uring
    feature is needed)."""
    d, p = 2, 20
    opts = dict(datasets=d, precreate_per_set=p, steps_per_set=p, iodepth=iodepth, issue=issue,
                **({"cpus_allowed": cpus} if cpus else {}))
    want = {"precreate": {"openat": d * p, "write": d * p, "close": d * p},
            "benchmark": {"newfstatat": d * p, "openat": 2 * d * p, "read": d * p, "write": d * p,
                          "close": 2 * d * p, "unlinkat": d * p},
            "cleanup": {"unlinkat": d * p}}
    for phase in ("precreate", "benchmark", "cleanup"):
        lines = traced(tmpfs, tmp_path, opts, phase)
        # no ring is even set up
        assert not [l for l in lines if "io_uring_" in l], phase
        calls = object_calls(lines)
        # read and write name no file: count the object's calls by its descriptor's
        assert {k: v for k, v in calls.items() if k not in ("read", "write", "close")} == \
            {k: v for k, v in want[phase].items() if k not in ("read", "write", "close")}, (phase, calls)
    assert os.listdir(tmpfs) == []


@needs_two_cpus
def test_auto_on_xfs_makes_a_cleanup_system_calls_and_the_rest_goes_through_the_ring(loopfs, tmp_path):
    """issue=auto on xfs from iodepth 8, one rank on 2 CPUs: a cleanup's
    deletes are unlinkat system calls and it sets up no ring; precreate and
    benchmark make no object system call."""
    root = loopfs("xfs", "320M")
    d, p = 2, 20
    opts = dict(datasets=d, precreate_per_set=p, steps_per_set=p, iodepth=8, issue="auto", cpus_allowed="0-1")
    for phase in ("precreate", "benchmark", "cleanup"):
        lines = traced(root, tmp_path, opts, phase)
        ring = phase != "cleanup"
        assert object_calls(lines) == ({} if ring else {"unlinkat": d * p}), phase
        assert any("io_uring_setup(" in l for l in lines) == ring, phase
        assert any("io_uring_enter(" in l for l in lines) == ring, phase
    assert os.listdir(root) == []


def io_us(tmp_path, root, phase, opts, mpi=()):
    """(io_us fio queued, fio's JSON total_ios per slot over its jobs, the
    engine's lines on stderr) of one phase run by mdfio-uring, or by one
    fio per rank under mpirun with options mpi: fio's --debug=io prints one
    'queue' line per io_u. Its output goes to files: a write to a full pipe
    would put the job's thread to sleep, which issue=auto takes for a call
    that waits."""
    jobfile = tmp_path / f"{phase}.fio"
    jobfile.write_text(job([phase], root, engine="uring", **opts))
    base = tmp_path / phase
    fio = (f'exec fio --debug=io --output-format=json "{jobfile}" > "{base}.$R.out" 2> "{base}.$R.err"')
    if mpi:
        need_mpirun()
        proc = subprocess.Popen([*MPIRUN, *mpi, "sh", "-c", f"R=$OMPI_COMM_WORLD_RANK; {fio}"],
                                env=fio_env(MPI_ENV), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            out, err = proc.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            # where mpirun's tree hung, and what each fio last printed
            # (--debug=io), before the kill takes it away
            states = mdfio.fio.hang_states(proc.pid)
            mdfio.fio.kill_tree(proc.pid)
            proc.communicate()
            tails = "".join(f"{f.name} ends:\n" + "".join(f.read_text(errors="replace").splitlines(True)[-20:])
                            for f in sorted(tmp_path.glob(f"{phase}.*.err")))
            raise AssertionError(f"mpirun ran longer than 300 s:\n{states}{tails}") from None
        proc = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    else:
        proc = subprocess.run(["sh", "-c", f"R=0; {fio}"], env=fio_env(), capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr + "".join(f.read_text() for f in tmp_path.glob(f"{phase}.*.err"))
    queued, counts, lines = 0, {"read": 0, "write": 0, "trim": 0}, []
    for out_file in sorted(tmp_path.glob(f"{phase}.*.out")):
        out = out_file.read_text()
        # fio's debug lines come first on the same stream as its JSON
        for j in json.JSONDecoder().raw_decode(out, out.index("\n{\n") + 1)[0]["jobs"]:
            for k in counts:
                counts[k] += j[k]["total_ios"]
        queued += len(re.findall(r" queue: io_u ", out))
        lines += [line for line in out_file.with_suffix(".err").read_text().splitlines()
                  if line.startswith("mdfio:")]
        out_file.unlink()
    return queued, counts, lines


@pytest.mark.parametrize("issue,iodepth,per_io_u", [("syscall", 8, 16), ("auto", 4, 16), ("ring", 8, 1)])
def test_io_us_carry_16_units_where_every_call_is_a_system_call(tmpfs, tmp_path, issue, iodepth, per_io_u):
    """Issued as system calls, every unit ends inside fio's queue call, so an
    io_u carries up to 16 units, as mdfio-posix's do (fio's own cycle per
    io_u is shared by them); through the ring, one each. fio's --debug=io
    prints one 'queue' line per io_u, and fio's JSON counts every unit."""
    D, P, I = 3, 20, 5
    opts = dict(datasets=D, precreate_per_set=P, steps_per_set=I, iodepth=iodepth, issue=issue)

    def batches(units):
        return -(-units // per_io_u)

    assert io_us(tmp_path, tmpfs, "precreate", opts) == (batches(D * P), {"read": 0, "write": D * P, "trim": 0}, [])
    assert io_us(tmp_path, tmpfs, "benchmark", opts) == (batches(D * I), {"read": D * I, "write": 0, "trim": 0}, [])
    assert io_us(tmp_path, tmpfs, "cleanup", opts) == (batches(D * P), {"read": 0, "write": 0, "trim": D * P}, [])
    assert os.listdir(tmpfs) == []


def transfers(lines):
    """{read/write: count} of the system calls that move a whole object
    (OBJECT_SIZE bytes)."""
    return count_calls(lines, rf"^\d+\s+(read|write)\(\d+, .*, {OBJECT_SIZE}\) = {OBJECT_SIZE}$")


@needs_two_cpus
@pytest.mark.parametrize("iodepth", [8, 64])
def test_auto_on_tmpfs_works_beside_the_ring(tmpfs, tmp_path, iodepth):
    """issue=auto on tmpfs from iodepth 8, one rank on 2 CPUs: stats,
    deletes and opens go through the ring, and the job's thread reads or
    writes each object and closes it with system calls; in a cleanup it
    makes one delete in 3 itself (1 + 2 per worker). Beside it the ring runs
    one io_uring worker (the CPU it leaves to spare), and has neither direct
    descriptors nor registered buffers."""
    d, p = 2, 20
    opts = dict(datasets=d, precreate_per_set=p, steps_per_set=p, iodepth=iodepth, issue="auto", cpus_allowed="0-1")
    want = {"precreate": {"write": d * p}, "benchmark": {"read": d * p, "write": d * p}, "cleanup": {}}
    for phase in ("precreate", "benchmark", "cleanup"):
        lines = traced(tmpfs, tmp_path, opts, phase)
        assert object_calls(lines) == ({"unlinkat": -(-d * p // 3)} if phase == "cleanup" else {}), phase
        assert transfers(lines) == want[phase], phase
        assert any("io_uring_enter(" in l for l in lines), phase
        registered = [l for l in lines if "io_uring_register(" in l]
        assert not [l for l in registered if "REGISTER_FILES" in l or "REGISTER_BUFFERS" in l], phase
        capped = [l for l in registered if "IORING_REGISTER_IOWQ_MAX_WORKERS" in l]
        assert len(capped) == 1 and "[[IO_WQ_BOUND]=1, [IO_WQ_UNBOUND]=0]" in capped[0], (phase, capped)
    assert os.listdir(tmpfs) == []


@pytest.mark.parametrize("iodepth,ranks,cpus", [
    (4, 1, None),
    pytest.param(16, 1, "0", marks=needs_cpus(0)),
    pytest.param(16, 2, "0-1", marks=needs_two_cpus),
], ids=["iodepth 4", "iodepth 16, 1 rank on 1 CPU", "iodepth 16, 2 ranks on 2 CPUs"])
def test_auto_makes_system_calls_until_they_wait_for_the_device(loopfs, tmp_path, iodepth, ranks, cpus):
    """issue=auto on ext4 below iodepth 8, or with no CPU to spare for
    io_uring's workers (as many ranks as the job may use CPUs): with every
    object cached (just made) no call waits, so every unit of a precreate
    and of a benchmark is system calls and io_us carry 16 units; with the
    caches dropped, the benchmark's stats and reads wait for the device,
    and after 4 windows of 64 requests each rank goes through the ring, one
    unit per io_u. (Not under strace: its stops put the thread to sleep at
    every call.)"""
    root = loopfs("ext4", "128M")
    D, P = 2, 300
    batched = ranks * -(-D * P // 16)
    opts = dict(datasets=D, precreate_per_set=P, steps_per_set=P, iodepth=iodepth, issue="auto",
                numjobs=ranks, **({"cpus_allowed": cpus} if cpus else {}))
    units = ranks * D * P
    assert io_us(tmp_path, root, "precreate", opts) == (batched, {"read": 0, "write": units, "trim": 0}, [])
    assert io_us(tmp_path, root, "benchmark", opts) == (batched, {"read": units, "write": 0, "trim": 0}, [])
    subprocess.run(["sync"], check=True)
    Path("/proc/sys/vm/drop_caches").write_text("3\n")
    queued, counted, lines = io_us(tmp_path, root, "benchmark", opts)
    assert counted == {"read": units, "write": 0, "trim": 0}
    assert namespace(root) == expected(ranks, D, 2 * P, P)
    # each rank says how many of its steps came 16 to an io_u before it
    # took the ring, where the rest came one each: most of them
    said = [re.fullmatch(r"mdfio: rank (\d+) benchmark: system calls for the first (\d+) of "
                         rf"{D * P} steps, the ring for the rest: the calls waited for the device "
                         r"or a server \(mdfio-uring issue=auto\)", line) for line in lines]
    assert all(said) and sorted(int(m[1]) for m in said) == list(range(ranks)), lines
    first = [int(m[2]) for m in said]
    assert all(k % 16 == 0 and 0 < k < D * P // 2 for k in first), first
    assert queued == sum(k // 16 + D * P - k for k in first), (queued, first)


@pytest.mark.skipif(len(os.sched_getaffinity(0)) != 2 or os.cpu_count() != 2,
                    reason="the expected choices are those of a host with 2 CPUs, both usable")
@pytest.mark.parametrize("np,bind,ring", [(1, "none", True), (1, "core", False), (2, "none", False),
                                          (2, "core", False)])
def test_auto_under_mpirun_takes_the_ring_only_with_a_cpu_to_spare(loopfs, tmp_path, np, bind, ring):
    """issue=auto at iodepth 16 under Open MPI's mpirun on 2 CPUs, cache
    warm: one rank left unbound has a CPU to spare and goes through the
    ring (one unit per io_u); bound to a core (--bind-to core), or
    unbound beside another rank (OMPI_COMM_WORLD_LOCAL_SIZE=2), it has
    none and makes system calls (16 units per io_u)."""
    root = loopfs("ext4", "128M")
    D, P = 2, 64
    opts = dict(datasets=D, precreate_per_set=P, steps_per_set=P, iodepth=16, issue="auto", join_timeout=30)
    units = np * D * P
    per_rank = D * P if ring else -(-D * P // 16)
    got = io_us(tmp_path, root, "precreate", opts, mpi=["--bind-to", bind, "-np", str(np)])
    assert got == (np * per_rank, {"read": 0, "write": units, "trim": 0}, [])
    assert namespace(root) == expected(np, D, 0, P)


@pytest.mark.parametrize("iodepth,ranks,cpus", [
    (4, 1, None),
    pytest.param(16, 2, "0-1", marks=needs_two_cpus),
], ids=["iodepth 4", "iodepth 16, 2 ranks on 2 CPUs"])
def test_auto_on_fuse_takes_the_ring_once_calls_sleep(fusefs, tmp_path, iodepth, ranks, cpus):
    """On a FUSE file system (bindfs) the thread reads no block device, so
    its sleeps alone count: each call waits for the daemon's reply, every
    window of 64 requests waits, and each rank of a precreate moves to the
    ring at the first io_u after its 4th window, at create 272 (17 io_us of
    16): 4 windows end at request 256, whose io_u holds creates 256..271."""
    D, P = 2, 300
    opts = dict(datasets=D, precreate_per_set=P, steps_per_set=P, iodepth=iodepth, issue="auto", numjobs=ranks,
                **({"cpus_allowed": cpus} if cpus else {}))
    queued, counted, lines = io_us(tmp_path, fusefs, "precreate", opts)
    assert counted == {"read": 0, "write": ranks * D * P, "trim": 0}
    assert sorted(lines) == [f"mdfio: rank {r} precreate: system calls for the first 272 of {D * P} creates, the "
                             f"ring for the rest: the calls waited for the device or a server (mdfio-uring "
                             f"issue=auto)" for r in range(ranks)]
    assert queued == ranks * (272 // 16 + D * P - 272)
    assert namespace(fusefs) == expected(ranks, D, 0, P)


@pytest.mark.parametrize("fs,iodepth", [("ext4", 4), ("tmpfs", 4), ("tmpfs", 8)])
def test_auto_with_sqthread_poll_uses_the_ring_from_the_start(tmpfs, loopfs, tmp_path, fs, iodepth):
    """With sqthread_poll=1, issue=auto goes through the ring from the first
    unit, below iodepth 8 and on tmpfs too: a polling thread set up for
    system calls would take a CPU for nothing. One unit per io_u, cache
    warm."""
    root = tmpfs if fs == "tmpfs" else loopfs(fs)
    D, P = 2, 20
    opts = dict(datasets=D, precreate_per_set=P, steps_per_set=P, iodepth=iodepth, issue="auto", sqthread_poll=1)
    assert io_us(tmp_path, root, "precreate", opts) == (D * P, {"read": 0, "write": D * P, "trim": 0}, [])


def outcome(run):
    """What a phase's fio run says, but for time: per slot the operations
    counted, failed and timed, and the engine's error lines."""
    (j,) = run.jobs()
    slots = {}
    for slot in ("read", "write", "trim"):
        slots[slot] = (j[slot]["total_ios"], j[slot]["drop_ios"], j[slot]["io_bytes"], j[slot]["clat_ns"]["N"])
    slots["sync"] = (j["sync"]["total_ios"], j["sync"]["lat_ns"]["N"])
    return slots, run.mdfio_lines()


@pytest.mark.parametrize("linked,fs", [(0, "tmpfs"), (1, "tmpfs"), (1, "xfs")])
def test_every_issue_choice_gives_the_same_namespace_counts_errors_and_samples(tmpfs, loopfs, tmp_path, linked, fs):
    """The same cycle, with a stat that fails (a missing object), a read that
    fails (an object cut short), and cleanup deletes that fail (the
    object that failed stat never replaced, one more removed), through the ring, as system calls and as issue=auto
    chooses (on xfs: the cleanup as system calls, the rest through the ring;
    on tmpfs with a CPU to spare: the ring's opens and the job's thread's
    transfers), at iodepth 1 and 8: identical namespaces, counts, error lines and
    latency samples."""
    d, p = 2, 24
    base = tmpfs if fs == "tmpfs" else loopfs(fs, "320M")
    results = {}
    for issue in ("ring", "syscall", "auto"):
        for iodepth in (1, 8):
            root = base / f"{issue}-{iodepth}"
            root.mkdir()
            # on 2 CPUs where there are: auto on tmpfs then works beside the ring
            opts = dict(datasets=d, precreate_per_set=p, steps_per_set=p // 2, iodepth=iodepth, linked=linked,
                        issue=issue, verify_read=1, **({"cpus_allowed": "0-1"} if has_cpus(0, 1) else {}))
            got = []
            run = run_fio(job(["precreate"], root, engine="uring", **opts), tmp_path, check=True)
            got.append((outcome(run), namespace(root)))
            (root / "0_0" / "file-3").unlink()
            (root / "0_1" / "file-5").write_bytes(b"short")
            run = run_fio(job(["benchmark"], root, engine="uring", **opts), tmp_path, check=False)
            assert run.rc != 0
            got.append((outcome(run), namespace(root)))
            (root / "0_0" / f"file-{p + 6}").unlink()
            run = run_fio(job(["cleanup"], root, engine="uring", **opts), tmp_path, check=False)
            got.append((outcome(run), os.listdir(root)))
            # with units in flight, which of two failing calls is reported
            # "first" is the one that ended first
            results[issue, iodepth] = [re.sub(r"first: ROOT/0_0/file-(27|30):", "first: ROOT/0_0/file-N:",
                                              str(g).replace(str(root), "ROOT")) for g in got]
    first = results["ring", 1]
    assert "1 stat error" in first[1] and "1 read error" in first[1] and "2 delete errors" in first[2], first
    for key, got in results.items():
        assert got == first, key


@pytest.mark.parametrize("linked,fixedbufs,sqthread_poll", list(itertools.product([0, 1], repeat=3)))
def test_each_feature_combination_runs_the_cycle(tmpfs, tmp_path, linked, fixedbufs, sqthread_poll):
    n, d, p = 2, 3, 30
    opts = dict(numjobs=n, datasets=d, precreate_per_set=p, steps_per_set=p, verify_read=1, iodepth=16,
                linked=linked, fixedbufs=fixedbufs, sqthread_poll=sqthread_poll)
    run_fio(job(["precreate"], tmpfs, engine="uring", **opts), tmp_path, check=True)
    trace = tmp_path / "setup.strace"
    run = run_fio(job(["benchmark"], tmpfs, engine="uring", **opts), tmp_path, check=True,
                  prefix=["strace", "-f", "-qq", "-o", str(trace), "-e", "trace=io_uring_setup,io_uring_register"])
    calls = trace.read_text()
    # each switch really reaches the kernel, in every rank's ring
    assert calls.count("IORING_SETUP_SQPOLL") == (n if sqthread_poll else 0), calls
    # without a polling thread, the job's thread alone submits and the
    # kernel defers completion work to its waits (SINGLE_ISSUER 1<<12,
    # DEFER_TASKRUN 1<<13; strace may not name them)
    setups = [l for l in calls.splitlines() if "io_uring_setup(" in l]
    deferred = [l for l in setups if re.search(r"flags=(0x3000|IORING_SETUP_SINGLE_ISSUER\|IORING_SETUP_DEFER_TASKRUN)\b", l)]
    assert len(setups) == n and len(deferred) == (0 if sqthread_poll else n), setups
    assert calls.count("IORING_REGISTER_BUFFERS") == (n if fixedbufs else 0), calls
    assert calls.count("IORING_REGISTER_FILES") == (n if linked else 0), calls
    assert namespace(tmpfs) == expected(n, d, p, p)
    assert sum(j["read"]["clat_ns"]["N"] for j in run.jobs()) == n * d * p
    run_fio(job(["cleanup"], tmpfs, engine="uring", **opts), tmp_path, check=True)
    assert os.listdir(tmpfs) == []


# <linux/io_uring.h> numbers of the opcodes mdfio-uring needs
OPCODES = {"READ_FIXED": 4, "WRITE_FIXED": 5, "OPENAT": 18, "CLOSE": 19, "STATX": 21, "READ": 22,
           "WRITE": 23, "UNLINKAT": 36}


@pytest.mark.parametrize("name", sorted(OPCODES))
def test_a_missing_opcode_is_one_line_at_job_start(tmpfs, tmp_path, name):
    shim = Path(os.environ.get("MDFIO_TEST_LIB_DIR", engine_path("uring").parent.parent / "tests")) / "hide_opcode.so"
    preload = " ".join(filter(None, [os.environ.get("MDFIO_PRELOAD"), str(shim)]))
    opts = dict(datasets=2, precreate_per_set=10, steps_per_set=10, issue="ring")
    run_fio(job(["precreate"], tmpfs, engine="uring", **opts), tmp_path, check=True)
    status = (tmpfs / "mdfio.status").read_text()
    before = namespace(tmpfs)
    for phase in ("benchmark", "cleanup"):
        run = run_fio(job([phase], tmpfs, engine="uring", **opts), tmp_path, check=False,
                      env={"LD_PRELOAD": preload, "MDFIO_HIDE_OPCODE": str(OPCODES[name])})
        assert run.rc != 0
        lines = run.mdfio_lines()
        assert len(lines) == 1 and f"io_uring has no IORING_OP_{name} (mdfio-uring needs it); use mdfio-posix" in lines[0], \
            run.stderr
        assert ("fixedbufs=0" in lines[0]) == name.endswith("_FIXED")
        # refused before the phase was entered: nothing moved
        assert (tmpfs / "mdfio.status").read_text() == status
        assert namespace(tmpfs) == before
    # without the fixed opcodes, fixedbufs=0 needs none of them
    if name.endswith("_FIXED"):
        run_fio(job(["benchmark"], tmpfs, engine="uring", fixedbufs=0, **opts), tmp_path,
                check=True, env={"LD_PRELOAD": preload, "MDFIO_HIDE_OPCODE": str(OPCODES[name])})
    # a job that makes system calls needs no ring, and no opcode
    run_fio(job(["benchmark"], tmpfs, engine="uring", **dict(opts, issue="auto")), tmp_path,
            check=True, env={"LD_PRELOAD": preload, "MDFIO_HIDE_OPCODE": str(OPCODES[name])})
    run_fio(job(["cleanup"], tmpfs, engine="uring", **opts), tmp_path, check=True)


@pytest.mark.parametrize("value", ["2", "-1", "1.5", "yes"])
@pytest.mark.parametrize("option", ["linked", "fixedbufs", "sqthread_poll"])
def test_bad_feature_value_is_one_line_naming_the_option(tmpfs, tmp_path, option, value):
    """The switches are 0 or 1, refused otherwise before the engine runs
    (as fio booleans -1 and 1.5 passed, with a message or none)."""
    run = run_fio(job(["precreate"], tmpfs, engine="uring", **{option: value}), tmp_path, check=False)
    assert run.rc != 0
    assert run.mdfio_lines() == [f"mdfio: {option}={value}: expected an integer from 0 to 1"], run.stderr
    assert os.listdir(tmpfs) == []


@pytest.mark.parametrize("value", ["Ring", "syscalls", "auto,ring", "|bogus"])
def test_a_bad_issue_value_is_one_line_naming_the_option(tmpfs, tmp_path, value):
    run = run_fio(job(["precreate"], tmpfs, engine="uring", issue=value), tmp_path, check=False)
    assert run.rc != 0
    lines = run.mdfio_lines()
    assert lines == [f"mdfio: issue={value}: expected ring, syscall or auto"], run.stderr
    assert os.listdir(tmpfs) == []


def test_enghelp_lists_the_ring_options():
    out = subprocess.run(["fio", f"--enghelp={engine_path('uring')}"], capture_output=True, text=True,
                         env=fio_env()).stdout
    for opt in ("linked", "fixedbufs", "sqthread_poll", "issue", "phase", "datasets"):
        assert re.search(rf"^{opt}\s+: \S", out, re.M), out


@pytest.mark.parametrize("option", ["linked", "fixedbufs", "sqthread_poll"])
def test_enghelp_shows_the_switches_as_0_or_1(option):
    out = subprocess.run(["fio", f"--enghelp={engine_path('uring')},{option}"], capture_output=True, text=True,
                         env=fio_env()).stdout
    assert re.search(r"1: ", out), out
