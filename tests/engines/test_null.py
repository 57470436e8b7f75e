"""mdfio-null: requests end at once and no object is touched, so a run
measures the core and fio alone and checks the accounting quickly. The
datasets and the status file stay real: the phase protocol runs as under
any engine."""
import os

import pytest

from conftest import after_cleanup, but_killed_updates, job, kill_fio_when, namespace, run_fio

N, D, P, I, S = 2, 3, 40, 20, 3901


def counts(j):
    """fio's figures of one job: (total_ios, io_bytes, drop_ios, clat N)
    of each data direction, (total_ios, lat N) of sync, and the error."""
    out = {k: (j[k]["total_ios"], j[k]["io_bytes"], j[k]["drop_ios"], j[k]["clat_ns"]["N"])
           for k in ("read", "write", "trim")}
    out["sync"] = (j["sync"]["total_ios"], j["sync"]["lat_ns"]["N"])
    out["error"] = j["error"]
    return out


def phases(tmpfs, tmp_path, **opts):
    opts = dict(numjobs=N, datasets=D, precreate_per_set=P, steps_per_set=I, **opts)
    return [run_fio(job([phase], tmpfs, engine="null", **opts), tmp_path, check=True)
            for phase in ("precreate", "benchmark", "benchmark", "cleanup")]


@pytest.mark.parametrize("iodepth", [1, 16])
def test_each_phase_counts_every_operation(tmpfs, tmp_path, iodepth):
    pre, bench1, bench2, clean = phases(tmpfs, tmp_path, iodepth=iodepth)
    none = (0, 0, 0, 0)
    for j in pre.jobs():
        assert counts(j) == {"write": (D * P, D * P * S, 0, D * P), "read": none, "trim": none,
                             "sync": (0, 0), "error": 0}
    for run in (bench1, bench2):
        for j in run.jobs():
            # the step's count is a read; its create, delete and stat
            # have their own latency slots
            assert counts(j) == {"read": (D * I, D * I * S, 0, D * I), "write": (0, 0, 0, D * I),
                                 "trim": (0, 0, 0, D * I), "sync": (D * I, D * I), "error": 0}
    for j in clean.jobs():
        assert counts(j) == {"trim": (D * P, D * P * S, 0, D * P), "read": none, "write": none,
                             "sync": (0, 0), "error": 0}
    assert os.listdir(tmpfs) == []


def test_only_objects_are_null(tmpfs, tmp_path):
    opts = dict(numjobs=N, datasets=D, precreate_per_set=P, steps_per_set=I)
    run_fio(job(["precreate"], tmpfs, engine="null", **opts), tmp_path, check=True)
    # real, empty datasets and a real status that has every rank ready
    assert namespace(tmpfs) == {f"{r}_{d}": [] for r in range(N) for d in range(D)}
    status = (tmpfs / "mdfio.status").read_text()
    assert status.count(" ready 0 ") == N, status
    run_fio(job(["benchmark"], tmpfs, engine="null", **opts), tmp_path, check=True)
    status = (tmpfs / "mdfio.status").read_text()
    assert status.count(f" ready {I} ") == N, status
    # the protocol refuses what it refuses under any engine
    again = run_fio(job(["precreate"], tmpfs, engine="null", **opts), tmp_path, check=False)
    lines = again.mdfio_lines()
    assert again.rc != 0 and len(lines) == 1 and "a namespace already exists" in lines[0], again.stderr
    run_fio(job(["cleanup"], tmpfs, engine="null", **opts), tmp_path, check=True)
    assert os.listdir(tmpfs) == []


def test_read_only_counts_stat_and_read(tmpfs, tmp_path):
    opts = dict(datasets=D, precreate_per_set=P, steps_per_set=I, iodepth=4)
    run_fio(job(["precreate"], tmpfs, engine="null", **opts), tmp_path, check=True)
    run = run_fio(job(["benchmark"], tmpfs, engine="null", read_only=1, **opts), tmp_path, check=True)
    (j,) = run.jobs()
    assert counts(j) == {"read": (D * I, D * I * S, 0, D * I), "write": (0, 0, 0, 0),
                         "trim": (0, 0, 0, 0), "sync": (D * I, D * I), "error": 0}
    run_fio(job(["cleanup"], tmpfs, engine="null", **opts), tmp_path, check=True)


def test_verify_read_is_refused_in_one_line(tmpfs, tmp_path):
    run = run_fio(job(["precreate"], tmpfs, engine="null", verify_read=1), tmp_path, check=False)
    lines = run.mdfio_lines()
    assert run.rc != 0 and len(lines) == 1 and "verify_read=1: mdfio-null reads no object" in lines[0], \
        run.stderr
    assert os.listdir(tmpfs) == []


