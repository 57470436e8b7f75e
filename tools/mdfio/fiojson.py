"""Reading fio's JSON output of an mdfio run: the documents in a file, and
the mdfio job sections in a document, each value checked where it is read.
Input of another structure raises BadInput with what was expected; nothing
else is caught, so a bug shows as a traceback."""
import json
import re
import sys
from pathlib import Path

# where the engine records each operation in fio's JSON (README "Where the
# numbers are"): the slot, and its latency object
SLOT = {"create": ("write", "clat_ns"), "read": ("read", "clat_ns"),
        "delete": ("trim", "clat_ns"), "stat": ("sync", "lat_ns")}
# the slot whose runtime is a phase's time
HEADLINE = {"precreate": "write", "benchmark": "read", "cleanup": "trim"}
DEFAULTS = {"datasets": "10", "precreate_per_set": "3000", "steps_per_set": "1000",
            "rank_offset": "1", "start_index": "0", "read_only": "0", "verify_read": "0",
            "repeat": "1", "repeats": "1"}
# fio's counters are unsigned 64-bit; larger is not a real run
COUNTER_MAX = 2 ** 63


class BadInput(Exception):
    """Input that is not what a tool expects; the message says what is."""


def error_line(tool, where, e):
    """The one line a tool prints for BadInput e about where (a file, or an option)."""
    msg = str(e)
    if where not in msg and not msg.startswith("--"):
        msg = f"{where}: {msg}"
    return f"{tool}: {msg}"


def read_documents(text, name):
    """All JSON documents in text; engine or fio messages may stand between."""
    docs, dec, pos = [], json.JSONDecoder(), 0
    for m in re.finditer(r"^\{", text, re.M):
        if m.start() < pos:
            continue
        try:
            doc, end = dec.raw_decode(text, m.start())
        except json.JSONDecodeError as e:
            raise BadInput(f"{name}: truncated or malformed JSON at line {e.lineno}: {e.msg}") from None
        if isinstance(doc, dict):
            docs.append(doc)
        pos = end
    if not docs:
        raise BadInput(f"{name}: no fio JSON document in it (run fio with --output-format=json+)")
    return docs


def load(path):
    """(the last JSON document of fio's output file, or of stdin for '-'; its name)."""
    name = "<stdin>" if path == "-" else str(path)
    if path == "-":
        text = sys.stdin.read()
    else:
        p = Path(path)
        if p.is_dir():
            raise BadInput(f"{name}: is a directory, expected fio's JSON output file")
        try:
            text = p.read_text(errors="replace")
        except OSError as e:
            raise BadInput(f"{name}: cannot read it: {e.strerror}") from None
    if not text.strip():
        raise BadInput(f"{name}: is empty, expected fio's JSON output")
    return read_documents(text, name)[-1], name


class Reader:
    """Typed access to one JSON object: each getter checks the value's type
    and raises BadInput naming the file and the value's place."""

    def __init__(self, obj, name, where):
        if not isinstance(obj, dict):
            raise BadInput(f"{name}: {where} is {type(obj).__name__}, expected an object: "
                           "not the JSON of an mdfio fio run")
        self.obj, self.name, self.where = obj, name, where

    def _bad(self, key, expected):
        return BadInput(f"{self.name}: {self.where}: '{key}' is {self.obj[key]!r}, expected {expected}: "
                        "not the JSON of an mdfio fio run")

    def _missing(self, key):
        return BadInput(f"{self.name}: {self.where}: no '{key}': not the JSON of an mdfio fio run")

    def has(self, key):
        return key in self.obj

    def counter(self, key, default=None):
        """A non-negative integer, as fio's counts and times are."""
        if key not in self.obj:
            if default is None:
                raise self._missing(key)
            return default
        v = self.obj[key]
        if type(v) is not int or not 0 <= v < COUNTER_MAX:
            raise self._bad(key, "a non-negative integer")
        return v

    def number(self, key):
        """An int or float within fio's range."""
        if key not in self.obj:
            raise self._missing(key)
        v = self.obj[key]
        if type(v) not in (int, float) or not 0 <= v < COUNTER_MAX:
            raise self._bad(key, "a non-negative number")
        return v

    def text(self, key, default=None):
        if key not in self.obj:
            if default is None:
                raise self._missing(key)
            return default
        if not isinstance(self.obj[key], str):
            raise self._bad(key, "a string")
        return self.obj[key]

    def child(self, key, where=None, optional=False):
        """The object at key (an empty one if optional and absent)."""
        if key not in self.obj:
            if not optional:
                raise self._missing(key)
            return Reader({}, self.name, where or key)
        return Reader(self.obj[key], self.name, f"{self.where}: {where or key}")

    def options(self, key):
        """fio's option object: every value a string."""
        opts = self.child(key, optional=True)
        for k in opts.obj:
            opts.text(k)
        return dict(opts.obj)

    def items(self, key):
        """The list at key."""
        v = self.obj.get(key)
        if not isinstance(v, list):
            raise BadInput(f"{self.name}: not fio JSON output (no '{key}' list)")
        return v


