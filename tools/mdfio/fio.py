"""Writing an mdfio jobfile and running fio on it: the one way bench/run and
the tests do both."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .fiojson import read_documents


def engine_path(engine_dir: str | os.PathLike[str], engine: str = "posix") -> Path:
    """The shared object of mdfio-<engine> in a build's engines directory."""
    return Path(engine_dir) / f"mdfio-{engine}.so"


def jobfile(phases: Iterable[str], root: str | os.PathLike[str], engine: str | os.PathLike[str], numjobs: int = 1,
            bs: int | str = 3901, stonewall: bool = True, **opts: object) -> str:
    """A jobfile of one section per phase name ('benchmark' may repeat),
    named <phase>-<position> and each waiting for the one before (fio's
    stonewall; without it, one fio group, which the engine orders); engine
    is the path of the engine's shared object, opts further [global]
    options (md-workbench's datasets, precreate_per_set, ...)."""
    lines = ["[global]", f"ioengine=external:{engine}", f"directory={root}",
             f"numjobs={numjobs}", f"bs={bs}"]
    lines += [f"{k}={v}" for k, v in opts.items()]
    for i, phase in enumerate(phases):
        lines += ["", section_name(phase, i), f"phase={phase}"]
        if i and stonewall:
            lines.append("stonewall")
    return "\n".join(lines) + "\n"


def section_name(phase: str, position: int) -> str:
    return f"[{phase}-{position}]"


def jobname(phase: str, position: int) -> str:
    """fio's jobname of the section jobfile() writes for phases[position]."""
    return section_name(phase, position)[1:-1]


@dataclass
class FioRun:
    """One fio invocation: its command, exit status, stdout, stderr, and
    its JSON document (the last one of the output file; None if none)."""
    cmd: list
    rc: int
    stdout: str
    stderr: str
    json: dict | None

    def jobs(self, name: str | None = None) -> list[dict[str, Any]]:
        """The jobs of the run; of a fio client, those of every server
        (without fio's sum over them, "All clients")."""
        jobs = self.json["jobs"] if "jobs" in self.json else [
            j for j in self.json["client_stats"] if j["jobname"] != "All clients"]
        return [j for j in jobs if name is None or j["jobname"] == name]

    def mdfio_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.startswith("mdfio:")]


def run(job: str | os.PathLike[str], text: str | None = None, *, output_format: str = "json",
        args: Iterable[object] = (), prefix: Iterable[object] = (), env: Mapping[str, str] | None = None,
        watch: Callable[[int], object] | None = None, timeout: float | None = None,
        fio: str | os.PathLike[str] = "fio") -> FioRun:
    """Runs fio on the jobfile job (written first from text, if given):
    JSON to job.json, stdout and stderr to job.stdout and job.stderr.
    prefix is a command prefix (time, strace, a cgroup); args go before the
    jobfile; watch(pid), if given, is called every 50 ms while fio runs;
    past timeout seconds fio is killed and TimeoutError raised, which names
    job.hung, the state of fio's processes and threads just before (see
    hang_states) and the end of fio's stderr (a barrier's stalled lines),
    and quotes its first lines. A fio that
    is stopped so (or by a signal to the caller) is killed with its job
    processes, which would otherwise run on in the namespace and keep its
    file system busy."""
    job = Path(job)
    if text is not None:
        job.write_text(text)
    out = job.with_suffix(".json")
    if out.exists():
        out.unlink()
    cmd = [str(c) for c in (*prefix, fio, f"--output-format={output_format}", f"--output={out}", *args, job)]
    deadline = None if timeout is None else time.monotonic() + timeout
    with open(job.with_suffix(".stdout"), "w") as so, open(job.with_suffix(".stderr"), "w") as se:
        proc = subprocess.Popen(cmd, stdout=so, stderr=se, env=env)
        try:
            while watch and proc.poll() is None:
                if deadline is not None and time.monotonic() > deadline:
                    break
                watch(proc.pid)
                time.sleep(0.05)
            proc.wait(None if deadline is None else max(deadline - time.monotonic(), 0))
        except subprocess.TimeoutExpired:
            # where it hung, before the kill takes it away
            states = job.with_suffix(".hung")
            se.flush()
            states.write_text(hang_states(proc.pid) + "fio's stderr ends:\n" +
                              "".join(job.with_suffix(".stderr").read_text(errors="replace")
                                      .splitlines(keepends=True)[-HUNG_HEAD:]))
            head = "\n".join(states.read_text().splitlines()[:HUNG_HEAD])
            raise TimeoutError(f"fio ran longer than {timeout} s: {' '.join(cmd)}; the state of its "
                               f"processes and threads is in {states}, which begins:\n{head}") from None
        finally:
            if proc.poll() is None:
                kill_tree(proc.pid)
                proc.wait()
    text = out.read_text(errors="replace") if out.exists() else ""
    doc = read_documents(text, str(out))[-1] if "{" in text else None
    return FioRun(cmd, proc.returncode, job.with_suffix(".stdout").read_text(errors="replace"),
                  job.with_suffix(".stderr").read_text(errors="replace"), doc)


