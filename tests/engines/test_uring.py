"""What only mdfio-uring promises: every object call goes through the ring,
each kernel feature it uses can be switched, and a kernel that lacks one
is refused at job start with one line."""
import itertools
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import engine_path, expected, fio_env, job, namespace, run_fio

OBJECT_CALLS = "newfstatat,stat,statx,open,openat,read,write,close,unlink,unlinkat"


def traced(tmpfs, tmp_path, opts, phase):
    trace = tmp_path / f"strace-{phase}.out"
    run_fio(job([phase], tmpfs, engine="uring", **opts), tmp_path, check=True,
            prefix=["strace", "-f", "-qq", "-o", str(trace), "-e",
                    f"trace={OBJECT_CALLS},io_uring_enter,io_uring_setup,io_uring_register"])
    return trace.read_text().splitlines()


@pytest.mark.parametrize("linked", [0, 1])
def test_every_object_call_goes_through_the_ring(tmpfs, tmp_path, linked):
    opts = dict(datasets=2, precreate_per_set=20, steps_per_set=20, iodepth=8, linked=linked)
    for phase in ("precreate", "benchmark", "cleanup"):
        lines = traced(tmpfs, tmp_path, opts, phase)
        assert not [l for l in lines if '"file-' in l or "/file-" in l], phase
        assert sum("io_uring_enter(" in l for l in lines) > 0, phase
        registered = [l for l in lines if "io_uring_register(" in l]
        assert any("IORING_REGISTER_BUFFERS" in l for l in registered)
        assert any("IORING_REGISTER_FILES" in l for l in registered) == bool(linked)
    assert os.listdir(tmpfs) == []


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
    opts = dict(datasets=2, precreate_per_set=10, steps_per_set=10)
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
    run_fio(job(["cleanup"], tmpfs, engine="uring", **opts), tmp_path, check=True)


@pytest.mark.parametrize("option", ["linked", "fixedbufs", "sqthread_poll"])
def test_bad_feature_value_is_refused_by_fio_naming_the_option(tmpfs, tmp_path, option):
    """The switches are fio booleans: fio's parser refuses other values
    before the engine runs."""
    run = run_fio(job(["precreate"], tmpfs, engine="uring", **{option: 2}), tmp_path, check=False)
    assert run.rc != 0
    assert "max value out of range: 2 (1 max)" in run.stderr and f"failed parsing {option}" in run.stderr, \
        run.stderr
    assert os.listdir(tmpfs) == []


def test_enghelp_lists_the_ring_options():
    out = subprocess.run(["fio", f"--enghelp={engine_path('uring')}"], capture_output=True, text=True,
                         env=fio_env()).stdout
    for opt in ("linked", "fixedbufs", "sqthread_poll", "phase", "datasets"):
        assert re.search(rf"^{opt}\s+: \S", out, re.M), out


@pytest.mark.parametrize("option", ["linked", "fixedbufs", "sqthread_poll"])
def test_enghelp_shows_the_switches_as_booleans(option):
    out = subprocess.run(["fio", f"--enghelp={engine_path('uring')},{option}"], capture_output=True, text=True,
                         env=fio_env()).stdout
    assert re.search(r"type: boolean", out), out