def fio_size(value):
    m = re.fullmatch(r"\s*(\d+)\s*([kKmMgG]?)i?[bB]?\s*", value)
    if not m:
        return None
    return int(m.group(1)) * {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30}[m.group(2).lower()]


def pick(value):
    """mdfio's 'value|default' option form."""
    if "|" in value:
        first, default = value.split("|", 1)
        return first or default
    return value


class Latency:
    """One latency object of fio's JSON (clat_ns, lat_ns), checked."""

    def __init__(self, r):
        self.n = r.counter("N", default=0)
        self.min = r.number("min") if self.n else None
        self.max = r.number("max") if self.n else None
        bins = r.child("bins", optional=True)
        self.bins = {}
        for value in bins.obj:
            if not value.isdigit():
                raise BadInput(f"{r.name}: {r.where}: bins: '{value}' is not a latency in ns")
            self.bins[int(value)] = bins.counter(value)
        pct = r.child("percentile", optional=True)
        self.percentile = {k: pct.number(k) for k in pct.obj}


class Job:
    """One process's record of fio's JSON (a job, or a numjobs clone)."""

    def __init__(self, r, glob):
        self.name = r.text("jobname")
        self.hostname = r.text("hostname", default="") if r.has("hostname") else None
        self.opts = {**glob, **r.options("job options")}
        self.error = r.counter("error", default=0)
        self.elapsed = r.counter("elapsed", default=0)
        self.r = r

    def slot(self, slot):
        return self.r.child(slot, optional=True)

    def runtime_ms(self, slot):
        return self.r.child(slot).counter("runtime")

    def total_ios(self, slot):
        return self.slot(slot).counter("total_ios", default=0)

    def drop_ios(self, slot):
        return self.slot(slot).counter("drop_ios", default=0)

    def latency(self, op):
        slot, kind = SLOT[op]
        return Latency(self.slot(slot).child(kind, optional=True))


class Section:
    """One fio job section of an mdfio run: a phase (or a benchmark repeat)
    and its processes (numjobs clones)."""

    def __init__(self, name, opts, doc_name):
        self.name, self.opts, self.jobs, self.doc_name = name, opts, [], doc_name

    def opt(self, key):
        return pick(self.opts.get(key, DEFAULTS.get(key, "")))

    def int_opt(self, key, default=None):
        """An integer option; default when empty (fio's own default)."""
        value = self.opt(key)
        if value == "" and default is not None:
            return default
        try:
            number = int(value)
        except ValueError:
            number = None
        if number is None or abs(number) >= COUNTER_MAX:
            raise BadInput(f"{self.doc_name}: job {self.name}: {key}={value!r}, expected an integer")
        return number

    @property
    def phase(self):
        return self.opt("phase")

    @property
    def skipped(self):
        return self.phase == "benchmark" and self.int_opt("repeat") > self.int_opt("repeats")


def mdfio_sections(doc, name):
    """The mdfio sections of a fio document, in fio's order, each with its
    processes: jobs of the same name (and host, for client/server JSON)."""
    top = Reader(doc, name, "the document")
    if "client_stats" in doc:
        jobs = [j for j in top.items("client_stats") if not (isinstance(j, dict) and j.get("jobname") == "All clients")]
    else:
        jobs = top.items("jobs")
    glob = top.options("global options")
    sections, order = {}, []
    for n, raw in enumerate(jobs):
        if not isinstance(raw, dict) or "jobname" not in raw:
            raise BadInput(f"{name}: not fio JSON output (a job without 'jobname')")
        j = Job(Reader(raw, name, f"job {n}"), glob)
        opts = j.opts
        if "mdfio" not in opts.get("ioengine", "") or "phase" not in opts:
            continue
        for k, fio_name in (("ranks", "numjobs"), ("object_size", "bs"), ("root", "directory")):
            if k in opts:
                opts[fio_name] = pick(opts[k])
        key = (j.hostname, j.name)
        if key not in sections:
            sections[key] = Section(j.name, opts, name)
            order.append(key)
        sections[key].jobs.append(j)
    found = [sections[k] for k in order]
    if not found:
        raise BadInput(f"{name}: no mdfio job in this fio run (ioengine=external:.../mdfio-*.so with phase=)")
    return found


def document_header(doc, name):
    """(fio version, timestamp) of a document."""
    top = Reader(doc, name, "the document")
    return top.text("fio version", default="fio"), top.counter("timestamp", default=0)
