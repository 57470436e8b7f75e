"""Reading fio's JSON output of an mdfio run: the documents in a file, the
mdfio job sections in a document, and one run's sections over all its
documents (one per fio process under mpirun or srun) and hosts (fio client
JSON), each job a global rank; each value checked where it is read.
Input of another structure raises BadInput with what was expected; nothing
else is caught, so a bug shows as a traceback."""
from __future__ import annotations

import datetime
import errno
import json
import math
import os
import re
import struct
import sys
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

# where the engine records each operation in fio's JSON (README "Where the
# numbers are"): the slot, and its latency object
SLOT = {"create": ("write", "clat_ns"), "read": ("read", "clat_ns"),
        "delete": ("trim", "clat_ns"), "stat": ("sync", "lat_ns")}
# the slot whose runtime is a phase's time
HEADLINE = {"precreate": "write", "benchmark": "read", "cleanup": "trim"}
# mdfio-tree's phases (docs/studies.md, "The small-file tree study"): the
# slot of each one's count and time, and its operations as (name, slot,
# latency object); a find's names seen and matched are its read and write
# short_ios
TREE_ENGINE = "mdfio-tree"
TREE_HEADLINE = {"copy": "write", "find": "read", "read": "read", "rewrite": "write", "delete": "trim"}
TREE_OPS = {"copy": (("create+write", "write", "clat_ns"), ("mkdir/symlink", "sync", "lat_ns")),
            "find": (("readdir", "read", "clat_ns"), ("stat", "sync", "lat_ns")),
            "read": (("open+read+close", "read", "clat_ns"),),
            "rewrite": (("open+write+close", "write", "clat_ns"),),
            "delete": (("unlink", "trim", "clat_ns"), ("rmdir", "sync", "lat_ns"))}


def headline_of(opts: dict[str, str]) -> str | None:
    """The slot of a job's phase count and time (its engine's and phase's),
    None for a phase its engine does not have."""
    phase = pick(opts.get("phase", ""))
    if TREE_ENGINE in opts.get("ioengine", ""):
        return TREE_HEADLINE.get(phase)
    return HEADLINE.get(phase)
DEFAULTS = {"datasets": "10", "precreate_per_set": "3000", "steps_per_set": "1000",
            "rank_offset": "1", "start_index": "0", "read_only": "0", "verify_read": "0",
            "repeat": "1", "repeats": "1", "random_seed": "0", "data_packet_type": "t", "stonewall_timer": "0",
            "stonewall_wear_out": "0", "waiting_factor": "0", "adaptive_waiting": "0", "latency_all": "0",
            "ignore_precreate_errors": "0", "verbose": "0", "lim_free_mem": "0", "lim_free_mem_phase": "0",
            "drop_caches": "0"}
# fio's counters are unsigned 64-bit; larger is not a real run
COUNTER_MAX = 2 ** 63
# the most ranks a run has (engines/lib/world.h, MDFIO_MAX_RANKS)
MAX_RANKS = 1 << 20
# the integer options the tools read that the engine (options.c) or fio
# accepts in a narrower range than 0 .. COUNTER_MAX-1 (the upper bounds
# loosely: u32 for fio's and the engine's u32 options)
OPTION_RANGE = {"datasets": (1, 2**32 - 1), "precreate_per_set": (1, COUNTER_MAX - 1),
                "steps_per_set": (1, COUNTER_MAX - 1), "rank_offset": (0, 2**32 - 1), "read_only": (0, 1),
                "verify_read": (0, 1), "repeat": (1, 2**32 - 1), "repeats": (1, 2**32 - 1),
                "numjobs": (1, MAX_RANKS), "iodepth": (1, 2**32 - 1), "verbose": (0, 2), "adaptive_waiting": (0, 1),
                "stonewall_timer": (0, 2**32 - 1), "stonewall_wear_out": (0, 1), "lim_free_mem": (0, 2**44),
                "lim_free_mem_phase": (0, 2**44), "drop_caches": (0, 1)}
# fio's spellings of a boolean option (parse.c, check_str_bool)
BOOL = {"1": True, "yes": True, "on": True, "true": True, "0": False, "no": False, "off": False, "false": False}
# the job description the engine gives every rank (engines/core/run.c), before
# the user's own description, if any
RANK_DESC = re.compile(r"mdfio rank=([0-9]{1,19}) ranks=([0-9]{1,19}) host=(\S+)(?:; .*)?", re.S)
# characters that would break a message or a report line: C0 and C1
# controls, line separators (fio writes strings unescaped, so a C0 one in
# its output would not even be JSON)
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
# the options every rank of a section runs with in one run: a difference is
# files (or hosts) of different runs
RUN_OPTIONS = ("phase", "datasets", "precreate_per_set", "steps_per_set", "bs", "rank_offset",
               "start_index", "read_only", "verify_read", "repeat", "repeats", "directory")


# md-workbench under data load (jobfiles/md-workbench-under-load.fio,
# docs/reports.md "Metadata under data load"): a job of fio's own engine
# (not mdfio) named "load-..." is a data job, one named "load-...-alone"
# ran without md-workbench; mdfio sections named "loaded-..." are the
# md-workbench run under load, the others the run alone. A data job with
# create_only=1 only lays out its file, and does no I/O to report.
LOAD_PREFIX, ALONE_SUFFIX, LOADED_PREFIX = "load-", "-alone", "loaded-"
ALONE, LOADED = "alone", "loaded"


# what completion() finds of a section (docs/reports.md "A run that did
# not complete")
COMPLETE, INCOMPLETE, NOT_RUN = "complete", "incomplete", "not run"


class BadInput(Exception):
    """Input that is not what a tool expects; the message names the file
    (or option) at fault and says what is expected."""


def error_line(tool: str, e: Exception) -> str:
    """The one line a tool prints for BadInput e."""
    return f"{tool}: {e}"


def decoder(name: str) -> json.JSONDecoder:
    """A JSON decoder for fio's output, which prints integers with %lld and
    floats with %f: NaN, Infinity, floats beyond a double and integers of
    more than 20 characters are refused, naming the file (Python's json
    takes the first two, and makes inf of the third)."""
    def constant(text):
        raise BadInput(f"{name}: {text} in it: not a number fio writes (it prints finite numbers)")

    def number(text):
        value = float(text)
        if not math.isfinite(value):
            raise BadInput(f"{name}: {short(text)} in it: beyond any number fio writes")
        return value

    def integer(text):
        if len(text) > 20:
            raise BadInput(f"{name}: {short(text)} in it: an integer longer than fio writes (64 bits)")
        return int(text)
    return json.JSONDecoder(parse_constant=constant, parse_float=number, parse_int=integer)


