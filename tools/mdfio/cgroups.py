"""A memory limit for the commands a benchmark runs: a child memory cgroup
(cgroup v1) whose page cache, inodes and dentries are charged to it, so
that no more than the limit of them stays cached."""
from __future__ import annotations

import os
import time
from pathlib import Path


class MemCgroup:
    """A child memory cgroup (cgroup v1) of this process's own, with a limit
    in bytes: the page cache, inodes and dentries that the commands run
    inside it (wrap()) bring in are charged to it. Named
    <name>-<this process's pid>; OSError where there is no cgroup v1
    memory controller (or the cgroup cannot be made)."""

    BASE = Path("/sys/fs/cgroup/memory")

    def __init__(self, limit: int, name: str = "mdfio-bench") -> None:
        own = "/"
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, ctrl, path = line.split(":", 2)
            if "memory" in ctrl.split(","):
                own = path
        parent = self.BASE / own.strip("/")
        if not (parent / "cgroup.procs").exists():
            parent = self.BASE
        if not (parent / "memory.limit_in_bytes").exists():
            raise OSError(f"no cgroup v1 memory controller at {self.BASE}")
        self.path = parent / f"{name}-{os.getpid()}"
        self.path.mkdir()
        (self.path / "memory.limit_in_bytes").write_text(f"{limit}\n")

    def wrap(self) -> list[str]:
        """A command prefix that runs the command inside the cgroup."""
        return ["sh", "-c", f'echo $$ > {self.path}/cgroup.procs && exec "$@"', "sh"]

    def close(self, wait: float = 10.0) -> bool:
        """Removes the cgroup; False if it is still there after wait
        seconds."""
        # its processes have exited, but the kernel may take a moment to let go
        deadline = time.monotonic() + wait
        while True:
            try:
                self.path.rmdir()
                return True
            except FileNotFoundError:
                return True
            except OSError:
                if time.monotonic() >= deadline:
                    return False
                time.sleep(0.1)
