"""mdfio-null: requests end at once and no object is touched, so a run
measures the core and fio alone and checks the accounting quickly. The
datasets and the status file stay real: the phase protocol runs as under
any engine."""
import os

import pytest

from conftest import job, namespace, run_fio

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
