"""Runs over hosts that share a real distributed file system through
clients of their own: a single-node GlusterFS volume (mdfio.gluster:
glusterd and its brick in a network namespace of their own, on loopback),
mounted by FUSE once per "host", each host a fio server in a UTS and mount
namespace of its own (mdfio.hosts) whose mount is its own glusterfs client
process, with its own caches and its own lock owner at the brick. The
checks are conftest's, shared with test_ceph.py.

GlusterFS keeps what mdfio reads across clients coherent only with
COHERENT (docs/hosts.md): the volume's caching translators off, and mounts
with direct-io-mode=enable and no attribute, entry or negative caching in
the kernel. Even so, a file created through a mount is read through that
mount's page cache by every other open of it there while the creating
open stays (GlusterFS 10.3's FUSE bridge records direct I/O for opens, not
for creates, and later opens of the inode inherit the first one's): mdfio
closes the rank file it creates and opens it anew (engines/lib/rankfile.c), so
the roots here are made without one."""
import pytest

import mdfio.gluster
from conftest import (SharedFS, check_coherent, check_refused_then_host_dies, check_run_over_hosts,
                      check_status_replaced)
from mdfio.hosts import need_unshare

MOUNT = ["--direct-io-mode=enable", "--attribute-timeout=0", "--entry-timeout=0", "--negative-timeout=0"]
COHERENT = (mdfio.gluster.NO_CACHES, MOUNT)


@pytest.fixture(scope="module")
def shared_fs(tmp_path_factory):
    """One volume for the module (0.5-4 s to start), with COHERENT's
    volume options, and a mount of the test's own to look at it."""
    why = mdfio.gluster.need_gluster() or need_unshare()
    if why:
        pytest.skip(why)
    d = tmp_path_factory.mktemp("gluster")
    with mdfio.gluster.volume(d, COHERENT[0]) as v:
        yield SharedFS(control=v.mount(d / "control", MOUNT), hostmount=d / "mnt",
                       prelude=lambda: v.mount_script(d / "mnt", MOUNT), mount=lambda p: v.mount(p, MOUNT))


# --- what GlusterFS keeps coherent across mounts --------------------------

def test_coherent_mounts_read_what_another_mount_wrote(shared_fs, tmp_path):
    """With COHERENT, what mdfio does with its rank and status files sees
    another client's writes and names at once, and its locks conflict."""
    a, b = shared_fs.control / "coherence", shared_fs.mount(tmp_path / "b") / "coherence"
    a.mkdir()
    check_coherent(a, b)


def test_status_replaced_by_two_mounts_at_once(shared_fs, tmp_path):
    """Every lock finds the file the other client has just renamed over the
    one it opened (where GlusterFS's client fails an fstat of the old one
    with ESTALE) and not a single lock fails."""
    a = shared_fs.control / "replaced"
    a.mkdir()
    check_status_replaced(a, shared_fs.mount(tmp_path / "b") / "replaced")


# --- runs over hosts ------------------------------------------------------

@pytest.mark.parametrize("nhosts", [2, 4])
def test_one_run_over_hosts_with_mounts_of_their_own(shared_servers, shared_root, tmp_path, nhosts):
    """Every rank passes every barrier, and each benchmark step reads (and
    verify_read checks) an object another host wrote through its own
    client; the cleanup empties the root."""
    check_run_over_hosts(shared_servers(nhosts), shared_root, tmp_path)


def test_a_second_fio_is_refused_and_a_host_dies_mid_benchmark(shared_servers, shared_root, tmp_path):
    """A second fio on a third mount is refused while a benchmark is live;
    a host killed mid-benchmark (its glusterfs client, its mount and its
    locks go at once) fails the client naming it, and at once a cleanup
    over both hosts, the dead one remounted, empties the root."""
    check_refused_then_host_dies(shared_servers(2), shared_root, tmp_path)