def interrupted_null_namespace(tmpfs, tmp_path, opts):
    """A null precreate killed with SIGKILL in its middle (its status marks
    the ranks precreating), with user files put into two of its datasets
    under object names inside the window a real engine's namespace would
    have."""
    kill_fio_when(job(["precreate"], tmpfs, engine="null", **opts), tmp_path,
                  lambda: (tmpfs / "mdfio.status").exists() and (tmpfs / "1_1").exists())
    assert "precreating" in (tmpfs / "mdfio.status").read_text()
    user = [tmpfs / "0_0" / "file-5", tmpfs / "1_1" / "file-7"]
    for f in user:
        f.write_text("USER\n")
    return user


@pytest.mark.parametrize("engine", ["null", "posix"])
def test_a_null_namespace_never_leads_to_deleting_files(tmpfs, tmp_path, engine):
    """mdfio-null made no object, so no file in its datasets is mdfio's:
    the recovery of its namespace, by itself or by a real engine, deletes
    none (both used to delete the user's files), removes the datasets it
    can, and names what it left."""
    opts = dict(numjobs=2, datasets=2, precreate_per_set=20000000, steps_per_set=1)
    user = interrupted_null_namespace(tmpfs, tmp_path, opts)
    run = run_fio(job(["cleanup"], tmpfs, engine=engine, **opts), tmp_path, check=False)
    assert run.rc != 0 and all(f.read_text() == "USER\n" for f in user), run.stderr
    assert sum(j["trim"]["total_ios"] - j["trim"]["drop_ios"] for j in run.jobs()) == 0
    lines = run.mdfio_lines()
    for r, f in ((0, user[0]), (1, user[1])):
        assert f"mdfio: rank {r} cleanup: left 1 entry in its datasets (first: {f}): mdfio-null made this " \
               "namespace, so no file in it is mdfio's" in lines, run.stderr
    # the precreate was killed: it may have been writing a status update
    assert sorted(but_killed_updates(os.listdir(tmpfs))) == ["0_0", "1_1", "mdfio.ranks", "mdfio.status"]
    for f in user:
        f.unlink()
    run_fio(job(["cleanup"], tmpfs, engine=engine, **opts), tmp_path, check=True)
    assert after_cleanup(tmpfs) == []


@pytest.mark.parametrize("engine", ["posix", "uring", "aio"])
def test_a_real_engine_refuses_a_null_namespace(tmpfs, tmp_path, engine):
    """A benchmark of a real engine on mdfio-null's namespace would find no
    object (every stat an error) and still move the FIFO: refused in one
    line, nothing touched; its cleanup deletes no file in the datasets."""
    opts = dict(numjobs=2, datasets=2, precreate_per_set=P, steps_per_set=I)
    run_fio(job(["precreate"], tmpfs, engine="null", **opts), tmp_path, check=True)
    status = (tmpfs / "mdfio.status").read_text()
    assert "\nobjects none\n" in status
    (tmpfs / "0_0" / "file-5").write_text("USER\n")
    run = run_fio(job(["benchmark"], tmpfs, engine=engine, **opts), tmp_path, check=False)
    lines = run.mdfio_lines()
    assert run.rc != 0 and lines == [
        f"mdfio: {tmpfs}/mdfio.status: the namespace in {tmpfs} was made by mdfio-null and holds no objects, so a "
        f"benchmark with mdfio-{engine} would find none: run phase=cleanup, then phase=precreate with "
        f"mdfio-{engine}"], run.stderr
    assert (tmpfs / "mdfio.status").read_text() == status
    run = run_fio(job(["cleanup"], tmpfs, engine=engine, **opts), tmp_path, check=False)
    assert run.rc != 0 and (tmpfs / "0_0" / "file-5").read_text() == "USER\n", run.stderr
    assert sorted(os.listdir(tmpfs)) == ["0_0", "mdfio.ranks", "mdfio.status"]


def test_mdfio_null_refuses_a_real_namespace(tmpfs, tmp_path):
    """mdfio-null touches no object: its benchmark would move a real
    namespace's FIFO past objects that stay, and its cleanup would remove
    none of them. Refused in one line."""
    opts = dict(datasets=1, precreate_per_set=4, steps_per_set=2)
    run_fio(job(["precreate"], tmpfs, engine="posix", **opts), tmp_path, check=True)
    status = (tmpfs / "mdfio.status").read_text()
    for phase in ("benchmark", "cleanup"):
        run = run_fio(job([phase], tmpfs, engine="null", **opts), tmp_path, check=False)
        assert run.rc != 0 and run.mdfio_lines() == [
            f"mdfio: {tmpfs}/mdfio.status: the namespace in {tmpfs} holds objects a real engine made, which "
            f"mdfio-null does not touch: run its {phase} with the engine that made them"], run.stderr
        assert (tmpfs / "mdfio.status").read_text() == status
    run_fio(job(["cleanup"], tmpfs, engine="posix", **opts), tmp_path, check=True)
