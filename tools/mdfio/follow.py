"""mdfio-report --follow: md-workbench's lines of a run while fio runs it.

fio writes an interim JSON document every --status-interval, each with
every job of the run: a section not begun has counts of 0, a running one
its counts so far. The engine records a rank's phase time (the slat_ns
sample of the phase's slot) when the rank ends the phase, so a phase whose
every rank has it (and no fio error but those that leave its figures whole)
is complete, and its figures are final: its lines are printed once, as
soon as a document shows that. The phase running has a
live line: objects done (the phase's own: created, read or deleted), the
rate over the slowest rank's time so far, and the ranks that have ended.
When fio's output ends, its last document, fio's final one, is the run
(mdfio-report prints its report as without --follow, the phases not every
rank completed marked).

fio's output ends: on stdin (or any other pipe) at its end of file, when
fio exits; in a regular FILE when no process has it open for writing any
more (fio keeps its --output open until it exits), looked for in /proc as
fuser(1) does; or, while no process here writes it (a run that has
ended, a fio on another host), with a document in which every phase has
ended on every rank. Waiting is bounded: --timeout seconds with nothing
new before the end is an error."""
from __future__ import annotations

import argparse
import codecs
import os
import select
import shutil
import stat
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TextIO

from .fiojson import HEADLINE, BadInput, DocumentStream, Section
from .figures import PhaseFigures, PhaseMark, Run

# the operation whose count is a phase's objects (figures.phase_figures)
OBJECTS = {"precreate": "create", "benchmark": "read", "cleanup": "delete"}
POLL = 0.1          # s between looks at a FILE that has nothing new
CHUNK = 1 << 20


def file_writers(ident: tuple[int, int], pids: Iterable[int]) -> set[int]:
    """Those of pids that have the file ident (st_dev, st_ino) open for
    writing (their /proc/PID/fd and fdinfo; a process gone, or not ours to
    look at, has none)."""
    found = set()
    for pid in pids:
        fd_dir = f"/proc/{pid}/fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue
        for fd in fds:
            try:
                st = os.stat(f"{fd_dir}/{fd}")
                if (st.st_dev, st.st_ino) != ident:
                    continue
                with open(f"/proc/{pid}/fdinfo/{fd}") as info:
                    flags = next(int(line.split()[1], 8) for line in info if line.startswith("flags:"))
            except (OSError, StopIteration, ValueError, IndexError):
                continue
            if flags & os.O_ACCMODE != os.O_RDONLY:
                found.add(pid)
    return found


def all_pids() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


class Pipe:
    """stdin, or a FILE that is no regular file: fio's output ends at its
    end of file."""

    def __init__(self, fd, name):
        self.fd, self.name, self.made, self.complete = fd, name, True, False

    def read(self, wait: float) -> bytes | None:
        """What came: bytes; None if nothing within wait s; b'' at the end."""
        if not select.select([self.fd], [], [], wait)[0]:
            return None
        try:
            return os.read(self.fd, CHUNK)
        except OSError as e:
            raise BadInput(f"{self.name}: cannot read it: {e.strerror}") from None


class GrowingFile:
    """A regular FILE that fio writes (--output), read as it grows. Its
    end: once a process here has had it open for writing (fio keeps its
    output open until it exits), when none has any more; while none has,
    a document in which every phase has ended on every rank (a run that
    has ended, or a fio on another host of a shared file system), which
    the follower says by setting complete. One that does not exist yet is
    waited for (fio makes it when it starts)."""

    LOOK_EVERY = 0.5    # s between looks for its writers, when it has nothing new

    def __init__(self, path, name, fd=None):
        self.path, self.name = path, name
        self.fd, self.read_bytes, self.writers = None, 0, set()
        self.made = self.ended = self.complete = False
        self.next_look = 0.0
        if fd is not None:
            self._adopt(fd)

    def _adopt(self, fd):
        self.fd, self.made = fd, True
        st = os.fstat(fd)
        self.ident = (st.st_dev, st.st_ino)

    def read(self, wait: float) -> bytes | None:
        if self.fd is None:
            fd = open_file(self.path, self.name)
            if fd is None:
                time.sleep(wait)
                return None
            self._adopt(fd)
        try:
            data = os.read(self.fd, CHUNK)
            size = os.fstat(self.fd).st_size
        except OSError as e:
            raise BadInput(f"{self.name}: cannot read it: {e.strerror}") from None
        if data:
            self.read_bytes += len(data)
            return data
        if size < self.read_bytes:
            raise BadInput(f"{self.name}: cut to {size} bytes while followed, after {self.read_bytes}: another "
                           "fio writes it anew")
        if self.ended:
            return b""
        now = time.monotonic()
        if now >= self.next_look:
            self.next_look = now + self.LOOK_EVERY
            # the writers known, if any; every process when they have
            # closed it, or none was known
            known = self.writers
            self.writers = file_writers(self.ident, known) if known else set()
            if not self.writers:
                self.writers = file_writers(self.ident, all_pids())
            if known and not self.writers:
                # what they wrote before they closed it, then the end
                self.ended = True
                return self.read(wait)
        if not self.writers and self.complete:
            return b""
        time.sleep(wait)
        return None


