"""Nothing the engines touch lies outside the root: datasets, objects, the
status file and the rank file are found one name at a time from the root's
descriptor, never through a symlink. A victim directory outside the root
holds files named like mdfio's, and each test checks it byte for byte.
Also the open-file limit that holding datasets open needs, and a read-only
benchmark on a read-only file system."""
import os
import shutil
import subprocess

import pytest

import mdfio.fio
from conftest import (ALIENS, ENGINES, SANITIZER_REPORT, fio_env, job, namespace, put_alien,
                      run_fio, snapshot)

D, P, I = 2, 8, 4


@pytest.fixture(params=ENGINES + ("null",))
def eng(request):
    return request.param


@pytest.fixture
def victim(tmp_path):
    """A directory outside the root with files named like objects, like the
    status file and like the rank file."""
    v = tmp_path / "victim"
    v.mkdir()
    for i in range(2 * P):
        (v / f"file-{i}").write_bytes(b"precious %d\n" % i)
    (v / "mdfio.status").write_text("not yours\n")
    (v / "mdfio.ranks").write_text("not yours either\n")
    return v


def opts(**extra):
    return dict(numjobs=2, datasets=D, precreate_per_set=P, steps_per_set=I, **extra)


@pytest.mark.parametrize("phase", ["benchmark", "cleanup"])
def test_a_dataset_replaced_by_a_symlink_is_refused(tmpfs, tmp_path, victim, eng, phase):
    run_fio(job(["precreate"], tmpfs, engine=eng, **opts()), tmp_path, check=True)
    shutil.rmtree(tmpfs / "1_0")
    (tmpfs / "1_0").symlink_to(victim)
    before = snapshot(victim)
    run = run_fio(job([phase], tmpfs, engine=eng, **opts()), tmp_path, check=False)
    assert run.rc != 0
    # 1_0 is read and written by rank 0 (O=1, N=2, d=0), cleaned by rank 1
    lines = run.mdfio_lines()
    rank = 0 if phase == "benchmark" else 1
    assert len(lines) == 1, run.stderr
    assert f"rank {rank} {phase}: dataset {tmpfs}/1_0 is a symlink" in lines[0], run.stderr
    assert "nothing was touched" in lines[0]
    assert snapshot(victim) == before
    assert os.readlink(tmpfs / "1_0") == str(victim)


@pytest.mark.parametrize("what", ["file", "directory"])
def test_a_dataset_that_is_not_a_directory_or_is_missing_is_refused(tmpfs, tmp_path, eng, what):
    run_fio(job(["precreate"], tmpfs, engine=eng, **opts()), tmp_path, check=True)
    shutil.rmtree(tmpfs / "1_0")
    if what == "file":
        (tmpfs / "1_0").write_text("a file")
    status = (tmpfs / "mdfio.status").read_bytes()
    run = run_fio(job(["benchmark"], tmpfs, engine=eng, **opts()), tmp_path, check=False)
    assert run.rc != 0
    lines = run.mdfio_lines()
    needle = "is not a directory" if what == "file" else "is missing"
    assert len(lines) == 1 and f"rank 0 benchmark: dataset {tmpfs}/1_0 {needle}" in lines[0], run.stderr
    # rank 0's refusal stopped rank 1 too, before either touched anything
    assert (tmpfs / "mdfio.status").read_bytes() == status


@pytest.mark.parametrize("phase", ["precreate", "benchmark", "cleanup"])
def test_a_status_file_replaced_by_a_symlink_is_refused(tmpfs, tmp_path, victim, eng, phase):
    if phase != "precreate":
        run_fio(job(["precreate"], tmpfs, engine=eng, **opts()), tmp_path, check=True)
        # the victim is a real status: following the link would use it
        shutil.copy(tmpfs / "mdfio.status", victim / "mdfio.status")
        (tmpfs / "mdfio.status").unlink()
        (tmpfs / "mdfio.status").symlink_to(victim / "mdfio.status")
    else:
        # dangling: following it would create the file in the victim
        (tmpfs / "mdfio.status").symlink_to(victim / "new.status")
    before, root_before = snapshot(victim), snapshot(tmpfs)
    run = run_fio(job([phase], tmpfs, engine=eng, **opts()), tmp_path, check=False)
    assert run.rc != 0
    lines = run.mdfio_lines()
    assert len(lines) == 1 and f"{tmpfs}/mdfio.status: a symlink, which mdfio never follows" in lines[0], \
        run.stderr
    assert snapshot(victim) == before
    # (the rank file, mdfio's own, goes when no readable status keeps it)
    root_before.pop("mdfio.ranks", None)
    assert snapshot(tmpfs) == root_before


