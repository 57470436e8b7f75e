"""A single-node CephFS of its own, for tests of runs over a shared file
system whose clients each keep their own caches and locks: one monitor,
one OSD and one MDS from Debian's packages (no manager: the file system
needs none), in a network namespace of their own (only its loopback is up,
and every daemon binds 127.0.0.1 alone), with their configuration,
keyring, data, logs and run directory in one directory. The monitor is
bootstrapped by hand (ceph-authtool, monmaptool, ceph-mon --mkfs); the OSD
keeps its objects in memory (memstore: no device, no file system, a
mkfs of milliseconds); the file system's two pools have one replica.
Clients are ceph-fuse processes in the same network namespace: mount() in
the caller's mount namespace, or mount_script() for a "host" (hosts.py) in
a mount namespace of its own.

Starting is bounded in time, and cluster() stops every process of the
namespace (daemons and FUSE clients), unmounts the mounts it made and
removes the state on every exit path."""
from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from . import netns

START_TIMEOUT = 60  # s until the monitor answers, the MDS is active or a mount is up
KILL_TIMEOUT = 10   # s for killed processes to go
FS = "mdfio"
ADDRESS = "127.0.0.1"   # in the namespace of its own: no other run's daemons are there
MON_PORT = 3300         # messenger v2 only
# ceph-fuse's option that keeps what every client reads what any wrote
# last (docs/hosts.md, tests/engines/test_ceph.py): without it the kernel
# serves reads from its page cache of the file, stale after another
# client's write, even on a fresh open
COHERENT = ("--fuse_disable_pagecache=true",)
# the least session timeout the monitor takes (`ceph fs set FS
# session_timeout`): a client silent for that long loses its session and
# its locks
SESSION_TIMEOUT_MIN = 30


def need_ceph() -> str | None:
    """Why a CephFS of its own cannot be started here, or None."""
    if os.geteuid() != 0:
        return "a CephFS of its own needs root (namespaces, FUSE mounts)"
    missing = [c for c in ("ceph-mon", "ceph-osd", "ceph-mds", "ceph-fuse", "ceph", "ceph-authtool", "monmaptool",
                           "unshare", "nsenter", "ip") if not shutil.which(c)]
    if missing:
        return f"{', '.join(missing)} not installed (./setup installs ceph-mon, ceph-osd, ceph-mds and ceph-fuse)"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse: FUSE is not available"
    return None


