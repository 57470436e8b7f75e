"""fio's JSON of an mdfio run, read into md-workbench's figures. Shared by
mdfio-report and mdfio-plot; the formulas are those of md-workbench.md."""
import datetime
import json
import math
import re
import sys
from pathlib import Path

VERSION = "mdfio-0.1.0"
OPS = ("create", "stat", "read", "delete")
# where the engine records each operation in fio's JSON (README "Where the
# numbers are"): the slot, and its latency object
SLOT = {"create": ("write", "clat_ns"), "read": ("read", "clat_ns"),
        "delete": ("trim", "clat_ns"), "stat": ("sync", "lat_ns")}
HEADLINE = {"precreate": "write", "benchmark": "read", "cleanup": "trim"}
DEFAULTS = {"datasets": "10", "precreate_per_set": "3000", "steps_per_set": "1000",
            "rank_offset": "1", "start_index": "0", "read_only": "0", "verify_read": "0",
            "repeat": "1", "repeats": "1"}


class BadInput(Exception):
    pass


# what a document of another structure than fio's raises when read as one
NOT_FIO = (KeyError, TypeError, ValueError, AttributeError, IndexError, ZeroDivisionError, OverflowError)


def input_error_line(tool, where, e):
    """The one line a tool prints for bad input e (BadInput or NOT_FIO)
    about where (a file, or an option)."""
    if not isinstance(e, BadInput):
        return f"{tool}: {where}: not the JSON of an mdfio fio run ({type(e).__name__}: {e})"
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
    name = "<stdin>" if path == "-" else path
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


class Section:
    """One fio job section of an mdfio run: a phase (or a benchmark repeat)
    and its processes (numjobs clones)."""

    def __init__(self, name, opts):
        self.name, self.opts, self.jobs = name, opts, []

    def opt(self, key):
        return pick(self.opts.get(key, DEFAULTS.get(key, "")))

    @property
    def phase(self):
        return self.opt("phase")

    @property
    def skipped(self):
        return self.phase == "benchmark" and int(self.opt("repeat")) > int(self.opt("repeats"))


def mdfio_sections(doc, name):
    if "client_stats" in doc:
        jobs = [j for j in doc["client_stats"] if j.get("jobname") != "All clients"]
    else:
        jobs = doc.get("jobs")
    if not isinstance(jobs, list):
        raise BadInput(f"{name}: not fio JSON output (no 'jobs' or 'client_stats')")
    glob = doc.get("global options", {})
    sections, order = {}, []
    for j in jobs:
        if not isinstance(j, dict) or "jobname" not in j:
            raise BadInput(f"{name}: not fio JSON output (a job without 'jobname')")
        opts = {**glob, **j.get("job options", {})}
        if "mdfio" not in opts.get("ioengine", "") or "phase" not in opts:
            continue
        for k, fio_name in (("ranks", "numjobs"), ("object_size", "bs"), ("root", "directory")):
            if k in opts:
                opts[fio_name] = pick(opts[k])
        key = (j.get("hostname"), j["jobname"])
        if key not in sections:
            sections[key] = Section(j["jobname"], opts)
            order.append(key)
        sections[key].jobs.append(j)
    found = [sections[k] for k in order]
    if not found:
        raise BadInput(f"{name}: no mdfio job in this fio run (ioengine=external:.../mdfio-*.so with phase=)")
    return found


def sample_at(bins, k):
    """The k-th (0-based) of the sorted samples a histogram stands for:
    exact up to fio's bucket width (under 1/64 of the value)."""
    seen = 0
    for value, count in bins:
        seen += count
        if seen > k:
            return value
    return bins[-1][0]


