"""A single-node GlusterFS volume of its own, for tests of runs over a
shared file system whose clients each keep their own caches and locks:
glusterd and the brick's glusterfsd from Debian's packages, in a network
namespace of their own (only its loopback is up, so nothing they open is
reachable from elsewhere or meets another run's), with their working
directory, run directory, logs and the brick (a tmpfs) in one directory.
The volume is mounted by FUSE clients (glusterfs processes in the same
network namespace): mount() in the caller's mount namespace, or
mount_script() for a "host" (hosts.py) in a mount namespace of its own.

glusterd runs in a mount namespace of its own, where geo-replication's
gsyncd is hidden (an interpreter that does not exist: glusterd then takes
geo-replication as not installed and skips ~15 runs of its python
configuration, 6 s of a start), /var/log/glusterfs is the directory's and
the brick's tmpfs is mounted: that tmpfs goes with the last process of the
namespace. Starting is bounded in time, and volume() stops every process of
the namespace (daemons and FUSE clients), unmounts the mounts it made and
removes the state on every exit path."""
from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import subprocess
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from . import netns

START_TIMEOUT = 30  # s until glusterd answers, the volume has started or a mount is up
KILL_TIMEOUT = 10   # s for killed processes to go
GSYNCD = "gsyncd"   # geo-replication's daemon, in glusterfs' libexec directory
VOLUME = "mdfio"
# glusterd's, the brick's and the clients' address in the namespace: gluster
# refuses 127.0.0.1 as a brick's host, any other loopback address will do
ADDRESS = "127.0.0.2"
# Volume options that turn off the client's translators that cache or
# delay (`gluster volume set help`), so that each read, write and stat
# reaches the brick: with the mount options of docs/hosts.md, what every
# client reads is what any wrote last (tests/engines/test_gluster.py)
NO_CACHES = {
    "performance.quick-read": "off", "performance.io-cache": "off", "performance.read-ahead": "off",
    "performance.stat-prefetch": "off",     # md-cache's switch
    "performance.write-behind": "off", "performance.open-behind": "off", "performance.readdir-ahead": "off",
    "performance.nl-cache": "off", "performance.client-io-threads": "off",
    "performance.strict-o-direct": "on",    # O_DIRECT bypasses what caches remain
}


def need_gluster() -> str | None:
    """Why a GlusterFS volume cannot be started here, or None."""
    if os.geteuid() != 0:
        return "a GlusterFS volume of its own needs root (namespaces, FUSE mounts)"
    missing = [c for c in ("glusterd", "gluster", "glusterfs", "unshare", "nsenter", "ip", "mountpoint")
               if not shutil.which(c)]
    if missing:
        return f"{', '.join(missing)} not installed (./setup installs glusterfs-server and glusterfs-client)"
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse: FUSE is not available"
    return None


def _libexec():
    out = subprocess.run(["glusterd", "--print-libexecdir"], capture_output=True, text=True, timeout=10).stdout
    # Debian's glusterd prints its libexec directory; gsyncd is in
    # glusterfs' own library directory beside the translators
    for d in (out.strip(), *(str(p.parent) for p in Path("/usr/lib").glob("*/glusterfs/gsyncd"))):
        if d and (Path(d) / GSYNCD).exists():
            return Path(d)
    return None


def mount_options(attribute_timeout: float | None = None, entry_timeout: float | None = None,
                  negative_timeout: float | None = None, direct_io: bool | None = None,
                  **more: object) -> list[str]:
    """glusterfs' command line options for a FUSE client."""
    opts = []
    if attribute_timeout is not None:
        opts.append(f"--attribute-timeout={attribute_timeout}")
    if entry_timeout is not None:
        opts.append(f"--entry-timeout={entry_timeout}")
    if negative_timeout is not None:
        opts.append(f"--negative-timeout={negative_timeout}")
    if direct_io is not None:
        opts.append(f"--direct-io-mode={'enable' if direct_io else 'disable'}")
    for k, v in more.items():
        opts.append(f"--{k.replace('_', '-')}={v}")
    return opts


