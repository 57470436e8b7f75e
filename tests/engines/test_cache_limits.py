"""drop_caches, lim_free_mem and lim_free_mem_phase (md-real-io's -m, -M):
a benchmark whose working set the limit leaves no room for reads it from
the device, shown by the device's own read counter; with room, it does
not. fio runs in a memory cgroup of its own, so that the limit is the
cgroup's headroom and the rest of the machine is left alone."""
import os
from pathlib import Path

import pytest

import mdfio.cgroups
from conftest import filesystem, job, need_root, run_fio

MIB = 1 << 20
D, P, S = 4, 800, 64 * 1024       # a working set of 200 MiB
I = 200                           # a benchmark reads 4 x 200 x 64 KiB = 50 MiB
CGROUP = 1024 * MIB


def sectors_read(dev):
    """Sectors the block device dev has read (its stat's third field)."""
    return int(Path(f"/sys/block/{Path(dev).name}/stat").read_text().split()[2])


@pytest.fixture
def setup(tmp_path):
    need_root("mounts a loop device and makes a memory cgroup")
    # direct I/O below the loop device: the image is not cached a second
    # time by the host, so what is not in ext4's cache comes from the device
    fs = filesystem("ext4", workdir=tmp_path, size="1G", direct_io=True)
    try:
        cg = mdfio.cgroups.MemCgroup(CGROUP, name="mdfio-test-cache")
    except OSError as e:
        fs.close(wait=0, lazy=True)
        pytest.skip(f"no memory cgroup: {e}")
    yield fs, cg, fs.mnt
    fs.close(wait=5, lazy=True)
    cg.close()


def phase(cg, tmp_path, root, name, check=True, **opts):
    return run_fio(job([name], root, datasets=D, precreate_per_set=P, steps_per_set=I, bs=S, **opts),
                   tmp_path, prefix=cg.wrap(), check=check)


def benchmark_read(fs, cg, tmp_path, root, **opts):
    """MiB the device read during one benchmark with opts."""
    before = sectors_read(fs.dev)
    phase(cg, tmp_path, root, "benchmark", **opts)
    return (sectors_read(fs.dev) - before) * 512 / MIB


def test_a_working_set_beyond_the_limit_is_read_from_the_device(setup, tmp_path):
    fs, cg, root = setup
    phase(cg, tmp_path, root, "precreate")
    # room for all of it (the cgroup holds 1 GiB): read from the cache
    cached = benchmark_read(fs, cg, tmp_path, root, lim_free_mem=700)
    # room for half of it, held through the phase: the oldest objects,
    # which the benchmark reads, have left the cache
    held = benchmark_read(fs, cg, tmp_path, root, lim_free_mem=100)
    # evicted down to 100 before the phase, then given back
    evicted = benchmark_read(fs, cg, tmp_path, root, lim_free_mem_phase=100)
    dropped = benchmark_read(fs, cg, tmp_path, root, drop_caches=1)
    figures = f"MiB read from {fs.dev}: room {cached:.1f}, held {held:.1f}, evicted {evicted:.1f}, dropped {dropped:.1f}"
    print(figures)
    assert cached < 5, figures
    # a benchmark reads 50 MiB of objects
    for limited in (held, evicted, dropped):
        assert limited > 25, figures
    phase(cg, tmp_path, root, "cleanup")


def test_bad_limits_are_one_line(tmpfs, tmp_path):
    """A bad value names the option; drop_caches without root is refused
    before anything runs."""
    run = run_fio(job(["precreate"], tmpfs, lim_free_mem=-1), tmp_path, check=False)
    assert run.rc != 0 and run.mdfio_lines() == ["mdfio: lim_free_mem=-1: expected an integer from 0 to 17592186044416"], \
        run.stderr
    work = tmpfs / "jobs"               # fio, as nobody, reads its jobfile here
    work.mkdir()
    os.chmod(tmpfs, 0o755)
    os.chown(work, 65534, 65534)
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    run = run_fio(job(["precreate"], tmpfs, drop_caches=1), work, prefix=as_nobody, check=False)
    assert run.rc != 0
    assert run.mdfio_lines() == ["mdfio: drop_caches=1: cannot open /proc/sys/vm/drop_caches for writing "
                                 "(Permission denied): dropping the page cache needs root"], run.stderr
    assert [p.name for p in tmpfs.iterdir()] == ["jobs"]
