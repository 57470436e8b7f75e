"""A failed create of a precreate or benchmark (md-workbench's ERRF): by
default the first one ends the run, as md-workbench's does; with
ignore_precreate_errors=1 it is counted and the run goes on. The errors
come from real file systems: a tmpfs with too few inodes (ENOSPC), and an
object name that is taken (EEXIST, as O_EXCL refuses it)."""
import contextlib
import errno
import os

import pytest

from conftest import job, mounted_tmpfs, not_on_s3, run_fio, store_view

STOPS = "the run stops here (ignore_precreate_errors=1 counts such errors and goes on)"
# what a create's ENOSPC says on a file system with blocks but no inode left
NO_INODE = "No space left on device (no inode is free: the file system's 40 are all in use)"


@pytest.fixture
def few_inodes():
    """mount(n) -> a fresh tmpfs of its own that holds n inodes, its root
    one of them."""
    with contextlib.ExitStack() as mounts:
        yield lambda n: mounts.enter_context(mounted_tmpfs(f"size=64m,nr_inodes={n}", "mdfio-inodes-"))


def jobs_of(run, phase):
    return [j for j in run.jobs() if j["jobname"].startswith(phase)]


def stop_lines(run):
    return [l for l in run.mdfio_lines() if "this run stopped before this phase (rank " in l]


# 2 ranks x 2 datasets x 20 objects need far more than 40 inodes
OPTS = dict(numjobs=2, datasets=2, precreate_per_set=20, steps_per_set=3, bs=100)


@not_on_s3("inodes run out on a file system; a store has no count of them")
def test_a_create_failing_after_others_of_its_io_u_is_fio_s_one_error(few_inodes, tmp_path, engine):
    """Where an io_u carries several units (mdfio-posix, and mdfio-uring
    making system calls), a create that fails after others of its io_u is
    held for an io_u of its own. fio counts it as the job's only error and
    asks for nothing past it: it used to ask for one more unit, which the
    halted rank refused as a short transfer, a second error in fio's
    total_err."""
    root = few_inodes(40)
    run = run_fio(job(["precreate"], root, engine=engine, datasets=2, precreate_per_set=50, steps_per_set=1,
                      bs=100), tmp_path, check=False)
    (j,) = run.jobs()
    assert run.rc != 0 and (j["total_err"], j["write"]["drop_ios"]) == (1, 1), run.stderr


@not_on_s3("inodes run out on a file system; a store has no count of them")
@pytest.mark.parametrize("iodepth", [1, 8])
def test_first_create_error_of_a_precreate_ends_the_run(few_inodes, tmp_path, engine, iodepth):
    root = few_inodes(40)
    run = run_fio(job(["precreate", "benchmark", "cleanup"], root, engine=engine, iodepth=iodepth, **OPTS),
                  tmp_path, check=False)
    assert run.rc != 0
    # each rank ran out of inodes for an object, or for a dataset if the
    # other rank's objects took them first
    lines = [l for l in run.mdfio_lines() if l.startswith("mdfio: rank ")]
    objects = [l for l in lines if l.endswith(f": {NO_INODE}; {STOPS}")]
    datasets = [l for l in lines if f": cannot create dataset {root}/" in l]
    assert objects and all(f"precreate: cannot create {root}/" in l for l in objects), run.stderr
    # a rank still entering the phase when the other's objects took the
    # last inodes finds the status file its sibling made, and fails on
    # its own dataset or object; a rank that got its objects made cannot
    # record its end (the status's update needs an inode of its own)
    updates = [l for l in run.mdfio_lines()
               if l == f"mdfio: cannot update {root}/mdfio.status: No space left on device (it is left as it was)"]
    assert len(objects) + len(datasets) == 2 or (len(objects) + len(datasets) == 1 and updates), run.stderr
    assert all(l.endswith(f": {NO_INODE}") for l in datasets), run.stderr
    # no rank went on past its error, no later phase started
    created = sum(j["write"]["clat_ns"]["N"] for j in jobs_of(run, "precreate"))
    assert 0 < created < 2 * 2 * 20
    assert sum(j["write"]["drop_ios"] for j in jobs_of(run, "precreate")) <= 2 * iodepth
    assert len(stop_lines(run)) == 2, run.stderr          # one per later job section
    for phase in ("benchmark", "cleanup"):
        assert all(j["error"] != 0 and j["read"]["total_ios"] + j["trim"]["total_ios"] == 0
                   for j in jobs_of(run, phase))
    assert "precreating" in (root / "mdfio.status").read_text()
    # what it made is removed by the cleanup's recovery
    run = run_fio(job(["cleanup"], root, engine=engine, **OPTS), tmp_path, check=True)
    assert os.listdir(root) == []