# the lines of a hung fio's states that its TimeoutError quotes
HUNG_HEAD = 40
# how long gdb may take over all of fio's processes (run side by side): a
# thread in an uninterruptible wait cannot stop for it, a loaded machine
# makes it slow, and the caller is late already
GDB_SECONDS = 20


def _read(path: Path) -> str:
    try:
        return path.read_text(errors="replace").strip()
    except OSError as e:
        return f"({e.strerror})"


def thread_states(pid: int) -> list[str]:
    """One block per thread of process pid (io_uring's io-wq workers are
    threads of it too): its name, state letter and wchan, then its kernel
    stack where /proc lets this user read it."""
    out = []
    for task in sorted(Path(f"/proc/{pid}/task").glob("[0-9]*"), key=lambda t: int(t.name)):
        stat = _read(task / "stat")
        name, state = (stat.rsplit(")", 1)[0].split("(", 1)[-1], stat.rsplit(")", 1)[-1].split()[0]) \
            if ")" in stat else ("?", "?")
        out.append(f"  thread {task.name} ({name}) state {state} wchan {_read(task / 'wchan') or '0'}")
        stack = _read(task / "stack")
        out += [f"    {line}" for line in stack.splitlines()]
    return out


def gdb_backtraces(pids: Iterable[int], seconds: float) -> dict[int, list[str]]:
    """gdb's backtrace of every thread of each of pids, all of them given
    seconds together."""
    gdb = shutil.which("gdb")
    if gdb is None:
        return {p: ["  (no gdb here: no user-space backtraces)"] for p in pids}
    # a frame a line, function names only: a CI log keeps the tail of a
    # failure's output, and the innermost frames say where a thread waits
    short = ["-ex", "set print frame-arguments presence", "-ex", "set print frame-info short-location",
             "-ex", "set print address off"]
    runs = {p: subprocess.Popen([gdb, "-p", str(p), "-batch", "-nx", "-iex", "set debuginfod enabled off",
                                 *short, "-ex", "thread apply all bt"], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for p in pids}
    deadline, out = time.monotonic() + seconds, {}
    for p, gdb_run in runs.items():
        try:
            stdout, stderr = gdb_run.communicate(timeout=max(deadline - time.monotonic(), 0.1))
        except subprocess.TimeoutExpired:
            gdb_run.kill()
            gdb_run.communicate()
            out[p] = [f"  (gdb did not finish within {seconds:g} s)"]
            continue
        lines = [line for line in stdout.splitlines() if line.startswith(("Thread ", "#"))]
        out[p] = [f"  {line}" for line in lines] or [f"  (gdb: {stderr.strip()[-300:]})"]
    return out


def hang_states(pid: int) -> str:
    """What every process of fio pid's tree and each of its threads is
    doing: first /proc's states of all of them, then gdb's backtraces,
    bounded in time (GDB_SECONDS)."""
    table = processes()
    tree = sorted(descendants(pid, table))
    lines = []
    for p in tree:
        name, state, parent = table.get(p, ("?", "?", 0))
        lines.append(f"process {p} ({name}) state {state} parent {parent}")
        lines += thread_states(p)
    for p, bt in gdb_backtraces(tree, GDB_SECONDS).items():
        lines += [f"gdb backtraces of process {p}:", *bt]
    return "\n".join(lines) + "\n"


def processes() -> dict[int, tuple[str, str, int]]:
    """{pid: (command name, state letter, parent pid)} of every process,
    from /proc/*/stat (this kernel has no /proc/PID/task/*/children)."""
    table = {}
    for st in Path("/proc").glob("[0-9]*/stat"):
        try:
            head, tail = st.read_text().rsplit(")", 1)
        except OSError:
            continue
        state, parent = tail.split()[:2]
        table[int(st.parent.name)] = (head.split("(", 1)[1], state, int(parent))
    return table


def descendants(pid: int, table: dict[int, tuple[str, str, int]] | None = None) -> set[int]:
    """pid and its descendants (in table, a processes() of the caller's)."""
    table = processes() if table is None else table
    found, todo = {pid}, [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, (_, _, pp) in table.items() if pp == p and c not in found]
        found.update(kids)
        todo += kids
    return found


def kill_tree(pid: int) -> set[int]:
    """Kills pid and every process below it. fio's job processes each run
    in a session of their own (fio calls setsid), so only their parentage
    finds them. Each process found is stopped, and the tree looked at
    again, until no new one has come: then none forks while the others
    are killed (a fio server's connection process forks jobs of its own).
    Returns the processes it killed."""
    stopped = set()
    while found := descendants(pid) - stopped:
        for p in found:
            with contextlib.suppress(ProcessLookupError):
                os.kill(p, signal.SIGSTOP)
        stopped |= found
    for p in stopped:
        with contextlib.suppress(ProcessLookupError):
            os.kill(p, signal.SIGKILL)
    return stopped
