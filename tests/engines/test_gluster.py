"""Runs over hosts that share a real distributed file system through
clients of their own: a single-node GlusterFS volume (mdfio.gluster:
glusterd and its brick in a network namespace of their own, on loopback),
mounted by FUSE once per "host", each host a fio server in a UTS and mount
namespace of its own (mdfio.hosts) whose mount is its own glusterfs client
process, with its own caches and its own lock owner at the brick.

GlusterFS keeps what mdfio reads across clients coherent only with
COHERENT (docs/hosts.md): the volume's caching translators off, and mounts
with direct-io-mode=enable and no attribute, entry or negative caching in
the kernel. Even so, a file created through a mount is read through that
mount's page cache by every other open of it there while the creating
open stays (GlusterFS 10.3's FUSE bridge records direct I/O for opens, not
for creates, and later opens of the inode inherit the first one's): mdfio
closes the rank file it creates and opens it anew (engines/rankfile.c), so
the roots here are made without one."""
import fcntl
import mmap
import os
import struct
import subprocess
import time
from pathlib import Path

import pytest

import mdfio.fio
import mdfio.gluster
from conftest import SANITIZER_REPORT, engine_path, expected, fio_env, namespace
from mdfio.hosts import fio_servers, need_unshare

D, P, I = 3, 8, 3
TIMEOUT = 120       # s, any one fio client: a run here takes 3-10 s
MOUNT = ["--direct-io-mode=enable", "--attribute-timeout=0", "--entry-timeout=0", "--negative-timeout=0"]
COHERENT = (mdfio.gluster.NO_CACHES, MOUNT)


@pytest.fixture(scope="module")
def volume(tmp_path_factory):
    """One volume for the module (0.5-4 s to start), with COHERENT's
    volume options, and a mount of the test's own to look at it."""
    why = mdfio.gluster.need_gluster() or need_unshare()
    if why:
        pytest.skip(why)
    d = tmp_path_factory.mktemp("gluster")
    with mdfio.gluster.volume(d, COHERENT[0]) as v:
        v.control = v.mount(d / "control", MOUNT)
        v.hostmount = d / "mnt"     # each host's mount, in its own namespace
        yield v


@pytest.fixture
def root(volume, request):
    """A fresh root on the volume: (its path on the hosts' mounts, on the
    test's own)."""
    name = request.node.name.replace("[", "-").replace("]", "")
    mine = volume.control / name
    mine.mkdir()
    return volume.hostmount / name, mine


@pytest.fixture
def servers(volume, tmp_path):
    """servers(n) -> n fio servers host1..hostn, each with its own mount of
    the volume, torn down after the test."""
    stack = []

    def start(n):
        cm = fio_servers(n, tmp_path, env=fio_env(), prelude=lambda i: volume.mount_script(volume.hostmount, MOUNT))
        stack.append(cm)
        return cm.__enter__()

    yield start
    for cm in reversed(stack):
        cm.__exit__(None, None, None)
    for log in tmp_path.glob("fio-server-*.log"):
        assert not SANITIZER_REPORT.search(log.read_text()), log.read_text()


def client(servers, text, tmp_path, check=None, timeout=TIMEOUT):
    n = len(list(tmp_path.glob("client-*.fio")))
    job = tmp_path / f"client-{n}.fio"
    hosts = tmp_path / f"client-{n}.hosts"
    hosts.write_text("".join(f"ip:{s.address},{s.port}\n" for s in servers))
    run = mdfio.fio.run(job, text, args=[f"--client={hosts}"], env=fio_env(), timeout=timeout)
    output = job.with_suffix(".json").read_text()
    run.messages = output[:output.find("\n{")] + run.stdout + run.stderr
    assert not SANITIZER_REPORT.search(run.messages), run.messages
    if check is not None:
        assert (run.rc == 0) == check, f"rc={run.rc}\n{run.messages}"
    return run


def job(phases, root, servers, clones=1, **opts):
    opts = dict(dict(datasets=D, precreate_per_set=P, steps_per_set=I), **opts)
    return mdfio.fio.jobfile(phases, root, engine_path(), numjobs=clones,
                             hosts=",".join(s.name for s in servers), verify_read=1, join_timeout=5, **opts)


# --- what GlusterFS keeps coherent across mounts --------------------------

def ofd(fd, kind, start, length):
    fcntl.fcntl(fd, fcntl.F_OFD_SETLKW, struct.pack("hhqqi4x", kind, os.SEEK_SET, start, length, 0))