@not_on_s3("inodes run out on a file system; a store has no count of them")
def test_ignore_precreate_errors_counts_them_and_the_run_goes_on(few_inodes, tmp_path, engine):
    """One rank: root, mdfio.ranks, mdfio.status and 2 datasets leave 35
    of the 40 inodes to its objects. The status's update at the end needs
    an inode of its own too: the precreate cannot record its end, says so,
    and fails; the cleanup that follows makes room and removes it all."""
    root = few_inodes(40)
    opts = dict(OPTS, numjobs=1, ignore_precreate_errors=1)
    run = run_fio(job(["precreate", "benchmark"], root, engine=engine, **opts), tmp_path, check=False)
    assert run.rc != 0 and not any(STOPS in l for l in run.mdfio_lines()), run.stderr
    pre = jobs_of(run, "precreate")
    errors = sum(j["write"]["drop_ios"] for j in pre)
    assert (sum(j["write"]["clat_ns"]["N"] for j in pre), errors) == (35, 5)
    assert any("rank 0 precreate: 5 create errors" in l and "No space left on device" in l
               for l in run.mdfio_lines()), run.stderr
    assert f"mdfio: cannot update {root}/mdfio.status: No space left on device (it is left as it was)" \
        in run.mdfio_lines(), run.stderr
    assert "precreating" in (root / "mdfio.status").read_text()
    run = run_fio(job(["cleanup"], root, engine=engine, **opts), tmp_path, check=True)
    assert sum(j["trim"]["total_ios"] for j in run.jobs()) == 35
    assert os.listdir(root) == []


def test_a_stop_naming_a_long_path_is_said_once_per_section(few_inodes, tmp_path):
    """Every rank of a later section meets the same stop; its line, however
    long the root's path, is printed once per section, not once per rank."""
    root = few_inodes(40) / ("deep-" * 50)
    root.mkdir()
    run = run_fio(job(["precreate", "benchmark", "cleanup"], root, numjobs=4, datasets=2, precreate_per_set=20,
                      steps_per_set=3, bs=100), tmp_path, check=False)
    assert run.rc != 0 and all(len(l) > 300 for l in stop_lines(run))
    assert len(stop_lines(run)) == 2, run.stderr


def test_a_dataset_that_cannot_be_created_ends_the_run(few_inodes, tmp_path):
    """root, mdfio.ranks and mdfio.status take three inodes: the third
    dataset cannot be made."""
    root = few_inodes(5)
    run = run_fio(job(["precreate", "cleanup"], root, datasets=3, precreate_per_set=2), tmp_path, check=False)
    assert run.rc != 0
    lines = run.mdfio_lines()
    assert f"mdfio: rank 0: cannot create dataset {root}/0_2: No space left on device (no inode is free: " \
        "the file system's 5 are all in use)" in lines, run.stderr
    assert len(stop_lines(run)) == 1, run.stderr
    run = run_fio(job(["cleanup"], root, datasets=3, precreate_per_set=2), tmp_path, check=True)
    assert os.listdir(root) == []