def test_a_status_file_that_is_not_a_regular_file_is_refused(tmpfs, tmp_path, eng):
    os.mkfifo(tmpfs / "mdfio.status")
    run = run_fio(job(["benchmark"], tmpfs, engine=eng, **opts()), tmp_path, check=False)
    assert run.rc != 0
    lines = run.mdfio_lines()
    assert len(lines) == 1 and "mdfio.status: not a regular file" in lines[0], run.stderr
    assert os.listdir(tmpfs) == ["mdfio.status"]


def test_a_rank_file_replaced_by_a_symlink_is_refused(tmpfs, tmp_path, victim, eng):
    (tmpfs / "mdfio.ranks").symlink_to(victim / "mdfio.ranks")
    before = snapshot(victim)
    run = run_fio(job(["precreate"], tmpfs, engine=eng, **opts()), tmp_path, check=False)
    assert run.rc != 0
    lines = run.mdfio_lines()
    assert len(lines) == 1 and "cannot open mdfio.ranks" in lines[0] and \
        "a symlink: refusing to follow it" in lines[0], run.stderr
    assert snapshot(victim) == before
    assert os.listdir(tmpfs) == ["mdfio.ranks"]


def test_a_rank_file_hard_linked_to_another_file_is_refused(tmpfs, tmp_path, eng):
    """An empty file of someone else's, hard-linked where the rank file
    goes, is not adopted: nothing is written through the link."""
    root, foreign = tmpfs / "root", tmpfs / "foreign"
    root.mkdir()
    foreign.write_bytes(b"")
    os.link(foreign, root / "mdfio.ranks")
    run = run_fio(job(["precreate"], root, engine=eng, **opts()), tmp_path, check=False)
    assert run.rc != 0
    lines = run.mdfio_lines()
    assert len(lines) == 1 and "mdfio.ranks is not a regular file of one link: refusing to touch it" in \
        lines[0], run.stderr
    assert foreign.read_bytes() == b"" and os.listdir(root) == ["mdfio.ranks"]


@pytest.mark.parametrize("kind", ALIENS)
@pytest.mark.parametrize("engine,extra", [("posix", {}), ("uring", {}), ("uring", {"linked": 0}),
                                          ("aio", {}), ("aio", {"iodepth": 4})])
def test_a_name_that_holds_no_object_fails_its_stat(tmpfs, tmp_path, victim, engine, extra, kind):
    """An object replaced by anything but a regular file of one link: the
    step's stat fails, naming the path and what it holds, and the step
    stops there: nothing is opened (a FIFO's open used to wait for a writer
    for ever, a device's was read as an object), read, deleted or created
    in its place. The victim is never read, written or removed."""
    o = dict(datasets=1, precreate_per_set=P, steps_per_set=I, verify_read=1, **extra)
    run_fio(job(["precreate"], tmpfs, engine=engine, **o), tmp_path, check=True)
    alien = tmpfs / "0_0" / "file-1"
    put_alien(alien, kind, victim)
    mode = os.lstat(alien).st_mode
    before = snapshot(victim)
    run = run_fio(job(["benchmark"], tmpfs, engine=engine, **o), tmp_path, check=False, timeout=120)
    assert run.rc != 0
    (j,) = run.jobs()
    assert j["sync"]["lat_ns"]["N"] == I - 1 and j["read"]["drop_ios"] == 0
    lines = run.mdfio_lines()
    assert len(lines) == 1 and "rank 0 benchmark: 1 stat error (first: " \
        f"{tmpfs}/0_0/file-1: {ALIENS[kind]}, not an object" in lines[0], run.stderr
    assert namespace(tmpfs) == {"0_0": [1] + [i for i in range(I, P + I) if i != P + 1]}
    assert os.lstat(alien).st_mode == mode
    assert snapshot(victim) == before


@pytest.mark.parametrize("engine", ENGINES)
def test_a_cleanup_deletes_the_link_where_an_object_belongs(tmpfs, tmp_path, victim, engine):
    """The cleanup's delete removes a symlink at an object's name, never
    its target."""
    o = dict(datasets=1, precreate_per_set=P, steps_per_set=I)
    run_fio(job(["precreate"], tmpfs, engine=engine, **o), tmp_path, check=True)
    before = snapshot(victim)
    (tmpfs / "0_0" / "file-1").unlink()
    (tmpfs / "0_0" / "file-1").symlink_to(victim / "file-1")
    run_fio(job(["cleanup"], tmpfs, engine=engine, **o), tmp_path, check=True)
    assert os.listdir(tmpfs) == []
    assert snapshot(victim) == before


def test_the_soft_open_file_limit_is_raised_to_the_hard_one(tmpfs, tmp_path):
    """100 datasets held open do not fit under a soft limit of 100: the job
    raises it to the hard limit."""
    o = dict(datasets=100, precreate_per_set=2, steps_per_set=1)
    for phase in ("precreate", "benchmark", "cleanup"):
        run_fio(job([phase], tmpfs, **o), tmp_path, check=True, prefix=["prlimit", "--nofile=100:4096"])
    assert os.listdir(tmpfs) == []