def short(value: object, limit: int = 40) -> str:
    """A value of the input for a message: its repr, cut to limit characters."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


# a message of fio or the engine in fio's output: its own, or a fio
# server's as its client writes it ('<host> fio: ...'), and a client's
# word on a server's exit status
MESSAGE = re.compile(r"^(?:<[^>\n]*> )?(?:fio|mdfio): .*\S|^client <[^>\n]*>: exited with error .*\S", re.M)


class Document(dict):
    """A JSON document of fio's output, with said: the messages of fio and
    the engine in the text around it (the first ones; a fio client or a
    shell's 2>&1 puts them there), which say why a run did not run."""
    said = ()


def fio_said(text: str, most: int = 3) -> list[str]:
    """The first messages of fio or the engine in text, each made safe to
    quote in one line."""
    return [CONTROL.sub("?", m.group(0)) for m, _ in zip(MESSAGE.finditer(text), range(most))]


def read_documents(text: str, name: str) -> list[Document]:
    """All JSON documents in text; engine or fio messages may stand between."""
    docs, dec, pos = [], decoder(name), 0
    said = fio_said(text)
    for m in re.finditer(r"^\{", text, re.M):
        if m.start() < pos:
            continue
        try:
            doc, end = dec.raw_decode(text, m.start())
        except json.JSONDecodeError as e:
            raise BadInput(f"{name}: truncated or malformed JSON at line {e.lineno}: {e.msg}") from None
        except RecursionError:
            # only the input's nesting recurses in the decoder; fio's is 6 deep
            raise BadInput(f"{name}: JSON nested too deep to read: not fio's output, 6 levels deep") from None
        if isinstance(doc, dict):
            docs.append(Document(doc))
            docs[-1].said = said
        pos = end
    if not docs and said:
        raise BadInput(f"{name}: fio wrote no JSON document, only its messages: {short(said[0], 300)}")
    if not docs:
        raise BadInput(f"{name}: no fio JSON document in it (run fio with --output-format=json+)")
    return docs


class DocumentStream:
    """fio's JSON documents out of its output as it comes, piece by piece
    (mdfio-report --follow): what read_documents finds in the whole text,
    each document as soon as it is whole. A document may end where a line
    begins with '}' (fio's own) or where its first line ends in '}' (one
    on a single line): only there is it decoded, so a document is read
    about once however it is cut; a decoding that fails at the end of the
    text so far waits for more, one that fails before it is the input's
    fault. Only the text of the document being read is kept."""

    START = re.compile(r"^\{", re.M)
    END = re.compile(r"^\}[^\n]*\n", re.M)

    def __init__(self, name):
        self.name, self._dec = name, decoder(name)
        self._text = ""      # from a line's start on
        self._lines = 0      # line breaks before _text
        self._doc = None     # where in _text the document being read starts
        self._pos = 0        # where in _text to look on
        self.blank = True    # nothing but white space so far
        self.documents = 0
        self._said = []      # whole lines between documents, not yet taken

    def said(self) -> list[str]:
        """The lines fio wrote between documents since the last call (its
        own and the engine's messages), each once, as soon as it is whole;
        at the end of the input also a last line without a line break."""
        lines, self._said = self._said, []
        return lines

    def feed(self, text: str) -> list[dict[str, Any]]:
        """The documents that text completes."""
        self.blank = self.blank and not text.strip()
        self._text += text
        return self._take(final=False)

    def close(self) -> list[dict[str, Any]]:
        """The documents the end of the input completes; BadInput for an
        input that ends inside one, or holds none (read_documents' words)."""
        docs = self._take(final=True)
        if self.blank:
            raise BadInput(f"{self.name}: is empty, expected fio's JSON output")
        if not self.documents:
            raise BadInput(f"{self.name}: no fio JSON document in it (run fio with --output-format=json+)")
        return docs

    def _take(self, final):
        docs = []
        while True:
            if self._doc is None:
                m = self.START.search(self._text, self._pos)
                if m is None:
                    # nothing to keep but the last line, until it is whole
                    cut = len(self._text) if final else self._text.rfind("\n") + 1
                    self._say(cut)
                    self._forget(cut)
                    return docs
                self._say(m.start())
                self._doc = self._pos = m.start()
            end = len(self._text) if final else self._end()
            if end is None:
                return docs
            text = self._text[self._doc:end]
            try:
                doc, stop = self._dec.raw_decode(text)
            except json.JSONDecodeError as e:
                if not final and e.pos >= len(text.rstrip()):
                    continue    # a '}' within the document: it goes on
                line = self._lines + self._text.count("\n", 0, self._doc) + e.lineno
                raise BadInput(f"{self.name}: truncated or malformed JSON at line {line}: {e.msg}") from None
            except RecursionError:
                raise BadInput(f"{self.name}: JSON nested too deep to read: not fio's output, 6 levels deep") from None
            docs.append(doc)
            self.documents += 1
            self._pos = self._doc + stop
            self._doc = None
            self._forget(self._text.rfind("\n", 0, self._pos) + 1)

    def _say(self, stop):
        """Takes the text from the look on to stop, outside any document."""
        self._said += [line for line in self._text[self._pos:stop].splitlines() if line.strip()]
        self._pos = stop

    def _end(self):
        """The end of the next line at which the document may end, or None
        before one has come; moves the look past it."""
        if self._pos == self._doc:
            eol = self._text.find("\n", self._doc)
            if eol < 0:
                return None
            self._pos = eol + 1
            if self._text[self._doc:eol].rstrip().endswith("}"):
                return eol + 1
        m = self.END.search(self._text, self._pos)
        if m is None:
            self._pos = max(self._pos, self._text.rfind("\n") + 1)
            return None
        self._pos = m.end()
        return m.end()

    def _forget(self, cut):
        """Drops the text before cut, a line's start."""
        if cut > 0:
            self._lines += self._text.count("\n", 0, cut)
            self._text = self._text[cut:]
            self._pos -= cut
            if self._doc is not None:
                self._doc -= cut


# The most one input may hold: far beyond a run's JSON (json+ of 4088 jobs,
# the most one fio runs, with every --status-interval report a client keeps)
# and short of what a machine's memory takes in Python (/dev/zero, an
# endless pipe would otherwise be read until memory runs out)
MAX_INPUT = 4 << 30
CHUNK = 1 << 24


def read_bounded(f: BinaryIO, name: str) -> str:
    """The text of binary file f, read in chunks: NUL bytes (binary data:
    a device, an image) and more than MAX_INPUT bytes are refused."""
    chunks, size = [], 0
    while True:
        data = f.read(CHUNK)
        if not data:
            break
        if b"\0" in data:
            raise BadInput(f"{name}: holds NUL bytes: binary data, not fio's JSON output")
        size += len(data)
        if size > MAX_INPUT:
            raise BadInput(f"{name}: more than {MAX_INPUT >> 30} GiB: not the JSON output of one fio run "
                           "(a device, or an endless stream?)")
        chunks.append(data)
    return b"".join(chunks).decode("utf-8", errors="replace")


def load(path: str | os.PathLike[str]) -> tuple[Document, str]:
    """(the last JSON document of fio's output file, or of stdin for '-'; its name)."""
    text, name = read_input(path)
    return read_documents(text, name)[-1], name


def read_input(path: str | os.PathLike[str]) -> tuple[str, str]:
    """(the text of fio's output file, or of stdin for '-'; its name):
    what load() reads, for a caller that keeps the text as it is (the
    history database, mdfio.history)."""
    name = "<stdin>" if path == "-" else str(path)
    # bytes that are not UTF-8 (fio writes strings as they are) stand in
    # for a character each: a file of binary junk is not JSON, not a traceback
    if path == "-":
        text = read_bounded(sys.stdin.buffer, name)
    else:
        p = Path(path)
        if p.is_dir():
            raise BadInput(f"{name}: is a directory, expected fio's JSON output file")
        try:
            with open(p, "rb") as f:
                text = read_bounded(f, name)
        except OSError as e:
            raise BadInput(f"{name}: cannot read it: {e.strerror}") from None
    if not text.strip():
        raise BadInput(f"{name}: is empty, expected fio's JSON output")
    return text, name


class Reader:
    """Typed access to one JSON object: each getter checks the value's type
    and raises BadInput naming the file and the value's place."""

    def __init__(self, obj, name, where):
        if not isinstance(obj, dict):
            raise BadInput(f"{name}: {where} is {type(obj).__name__}, expected an object: "
                           "not the JSON of an mdfio fio run")
        self.obj, self.name, self.where = obj, name, where

    def _bad(self, key, expected):
        return BadInput(f"{self.name}: {self.where}: {key!r} is {short(self.obj[key])}, expected {expected}: "
                        "not the JSON of an mdfio fio run")

    def _missing(self, key):
        return BadInput(f"{self.name}: {self.where}: no {key!r}: not the JSON of an mdfio fio run")

    def has(self, key: str) -> bool:
        return key in self.obj

    def counter(self, key: str, default: int | None = None) -> int:
        """A non-negative integer, as fio's counts, times and latencies are."""
        if key not in self.obj:
            if default is None:
                raise self._missing(key)
            return default
        v = self.obj[key]
        if type(v) is not int or not 0 <= v < COUNTER_MAX:
            raise self._bad(key, "a non-negative integer")
        return v

    def number(self, key: str) -> float:
        """A non-negative number, integer or not, as fio's rates are."""
        if key not in self.obj:
            raise self._missing(key)
        v = self.obj[key]
        if type(v) not in (int, float) or not 0 <= v < COUNTER_MAX:
            raise self._bad(key, "a non-negative number")
        return float(v)

    def text(self, key: str, default: str | None = None) -> str:
        """A string; fio escapes only quotes and backslashes, so one with a
        control character (or a line break) is not from fio."""
        if key not in self.obj:
            if default is None:
                raise self._missing(key)
            return default
        v = self.obj[key]
        if not isinstance(v, str) or CONTROL.search(v):
            raise self._bad(key, "a string without control characters")
        return v

    def child(self, key: str, where: str | None = None, optional: bool = False) -> Reader:
        """The object at key (an empty one if optional and absent)."""
        if key not in self.obj:
            if not optional:
                raise self._missing(key)
            return Reader({}, self.name, where or key)
        return Reader(self.obj[key], self.name, f"{self.where}: {where or key}")

    def options(self, key: str) -> dict[str, str]:
        """fio's option object: every value a string."""
        opts = self.child(key, optional=True)
        for k in opts.obj:
            opts.text(k)
        return dict(opts.obj)

    def items(self, key: str) -> list[Any]:
        """The list at key."""
        v = self.obj.get(key)
        if not isinstance(v, list):
            raise BadInput(f"{self.name}: not fio JSON output (no '{key}' list)")
        return v


def fio_size(value: str) -> int | None:
    """Bytes of a fio size ('3901', '4k', '1MiB'); None if not one."""
    m = re.fullmatch(r"\s*([0-9]{1,19})\s*([kKmMgG]?)i?[bB]?\s*", value)
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def pick(value: str) -> str:
    """mdfio's 'value|default' option form."""
    if "|" in value:
        first, default = value.split("|", 1)
        return first or default
    return value


class Latency:
    """One latency object of fio's JSON (clat_ns, lat_ns), checked against
    what fio writes (stat.c, add_ddir_lat_json): integer min, max and N;
    with N > 0, min <= max; the json+ histogram 'bins' (bucket value: count)
    holding the N samples; 'percentile' values in the order of their
    percentiles. Bucket values are fio's bucket midpoints, so they may lie
    outside [min, max]; min and max are exact. Of a job still running (in
    fio's interim report, --status-interval), the histogram may hold a
    sample or two more than N: fio reads them while the job adds to them."""

    def __init__(self, r, running=False):
        self.n = r.counter("N")
        self.min = r.counter("min") if self.n else None
        self.max = r.counter("max") if self.n else None
        if self.n and self.min > self.max:
            raise BadInput(f"{r.name}: {r.where}: min {self.min} is above max {self.max}: "
                           "not the JSON of an mdfio fio run")
        self.bins = {}
        if r.has("bins"):
            bins = r.child("bins")
            for value in bins.obj:
                if not re.fullmatch(r"[0-9]{1,19}", value):
                    raise BadInput(f"{r.name}: {r.where}: bins: {short(value)} is not a latency in ns")
                self.bins[int(value)] = bins.counter(value)
            if sum(self.bins.values()) != self.n and not running:
                raise BadInput(f"{r.name}: {r.where}: bins hold {sum(self.bins.values())} samples, N is {self.n}: "
                               "not the JSON of an mdfio fio run")
        self.percentile = {}
        if r.has("percentile"):
            pct = r.child("percentile")
            for key in pct.obj:
                if not re.fullmatch(r"[0-9]{1,3}\.[0-9]{1,6}", key) or not 0 < float(key) <= 100:
                    raise BadInput(f"{r.name}: {r.where}: percentile: {short(key)} is not a percentile")
                self.percentile[key] = pct.counter(key)
            ordered = [v for _, v in sorted(self.percentile.items(), key=lambda kv: float(kv[0]))]
            if ordered != sorted(ordered):
                raise BadInput(f"{r.name}: {r.where}: percentile: the values do not grow with the percentiles: "
                               "not the JSON of an mdfio fio run")


def slot_seconds(slot: Reader, who: str, units: int | None = None) -> float | None:
    """A process's time of the phase whose count is in slot (a Reader of
    one slot of a job: read, write, trim), in seconds: the engine's exact
    one, the single slat_ns sample of the slot (ns), once the process has
    ended its phase; else fio's runtime (whole ms, rounded up), which fio
    measures only for a process that moved bytes there (backend.c,
    update_runtime): None when not measured. The one reading of a phase's
    time, for the tools and bench/run alike; who names the job in an
    error. units: the operations the process attempted in the phase, in
    all its slots (default: this slot's total_ios). The time is 0 ns only
    for a process with none: a rank of mdfio-tree with no share of a
    phase ends at the barrier's release, where the clock may not have
    moved; one with units has, by its last one's end."""
    coarse = slot.counter("runtime")    # fio writes it for every slot
    exact = slot.child("slat_ns")
    if exact.counter("N") == 1:
        ns = exact.counter("max")
        units = slot.counter("total_ios") if units is None else units
        # every rate of a process is over its time
        if not ns and units:
            raise BadInput(f"{who}: a phase time of 0 ns ({slot.where} slat_ns) for a process that attempted "
                           f"{units} operation{'s' if units > 1 else ''} (total_ios): the engine records 0 ns "
                           "only for one with none: not the JSON of an mdfio fio run")
        return ns / 1e9
    return coarse / 1000.0 or None


class Job:
    """One process's record of fio's JSON (a job, or a numjobs clone): with
    the engine's description, a global rank of its run and the host that
    ran it; 'hostname' is the fio server a client reached it at."""

    def __init__(self, r, glob):
        self.name = r.text("jobname")
        self.hostname = r.text("hostname", default="") if r.has("hostname") else None
        self.opts = {**glob, **r.options("job options")}
        self.error = r.counter("error")
        # fio's stonewall group: what places a job in time beside others
        # (fio 3.33's JSON has no start time per job)
        self.groupid = r.counter("groupid", default=0)
        # fio's seconds since its start; a fio client's JSON has none (None)
        self.elapsed = r.counter("elapsed") if r.has("elapsed") else None
        self.file = r.name
        self.r = r
        m = RANK_DESC.fullmatch(r.text("desc", default=""))
        self.rank = self.ranks = self.host = None
        if m:
            rank, ranks = int(m.group(1)), int(m.group(2))
            if not 0 <= rank < ranks <= MAX_RANKS:
                raise BadInput(f"{r.name}: {r.where}: desc {short(m.group(0))}: rank {rank} is not one of "
                               f"ranks 0..{ranks}-1, or more than the engine's {MAX_RANKS} ranks: "
                               "not the JSON of an mdfio fio run")
            self.rank, self.ranks, self.host = rank, ranks, m.group(3)

    def slot(self, slot: str) -> Reader:
        """read, write, trim or sync: fio writes all four for every job."""
        return self.r.child(slot)

    def runtime_ms(self, slot: str) -> int:
        return self.slot(slot).counter("runtime")

    def phase_s(self, slot: str) -> float | None:
        """This process's time of the phase whose count is in slot, in
        seconds (slot_seconds), its slat_ns checked as a latency object."""
        Latency(self.slot(slot).child("slat_ns"))
        return self.time_so_far(slot)

    def phase_ended(self, slot: str) -> bool:
        """Whether this process has ended the phase whose count is in slot:
        the engine records the phase's time there at its end."""
        return self.slot(slot).child("slat_ns").counter("N") == 1

    def done(self, op: str) -> int:
        """How many op succeeded so far: the N of its latency object, read
        alone. In fio's interim reports (--status-interval) a running job's
        histogram may hold a sample more than its N: fio reads them while
        the job adds to them."""
        slot, kind = SLOT[op]
        return self.slot(slot).child(kind).counter("N")

    def time_so_far(self, slot: str) -> float | None:
        """This process's time in the phase whose count is in slot, in
        seconds, read as done() reads (slot_seconds): the exact one once it
        has ended, else fio's runtime up to its report."""
        return slot_seconds(self.slot(slot), f"{self.file}: job {self.name}: phase {self.opts.get('phase', '?')}",
                            self.units())

    def units(self) -> int:
        """The operations this process attempted, in all four slots."""
        return sum(self.total_ios(s) for s in ("read", "write", "trim", "sync"))

    def began(self, slot: str) -> bool:
        """Whether this process had begun the phase whose count is in slot
        (a unit attempted, or its time recorded) when fio wrote this
        report: a section not begun has counts of 0."""
        return bool(self.total_ios(slot) or self.phase_ended(slot)
                    or any(self.done(op) for op in SLOT))

    def counted_errors(self, slot: str) -> int:
        """The errors of this process that the phase's figures count: its
        failed operations (drop_ios; for stat, the stats made less those
        timed) and the datasets the phase left undone. The engine fails a
        job that has them with EIO (engines/core/engine.c, engine_cleanup): that
        fio error is the one these account for."""
        stat = self.slot("sync")
        return (sum(self.drop_ios(s) for s in ("read", "write", "trim"))
                + max(stat.counter("total_ios") - stat.child("lat_ns").counter("N"), 0)
                + self.datasets_undone(slot))

    def datasets_undone(self, slot: str) -> int:
        """The datasets a precreate did not make or a cleanup did not
        remove: the engine's count in short_ios, which fio never uses for an
        mdfio job."""
        return self.slot(slot).counter("short_ios", default=0)

    def total_ios(self, slot: str) -> int:
        return self.slot(slot).counter("total_ios")

    def drop_ios(self, slot: str) -> int:
        return self.slot(slot).counter("drop_ios")

    @property
    def running(self) -> bool:
        """Whether this process had not ended its phase when fio wrote this
        report (an interim one, or fio's last when it was killed): its
        figures were read while it added to them."""
        slot = headline_of(self.opts)
        return slot is not None and not self.phase_ended(slot)

    def latency(self, op: str) -> Latency:
        slot, kind = SLOT[op]
        return Latency(self.slot(slot).child(kind), running=self.running)


class Section:
    """One fio job section of an mdfio run: a phase (or a benchmark repeat)
    and its processes (numjobs clones)."""

    def __init__(self, name, opts, doc_name):
        self.name, self.opts, self.jobs, self.doc_name = name, opts, [], doc_name
        # the run's ranks of which no process reported this section
        self.missing = []
        self.ranks = None     # the run's ranks of this section (RunSections)

    def opt(self, key: str) -> str:
        return pick(self.opts.get(key, DEFAULTS.get(key, "")))

    def int_opt(self, key: str, default: int | None = None) -> int:
        """An integer option in the range the engine (or fio) accepts it
        in; default when empty (fio's own default)."""
        value = self.opt(key)
        if value == "" and default is not None:
            return default
        lo, hi = OPTION_RANGE.get(key, (0, COUNTER_MAX - 1))
        number = int(value) if re.fullmatch(r"\s*\+?[0-9]{1,19}\s*", value) else None
        if number is None or not lo <= number <= hi:
            raise BadInput(f"{self.doc_name}: job {self.name}: {key}={short(value)}, expected an integer "
                           f"from {lo} to {hi}: not the JSON of an mdfio fio run")
        return number

    def bool_opt(self, key: str) -> bool:
        """A boolean option as fio spells it."""
        value = self.opt(key).strip().lower()
        if value not in BOOL:
            raise BadInput(f"{self.doc_name}: job {self.name}: {key}={short(self.opt(key))}, expected 0 or 1: "
                           "not the JSON of an mdfio fio run")
        return BOOL[value]

    def float_opt(self, key: str) -> tuple[float, str]:
        """A non-negative decimal number option: (its value, its text)."""
        text = self.opt(key).strip()
        if not re.fullmatch(r"\+?([0-9]{1,19}(\.[0-9]{0,19})?|\.[0-9]{1,19})", text):
            raise BadInput(f"{self.doc_name}: job {self.name}: {key}={short(self.opt(key))}, expected a "
                           "non-negative decimal number: not the JSON of an mdfio fio run")
        return float(text), text

    @property
    def phase(self) -> str:
        return self.opt("phase")

    @property
    def tree(self) -> bool:
        """A phase of mdfio-tree, the tree study's engine."""
        return TREE_ENGINE in self.opts.get("ioengine", "")

    @property
    def headline(self) -> str | None:
        return headline_of(self.opts)

    @property
    def waiting_factor(self) -> float:
        """md-workbench's -t as the engine holds it: a float (32 bits), so
        that "%.2f" rounds as md-workbench's does."""
        value = self.opt("waiting_factor")
        try:
            f = float(value)
        except ValueError:
            f = -1.0
        if not 0 <= f <= 1e6:
            raise BadInput(f"{self.doc_name}: job {self.name}: waiting_factor={short(value)}, expected a number "
                           "from 0 to 1e6: not the JSON of an mdfio fio run")
        return struct.unpack("f", struct.pack("f", f))[0]

    @property
    def skipped(self) -> bool:
        return self.phase == "benchmark" and self.int_opt("repeat") > self.int_opt("repeats")


def global_options(top: Reader) -> tuple[dict[str, str] | None,
                                        dict[tuple[str, int], dict[str, str]] | None]:
    """A document's [global] options: (options, None), or, from a fio client
    of fio 3.34 and later, which writes one object per server with its
    hostname and port, (None, {(hostname, port): options})."""
    raw = top.obj.get("global options")
    if not isinstance(raw, list):
        return top.options("global options"), None
    per_server = {}
    for n, g in enumerate(raw):
        r = Reader(g, top.name, f"{top.where}: global options {n}")
        server = (r.text("hostname"), r.counter("port"))
        opts = {k: r.text(k) for k in r.obj if k not in ("hostname", "port")}
        per_server[server] = opts
    return None, per_server


def in_part(section: str, part: str | None) -> bool:
    """Whether an mdfio section belongs to part of a run under data load:
    LOADED ("loaded-" sections) or ALONE (the others); every section for
    None, a run without data jobs."""
    return part is None or section.startswith(LOADED_PREFIX) == (part == LOADED)


def mdfio_sections(doc: dict[str, Any], name: str, part: str | None = None) -> list[Section]:
    """The mdfio sections of a fio document, in fio's order, each with its
    processes: the jobs of the same name, of every fio server of a client;
    of a run under data load, those of part (in_part)."""
    top = Reader(doc, name, "the document")
    if "client_stats" in doc:
        jobs = [j for j in top.items("client_stats") if not (isinstance(j, dict) and j.get("jobname") == "All clients")]
    else:
        jobs = top.items("jobs")
    glob, per_server = global_options(top)
    # the jobs' order per fio process (a fio server of a client: its
    # hostname and port), each the jobfile's
    sections, orders = {}, {}
    # fio's client writes its JSON once, at its end, and appends every
    # --status-interval report of a job to client_stats, the final one
    # last: a rank's later report from the same fio server (address and
    # port) replaces the earlier, as the last document of a fio's own
    # output counts
    reported = {}
    for n, raw in enumerate(jobs):
        if not isinstance(raw, dict) or "jobname" not in raw:
            raise BadInput(f"{name}: not fio JSON output (a job without 'jobname')")
        if per_server is not None:
            glob = per_server.get((raw.get("hostname"), raw.get("port")), {})
        j = Job(Reader(raw, name, f"job {n}"), glob)
        opts = j.opts
        if "mdfio" not in opts.get("ioengine", "") or "phase" not in opts or not in_part(j.name, part):
            continue
        for k, fio_name in (("ranks", "numjobs"), ("object_size", "bs"), ("root", "directory")):
            if k in opts:
                opts[fio_name] = pick(opts[k])
        key = j.name
        if key not in sections:
            sections[key] = Section(j.name, opts, name)
        order = orders.setdefault((j.hostname, raw.get("port")), [])
        if key not in order:
            order.append(key)
        sec = sections[key]
        if "client_stats" in doc and j.rank is not None:
            where = (j.hostname, j.r.counter("port", default=-1), key, j.rank)
            if where in reported:
                sec.jobs[reported[where]] = j
                continue
            reported[where] = len(sec.jobs)
        sec.jobs.append(j)
    found = [sections[k] for k in merged_order(orders.values())]
    said = getattr(doc, "said", ())
    if not found and said:
        # fio dropped the jobs (a fio server refused the jobfile): not a
        # jobfile without mdfio
        raise BadInput(f"{name}: no mdfio job in this fio run; fio said: {short(said[0], 300)}")
    if not found:
        raise BadInput(f"{name}: no mdfio job in this fio run (ioengine=external:.../mdfio-*.so with phase=)")
    return found


def merged_order(orders: Iterable[list[str]]) -> list[str]:
    """One order of the jobs of every fio process: each lists them in the
    jobfile's order, but a fio server that died lacks the later ones, and
    a fio client interleaves its servers' reports, so the order in which
    the jobs first come is not the jobfile's. The longest list first, then
    each job of the others that it lacks after the one before it there."""
    merged = []
    for order in sorted(orders, key=len, reverse=True):
        at = 0
        for key in order:
            if key in merged:
                at = merged.index(key) + 1
            else:
                merged.insert(at, key)
                at += 1
    return merged


def document_header(doc: dict[str, Any], name: str) -> tuple[str, int]:
    """(fio version, timestamp) of a document: fio writes both, the
    timestamp in seconds since 1970 when it wrote the document."""
    top = Reader(doc, name, "the document")
    stamp = top.counter("timestamp")
    try:
        datetime.datetime.fromtimestamp(stamp)
    except (OverflowError, OSError, ValueError):
        raise BadInput(f"{name}: timestamp {stamp} is not a time of this era (seconds since 1970): "
                       "not the JSON of a real fio run") from None
    return top.text("fio version"), stamp


def spans(numbers: Iterable[int]) -> str:
    """'0-2,5' for [0, 1, 2, 5]."""
    out, numbers = [], sorted(numbers)
    start = prev = numbers[0]
    for n in numbers[1:] + [None]:
        if n is not None and n == prev + 1:
            prev = n
            continue
        out.append(f"{start}" if start == prev else f"{start}-{prev}")
        start = prev = n
    return ",".join(out)


def _where(job, files):
    """A job's place for a message: its host, and its file when several."""
    where = f"host {job.host}"
    return f"{where} ({job.file})" if len(files) > 1 else where


def listed_hosts(sec: Section) -> Callable[[int], str | None]:
    """The host of a rank by the section's hosts= and numjobs (the engine's
    placement: host i takes ranks i*numjobs onwards), as a function of the
    rank; its None: not on hosts=, or no hosts=."""
    hosts = [h for h in pick(sec.opts.get("hosts", "")).split(",") if h]
    per_host = sec.int_opt("numjobs", default=1)
    return lambda rank: hosts[rank // per_host] if rank // per_host < len(hosts) else None


def completed_error(job: Job, slot: str) -> bool:
    """Whether a job's fio error, beside its phase time, leaves the phase's
    figures whole: the EIO the engine gives a job for the errors those
    figures count (engines/core/engine.c, engine_cleanup), or fio's own EDEADLK
    of a job that waited 5 s for its stats lock after its I/O had ended
    (backend.c: "fio seems to be stuck grabbing stat_sem"), which skips
    only fio's runtime, a figure the report does not use."""
    return ((job.error == errno.EIO and job.counted_errors(slot) > 0)
            or job.error == errno.EDEADLK)


class RunSections:
    """One run's mdfio sections over all its documents [(doc, name)]: jobs
    matched by jobname across documents and hosts, each a global rank from
    its description, no rank twice in a section, and the ranks a section
    lacks (a host that died) in its missing; completion() says which
    sections every rank completed.
    Without ranks in the descriptions (an mdfio before runs over many
    hosts), one document's clones in fio's order are the ranks. Of a run
    under data load, part (ALONE or LOADED) picks one md-workbench run."""

    def __init__(self, docs, part=None):
        self.files = [name for _, name in docs]
        self._listed = {}
        twice = next((f for i, f in enumerate(self.files) if f in self.files[:i]), None)
        if twice is not None:
            raise BadInput(f"{twice}: given twice")
        per_doc = [mdfio_sections(doc, name, part) for doc, name in docs]
        names = [[x.name for x in secs] for secs in per_doc]
        for secs, other in zip(per_doc[1:], self.files[1:]):
            if [x.name for x in secs] != names[0]:
                raise BadInput(f"files of different runs: {self.files[0]} has jobs {', '.join(names[0])}; "
                               f"{other} has {', '.join(x.name for x in secs)}")
        self.sections = per_doc[0]
        for i, sec in enumerate(self.sections):
            for secs in per_doc[1:]:
                sec.jobs += secs[i].jobs
        jobs = [j for sec in self.sections for j in sec.jobs]
        ranked = [j for j in jobs if j.rank is not None]
        if not ranked:
            self._unranked(jobs)
            return
        if len(ranked) < len(jobs):
            j = next(j for j in jobs if j.rank is None)
            raise BadInput(f"{j.file}: job {j.name}: no mdfio rank in its description (desc), while other jobs "
                           "have one: not the JSON of one mdfio run")
        self.ranks = ranked[0].ranks
        # mdfio-tree's phases run on ranks of their own each (a copy on
        # one, the reads on many): its ranks agree within a section
        groups = [sec.jobs for sec in self.sections] if all(sec.tree for sec in self.sections) else [ranked]
        other = next((j for g in groups for j in g if j.ranks != g[0].ranks), None)
        if other is not None:
            first = next(g[0] for g in groups if other in g)
            what = "files of different runs" if other.file != first.file else f"{first.file}: jobs of different runs"
            raise BadInput(f"{what}: {first.file} job {first.name} ({_where(first, [])}) is one of {first.ranks} "
                           f"ranks, {other.file} job {other.name} ({_where(other, [])}) one of {other.ranks}")
        # the host of every rank seen anywhere, for naming missing ones
        self.host_of = {}
        for j in jobs:
            self.host_of.setdefault(j.rank, j.host)
        for sec in self.sections:
            self._check_options(sec)
            self._check_ranks(sec)
            self._check_numjobs(sec)
            sec.jobs.sort(key=lambda j: j.rank)

    def _unranked(self, jobs):
        if len(self.files) > 1:
            raise BadInput(f"{', '.join(self.files)}: no mdfio rank in the jobs' descriptions (desc): an mdfio "
                           "before runs over many fio processes; give one file")
        servers = sorted({j.hostname for j in jobs if j.hostname is not None})
        if len(servers) > 1:
            raise BadInput(f"{self.files[0]}: jobs of servers {', '.join(servers)} but no mdfio rank in their "
                           "descriptions (desc): separate runs of an mdfio before runs over many hosts")
        self.ranks = None
        self.host_of = {}
        for sec in self.sections:
            want = sec.int_opt("numjobs", default=1)
            if len(sec.jobs) != want:
                raise BadInput(f"{sec.doc_name}: job {sec.name} reported {len(sec.jobs)} of its {want} processes "
                               "(numjobs): a process is missing")
            # fio lists a job's clones as subjob 0, then numjobs-1 down to 1
            for r, j in zip([0] + list(range(len(sec.jobs) - 1, 0, -1)), sec.jobs):
                j.rank = r
            sec.jobs.sort(key=lambda j: j.rank)

    def _check_options(self, sec):
        first = sec.jobs[0]
        for j in sec.jobs[1:]:
            for key in RUN_OPTIONS:
                a, b = (pick(x.opts.get(key, DEFAULTS.get(key, ""))) for x in (first, j))
                if a == b:
                    continue
                if j.file != first.file:
                    raise BadInput(f"files of different runs: job {sec.name} has {key}={a} in {first.file}, "
                                   f"{key}={b} in {j.file}")
                raise BadInput(f"{first.file}: job {sec.name}: {_where(first, [])} ran it with {key}={a}, "
                               f"{_where(j, [])} with {key}={b}: not one run")

    def _check_numjobs(self, sec):
        """Every fio process (a file, a server of a client) reported
        numjobs jobs. Fewer is allowed where the section lacks ranks (a
        process that died, or a host killed while it sent a report: a fio
        client's last report of it then lacks some of its jobs), which
        _check_ranks has found missing; otherwise the JSON does not add up."""
        per_process = {}
        for j in sec.jobs:
            per_process.setdefault((j.file, j.hostname), []).append(j)
        counted = []
        for (file, server), jobs in per_process.items():
            want = Section(sec.name, jobs[0].opts, file).int_opt("numjobs", default=1)
            at = f" (fio server {server}, host {jobs[0].host})" if server is not None else ""
            counted.append((file, at, len(jobs), want))
        # a process with too many jobs says "not one run" whatever else is
        # short, so it is named first
        for file, at, have, want in counted:
            if have > want:
                raise BadInput(f"{file}: job {sec.name}{at} reported {have} processes, more than its "
                               f"{want} (numjobs): not one run")
        for file, at, have, want in counted:
            if have < want and len(sec.missing) < want - have:
                raise BadInput(f"{file}: job {sec.name}{at} reported {have} of its {want} processes "
                               "(numjobs): a process is missing")

    def _check_ranks(self, sec):
        """Refuses a rank given twice (files or hosts of different runs);
        keeps the ranks the section lacks in sec.missing: a host or process
        that died, or whose JSON is not among the files, leaves its ranks
        out of a section (completion() says so)."""
        seen = {}
        for j in sec.jobs:
            if j.rank in seen:
                a = seen[j.rank]
                twice = (f"rank {j.rank} of {j.ranks} twice, from {_where(a, self.files)} and "
                         f"{_where(j, self.files)}")
                if a.file == j.file:
                    raise BadInput(f"{a.file}: job {sec.name}: {twice}: not one run")
                raise BadInput(f"job {sec.name}: {twice}: files of different runs, or one file given twice")
            seen[j.rank] = j
        sec.ranks = sec.jobs[0].ranks
        sec.missing = [r for r in range(sec.ranks) if r not in seen]

    def host(self, sec: Section, rank: int) -> str | None:
        """The host of a rank: as any section of the run names it, else as
        the section's hosts= places it; None when neither does."""
        if rank in self.host_of:
            return self.host_of[rank]
        # hosts= parsed once per section: a run may list 10^5 hosts
        if sec.name not in self._listed:
            self._listed[sec.name] = listed_hosts(sec)
        return self._listed[sec.name](rank)

    def _missing(self, sec):
        """The clause of completion() for the ranks a section lacks."""
        by_host = {}
        for r in sec.missing:
            by_host.setdefault(self.host(sec, r), []).append(r)
        parts = [f"ranks {spans(rs)}" + (f" (host {h})" if h else " (host unknown)") for h, rs in by_host.items()]
        known = [h for h in by_host if h]
        why = (f"host{'s' if len(known) > 1 else ''} {','.join(known)} did not report them (it died, or its fio "
               "JSON is not among the files)" if known else "their fio's JSON is not among the files")
        return f"{len(sec.missing)} of {sec.ranks} ranks missing: {'; '.join(parts)}: {why}"

    def completion(self, sec: Section) -> tuple[str, str | None]:
        """(status, reason) of a section: COMPLETE when every rank of the
        run reported it with its phase time (the engine records it when
        the rank has ended every unit of its phase) and a fio error of 0,
        or one that leaves the phase's figures whole (completed_error);
        NOT_RUN when no rank had begun it; INCOMPLETE otherwise. reason
        (None when complete) names the ranks at fault, by host, and why."""
        head = sec.headline
        faults, began = [], False
        for j in sec.jobs:
            ended, error = j.phase_ended(head), j.error
            began = began or j.began(head)
            if ended and (not error or completed_error(j, head)):
                continue
            if ended:
                what = f"ended with fio error {error}"
            elif j.began(head):
                what = (f"stopped with fio error {error} before the end of {{its}} phase" if error else
                        "{were} still in it at {its} fio's last report (that fio died, was stopped, or still runs)")
            else:
                what = (f"ended with fio error {error} before {{its}} first unit" if error else
                        "had not begun it at {its} fio's last report")
            faults.append((j.rank, what, j.host))
        if not faults and not sec.missing:
            return COMPLETE, None
        # a clause per fault and host, in the order of their first rank,
        # naming ranks as the missing ones are named
        clauses = {}
        for rank, what, host in sorted(faults):
            clauses.setdefault(what, {}).setdefault(host, []).append(rank)
        parts = []
        for what, by_host in clauses.items():
            for h, rs in by_host.items():
                many = len(rs) > 1
                parts.append((rs[0], f"rank{'s' if many else ''} {spans(rs)}" + (f" (host {h})" if h else "") + " "
                              + what.format(its="their" if many else "its", were="were" if many else "was")))
        if sec.missing:
            parts.append((sec.missing[0], self._missing(sec)))
        reason = "; ".join(text for _, text in sorted(parts, key=lambda p: p[0]))
        return (INCOMPLETE if began else NOT_RUN), reason

    def failed(self, sections: Iterable[Section]) -> list[str]:
        """A line per section of sections whose ranks ended with a fio
        error, naming their ranks and hosts; [] when none did."""
        lines = []
        for sec in sections:
            bad = [j for j in sec.jobs if j.error]
            if not bad:
                continue
            by_host = {}
            for j in bad:
                by_host.setdefault(j.host, []).append(j)
            parts = [f"rank{'s' if len(js) > 1 else ''} {spans([j.rank for j in js])}"
                     + (f" (host {h})" if h else "")
                     + f" ended with fio error {js[0].error}" for h, js in by_host.items()]
            lines.append(f"job {sec.name}: {'; '.join(parts)}")
        return lines


# the rw values of fio whose I/O fio counts in each slot
RW_SLOTS = {"read": ("read", "randread", "rw", "readwrite", "randrw"),
            "write": ("write", "randwrite", "rw", "readwrite", "randrw", "trimwrite"),
            "trim": ("trim", "randtrim", "trimwrite")}


class DataJob:
    """One process of a data job of a run under data load (LOAD_PREFIX):
    a job of fio's own engine, read as fio writes it."""

    def __init__(self, job: Job):
        self.job, self.name, self.file = job, job.name, job.file
        self.alone = job.name.endswith(ALONE_SUFFIX)
        # the pair's name: load-write for load-write and load-write-alone
        self.key = job.name[:-len(ALONE_SUFFIX)] if self.alone else job.name
        rw = job.opts.get("rw", job.opts.get("readwrite", "read")).split(":")[0].strip()
        # the slots fio counts the job's I/O in, by its rw
        self.slots = [slot for slot in ("read", "write", "trim") if rw in RW_SLOTS[slot]]
        if not self.slots:
            raise BadInput(f"{job.file}: data job {job.name}: rw={short(rw)}, expected one of fio's rw values")
        self.rw = rw

    @property
    def runtime_ms(self) -> int:
        """fio's time of the job's I/O (job_runtime), in ms."""
        return self.job.r.counter("job_runtime")


def data_jobs(doc: dict[str, Any], name: str) -> list[DataJob]:
    """The data jobs of a fio document (LOAD_PREFIX), in fio's order, each
    process one; [] in a run without data load. A job named so that runs
    an mdfio engine is an md-workbench section, never a data job."""
    top = Reader(doc, name, "the document")
    if "client_stats" in doc:
        raw_jobs = [j for j in top.items("client_stats")
                    if not (isinstance(j, dict) and j.get("jobname") == "All clients")]
    else:
        raw_jobs = top.items("jobs")
    glob, per_server = global_options(top)
    out, reported = [], {}
    for n, raw in enumerate(raw_jobs):
        if not isinstance(raw, dict) or "jobname" not in raw:
            raise BadInput(f"{name}: not fio JSON output (a job without 'jobname')")
        if not str(raw["jobname"]).startswith(LOAD_PREFIX):
            continue
        if per_server is not None:
            glob = per_server.get((raw.get("hostname"), raw.get("port")), {})
        j = Job(Reader(raw, name, f"job {n}"), glob)
        if "mdfio" in j.opts.get("ioengine", "") or BOOL.get(j.opts.get("create_only", "0").strip().lower()):
            continue
        if "client_stats" in doc:
            # a fio client appends each --status-interval report of a job,
            # the final one last: a data job is one process per fio server
            where = (j.hostname, j.r.counter("port", default=-1), j.name)
            if where in reported:
                out[reported[where]] = DataJob(j)
                continue
            reported[where] = len(out)
        out.append(DataJob(j))
    return out


# IOzone's tests run as jobs of fio's own engine (mdfio-iozone, docs/iozone.md):
# a job named "iozone-<pass>" is one pass of one test over one file, the
# file size and record size being fio's size and bs
IOZONE_PREFIX = "iozone-"
IOZONE_PASSES = ("write", "rewrite", "read", "reread", "randread", "randwrite")
# the job description (fio's description=, "desc" in its JSON) that says
# mdfio-iozone dropped the page cache before the test
IOZONE_DROPPED = "mdfio-iozone: page cache dropped before this test"


class IozonePass:
    """One pass of an IOzone test as fio ran it: the bytes moved in the
    pass's slot (io_bytes), the sum of its I/Os' latencies (lat_ns: mean
    times N, in ns), fio's runtime of the slot (whole ms, rounded up),
    whether fio ended the job with an fsync (end_fsync), which fio times
    only in that runtime, ran it with O_DIRECT (direct), and whether the
    cache was dropped before its test (IOZONE_DROPPED); its filename, and
    its host (a fio server's name in a client's JSON, else None)."""

    def __init__(self, job: Job):
        self.name, self.file, self.error = job.name, job.file, job.error
        self.test = job.name[len(IOZONE_PREFIX):]
        if self.test not in IOZONE_PASSES:
            raise BadInput(f"{job.file}: job {job.name}: expected one of "
                           f"{', '.join(IOZONE_PREFIX + p for p in IOZONE_PASSES)}")
        sizes = {}
        for key in ("size", "bs"):
            sizes[key] = fio_size(job.opts.get(key, ""))
            if not sizes[key]:
                raise BadInput(f"{job.file}: job {job.name}: {key}={short(job.opts.get(key, ''))}, "
                               "expected a size in bytes above 0")
        self.file_size, self.record_size = sizes["size"], sizes["bs"]
        self.slot = "read" if self.test.endswith("read") else "write"
        r = job.slot(self.slot)
        self.bytes = r.counter("io_bytes")
        lat = r.child("lat_ns")
        self.ios = lat.counter("N")
        self.io_ns = lat.number("mean") * self.ios
        self.runtime_ms = r.counter("runtime")
        flags = {}
        for key in ("end_fsync", "direct"):
            value = job.opts.get(key, "0").strip().lower()
            if value not in BOOL:
                raise BadInput(f"{job.file}: job {job.name}: {key}={short(value)}, expected 0 or 1")
            flags[key] = BOOL[value]
        self.end_fsync, self.direct = flags["end_fsync"], flags["direct"]
        self.filename = job.opts.get("filename", "")
        self.cache_dropped = job.r.text("desc", default="") == IOZONE_DROPPED
        # the fio server that ran it (a sweep over hosts), or None
        self.host = job.hostname


def iozone_sweep(docs: Sequence[tuple[dict[str, Any], str]]) -> bool:
    """Whether fio's documents [(doc, name)] are an IOzone sweep's
    (mdfio-iozone): each has a job named IOZONE_PREFIX...; the jobs are
    read, and checked, by iozone_passes."""
    def named(doc):
        jobs = doc.get("client_stats", doc.get("jobs"))
        return isinstance(jobs, list) and any(
            isinstance(j, dict) and str(j.get("jobname", "")).startswith(IOZONE_PREFIX) for j in jobs)
    return bool(docs) and all(named(doc) for doc, _ in docs)


def iozone_passes(doc: dict[str, Any], name: str) -> list[IozonePass]:
    """The IOzone passes of a fio document (IOZONE_PREFIX), in fio's order;
    [] in a run without them."""
    top = Reader(doc, name, "the document")
    if "client_stats" in doc:
        raw_jobs = [j for j in top.items("client_stats")
                    if not (isinstance(j, dict) and j.get("jobname") == "All clients")]
    else:
        raw_jobs = top.items("jobs")
    glob, per_server = global_options(top)
    out = []
    for n, raw in enumerate(raw_jobs):
        if not isinstance(raw, dict) or "jobname" not in raw:
            raise BadInput(f"{name}: not fio JSON output (a job without 'jobname')")
        if not str(raw["jobname"]).startswith(IOZONE_PREFIX):
            continue
        if per_server is not None:
            glob = per_server.get((raw.get("hostname"), raw.get("port")), {})
        out.append(IozonePass(Job(Reader(raw, name, f"job {n}"), glob)))
    return out


# mdfio-mdtest, IOR's mdtest (docs/engines.md "mdfio-mdtest"): each section
# is one of mdtest's phases (phase=, of one iteration=), its operations all
# in one slot, each rank's exact phase time as that slot's slat_ns
MDTEST_SLOT = {"tree_create": "write", "dir_create": "write", "dir_stat": "read", "dir_rename": "write",
               "dir_remove": "trim", "file_create": "write", "file_stat": "read", "file_read": "read",
               "file_remove": "trim", "tree_remove": "trim"}


def is_mdtest(docs: Iterable[tuple[dict[str, Any], str]]) -> bool:
    """Whether a run's documents are of mdfio-mdtest: its engine in the
    ioengine of the first mdfio section."""
    for doc, name in docs:
        return "mdfio-mdtest" in mdfio_sections(doc, name)[0].opts.get("ioengine", "")
    return False


class MdtestRank:
    """One rank's figures of an mdtest phase: its operations (attempted),
    failed ones, exact phase time (None for a rank with none) and latency
    object."""

    def __init__(self, job: Job, slot: str):
        self.rank = job.rank
        self.ops = job.total_ios(slot)
        self.failed = job.drop_ios(slot)
        self.seconds = job.phase_s(slot) if self.ops else None
        self.latency = Latency(job.slot(slot).child("clat_ns"))
        self.mean_ns = job.slot(slot).child("clat_ns").number("mean") if self.latency.n else 0.0


class MdtestPhase:
    """One section of an mdfio-mdtest run: its phase, iteration, number of
    ranks and each rank's figures."""

    def __init__(self, sec: Section, ranks: int):
        self.name = sec.name
        self.phase = sec.opt("phase")
        if self.phase not in MDTEST_SLOT:
            raise BadInput(f"{sec.doc_name}: job {sec.name}: phase={short(self.phase)}, expected one of "
                           f"{', '.join(MDTEST_SLOT)}: not the JSON of an mdfio-mdtest run")
        value = sec.opt("iteration") or "0"
        if not re.fullmatch(r"[0-9]{1,6}", value):
            raise BadInput(f"{sec.doc_name}: job {sec.name}: iteration={short(value)}, expected an integer "
                           "from 0 to 999999: not the JSON of an mdfio-mdtest run")
        self.iteration = int(value)
        self.ranks = ranks
        self.per_rank = [MdtestRank(j, MDTEST_SLOT[self.phase]) for j in sec.jobs]


def mdtest_phases(docs: list[tuple[dict[str, Any], str]]) -> list[MdtestPhase]:
    """The phases of an mdfio-mdtest run over all its documents (one per fio
    process, or a fio client's), each rank read as RunSections reads an
    md-workbench run's."""
    run = RunSections(docs)
    out = []
    for sec in run.sections:
        ranks = run.ranks if run.ranks is not None else len(sec.jobs)
        if len(sec.jobs) != ranks:
            raise BadInput(f"{sec.doc_name}: job {sec.name}: {len(sec.jobs)} of its {ranks} ranks reported")
        out.append(MdtestPhase(sec, ranks))
    return out


# mdfio-postmark (docs/postmark.md): each operation's slot and latency
# object, each phase's headline slot, and the whole run's counters and
# float byte totals the engine puts in every section's description
POSTMARK_OPS = {"create": ("write", "clat_ns"), "read": ("read", "clat_ns"),
                "append": ("sync", "lat_ns"), "delete": ("trim", "clat_ns")}
POSTMARK_HEADLINE = {"pool": "write", "transactions": "read", "delete": "trim"}
POSTMARK_DESC = re.compile(r"mdfio postmark phase=(\w+) files=(\d+) transactions=(\d+); created=(\d+) read=(\d+) "
                           r"appended=(\d+) deleted=(\d+) alone=(\d+) out=([01]) bytes=(\d+)/(\d+)")


class PostmarkPhase:
    """One section of an mdfio-postmark run: its phase, its exact time
    (s), and per operation its Latency and errors; expected: the whole
    run's counters as the sequence has them (the description's); host:
    the fio server's address in a fio client's JSON ("" otherwise), each
    host of hosts= running a PostMark of its own."""

    def __init__(self, job: Reader, host: str = ""):
        self.host = host
        who = f"{job.name}: job {job.text('jobname', '?')!r}"
        m = POSTMARK_DESC.fullmatch(job.text("desc", ""))
        if not m:
            raise BadInput(f"{who}: its description is not mdfio-postmark's ('mdfio postmark phase=...')")
        self.phase = m.group(1)
        if self.phase not in POSTMARK_HEADLINE:
            raise BadInput(f"{who}: phase {short(self.phase)}: expected pool, transactions or delete")
        names = ("number", "transactions", "created", "read", "appended", "deleted", "deleted_alone",
                 "out_of_files", "bytes_read", "bytes_written")
        self.expected = dict(zip(names, (int(v) for v in m.groups()[1:])))
        head = job.child(POSTMARK_HEADLINE[self.phase])
        units = sum(job.child(slot).counter("total_ios") for slot in ("read", "write", "trim", "sync"))
        self.seconds = slot_seconds(head, who, units) if head.child("slat_ns").counter("N") == 1 else None
        self.latency, self.errors = {}, {}
        for op, (slot, obj) in POSTMARK_OPS.items():
            s = job.child(slot)
            self.latency[op] = Latency(s.child(obj))
            self.errors[op] = (s.counter("total_ios") - self.latency[op].n if slot == "sync"
                               else s.counter("drop_ios", 0))


def postmark_phases(doc: dict[str, Any], name: str) -> list[PostmarkPhase]:
    """The mdfio-postmark sections of a document, in its order; [] if it
    has none."""
    top = Reader(doc, name, "the document")
    # a fio client's jobs are its client_stats; a document with no list
    # at all is said so by the md-workbench reader, which quotes fio
    key = "client_stats" if "client_stats" in doc else "jobs"
    if not isinstance(doc.get(key), list):
        return []
    phases = []
    for i, j in enumerate(top.items(key)):
        if isinstance(j, dict) and j.get("jobname") == "All clients":
            continue
        job = Reader(j, name, f"job {i}")
        if job.text("desc", "").startswith("mdfio postmark "):
            phases.append(PostmarkPhase(job, job.text("hostname", "?") if key == "client_stats" else ""))
    return phases