@pytest.mark.parametrize("ignore", [0, 1])
def test_a_create_error_in_the_benchmark(tmpfs, tmp_path, engine, ignore):
    """Rank 1 writes to rank 0's dataset 0; its first create there finds
    the name taken. By default the run ends there and stores no position;
    ignore_precreate_errors=1 counts it, and the run goes on. Either way the
    EEXIST proves the file is not mdfio's: the status records it, and no
    benchmark, cleanup or recovery deletes it (they used to)."""
    info = tmp_path / "info"
    opts = dict(numjobs=2, datasets=2, precreate_per_set=4, steps_per_set=3, bs=100, run_info_file=info,
                ignore_precreate_errors=ignore)
    ns = store_view(tmpfs, engine)
    run_fio(job(["precreate"], tmpfs, engine=engine, **opts), tmp_path, check=True)
    user = "0_0/file-4"
    ns.put(user, b"USER\n")
    run = run_fio(job(["benchmark", "cleanup"], tmpfs, engine=engine, **opts), tmp_path, check=False)
    assert run.rc != 0
    lines = run.mdfio_lines()
    taken = f"rank 1 benchmark: cannot create {ns.name(user)}: {ns.taken}"
    assert "\ntaken 0 0 4\n" in (tmpfs / "mdfio.status").read_text(), run.stderr
    if ignore:
        assert not stop_lines(run) and not any(STOPS in l for l in lines), run.stderr
        assert any("rank 1 benchmark: 1 create error (first: " in l for l in lines), run.stderr
        assert sum(j["write"]["drop_ios"] for j in jobs_of(run, "benchmark")) == 1
        assert sum(j["trim"]["total_ios"] for j in jobs_of(run, "cleanup")) > 0
        assert info.read_text() == "pos: 3\n"
        # the cleanup following the FIFO left it, and its dataset
        assert f"mdfio: rank 0 cleanup: {ns.name(user)} is not mdfio's (a create found its name taken), so it " \
               "is left alone: a delete error" in lines, run.stderr
        assert f"mdfio: rank 0: cannot remove dataset {ns.name('0_0')}: Directory not empty (it holds files " \
               "mdfio did not expect; they were left alone)" in lines, run.stderr
    else:
        assert f"mdfio: {taken}; {STOPS}" in lines, run.stderr
        assert len(stop_lines(run)) == 1, run.stderr
        assert all(j["trim"]["total_ios"] == 0 for j in jobs_of(run, "cleanup"))
        # md-workbench stops before it stores a position
        assert info.read_text() == "pos: 0\n"
        assert "benchmarking" in (tmpfs / "mdfio.status").read_text()
    assert ns.read(user) == b"USER\n"
    # a recovery, or a cleanup after one, leaves it too, and everything
    # else goes; the status stays with the dataset it cannot remove
    run = run_fio(job(["cleanup"], tmpfs, engine=engine, **opts), tmp_path, check=False)
    assert run.rc != 0 and ns.read(user) == b"USER\n", run.stderr
    assert f"mdfio: rank 0: cannot remove dataset {ns.name('0_0')}: Directory not empty (it holds files mdfio " \
           "did not expect; they were left alone)" in run.mdfio_lines(), run.stderr
    assert ns.entries() == sorted(["0_0", user, "mdfio.ranks", "mdfio.status", *ns.claim])
    # once the user has taken the file away, a cleanup empties the root
    ns.remove(user)
    run_fio(job(["cleanup"], tmpfs, engine=engine, **opts), tmp_path, check=True)
    assert ns.entries() == []


def fill(path):
    """Writes path until its file system has no block left."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as e:
        assert e.errno == errno.ENOSPC, e
    finally:
        os.close(fd)


@not_on_s3("a cleanup makes room where the status is only when its objects are there too")
def test_a_status_update_without_room_leaves_the_status_whole(tmp_path, engine):
    """The status is replaced by a new file on each update: on a full
    tmpfs the update fails before anything is renamed, so the previous
    status stays whole (it used to be cut mid-line, and every later phase
    refused it), and the phase fails in one line before it touches a
    thing. A cleanup, which makes room, goes on and records its end once
    its deletes have."""
    with mounted_tmpfs("size=1m", "mdfio-full-") as root:
        opts = dict(numjobs=2, datasets=2, precreate_per_set=8, steps_per_set=3, bs=100)
        run_fio(job(["precreate"], root, engine=engine, **opts), tmp_path, check=True)
        status = (root / "mdfio.status").read_bytes()
        objects = sorted(p.name for p in root.glob("*/file-*"))
        (root / "filler").touch()
        fill(root / "filler")
        run = run_fio(job(["benchmark"], root, engine=engine, **opts), tmp_path, check=False)
        assert run.rc != 0 and run.mdfio_lines() == [
            f"mdfio: cannot update {root}/mdfio.status: No space left on device (it is left as it was)"], \
            run.stderr
        assert (root / "mdfio.status").read_bytes() == status
        assert sorted(p.name for p in root.glob("*/file-*")) == objects
        assert not [p for p in root.iterdir() if p.name.endswith(".tmp")]
        # the status is whole and trusted: a cleanup on the full file
        # system removes the namespace
        run = run_fio(job(["cleanup"], root, engine=engine, **opts), tmp_path, check=True)
        assert sorted(os.listdir(root)) == ["filler"], run.stderr