def open_file(path: Path, name: str) -> int | None:
    """A descriptor of FILE for reading; None while it does not exist."""
    if path.is_dir():
        raise BadInput(f"{name}: is a directory, expected fio's JSON output file")
    try:
        # not held up by a FIFO that nothing writes yet
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise BadInput(f"{name}: cannot read it: {e.strerror}") from None
    os.set_blocking(fd, True)
    return fd


def open_input(path: str | os.PathLike[str]) -> Pipe | GrowingFile:
    """The input to follow: '-' for stdin, or a FILE."""
    if path == "-":
        return Pipe(0, "<stdin>")
    path, name = Path(path), str(path)
    fd = open_file(path, name)
    if fd is not None and not stat.S_ISREG(os.fstat(fd).st_mode):
        return Pipe(fd, name)
    return GrowingFile(path, name, fd)


class Live:
    """Where the lines go: the phases' lines, and the live line, which on
    a terminal is one line rewritten in place (\\r) under them, and
    elsewhere a line of its own each time it changes."""

    def __init__(self, out):
        self.out, self.tty = out, out.isatty()
        self.shown = ""      # on a terminal: the live line on the screen
        self.last = None     # elsewhere: the live line printed last

    def lines(self, lines: Sequence[str]) -> None:
        if lines:
            self.erase()
            self.out.write("".join(line + "\n" for line in lines))
            self.out.flush()

    def set(self, text: str | None) -> None:
        """Shows the live line text (None: none)."""
        if text is None:
            self.erase()
        elif self.tty:
            # longer than the terminal, it would wrap, and \r not reach its start
            text = text[:max(shutil.get_terminal_size().columns - 1, 1)].ljust(len(self.shown))
            self.out.write("\r" + text)
            self.shown = text
        elif text != self.last:
            self.out.write(text + "\n")
            self.last = text
        self.out.flush()

    def said(self, lines: Sequence[str], err: TextIO) -> None:
        """fio's and the engine's messages, on err (stderr) as they come,
        the live line drawn again under them."""
        if lines:
            shown = self.shown
            self.erase()
            err.write("".join(line + "\n" for line in lines))
            err.flush()
            if shown:
                self.out.write(shown)
                self.out.flush()
                self.shown = shown

    def erase(self) -> None:
        if self.shown:
            self.out.write("\r" + " " * len(self.shown) + "\r")
            self.out.flush()
            self.shown = ""


def begun(sec: Section) -> bool:
    return any(j.began(HEADLINE[sec.phase]) for j in sec.jobs)


def running(run: Run) -> Section | None:
    """The section running: the last one begun that has not ended on every
    rank (one before it that has not either was stopped short), else the
    first not begun; None when every one has ended."""
    todo = [sec for sec in run.sections if not run.ended(sec)]
    going = [sec for sec in todo if begun(sec)]
    return going[-1] if going else todo[0] if todo else None


