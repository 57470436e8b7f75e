"""What the test services that run in a network namespace of their own
(mdfio.gluster, mdfio.ceph) share: finding the namespace's processes and
ending them, unmounting, and telling a FUSE mount of a kind."""
from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any


def processes_in(holder: subprocess.Popen[Any] | None) -> list[int]:
    """Every process in the network namespace that holder (a Popen, or
    None: no namespace) holds, but holder: daemons and FUSE clients, the
    hosts' too."""
    if holder is None:
        return []
    try:
        mine = os.stat(f"/proc/{holder.pid}/ns/net").st_ino
    except OSError:
        return []
    found = []
    for e in Path("/proc").iterdir():
        if e.name.isdigit() and int(e.name) != holder.pid:
            with contextlib.suppress(OSError):
                if os.stat(f"/proc/{e.name}/ns/net").st_ino == mine:
                    found.append(int(e.name))
    return found


def end(mounts: Iterable[tuple[str | os.PathLike[str], subprocess.Popen[Any]]], holder: subprocess.Popen[Any] | None,
        what: str, timeout: float) -> None:
    """Unmounts mounts ((path, Popen) pairs) lazily, so that a process
    still in one does not keep it, then kills every process of the
    namespace until none is left (RuntimeError naming what, after timeout
    seconds)."""
    for path, _ in mounts:
        subprocess.run(["umount", "-l", str(path)], capture_output=True, timeout=timeout)
    if holder is None:
        return
    deadline = time.monotonic() + timeout
    while (found := processes_in(holder)):
        if time.monotonic() > deadline:
            raise RuntimeError(f"processes {found} of {what} survive SIGKILL")
        for pid in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def reap(procs: Iterable[subprocess.Popen[Any] | None], timeout: float) -> None:
    """Kills the process group of each Popen (None skipped) and waits for
    it."""
    for p in procs:
        if p is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                p.wait(timeout=timeout)


def fuse_mounted(path: str | os.PathLike[str], fstype: str) -> bool:
    """Whether path is a mount point of type fstype (fuse.glusterfs)."""
    real = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        return any(line.split()[1] == real and line.split()[2] == fstype for line in f)
