"""What only mdfio-aio promises: object data through Linux AIO, metadata
through the plain calls, and direct=1 with objects of any size."""
import os
import re
import subprocess

import pytest

from conftest import expected, job, namespace, need_root, run_fio


def trace_lines(root, tmp_path, phase, opts):
    trace = tmp_path / f"strace-{phase}"
    # one file per process: no call of one is split by another's
    run_fio(job([phase], root, engine="aio", **opts), tmp_path, check=True,
            prefix=["strace", "-ff", "-qq", "-o", str(trace), "-e",
                    "trace=newfstatat,openat,read,write,pread64,pwrite64,close,unlink,unlinkat,ftruncate,"
                    "io_submit,io_getevents,io_setup"])
    return [line for f in sorted(tmp_path.glob(trace.name + ".*")) for line in f.read_text().splitlines()]


def object_fds(lines):
    """Descriptors the job opened on objects, and the calls made on them."""
    fds, calls = set(), []
    for line in lines:
        m = re.match(r"(\w+)\((.*)\)\s+=\s+(-?\d+)", line)
        if not m:
            continue
        name, args, ret = m.group(1), m.group(2), int(m.group(3))
        if name == "openat" and '"file-' in args and ret >= 0:
            fds.add(ret)
            calls.append(("openat", args))
        elif name in ("read", "write", "pread64", "pwrite64", "ftruncate", "close") and \
                args.split(",")[0].isdigit() and int(args.split(",")[0]) in fds:
            calls.append((name, args))
            if name == "close":
                fds.discard(int(args.split(",")[0]))
    return calls


def test_object_data_goes_through_io_submit(tmpfs, tmp_path):
    opts = dict(datasets=2, precreate_per_set=10, steps_per_set=10, iodepth=4)
    lines = trace_lines(tmpfs, tmp_path, "precreate", opts)
    lines += trace_lines(tmpfs, tmp_path, "benchmark", opts)
    calls = [c[0] for c in object_fds(lines)]
    # 20 creates, then 20 steps each reading one object and creating one
    assert calls.count("openat") == calls.count("close") == 60
    assert not {"read", "write", "pread64", "pwrite64"} & set(calls)
    assert sum(l.startswith("io_submit(") for l in lines) == 60
    assert sum("newfstatat(" in l and '"file-' in l for l in lines) == 20
    assert sum("unlinkat(" in l and '"file-' in l for l in lines) == 20
    run_fio(job(["cleanup"], tmpfs, engine="aio", **opts), tmp_path, check=True)


@pytest.mark.parametrize("fstype", ["ext4", "xfs"])
@pytest.mark.parametrize("bs", [3901, 8192])
def test_direct_io_with_any_object_size(loopfs, tmp_path, fstype, bs):
    """O_DIRECT moves whole blocks: an object of 3901 bytes is written as
    4096 and truncated back, and read by asking for 4096."""
    root = loopfs(fstype, "300M")
    n, d, p = 2, 2, 12
    opts = dict(numjobs=n, datasets=d, precreate_per_set=p, steps_per_set=p, verify_read=1, iodepth=8,
                direct=1, bs=bs)
    lines = trace_lines(root, tmp_path, "precreate", opts)
    calls = object_fds(lines)
    opens = [a for c, a in calls if c == "openat"]
    assert len(opens) == n * d * p and all("O_DIRECT" in a for a in opens)
    assert sum(c == "ftruncate" for c, _ in calls) == (n * d * p if bs % 4096 else 0)
    for r in range(n):
        for k in range(d):
            for i in range(p):
                assert os.stat(root / f"{r}_{k}" / f"file-{i}").st_size == bs
    run = run_fio(job(["benchmark"], root, engine="aio", **opts), tmp_path, check=True)
    assert sum(j["read"]["clat_ns"]["N"] for j in run.jobs()) == n * d * p
    assert namespace(root) == expected(n, d, p, p)
    run_fio(job(["cleanup"], root, engine="aio", **opts), tmp_path, check=True)
    assert sorted(os.listdir(root)) in ([], ["lost+found"])


@pytest.mark.parametrize("engine", ["posix", "uring"])
def test_direct_is_refused_where_it_would_be_ignored(tmpfs, tmp_path, engine):
    run = run_fio(job(["precreate"], tmpfs, engine=engine, direct=1), tmp_path, check=False)
    assert run.rc != 0
    lines = run.mdfio_lines()
    assert len(lines) == 1 and f"direct=1: mdfio-{engine} does not open objects with O_DIRECT; use mdfio-aio" \
        in lines[0], run.stderr
    assert os.listdir(tmpfs) == []


@pytest.fixture
def ramfs(tmp_path):
    """A ramfs: a file system without O_DIRECT, which creates a file opened
    with O_CREAT|O_DIRECT before it refuses the open."""
    need_root("mounts a ramfs")
    root = tmp_path / "ramfs"
    root.mkdir()
    proc = subprocess.run(["mount", "-t", "ramfs", "ramfs", str(root)], capture_output=True, text=True)
    if proc.returncode:
        pytest.skip(f"cannot mount a ramfs: {proc.stderr.strip()}")
    yield root
    subprocess.run(["umount", "-l", str(root)], check=False)


def test_a_refused_direct_leaves_no_probe_file(ramfs, tmp_path):
    run = run_fio(job(["precreate"], ramfs, engine="aio", direct=1), tmp_path, check=False)
    assert run.rc != 0
    lines = run.mdfio_lines()
    assert len(lines) == 1 and f"direct=1: {ramfs} does not take O_DIRECT" in lines[0], run.stderr
    assert os.listdir(ramfs) == []