def live_line(run: Run, sec: Section) -> str:
    """The live line of a running section: objects done of those due,
    their rate over the slowest rank's time so far, that time, and the
    ranks that have ended the phase. Counts and times only: a running
    job's histograms may be a sample ahead of its counts (Job.done)."""
    head, jobs = HEADLINE[sec.phase], sec.jobs
    done = sum(j.done(OBJECTS[sec.phase]) for j in jobs)
    per_set = sec.int_opt("steps_per_set" if sec.phase == "benchmark" else "precreate_per_set")
    due = sec.int_opt("datasets") * per_set * len(jobs)
    t = max((x for x in (j.time_so_far(head) for j in jobs) if x is not None), default=None)
    rate = "0.0" if not done else "n/a" if t is None else f"{done / t:.1f}"
    what = f"benchmark repeat {run.repeat_of[sec.name]} of {run.repeats}" if sec.phase == "benchmark" else sec.phase
    ended = sum(j.phase_ended(head) for j in jobs)
    return (f"live: {what}: {done} of {due} objects, {rate} obj/s, "
            f"{'n/a' if t is None else f'{t:.1f} s'}, {ended} of {len(jobs)} ranks ended")


def timed_out(source: Pipe | GrowingFile, timeout: float) -> str:
    """The line of a wait for fio's output longer than timeout s."""
    t = f"{timeout:g}"
    if not source.made:
        return f"{source.name}: not there after {t} s (--timeout {t}): fio has not made it"
    if isinstance(source, GrowingFile) and not source.writers:
        return (f"{source.name}: nothing new for {t} s, no process here writes it, and phases have not ended "
                f"(--timeout {t}): its fio died, or runs on another host and writes less often than that")
    return (f"{source.name}: nothing new from fio for {t} s before its output ended (--timeout {t}): fio is "
            "stuck, or writes less often than that (--status-interval)")


def label(run: Run, f: PhaseFigures | PhaseMark) -> str:
    return f"benchmark repeat {f.repeat}" if f.phase == "benchmark" else f.phase


def follow(path: str | os.PathLike[str], opts: argparse.Namespace,
           block: Callable[[Run, PhaseFigures | PhaseMark, argparse.Namespace], list[str]],
           out: TextIO) -> tuple[Run, list[str]]:
    """Follows fio's output at path ('-': stdin) to its end, printing to
    out each phase's lines (block(run, figures, opts)) as soon as the phase
    has ended on every rank, and the live line while one runs. Returns the
    Run of fio's final document, and a note for each phase whose lines
    printed live differ from the final ones."""
    live = Live(out)
    try:
        return _follow(open_input(path), opts, block, live)
    finally:
        live.erase()


def _follow(source, opts, block, live):
    name = source.name
    stream = DocumentStream(name)
    text = codecs.getincrementaldecoder("utf-8")(errors="replace")
    printed = {}
    last, quiet_since = None, time.monotonic()

    def show(run):
        for f in run.phases:
            if f.section not in printed:
                printed[f.section] = block(run, f, opts)
                live.lines(printed[f.section])
    while True:
        data = source.read(POLL)
        if data is None:
            if time.monotonic() - quiet_since > opts.timeout:
                raise BadInput(timed_out(source, opts.timeout))
            continue
        if not data:
            break
        quiet_since = time.monotonic()
        if b"\0" in data:
            raise BadInput(f"{name}: holds NUL bytes: binary data, not fio's JSON output")
        docs = stream.feed(text.decode(data))
        live.said(stream.said(), sys.stderr)
        if docs:
            last = docs[-1]
            run = Run([(last, name)], interim=True, skip=printed)
            show(run)
            sec = running(run)
            live.set(None if sec is None else live_line(run, sec))
            source.complete = sec is None
    docs = stream.feed(text.decode(b"", final=True))
    try:
        docs += stream.close()
    finally:
        live.said(stream.said(), sys.stderr)
    run = Run([(docs[-1] if docs else last, name)])
    live.set(None)
    # a phase printed live whose lines fio's final document changes (a
    # count the engine makes at the job's end), or that a rank's fio
    # error, known only then, leaves incomplete
    notes = [f"{name}: the {label(run, f)} lines printed live differ from those of fio's final document, "
             "which the report holds" for f in run.entries
             if f.section in printed and printed[f.section] != block(run, f, opts)]
    # the phases not every rank completed are marked in the report, which
    # says so on stderr (a fio killed, a phase stopped short, a host gone)
    show(run)
    return run, notes