def test_coherent_mounts_read_what_another_mount_wrote(volume, tmp_path):
    """With COHERENT, what mdfio does with its rank and status files sees
    another client's writes at once: a pread on an open kept since before
    the write (under a read lock, as the barrier reads), a fresh open,
    O_DIRECT, the size and mtime, and names made, renamed and removed."""
    a, b = volume.control, volume.mount(tmp_path / "b", MOUNT)
    (a / "coherence").mkdir()
    a, b = a / "coherence", b / "coherence"
    (a / "f").write_bytes(b"0" * 4096)
    w = os.open(a / "f", os.O_RDWR)
    r = os.open(b / "f", os.O_RDWR)
    try:
        assert os.pread(r, 8, 64) == b"0" * 8
        for i in range(1, 4):
            token = b"%08d" % i
            ofd(w, fcntl.F_WRLCK, 0, 160)
            os.pwrite(w, token, 64)
            ofd(w, fcntl.F_UNLCK, 0, 160)
            ofd(r, fcntl.F_RDLCK, 0, 160)
            assert os.pread(r, 8, 64) == token, "a kept open read stale data"
            ofd(r, fcntl.F_UNLCK, 0, 160)
            fresh = os.open(b / "f", os.O_RDONLY)
            assert os.pread(fresh, 8, 64) == token, "a fresh open read stale data"
            os.close(fresh)
        direct = os.open(b / "f", os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, 4096)
        os.pwrite(w, b"direct!!", 64)
        os.preadv(direct, [buf], 0)
        assert buf[64:72] == b"direct!!"
        os.close(direct)
        mtime = os.stat(b / "f").st_mtime_ns
        time.sleep(0.01)
        os.pwrite(w, b"x", 5000)
        assert (os.stat(b / "f").st_size, os.fstat(r).st_size) == (5001, 5001)
        assert os.stat(b / "f").st_mtime_ns != mtime
    finally:
        os.close(w)
        os.close(r)
    assert not (b / "g").exists()
    (a / "g").write_bytes(b"g")
    assert (b / "g").exists()
    os.rename(a / "g", a / "h")
    assert not (b / "g").exists() and (b / "h").exists()
    os.link(a / "h", a / "i")
    assert (b / "i").exists()
    os.unlink(a / "i")
    assert not (b / "i").exists()
    assert sorted(os.listdir(b)) == ["f", "h"]
    with pytest.raises(FileExistsError):
        os.open(b / "h", os.O_CREAT | os.O_EXCL | os.O_WRONLY)


def test_status_replaced_by_two_mounts_at_once(volume, tmp_path):
    """Two clients replace the status in turn under its lock, as the ranks
    of a phase do across hosts: every lock finds the file the other has
    just renamed over the one it opened (where GlusterFS's client fails an
    fstat of the old one with ESTALE) and not a single lock fails."""
    helper = Path(os.environ.get("MDFIO_TEST_LIB_DIR", engine_path().parent.parent / "tests")) / "test_status"
    a = volume.control / "replaced"
    a.mkdir()
    b = volume.mount(tmp_path / "b", MOUNT) / "replaced"
    procs = [subprocess.Popen([helper, "replace", d, "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for d in (a, b) * 3]
    results = [p.communicate(timeout=TIMEOUT) + (p.returncode,) for p in procs]
    for out, err, rc in results:
        assert rc == 0 and not SANITIZER_REPORT.search(err), err
    assert all(int(out) > 0 for out, _, _ in results), results


# --- runs over hosts ------------------------------------------------------

@pytest.mark.parametrize("nhosts", [2, 4])
def test_one_run_over_hosts_with_mounts_of_their_own(servers, root, tmp_path, nhosts):
    """Every rank passes every barrier, and each benchmark step reads (and
    verify_read checks) an object another host wrote through its own
    client; the cleanup empties the root."""
    hosts = servers(nhosts)
    theirs, mine = root
    run = client(hosts, job(["precreate", "benchmark", "benchmark"], theirs, hosts, rank_offset=1), tmp_path,
                 check=True)
    assert namespace(mine) == expected(nhosts, D, I * 2, P)
    for j in run.jobs():
        assert (j["error"], j["total_err"]) == (0, 0), j
        if j["jobname"].startswith("benchmark"):
            assert (j["read"]["total_ios"], j["read"]["drop_ios"]) == (D * I, 0)
    assert sorted(j["desc"].split()[3] for j in run.jobs(mdfio.fio.jobname("precreate", 0))) == sorted(
        f"host={s.name};" for s in hosts)
    client(hosts, job(["cleanup"], theirs, hosts), tmp_path, check=True)
    assert os.listdir(mine) == []


def test_a_second_fio_is_refused_and_a_host_dies_mid_benchmark(servers, root, tmp_path):
    """While a benchmark runs over two hosts, a cleanup by a fio on a third
    mount (the test's) is refused at once, naming the live run. Then a
    host is killed mid-benchmark (its fio server, and with it its
    glusterfs client: its mount and its locks go): the client fails
    naming the host; restarted with a new mount, a cleanup over both hosts
    empties the root."""
    hosts = servers(2)
    theirs, mine = root
    big = dict(precreate_per_set=300, steps_per_set=300)
    client(hosts, job(["precreate"], theirs, hosts, clones=2, **big), tmp_path, check=True)
    jobpath = tmp_path / "dies.fio"
    jobpath.write_text(job(["benchmark"], theirs, hosts, clones=2, **big))
    hostfile = tmp_path / "dies.hosts"
    hostfile.write_text("".join(f"ip:{s.address},{s.port}\n" for s in hosts))
    proc = subprocess.Popen(["fio", f"--client={hostfile}", "--output-format=json", f"--output={tmp_path}/dies.json",
                             str(jobpath)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=fio_env())
    try:
        deadline = time.monotonic() + 60
        while (mine / "mdfio.status").read_text().count("benchmarking") < 4:
            assert time.monotonic() < deadline and proc.poll() is None, "the benchmark did not start"
            time.sleep(0.01)
        second = mdfio.fio.run(tmp_path / "second.fio",
                               mdfio.fio.jobfile(["cleanup"], mine, engine_path(), numjobs=2, datasets=D,
                                                 join_timeout=2, **big), env=fio_env(), timeout=TIMEOUT)
        assert second.rc != 0
        assert "another fio run is using this namespace" in second.stderr, second.stderr
        assert proc.poll() is None, "the refused fio stopped the run"
        hosts[1].kill()
        out, _ = proc.communicate(timeout=TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out += (tmp_path / "dies.json").read_text()
    assert proc.returncode != 0
    assert "client: host=127.0.0.3 disconnected" in out, out
    hosts[1].restart()
    client(hosts, job(["cleanup"], theirs, hosts, clones=2, **big), tmp_path, check=True)
    assert os.listdir(mine) == []
