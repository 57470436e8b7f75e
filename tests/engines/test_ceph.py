"""Runs over hosts that share CephFS through clients of their own: a
single-node cluster (mdfio.ceph: a monitor, a memstore OSD and an MDS in a
network namespace of their own, on loopback), mounted by ceph-fuse once per
"host", each host a fio server in a UTS and mount namespace of its own
(mdfio.hosts) whose mount is its own ceph-fuse process, with its own
caches, capabilities and session at the MDS. The checks are conftest's,
shared with test_gluster.py.

CephFS keeps what mdfio reads across clients coherent with every mount
given mdfio.ceph.COHERENT (fuse_disable_pagecache: docs/hosts.md); its
locks go with a dead client's session, which the MDS ends after the file
system's session_timeout, here its least, 30 s."""
import pytest

import mdfio.ceph
from conftest import (SharedFS, check_coherent, check_refused_then_host_dies, check_run_over_hosts,
                      check_status_replaced)
from mdfio.hosts import need_unshare

MOUNT = list(mdfio.ceph.COHERENT)
SESSION_TIMEOUT = mdfio.ceph.SESSION_TIMEOUT_MIN


@pytest.fixture(scope="module")
def shared_fs(tmp_path_factory):
    """One cluster for the module (about 5 s to start), and a mount of the
    test's own to look at it."""
    why = mdfio.ceph.need_ceph() or need_unshare()
    if why:
        pytest.skip(why)
    d = tmp_path_factory.mktemp("ceph")
    with mdfio.ceph.cluster(d, session_timeout=SESSION_TIMEOUT) as c:
        print(f"CephFS started in {c.startup_s:.1f} s")
        yield SharedFS(control=c.mount(d / "control", MOUNT), hostmount=d / "mnt",
                       prelude=lambda: c.mount_script(d / "mnt", MOUNT), mount=lambda p: c.mount(p, MOUNT),
                       release=lambda s: c.unmount_in(s.proc.pid, d / "mnt"))


# --- what CephFS keeps coherent across mounts -----------------------------

def test_coherent_mounts_read_what_another_mount_wrote(shared_fs, tmp_path):
    """With COHERENT, what mdfio does with its rank and status files sees
    another client's writes and names at once, and its locks conflict."""
    a, b = shared_fs.control / "coherence", shared_fs.mount(tmp_path / "b") / "coherence"
    a.mkdir()
    check_coherent(a, b)


def test_status_replaced_by_two_mounts_at_once(shared_fs, tmp_path):
    """Every lock finds the file the other client has just renamed over the
    one it opened, and not a single lock fails."""
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
    a host killed mid-benchmark (its ceph-fuse too) fails the client naming
    it. What the dead client held (its capabilities, its locks) stays until
    the MDS ends its silent session after session_timeout: the other host's
    ranks wait until then, and end their phase. Then a cleanup over both
    hosts, the dead one remounted, empties the root."""
    ended, cleaned = check_refused_then_host_dies(shared_servers(2), shared_root, tmp_path,
                                                  locks_go_within=SESSION_TIMEOUT * 3)
    print(f"the client ended {ended:.0f} s after the host died, the cleanup was accepted after {cleaned:.0f} s")