def test_datasets_beyond_the_open_file_limit_are_refused(tmpfs, tmp_path):
    run = run_fio(job(["precreate"], tmpfs, datasets=100, precreate_per_set=2), tmp_path, check=False,
                  prefix=["prlimit", "--nofile=120:120"])
    assert run.rc != 0
    lines = run.mdfio_lines()
    assert len(lines) == 1 and "datasets=100: rank 0 keeps 100 dataset directories open" in lines[0] \
        and "open-file limit (ulimit -n) is 120" in lines[0], run.stderr
    assert os.listdir(tmpfs) == []


def remount(root, mode):
    subprocess.run(["mount", "-o", f"remount,{mode}", str(root)], check=True)


def test_a_read_only_benchmark_runs_on_a_read_only_file_system(tmpfs, tmp_path, eng):
    """Nothing can change a read-only namespace, so a read_only benchmark
    needs neither the barrier nor a status update: it runs, and leaves
    everything as it was. Everything that would write is refused."""
    o = opts(iodepth=4, **({} if eng == "null" else {"verify_read": 1}))
    run_fio(job(["precreate"], tmpfs, engine=eng, **o), tmp_path, check=True)
    before = snapshot(tmpfs)
    remount(tmpfs, "ro")
    try:
        run = run_fio(job(["benchmark"], tmpfs, engine=eng, read_only=1, **o), tmp_path, check=True)
        for j in run.jobs():
            assert (j["read"]["total_ios"], j["read"]["drop_ios"], j["sync"]["lat_ns"]["N"]) == (D * I, 0, D * I)
        # rank 0's own latency log needs no merge, so no status: it is written
        logs = tmp_path / f"lat-{eng}"
        run_fio(job(["benchmark"], tmpfs, engine=eng, read_only=1, latency_log=str(logs), **o), tmp_path,
                check=True)
        assert sorted(p.name for p in tmp_path.glob(f"lat-{eng}-*")) == [
            f"lat-{eng}-0.00-0-{op}.csv" for op in ("read", "stat")]
        refusals = [
            ({}, "", "phase=benchmark without read_only=1 writes there"),
            ({"read_only": 1, "latency_log": str(tmp_path / "lat"), "latency_all": 1}, "",
             "latency_all=1: on a read-only file system no status"),
            ({"read_only": 1}, "PMI", "the ranks of several fio processes cannot meet"),
            ({"read_only": 1, "stonewall_timer": 1, "stonewall_wear_out": 1}, "",
             "stonewall_wear_out=1: on the read-only file system"),
        ]
        for extra, env, needle in refusals:
            run = run_fio(job(["benchmark"], tmpfs, engine=eng, **o, **extra), tmp_path, check=False,
                          env={"PMI_RANK": "0", "PMI_SIZE": "2"} if env else None)
            lines = run.mdfio_lines()
            assert run.rc != 0 and len(lines) == 1 and needle in lines[0], run.stderr
        run = run_fio(job(["cleanup"], tmpfs, engine=eng, **o), tmp_path, check=False)
        assert run.rc != 0 and all("phase=cleanup writes there" in l for l in run.mdfio_lines()), run.stderr
    finally:
        remount(tmpfs, "rw")
    assert snapshot(tmpfs) == before
    run_fio(job(["benchmark"], tmpfs, engine=eng, **o), tmp_path, check=True)
    run_fio(job(["cleanup"], tmpfs, engine=eng, **o), tmp_path, check=True)
    assert os.listdir(tmpfs) == []


def test_a_status_file_swapped_for_a_symlink_mid_phase_fails_the_job(tmpfs, tmp_path, victim):
    """The status replaced by a symlink while a benchmark runs (its waits
    make it last seconds): the phase's end is not recorded through it, one
    line says why, and the job fails, where fio used to exit 0."""
    o = dict(datasets=1, precreate_per_set=P, steps_per_set=I, waiting_factor=20000)
    run_fio(job(["precreate"], tmpfs, **o), tmp_path, check=True)
    status = tmpfs / "mdfio.status"
    swapped = []

    def swap(pid):
        if not swapped and "benchmarking" in status.read_text():
            status.rename(tmpfs / "status.real")
            status.symlink_to(victim / "mdfio.status")
            swapped.append(pid)

    before = snapshot(victim)
    run = mdfio.fio.run(tmp_path / "benchmark.fio", job(["benchmark"], tmpfs, **o), env=fio_env(),
                        watch=swap, timeout=300)
    assert not SANITIZER_REPORT.search(run.stderr), run.stderr
    assert swapped and run.rc != 0, run.stderr
    (j,) = run.jobs()
    assert j["error"] != 0
    lines = run.mdfio_lines()
    assert len(lines) == 1 and f"{status}: " in lines[0] and "symlink" in lines[0], run.stderr
    assert snapshot(victim) == before
