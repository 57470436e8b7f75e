"""Several "hosts" on one machine, for tests and benchmarks of runs over many
hosts: each a fio server in a UTS namespace of its own (so gethostname()
in the engine returns that host's name) on its own loopback address, all
sharing this machine's file systems (or, with a prelude, each in a mount
namespace of its own where the prelude mounts the host's own client of a
shared file system). Only loopback addresses are used;
starting is bounded in time, and every server is killed on every exit
path of fio_servers()."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .fio import kill_tree

START_TIMEOUT = 10  # s until a server listens
START_TRIES = 5     # ports tried: another program may take a free one first
KILL_TIMEOUT = 10   # s until a killed host's processes are gone


@dataclass
class FioServer:
    name: str           # its host name
    address: str        # a loopback address: 127.0.0.2 onwards
    log: Path
    fio: str = "fio"
    env: dict = field(default=None, repr=False)
    # shell commands run in the host's namespaces before fio starts (a
    # mount of its own): with one, the host has its own mount namespace,
    # and a prelude that fails fails start()
    prelude: str = ""
    proc: subprocess.Popen = field(default=None, repr=False)
    port: int = 0       # chosen by start()
    uts: int | None = None  # its UTS namespace (an inode number): the host's processes

    @property
    def client_arg(self) -> str:
        """What fio's --client= takes to reach it."""
        return f"--client=ip:{self.address},{self.port}"

    def start(self) -> None:
        """Starts the server on a port free at the time (test runs and
        benchmarks on one machine must not meet on fio's default port)."""
        assert self.address.startswith("127."), self.address
        for _ in range(START_TRIES):
            self.port = _free_port(self.address)
            namespaces = ["-u", "-m", "--propagation", "private"] if self.prelude else ["-u"]
            cmd = ["unshare", *namespaces, "sh", "-c",
                   'hostname "$1" && ' + (f"{{ {self.prelude}; }} && " if self.prelude else "") +
                   'exec "$2" --server="ip:$3,$4"',
                   "sh", self.name, self.fio, self.address, str(self.port)]
            with open(self.log, "a") as out:
                # a session of its own: kill() reaches every job it forks
                self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=self.env,
                                             stdin=subprocess.DEVNULL, start_new_session=True)
            deadline = time.monotonic() + START_TIMEOUT
            while not _listening(self.address, self.port):
                if self.proc.poll() is not None:
                    break       # the port was taken: another one
                if time.monotonic() > deadline:
                    self.kill()
                    raise TimeoutError(f"fio server {self.name} is not listening on {self.address}:{self.port}")
                time.sleep(0.02)
            else:
                # listening, it runs in its namespace: never this
                # machine's own, whose processes kill() would all kill
                self.uts = _uts(self.proc.pid)
                if self.uts == _uts("self"):
                    self.uts = None
                return
        raise RuntimeError(f"fio server {self.name} did not start: {self.log.read_text()}")

    def kill(self) -> None:
        """The host dies: the server and every job it forked, at once. The
        jobs are not in the server's process group (each fio job process
        calls setsid), so they are found by parentage (kill_tree): a
        killpg alone left them running on, orphans of a dead host that
        went on to end their phase. A job forked as its parent was being
        stopped escapes parentage (its parent killed, it is another's
        child): every process left in the host's UTS namespace is killed
        until none is. Then each is waited for until it has ended: a
        process killed leaves its namespace first, and may still close
        its files (a disk write, a socket) before it is a zombie."""
        if self.proc is None:
            return
        killed = kill_tree(self.proc.pid)
        deadline = time.monotonic() + KILL_TIMEOUT
        while self.uts is not None and (left := _in_namespace(self.uts)):
            killed.update(left)
            for pid in left:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                raise RuntimeError(f"host {self.name}: processes {left} outlive SIGKILL")
            time.sleep(0.01)
        while left := [pid for pid in killed if alive(pid)]:
            if time.monotonic() > deadline:
                raise RuntimeError(f"host {self.name}: processes {left} do not end after SIGKILL")
            time.sleep(0.01)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        self.proc = None

    def restart(self) -> None:
        self.kill()
        self.start()


def _uts(pid):
    """The UTS namespace of a process ('self': this one), None when gone."""
    try:
        return os.stat(f"/proc/{pid}/ns/uts").st_ino
    except OSError:
        return None


def alive(pid: int) -> bool:
    """Whether a process has not ended (a zombie has)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def _in_namespace(uts):
    """The live processes of a UTS namespace."""
    return [pid for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()) if _uts(pid) == uts and alive(pid)]


def _free_port(address):
    with socket.socket() as s:
        s.bind((address, 0))
        return s.getsockname()[1]


def _listening(address, port):
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex((address, port)) == 0


def need_unshare() -> str | None:
    """Why fio servers cannot be started here, or None."""
    if os.geteuid() != 0:
        return "fio servers in UTS namespaces of their own need root (unshare -u)"
    if not shutil.which("unshare"):
        return "unshare (util-linux) is not installed"
    return None


@contextlib.contextmanager
def fio_servers(count: int, logdir: str | os.PathLike[str], names: Sequence[str] | None = None, fio: str = "fio",
                env: Mapping[str, str] | None = None,
                prelude: Callable[[int], str] | None = None) -> Iterator[list[FioServer]]:
    """count fio servers, named names or host1..hostN, on 127.0.0.2 onwards,
    in environment env (default: this process's); each logs to
    logdir/fio-server-<n>.log. prelude(i): the i-th host's prelude."""
    names = names or [f"host{i + 1}" for i in range(count)]
    servers = [FioServer(names[i], f"127.0.0.{i + 2}", Path(logdir) / f"fio-server-{i + 1}.log", fio, env,
                         prelude=prelude(i) if prelude else "")
               for i in range(count)]
    try:
        for s in servers:
            s.start()
        yield servers
    finally:
        for s in servers:
            s.kill()