def ior_quantiles(bins, n):
    """q1, median, q3, q90, q99 as IOR computes them: element
    round(q*(n-1)+0.49); an even count's median is the mean of the two
    middle elements."""
    q = [sample_at(bins, round(x * (n - 1) + 0.49)) for x in (0.25, 0.75, 0.90, 0.99)]
    median = sample_at(bins, n // 2) if n % 2 else (sample_at(bins, n // 2 - 1) + sample_at(bins, n // 2)) / 2
    return [q[0], median, *q[1:]]


def op_stats(jobs, op):
    slot, kind = SLOT[op]
    objs = [j.get(slot, {}).get(kind, {}) for j in jobs]
    n = sum(o.get("N", 0) for o in objs)
    attempts = sum(j.get(slot, {}).get("total_ios", 0) for j in jobs) if op == "stat" else None
    errors = (attempts - n) if op == "stat" else sum(j.get(slot, {}).get("drop_ios", 0) for j in jobs)
    if not n:
        return {"count": 0, "errors": errors, "lat": None}
    lo = min(o["min"] for o in objs if o.get("N"))
    hi = max(o["max"] for o in objs if o.get("N"))
    merged = {}
    for o in objs:
        for value, count in o.get("bins", {}).items():
            merged[int(value)] = merged.get(int(value), 0) + count
    if merged and sum(merged.values()) == n:
        qs = ior_quantiles(sorted(merged.items()), n)
    elif len([o for o in objs if o.get("N")]) == 1:
        pct = next(o for o in objs if o.get("N")).get("percentile", {})
        want = ["25.000000", "50.000000", "75.000000", "90.000000", "99.000000"]
        qs = [pct.get(k) for k in want]
    else:
        qs = [None] * 5
    lat = [lo, *qs, hi]
    return {"count": n, "errors": errors,
            "lat": [None if v is None else v / 1e9 for v in lat]}


def phase_figures(sec, jobs):
    """md-workbench's figures (md-workbench.md "Metrics") of a group of
    processes of one section."""
    head = HEADLINE[sec.phase]
    times = [j[head]["runtime"] / 1000.0 for j in jobs]
    t = max(times)
    size = fio_size(sec.opt("bs")) or 0
    ranks = len(jobs)
    dsets = int(sec.opt("datasets")) * ranks
    ops = {op: op_stats(jobs, op) for op in OPS}
    errs = sum(o["errors"] for o in ops.values())
    op_max = max((o["lat"][6] for o in ops.values() if o["lat"]), default=0.0)
    f = {"phase": sec.phase, "section": sec.name, "t": t, "times": times, "ranks": ranks,
         "errors": errs, "op_max": op_max, "ops": ops}
    rate = (lambda x: x / t if t > 0 else math.inf)
    if sec.phase == "benchmark":
        objects = ops["read"]["count"]
        per_step = 2 if sec.opt("read_only") == "1" else 4
        f.update(objects=objects, iops=rate(objects * per_step), obj_rate=rate(objects),
                 tp=rate((ops["create"]["count"] + objects) * size) / 2**20)
    elif sec.phase == "precreate":
        objects = ops["create"]["count"]
        f.update(objects=objects, dsets=dsets, iops=rate(dsets + objects), dset_rate=rate(dsets),
                 obj_rate=rate(objects), tp=rate(objects * size) / 2**20)
    else:
        objects = ops["delete"]["count"]
        f.update(objects=objects, dsets=dsets, iops=rate(objects + dsets), obj_rate=rate(objects),
                 dset_rate=rate(dsets))
    if len(times) > 1:
        mean = sum(times) / len(times)
        f.update(min=min(times), mean=mean, balance=(min(times) / t * 100) if t else 100.0,
                 stddev=math.sqrt(sum((x - mean) ** 2 for x in times) / (len(times) - 1)))
    else:
        f.update(min=t, mean=t, balance=100.0, stddev=0.0)
    return f


class Run:
    """The figures of one fio run of mdfio, phase by phase."""

    def __init__(self, doc, name):
        self.doc, self.name = doc, name
        sections = [x for x in mdfio_sections(doc, name) if not x.skipped]
        first = sections[0]
        self.ranks = len(first.jobs)
        self.d, self.p, self.i = (int(first.opt(k)) for k in
                                  ("datasets", "precreate_per_set", "steps_per_set"))
        self.s = fio_size(first.opt("bs")) or 0
        self.first = first
        self.repeats = sum(1 for x in sections if x.phase == "benchmark")
        self.phases, self.errors, repeat = [], 0, 0
        for sec in sections:
            if sec.phase not in HEADLINE:
                raise BadInput(f"{name}: job {sec.name} has phase={sec.phase!r}, not an mdfio phase")
            want = int(sec.opt("numjobs") or 1)
            if len(sec.jobs) != want:
                raise BadInput(f"{name}: job {sec.name} reported {len(sec.jobs)} of its {want} processes (numjobs): a process is missing")
            head = HEADLINE[sec.phase]
            if all(j.get("error") and not j[head].get("total_ios") for j in sec.jobs):
                raise BadInput(f"{name}: job {sec.name} ({sec.phase}) failed before its first step "
                               f"(fio error {sec.jobs[0]['error']}); fio's stderr says why")
            repeat = repeat + 1 if sec.phase == "benchmark" else 0
            f = phase_figures(sec, sec.jobs)
            f["repeat"] = repeat
            # fio lists a job's clones as subjob 0, then numjobs-1 down to 1
            ranks = [0] + list(range(len(sec.jobs) - 1, 0, -1))
            f["processes"] = [dict(phase_figures(sec, [j]), rank=r, repeat=repeat)
                              for r, j in sorted(zip(ranks, sec.jobs), key=lambda x: x[0])]
            self.errors += f["errors"] + sum(1 for j in sec.jobs if j.get("error"))
            self.phases.append(f)
        self.total_objects = self.d * (self.i * self.repeats + self.p) * self.ranks
        self.working_set = self.ranks * self.d * self.p * self.s / 2**20
        self.end = int(doc.get("timestamp", 0))
        self.runtime = max((int(j.get("elapsed", 0)) for x in sections for j in x.jobs), default=0)
        self.version = f"{VERSION}/{doc.get('fio version', 'fio')}"

    def params(self):
        o = self.first.opt
        # units in flight per process: 1 for mdfio-posix, which fio caps
        depth = 1 if "mdfio-posix" in self.first.opts.get("ioengine", "") else int(o("iodepth") or 1)
        return {"interface": self.first.opts.get("ioengine", ""), "iodepth": depth, "root": o("directory"),
                "ranks": self.ranks, "offset": int(o("rank_offset")), "obj-per-proc": self.i,
                "precreate-per-set": self.p, "data-sets": self.d, "object-size": self.s,
                "iterations": self.repeats, "start-item": int(o("start_index")),
                "read-only": int(o("read_only")), "verify-read": int(o("verify_read"))}


def local_time(epoch):
    try:
        return datetime.datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M:%S")
    except (OverflowError, OSError, ValueError):
        raise BadInput(f"timestamp {epoch:g} is out of range: not the JSON of a real fio run") from None