@dataclass
class Volume:
    directory: Path
    name: str = VOLUME
    brick_size: str = "512m"
    holder: subprocess.Popen = field(default=None, repr=False)    # holds the network namespace
    glusterd: subprocess.Popen = field(default=None, repr=False)
    mounts: list = field(default_factory=list, repr=False)        # (path, glusterfs Popen) made by mount()
    startup_s: float = 0.0    # glusterd up, volume created and started
    _clients: int = 0

    @property
    def netns(self) -> str:
        return f"/proc/{self.holder.pid}/ns/net"

    @property
    def socket(self) -> Path:
        return self.directory / "run" / "glusterd.socket"

    def log(self, name: str = "glusterd") -> str:
        path = self.directory / "log" / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def cli(self, *args: str, timeout: float = START_TIMEOUT, check: bool = True) -> subprocess.CompletedProcess[str]:
        """The gluster command line on this volume's glusterd (through its
        own socket)."""
        proc = subprocess.run(["gluster", f"--glusterd-sock={self.socket}", "--mode=script",
                               f"--log-file={self.directory / 'log' / 'cli.log'}", *args],
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
        if check and proc.returncode:
            raise RuntimeError(f"gluster {' '.join(args)}: exit {proc.returncode}: "
                               f"{(proc.stdout + proc.stderr).strip()}")
        return proc

    def set(self, options: Mapping[str, object] | None) -> None:
        """Volume options ({key: value}), in one request (each costs glusterd
        half a second); a mount takes them at once."""
        if options:
            self.cli("volume", "set", self.name, *(str(w) for kv in options.items() for w in kv))

    def start(self, options: Mapping[str, object] | None = None, timeout: float = START_TIMEOUT) -> None:
        """glusterd, then the volume (options: volume options set before it
        starts)."""
        t0 = time.monotonic()
        d = self.directory
        for sub in ("work", "run", "log", "brick"):
            (d / sub).mkdir(parents=True, exist_ok=True)
        vol = d / "glusterd.vol"
        vol.write_text("\n".join([
            "volume management",
            "    type mgmt/glusterd",
            f"    option working-directory {d / 'work'}",
            f"    option run-directory {d / 'run'}",
            f"    option glusterd-sockfile {self.socket}",
            "    option transport-type socket",
            f"    option transport.socket.bind-address {ADDRESS}",
            "    option transport.socket.listen-port 24007",
            "    option ping-timeout 0",
            "    option event-threads 1",
            "    option base-port 49152",
            "    option max-port 49252",
            "end-volume", ""]))
        hidden = d / "no-gsyncd"
        hidden.write_text("#!/nonexistent/geo-replication-is-not-used-here\n")
        hidden.chmod(0o755)
        libexec = _libexec()
        hide = (f"mount --bind {shlex.quote(str(hidden))} {shlex.quote(str(libexec / GSYNCD))} && "
                if libexec else "")
        # the network namespace: its own loopback, held by a process
        # that only waits
        self.holder = subprocess.Popen(["unshare", "-n", "sh", "-c", "ip link set lo up && echo up && exec sleep infinity"],
                                       stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, start_new_session=True)
        if self.holder.stdout.readline().strip() != b"up":
            raise RuntimeError("could not bring up the loopback of a network namespace of its own")
        self.holder.stdout.close()
        script = (f"{hide}mount --bind {shlex.quote(str(d / 'log'))} /var/log/glusterfs 2>/dev/null; "
                  f"mount -t tmpfs -o size={self.brick_size},mode=0755 mdfio-brick {shlex.quote(str(d / 'brick'))} && "
                  f'exec glusterd -N -f "$1" -l "$2" -p "$3"')
        with open(d / "log" / "glusterd.out", "a") as out:
            self.glusterd = subprocess.Popen(
                ["nsenter", f"--net={self.netns}", "unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh",
                 str(vol), str(d / "log" / "glusterd.log"), str(d / "run" / "glusterd.pid")],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while self.cli("volume", "list", timeout=5, check=False).returncode:
            if self.glusterd.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"glusterd did not start (exit {self.glusterd.poll()}):\n"
                                   f"{self.log('glusterd.out')[-2000:]}{self.log()[-3000:]}")
            time.sleep(0.02)
        self.cli("volume", "create", self.name, f"{ADDRESS}:{d / 'brick' / 'b'}", "force")
        if options:
            self.set(options)
        self.cli("volume", "start", self.name)
        while "Y" not in self._brick_online():
            if time.monotonic() > deadline:
                raise TimeoutError(f"the brick of {self.name} was not online within {timeout} s\n"
                                   f"{self.cli('volume', 'status', check=False).stdout}")
            time.sleep(0.02)
        self.startup_s = time.monotonic() - t0

    def _brick_online(self):
        out = self.cli("volume", "status", self.name, "detail", check=False).stdout
        return [line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Online")]

    def client_command(self, mountpoint: str | os.PathLike[str], options: Iterable[str] = (),
                       log: str | os.PathLike[str] | None = None) -> list[str]:
        """The command of a FUSE client that mounts the volume on
        mountpoint, in the caller's mount namespace, and stays in the
        foreground."""
        self._clients += 1
        log = log or self.directory / "log" / f"client-{self._clients}.log"
        return ["nsenter", f"--net={self.netns}", "glusterfs", "-N", f"--volfile-server={ADDRESS}",
                f"--volfile-id={self.name}", f"--log-file={log}", *options, str(mountpoint)]

    def mount(self, mountpoint: str | os.PathLike[str], options: Iterable[str] = (),
              timeout: float = START_TIMEOUT) -> Path:
        """Mounts the volume on mountpoint in the caller's mount namespace;
        unmounted by stop()."""
        mountpoint = Path(mountpoint)
        mountpoint.mkdir(parents=True, exist_ok=True)
        proc = subprocess.Popen(self.client_command(mountpoint, options), stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        self.mounts.append((mountpoint, proc))
        deadline = time.monotonic() + timeout
        while not _mounted(mountpoint):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"glusterfs did not mount {mountpoint} (exit {proc.poll()})")
            time.sleep(0.02)
        return mountpoint

    def mount_script(self, mountpoint: str | os.PathLike[str], options: Iterable[str] = (),
                     timeout: float = START_TIMEOUT) -> str:
        """Shell commands that mount the volume on mountpoint in the mount
        namespace they run in (a host's: hosts.py's prelude), its client
        a process of theirs, and fail if it is not mounted within
        timeout."""
        cmd = " ".join(shlex.quote(a) for a in self.client_command(mountpoint, options))
        m = shlex.quote(str(mountpoint))
        tries = int(timeout / 0.02)
        return (f"mkdir -p {m} && {{ {cmd} </dev/null >/dev/null 2>&1 & }} && i=0 && "
                f"until grep -q \" $(realpath {m}) fuse.glusterfs \" /proc/self/mounts; do "
                f"i=$((i + 1)); [ $i -lt {tries} ] || {{ echo 'glusterfs did not mount {m}' >&2; exit 1; }}; "
                f"sleep 0.02; done")

    def processes(self) -> list[int]:
        """Every process in the namespace: the daemons and every FUSE
        client, the hosts' too."""
        return netns.processes_in(self.holder)

    def stop(self) -> None:
        """Unmounts the mounts of mount(), kills every process of the
        namespace and removes the state."""
        try:
            netns.end(self.mounts, self.holder, "the GlusterFS volume", KILL_TIMEOUT)
        finally:
            netns.reap([self.glusterd, self.holder, *(p for _, p in self.mounts)], KILL_TIMEOUT)
            self.mounts.clear()
            self.glusterd = self.holder = None
            for sub in ("work", "run", "brick"):
                shutil.rmtree(self.directory / sub, ignore_errors=True)


def _mounted(path):
    return netns.fuse_mounted(path, "fuse.glusterfs")


@contextlib.contextmanager
def volume(directory: str | os.PathLike[str], options: Mapping[str, object] | None = None) -> Iterator[Volume]:
    """A started volume with its state in directory (made if missing): a
    Volume, stopped with all its processes and mounts on leaving."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    v = Volume(directory)
    try:
        v.start(options)
        yield v
    finally:
        v.stop()