@dataclass
class Cluster:
    directory: Path
    name: str = FS
    store_bytes: int = 512 << 20    # the OSD's memstore
    holder: subprocess.Popen = field(default=None, repr=False)    # holds the network namespace
    daemons: dict = field(default_factory=dict, repr=False)       # name: Popen
    mounts: list = field(default_factory=list, repr=False)        # (path, ceph-fuse Popen) made by mount()
    startup_s: float = 0.0    # monitor up to the MDS active
    _clients: int = 0

    @property
    def netns(self) -> str:
        return f"/proc/{self.holder.pid}/ns/net"

    @property
    def conf(self) -> Path:
        return self.directory / "ceph.conf"

    def log(self, name: str) -> str:
        path = self.directory / "log" / name
        return path.read_text(errors="replace") if path.exists() else ""

    def cli(self, *args: str, timeout: float = START_TIMEOUT, check: bool = True) -> subprocess.CompletedProcess[str]:
        """The ceph command line on this cluster, in its namespace."""
        proc = subprocess.run(["nsenter", f"--net={self.netns}", "ceph", "-c", str(self.conf),
                               f"--log-file={self.directory / 'log' / 'cli.log'}",
                               f"--connect-timeout={max(1, int(timeout))}", *args],
                              capture_output=True, text=True, timeout=timeout + 5, stdin=subprocess.DEVNULL)
        if check and proc.returncode:
            raise RuntimeError(f"ceph {' '.join(args)}: exit {proc.returncode}: {(proc.stdout + proc.stderr).strip()}")
        return proc

    def _configure(self):
        d = self.directory
        for sub in ("mon", "osd/0", "mds/a", "log", "run", "crash"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        fsid = str(uuid.uuid4())
        self.conf.write_text("\n".join([
            "[global]",
            f"fsid = {fsid}",
            f"mon host = v2:{ADDRESS}:{MON_PORT}",
            # every messenger, the OSD's cluster side too, on loopback alone
            f"public addr = {ADDRESS}",
            f"cluster addr = {ADDRESS}",
            "ms bind ipv6 = false",
            "ms bind msgr1 = false",
            "auth allow insecure global id reclaim = false",
            f"keyring = {d / 'keyring'}",
            f"run dir = {d / 'run'}",
            f"crash dir = {d / 'crash'}",
            f"log file = {d / 'log'}/$name.log",
            f"mon data = {d / 'mon'}/$id",
            f"osd data = {d / 'osd'}/$id",
            f"mds data = {d / 'mds'}/$id",
            "osd objectstore = memstore",
            f"memstore device bytes = {self.store_bytes}",
            "osd pool default size = 1",
            "osd pool default min size = 1",
            "osd pool default pg autoscale mode = off",
            "osd crush chooseleaf type = 0",
            "mon allow pool size one = true",
            "mon warn on pool no redundancy = false",
            # the monitor shuts itself down below mon_data_avail_crit of
            # free space on its disk: a shared test machine's own business
            "mon data avail warn = 1",
            "mon data avail crit = 0",
            # a silent client's session is ended within a second of
            # session_timeout, not five
            "mds tick interval = 1",
            "[mon]", f"pid file = {d / 'run'}/$name.pid", f"admin socket = {d / 'run'}/$name.asok",
            "[osd]", f"pid file = {d / 'run'}/$name.pid", f"admin socket = {d / 'run'}/$name.asok",
            "[mds]", f"pid file = {d / 'run'}/$name.pid", f"admin socket = {d / 'run'}/$name.asok",
            # clients, many at once: each its own log and socket, no pid file
            "[client]",
            "pid file = ",
            f"log file = {d / 'log'}/$name.$pid.log",
            f"admin socket = {d / 'run'}/$name.$pid.asok",
            f"client mount timeout = {START_TIMEOUT}",
            ""]))
        # one keyring for all: the monitor takes every key and its caps
        # from it at its mkfs
        keyring = str(d / "keyring")
        keys = [("mon.", ["mon", "allow *"]),
                ("client.admin", ["mon", "allow *", "osd", "allow *", "mds", "allow *", "mgr", "allow *"]),
                ("osd.0", ["mon", "allow profile osd", "osd", "allow *"]),
                ("mds.a", ["mon", "allow profile mds", "osd", "allow *", "mds", "allow *"])]
        for i, (name, caps) in enumerate(keys):
            capargs = [a for k, v in zip(caps[::2], caps[1::2]) for a in ("--cap", k, v)]
            _run(["ceph-authtool", *(["--create-keyring"] if i == 0 else []), keyring, "--gen-key", "-n", name,
                  *capargs])
        _run(["monmaptool", "--create", "--fsid", fsid, "--addv", "a", f"[v2:{ADDRESS}:{MON_PORT}]",
              str(d / "monmap")])
        _run(["ceph-mon", "-c", str(self.conf), "--mkfs", "-i", "a", "--monmap", str(d / "monmap"),
              "--keyring", keyring])

    def _daemon(self, name, *args):
        with open(self.directory / "log" / f"{name}.out", "a") as out:
            self.daemons[name] = subprocess.Popen(
                ["nsenter", f"--net={self.netns}", *args, "-f", "-c", str(self.conf)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)

    def _failed(self, what, timeout):
        dead = {n: p.returncode for n, p in self.daemons.items() if p.poll() is not None}
        tails = "".join(f"--- {n}:\n{self.log(n + '.out')[-1500:]}{self.log(n + '.log')[-1500:]}"
                        for n in dead or self.daemons)
        raise TimeoutError(f"{what} within {timeout} s" + (f"; exited: {dead}" if dead else "") + f"\n{tails}")

    def start(self, session_timeout: int | None = None, timeout: float = START_TIMEOUT) -> None:
        """The monitor, the OSD and the MDS, the file system's pools and
        the file system; returns once its MDS is active. session_timeout:
        the file system's (60 s by default, SESSION_TIMEOUT_MIN at least)."""
        t0 = time.monotonic()
        deadline = t0 + timeout
        self._configure()
        # the network namespace: its own loopback, held by a process
        # that only waits
        self.holder = subprocess.Popen(["unshare", "-n", "sh", "-c", "ip link set lo up && echo up && exec sleep infinity"],
                                       stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
        if self.holder.stdout.readline().strip() != b"up":
            raise RuntimeError("could not bring up the loopback of a network namespace of its own")
        self.holder.stdout.close()
        self._daemon("mon.a", "ceph-mon", "-i", "a")
        osd_uuid = str(uuid.uuid4())
        # the first command waits for the monitor (--connect-timeout)
        if (out := self.cli("osd", "new", osd_uuid, timeout=timeout, check=False)).returncode:
            self._failed(f"the monitor did not answer ({out.stderr.strip()})", timeout)
        _run(["nsenter", f"--net={self.netns}", "ceph-osd", "-c", str(self.conf), "-i", "0", "--mkfs",
              "--osd-uuid", osd_uuid])
        self._daemon("osd.0", "ceph-osd", "-i", "0")
        self._daemon("mds.a", "ceph-mds", "-i", "a")
        for pool in ("metadata", "data"):
            self.cli("osd", "pool", "create", f"{self.name}_{pool}", "8")
        self.cli("fs", "new", self.name, f"{self.name}_metadata", f"{self.name}_data")
        if session_timeout is not None:
            self.cli("fs", "set", self.name, "session_timeout", str(session_timeout))
        while "up:active" not in self.cli("mds", "stat", check=False).stdout:
            if time.monotonic() > deadline or any(p.poll() is not None for p in self.daemons.values()):
                self._failed(f"the MDS of {self.name} was not active", timeout)
            time.sleep(0.1)
        self.startup_s = time.monotonic() - t0

    def client_command(self, mountpoint: str | os.PathLike[str], options: Iterable[str] = ()) -> list[str]:
        """The command of a FUSE client that mounts the file system on
        mountpoint, in the caller's mount namespace, and stays in the
        foreground."""
        return ["nsenter", f"--net={self.netns}", "ceph-fuse", "-f", "-c", str(self.conf), "-n", "client.admin",
                *options, str(mountpoint)]

    def mount(self, mountpoint: str | os.PathLike[str], options: Iterable[str] = (),
              timeout: float = START_TIMEOUT) -> Path:
        """Mounts the file system on mountpoint in the caller's mount
        namespace; unmounted by stop()."""
        mountpoint = Path(mountpoint)
        mountpoint.mkdir(parents=True, exist_ok=True)
        self._clients += 1
        with open(self.directory / "log" / f"mount-{self._clients}.out", "a") as out:
            proc = subprocess.Popen(self.client_command(mountpoint, options), stdin=subprocess.DEVNULL,
                                    stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.mounts.append((mountpoint, proc))
        deadline = time.monotonic() + timeout
        while not _mounted(mountpoint):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"ceph-fuse did not mount {mountpoint} (exit {proc.poll()}):\n"
                                   f"{self.log(f'mount-{self._clients}.out')[-2000:]}")
            time.sleep(0.02)
        return mountpoint

    def mount_script(self, mountpoint: str | os.PathLike[str], options: Iterable[str] = (),
                     timeout: float = START_TIMEOUT) -> str:
        """Shell commands that mount the file system on mountpoint in the
        mount namespace they run in (a host's: hosts.py's prelude), its
        client a process of theirs, and fail if it is not mounted within
        timeout."""
        cmd = " ".join(shlex.quote(a) for a in self.client_command(mountpoint, options))
        m = shlex.quote(str(mountpoint))
        tries = int(timeout / 0.02)
        return (f"mkdir -p {m} && {{ {cmd} </dev/null >/dev/null 2>&1 & }} && i=0 && "
                f"until grep -q \" $(realpath {m}) fuse.ceph-fuse \" /proc/self/mounts; do "
                f"i=$((i + 1)); [ $i -lt {tries} ] || {{ echo 'ceph-fuse did not mount {m}' >&2; exit 1; }}; "
                f"sleep 0.02; done")

    def unmount_in(self, pid: int, mountpoint: str | os.PathLike[str], timeout: float = KILL_TIMEOUT) -> None:
        """Unmounts mountpoint in the mount namespace of process pid (a
        host's), and waits until that namespace's ceph-fuse has ended its
        session and exited. A client killed instead leaves its session, its
        capabilities and its locks at the MDS until session_timeout: every
        other client's access to what it held waits until then. Where the
        mount is busy (a host's jobs still in it), nothing is done."""
        try:
            ns = os.stat(f"/proc/{pid}/ns/mnt").st_ino
        except OSError:
            return
        clients = [p for p in self.processes() if _mnt_ns(p) == ns and _comm(p) == "ceph-fuse"]
        if subprocess.run(["nsenter", "-t", str(pid), "-m", "umount", str(mountpoint)], capture_output=True,
                          timeout=timeout).returncode:
            return
        deadline = time.monotonic() + timeout
        while any(_comm(p) == "ceph-fuse" for p in clients):
            if time.monotonic() > deadline:
                raise TimeoutError(f"ceph-fuse {clients} did not exit within {timeout} s of its unmount")
            time.sleep(0.02)

    def processes(self) -> list[int]:
        """Every process in the namespace: the daemons and every FUSE
        client, the hosts' too."""
        return netns.processes_in(self.holder)

    def stop(self) -> None:
        """Unmounts the mounts of mount(), kills every process of the
        namespace and removes the state."""
        try:
            netns.end(self.mounts, self.holder, "the CephFS cluster", KILL_TIMEOUT)
        finally:
            netns.reap([*self.daemons.values(), self.holder, *(p for _, p in self.mounts)], KILL_TIMEOUT)
            self.mounts.clear()
            self.daemons.clear()
            self.holder = None
            for sub in ("mon", "osd", "mds", "run", "crash", "keyring", "monmap"):
                path = self.directory / sub
                if path.is_dir():
                    shutil.rmtree(path, ignore_errors=True)
                else:
                    path.unlink(missing_ok=True)


def _run(cmd):
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=START_TIMEOUT, stdin=subprocess.DEVNULL)
    if proc.returncode:
        raise RuntimeError(f"{' '.join(cmd)}: exit {proc.returncode}: {(proc.stdout + proc.stderr).strip()}")
    return proc


def _mnt_ns(pid):
    try:
        return os.stat(f"/proc/{pid}/ns/mnt").st_ino
    except OSError:
        return None


def _comm(pid):
    """A live process's name, None when gone (a zombie has none)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            name, state = f.read().rsplit(")", 1)
        return None if state.split()[0] == "Z" else name.split("(", 1)[1]
    except (OSError, IndexError):
        return None


def _mounted(path):
    return netns.fuse_mounted(path, "fuse.ceph-fuse")


@contextlib.contextmanager
def cluster(directory: str | os.PathLike[str], session_timeout: int | None = None) -> Iterator[Cluster]:
    """A started cluster with its state in directory (made if missing): a
    Cluster, stopped with all its processes and mounts on leaving."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    c = Cluster(directory)
    try:
        c.start(session_timeout)
        yield c
    finally:
        c.stop()
