"""md-workbench's figures of an mdfio run (md-workbench.md "Metrics"), one
dataclass per figure set, with the names md-workbench's report and
mdfio-report --json/--csv give them."""
from __future__ import annotations

import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import VERSION
from .fiojson import (ALONE, COMPLETE, COUNTER_MAX, HEADLINE, LOADED, LOADED_PREFIX, NOT_RUN, SLOT, BadInput,
                      DataJob, Job, Latency, RunSections, Section, data_jobs, document_header, fio_size, load,
                      mdfio_sections, short)

OPS = ("create", "stat", "read", "delete")
# an operation's latency figures, in md-workbench's order
LATENCY = ("min_s", "q1_s", "median_s", "q3_s", "q90_s", "q99_s", "max_s")


@dataclass
class OpFigures:
    """One operation type of a phase: how many, how many failed, and its
    latency quantiles in seconds (None when unknown)."""
    count: int
    errors: int
    min_s: float | None = None
    q1_s: float | None = None
    median_s: float | None = None
    q3_s: float | None = None
    q90_s: float | None = None
    q99_s: float | None = None
    max_s: float | None = None

    @property
    def latencies(self) -> list[float | None] | None:
        """min, q1, median, q3, q90, q99, max; None when none completed."""
        return [getattr(self, k) for k in LATENCY] if self.count else None


@dataclass
class PhaseFigures:
    """A phase (or benchmark repeat) of all processes, or of one ('process'
    is its global rank and 'host' the host that ran it, else 'all' and
    None). The fields RECORD_FIELDS names are the report's record; 'ops'
    adds the per-operation figures. A time unknown (a process none of
    whose units succeeded, see phase_figures) and a rate over no measured
    time are None."""
    phase: str
    repeat: int
    process: int | str
    ranks: int
    t_max_s: float | None
    t_min_s: float | None
    t_mean_s: float | None
    balance_pct: float | None
    t_stddev_s: float | None
    iops: float | None
    objects: int
    obj_per_s: float | None
    dsets: int | None
    dset_per_s: float | None
    tp_mib_per_s: float | None
    op_max_s: float
    errors: int
    ops: dict[str, OpFigures]
    section: str = ""
    processes: list["PhaseFigures"] = field(default_factory=list)
    host: str | None = None
    # the datasets a precreate did not make or a cleanup did not remove
    dsets_undone: int = 0
    # md-workbench -t of the section (0: none)
    waiting_factor: float = 0.0
    stonewall_iter: int = 0
    # a phase with figures is one every rank completed (PhaseMark)
    status: str = COMPLETE
    reason: str | None = None

    def record(self) -> dict[str, Any]:
        """The flat record of --json and --csv: the fields, op_<figure>,
        then the status."""
        r = {k: getattr(self, k) for k in RECORD_FIELDS}
        for op in OPS:
            o = self.ops[op]
            r[f"{op}_count"], r[f"{op}_errors"] = o.count, o.errors
            for k in LATENCY:
                r[f"{op}_{k}"] = getattr(o, k)
        return {**r, "status": self.status, "reason": self.reason}


@dataclass
class PhaseMark:
    """A phase (or benchmark repeat) that not every rank completed
    (fiojson.RunSections.completion): status INCOMPLETE or NOT_RUN, and
    the reason, naming the ranks at fault and their hosts. It has no
    figures: those of the ranks that did complete it are not the phase's."""
    phase: str
    repeat: int
    ranks: int
    status: str
    reason: str
    section: str
    waiting_factor: float = 0.0

    def record(self) -> dict[str, Any]:
        """The record of --json and --csv: every figure None (null, an
        empty cell), what is known, and the status a parser tests."""
        r = dict.fromkeys(FIELDS)
        r.update(phase=self.phase, repeat=self.repeat, process="all", ranks=self.ranks,
                 waiting_factor=self.waiting_factor, status=self.status, reason=self.reason)
        return r


RECORD_FIELDS = ("phase", "repeat", "process", "host", "ranks", "t_max_s", "t_min_s", "t_mean_s", "balance_pct",
                 "t_stddev_s", "iops", "objects", "obj_per_s", "dsets", "dset_per_s", "tp_mib_per_s",
                 "op_max_s", "errors", "stonewall_iter", "waiting_factor")
# status and reason last: the columns of the CSV before them stay where
# they were before a record had them
FIELDS = list(RECORD_FIELDS) + [f"{op}_{k}" for op in OPS for k in ("count", "errors", *LATENCY)] + ["status",
                                                                                                      "reason"]


def sample_at(bins: Sequence[tuple[int, int]], k: int) -> int:
    """The k-th (0-based) of the sorted samples a histogram stands for, as
    the midpoint of its bucket: within 1/128 of the sample (docs/reports.md
    "Quantiles"), but possibly beyond the exact min or max."""
    seen = 0
    for value, count in bins:
        seen += count
        if seen > k:
            return value
    return bins[-1][0]


def ior_quantiles(bins: Sequence[tuple[int, int]], n: int) -> list[float]:
    """q1, median, q3, q90, q99 as IOR computes them: element
    round(q*(n-1)+0.49); an even count's median is the mean of the two
    middle elements."""
    q = [sample_at(bins, round(x * (n - 1) + 0.49)) for x in (0.25, 0.75, 0.90, 0.99)]
    median = sample_at(bins, n // 2) if n % 2 else (sample_at(bins, n // 2 - 1) + sample_at(bins, n // 2)) / 2
    return [q[0], median, *q[1:]]


PERCENTILES = ["25.000000", "50.000000", "75.000000", "90.000000", "99.000000"]


def op_figures(jobs: Sequence[Job], op: str) -> OpFigures:
    """An operation's figures over processes: quantiles from the merged
    histograms (json+), else a single process's percentiles, each clamped
    into [min, max]: fio's bucket values are bucket midpoints, min and max
    are exact."""
    slot = SLOT[op][0]
    lats = [j.latency(op) for j in jobs]
    n = sum(o.n for o in lats)
    if op == "stat":
        for j, o in zip(jobs, lats):
            # a running job's counts were read while it added to them
            if o.n > j.total_ios(slot) and not j.running:
                raise BadInput(f"{j.file}: job {j.name}: {slot}: lat_ns N {o.n} is more than total_ios "
                               f"{j.total_ios(slot)}, the stats made: not the JSON of an mdfio fio run")
        errors = sum(max(j.total_ios(slot) - o.n, 0) for j, o in zip(jobs, lats))
    else:
        errors = sum(j.drop_ios(slot) for j in jobs)
    if not n:
        return OpFigures(count=0, errors=errors)
    return OpFigures(n, errors, *latency_seconds(lats, n))


def latency_seconds(lats: Sequence[Latency], n: int) -> list[float | None]:
    """min, q1, median, q3, q90, q99, max in seconds of n > 0 samples over
    the latency objects lats: quantiles from the merged histograms (json+),
    else a single object's percentiles, else None; each clamped into the
    exact [min, max] (fio's bucket values are bucket midpoints)."""
    counted = [o for o in lats if o.n]
    lo, hi = min(o.min for o in counted), max(o.max for o in counted)
    merged: dict[int, int] = {}
    for o in lats:
        for value, count in o.bins.items():
            merged[value] = merged.get(value, 0) + count
    if merged and sum(merged.values()) == n:
        qs = ior_quantiles(sorted(merged.items()), n)
    elif len(counted) == 1:
        qs = [counted[0].percentile.get(k) for k in PERCENTILES]
    else:
        qs = [None] * 5
    qs = [None if v is None else min(max(v, lo), hi) for v in qs]
    return [None if v is None else v / 1e9 for v in (lo, *qs, hi)]


def phase_figures(sec: Section, jobs: Sequence[Job], repeat: int, process: int | str) -> PhaseFigures:
    """md-workbench's figures of a group of processes of one section."""
    head = HEADLINE[sec.phase]
    # a process's phase time: the engine's exact one, else fio's runtime;
    # None if neither was measured (fiojson.Job.phase_s)
    times = [j.phase_s(head) for j in jobs]
    known = [x for x in times if x is not None]
    t = max(known, default=None)
    size = object_size(sec)
    ranks = len(jobs)
    # md-workbench counts the datasets made or removed
    undone = sum(j.datasets_undone(head) for j in jobs)
    dsets = sec.int_opt("datasets") * ranks - undone
    ops = {op: op_figures(jobs, op) for op in OPS}
    errors = sum(o.errors for o in ops.values())
    op_max = max((o.max_s for o in ops.values() if o.count), default=0.0)

    def rate(x):
        """x per second of T: 0 when x is 0, None (n/a) with no time measured."""
        if x == 0:
            return 0.0
        return x / t if t is not None else None

    def mib_rate(x):
        r = rate(x)
        return None if r is None else r / 2**20
    dset_rate = tp = None
    if sec.phase == "benchmark":
        objects = ops["read"].count
        per_step = 2 if sec.int_opt("read_only") == 1 else 4
        iops, obj_rate = rate(objects * per_step), rate(objects)
        tp = mib_rate((ops["create"].count + objects) * size)
        dsets = None
    elif sec.phase == "precreate":
        objects = ops["create"].count
        iops, dset_rate, obj_rate = rate(dsets + objects), rate(dsets), rate(objects)
        tp = mib_rate(objects * size)
    else:
        objects = ops["delete"].count
        iops, obj_rate, dset_rate = rate(objects + dsets), rate(objects), rate(dsets)
    if len(known) < len(times):
        # min, mean, balance and stddev of times not all known
        t_min = mean = balance = stddev = None
    elif len(times) > 1:
        mean = sum(times) / len(times)
        t_min, balance = min(times), min(times) / t * 100
        stddev = math.sqrt(sum((x - mean) ** 2 for x in times) / (len(times) - 1))
    else:
        t_min, mean, balance, stddev = t, t, 100.0, 0.0
    return PhaseFigures(phase=sec.phase, repeat=repeat, process=process, ranks=ranks, t_max_s=t,
                        t_min_s=t_min, t_mean_s=mean, balance_pct=balance, t_stddev_s=stddev, iops=iops,
                        objects=objects, obj_per_s=obj_rate, dsets=dsets, dset_per_s=dset_rate,
                        tp_mib_per_s=tp, op_max_s=op_max, errors=errors, ops=ops, section=sec.name,
                        dsets_undone=0 if sec.phase == "benchmark" else undone,
                        stonewall_iter=stonewall_iter(sec, jobs))


def stonewall_iter(sec: Section, jobs: Iterable[Job]) -> int:
    """md-workbench's stonewall-iter of a benchmark: with stonewall_wear_out
    the steps every rank did; with stonewall_timer alone the most steps of
    a rank the timer stopped (0 when it stopped none). A rank's steps are
    its units (read's total_ios) over the datasets. md-workbench prints one
    less with -w alone: the index of the last step, not the steps done
    (docs/reports.md)."""
    if sec.phase != "benchmark" or not sec.int_opt("stonewall_timer"):
        return 0
    d, i = sec.int_opt("datasets"), sec.int_opt("steps_per_set")
    steps = [j.total_ios(HEADLINE["benchmark"]) // d for j in jobs]
    if sec.int_opt("stonewall_wear_out"):
        return max(steps, default=0)
    return max((s for s in steps if s < i), default=0)


def object_size(sec: Section) -> int:
    """S: fio's bs (the engine's object_size sets it), 4 KiB (fio's
    default) when the jobfile sets neither."""
    value = sec.opt("bs")
    size = fio_size(value) if value else 4096
    if not size or size >= COUNTER_MAX:
        raise BadInput(f"{sec.doc_name}: job {sec.name}: bs={short(value)} is not an object size: "
                       "not the JSON of an mdfio fio run")
    return size


# md-workbench -T's runs per iteration (engines/core/job.h)
ADAPTIVE_RUNS = 8


class Run:
    """The figures of one run of mdfio, phase by phase, from fio's JSON
    documents [(doc, name)]: one, or one per fio process of the run
    (mpirun, srun). entries holds, in the run's order, a PhaseFigures
    (with its processes' figures) for each phase that every rank completed
    and a PhaseMark for each that not every rank did; phases the
    PhaseFigures alone, marks the PhaseMarks. Of an interim report (fio's
    --status-interval), interim=True: only the phases completed on every
    rank, whose figures are final, but those of the sections named in
    skip (already known), and no marks; a running job's are read only by
    count and time (Job.done, Job.time_so_far). Of a run under data load,
    part (fiojson.ALONE, LOADED) is one of its two md-workbench runs."""

    def __init__(self, docs, interim=False, skip=(), part=None):
        self.name = ", ".join(name for _, name in docs)
        self.docs = docs
        # fio's and the engine's messages around the documents
        self.said = [line for doc, _ in docs for line in getattr(doc, "said", ())]
        heads = [document_header(doc, name) for doc, name in docs]
        fio_version, self.end = heads[0][0], max(end for _, end in heads)
        self.layout = RunSections(docs, part)
        stamp = {name: head[1] for (_, name), head in zip(docs, heads)}
        for j in (j for x in self.layout.sections for j in x.jobs):
            if j.elapsed is not None and j.elapsed > stamp[j.file]:
                raise BadInput(f"{j.file}: job {j.name}: elapsed {j.elapsed} s is more than the time since 1970 "
                               f"at its end (timestamp {stamp[j.file]}): not the JSON of a real fio run")
        sections = [x for x in self.layout.sections if not x.skipped]
        if not sections:
            raise BadInput(f"{self.name}: every mdfio job of this run is a benchmark repeat beyond repeats=")
        first = sections[0]
        self.repeats = 0
        # the run's ranks: as every rank's description says (a section may
        # lack some, of a host that died), else the clones of one fio
        self.ranks = self.layout.ranks if self.layout.ranks is not None else len(first.jobs)
        self.d, self.p, self.i = (first.int_opt(k) for k in ("datasets", "precreate_per_set", "steps_per_set"))
        self.s = object_size(first)
        self.first = first
        # the host of each rank (as any section names it, else as hosts=
        # places it), and the hosts in rank order
        self.host_of = {r: self.layout.host(first, r) for r in range(self.ranks)}
        self.hosts = list(dict.fromkeys(h for h in self.host_of.values() if h is not None))
        self.sections = sections
        # md-workbench -T: the 8 sections of adaptive_waiting=1 of a repeat
        # (its plain run and its waiting runs) are one iteration
        self.entries, self.phases, self.marks, self.errors, repeat, adaptive_runs = [], [], [], 0, 0, 0
        self.completed = []     # the sections every rank completed
        # each section's md-workbench repeat (0 for precreate and cleanup)
        self.repeat_of = {}
        for sec in sections:
            if sec.tree:
                raise BadInput(f"{sec.doc_name}: job {sec.name} is a phase of mdfio-tree, the tree study: "
                               "not of one md-workbench run (mdfio-report reports a run of mdfio-tree alone)")
            if sec.phase not in HEADLINE:
                raise BadInput(f"{sec.doc_name}: job {sec.name} has phase={sec.phase!r}, not an mdfio phase")
            if sec.phase == "benchmark":
                adaptive = sec.int_opt("adaptive_waiting") == 1
                repeat += 0 if adaptive and adaptive_runs % ADAPTIVE_RUNS else 1
                adaptive_runs += adaptive
                self.repeats = repeat
            self.repeat_of[sec.name] = repeat if sec.phase == "benchmark" else 0
            status, reason = self.layout.completion(sec)
            if status != COMPLETE:
                # no figures: those of the ranks that completed it are not
                # the phase's (md-workbench's are over every rank)
                if not interim:
                    mark = PhaseMark(sec.phase, self.repeat_of[sec.name], self.ranks, status, reason, sec.name,
                                     sec.waiting_factor)
                    self.entries.append(mark)
                    self.marks.append(mark)
                continue
            self.completed.append(sec)
            if interim and sec.name in skip:
                continue
            f = phase_figures(sec, sec.jobs, self.repeat_of[sec.name], "all")
            f.processes = [phase_figures(sec, [j], f.repeat, j.rank) for j in sec.jobs]
            for p, j in zip(f.processes, sec.jobs):
                p.host = j.host
            for x in [f] + f.processes:
                x.waiting_factor = sec.waiting_factor
            self.errors += f.errors + sum(1 for j in sec.jobs if j.error)
            self.entries.append(f)
            self.phases.append(f)
        self.total_objects = self.d * (self.i * self.repeats + self.p) * self.ranks
        self.working_set = self.ranks * self.d * self.p * self.s / 2**20
        # fio's run time in s: None from a fio client, which writes none
        self.runtime = max((j.elapsed for x in sections for j in x.jobs if j.elapsed is not None), default=None)
        self.version = f"{VERSION}/{fio_version}"

    @staticmethod
    def ended(sec: Section) -> bool:
        """Whether a section's phase has ended on every rank."""
        return all(j.phase_ended(HEADLINE[sec.phase]) for j in sec.jobs)

    @property
    def multi_host(self) -> bool:
        """Whether the run's ranks ran on more than one host."""
        return len(self.hosts) > 1

    def failed(self) -> list[str]:
        """A line per completed section whose ranks ended with a fio error
        that leaves its figures whole (fiojson.completed_error); those of
        the others are in their marks."""
        return self.layout.failed(self.completed)

    def not_completed(self) -> str | None:
        """The line of the phases not every rank completed; None when every
        rank completed every phase."""
        if not self.marks:
            return None
        return ("not every rank completed every phase (the report marks them): "
                + ", ".join(f"{m.section} ({m.status})" for m in self.marks))

    def refused(self) -> str | None:
        """The line of a run of which no rank began any phase and no job
        has a fio error: fio or the engine refused it before its first unit
        (a root= whose parent is missing: the engine's setup fails in fio's
        main process, which then runs no job and gives none an error),
        quoting fio's message where the input holds one; None otherwise."""
        jobs = [j for sec in self.sections for j in sec.jobs]
        if (not self.marks or self.completed or any(m.status != NOT_RUN for m in self.marks)
                or any(j.error for j in jobs)):
            return None
        why = (f": {short(self.said[0], 300)}" if self.said else
               "; the line on fio's stderr says why (fio: ... or mdfio: ...)")
        return ("no rank began any phase and no job has a fio error: fio or the engine refused the run before "
                "its first unit" + why)

    def cross_host_reads(self) -> tuple[int, int]:
        """(k, n): of the n reads of a benchmark step over all ranks and
        datasets, the k whose object another host made: rank r reads
        dataset d of rank (r - O*(d+1)) mod N (md-workbench -O)."""
        offset, n = self.first.int_opt("rank_offset"), self.ranks
        if len(set(self.host_of.values())) < 2:
            return 0, n * self.d

        def crossing(d):
            return sum(1 for r in range(n) if self.host_of.get((r - offset * (d + 1)) % n) != self.host_of.get(r))
        # the rank read depends on d mod n only: each residue once, times the
        # datasets that have it (datasets= may be far more than ranks)
        return sum(crossing(d) * ((self.d - d + n - 1) // n) for d in range(min(self.d, n))), n * self.d

    def reads_cross_hosts(self) -> str:
        """'all', 'some (k of n)' or 'none'."""
        k, n = self.cross_host_reads()
        return "all" if k == n else "none" if k == 0 else f"some ({k} of {n})"

    def nodemap(self) -> str:
        """md-workbench's Nodemap: a digit per rank, 1 if it ran on rank
        0's host."""
        if self.layout.ranks is None:
            return "1" * self.ranks      # one fio: one host
        # '?': a rank no section and no hosts= places (its fio's JSON is
        # not among the files)
        return "".join("?" if self.host_of[r] is None or self.host_of[0] is None else
                       "1" if self.host_of[r] == self.host_of[0] else "0" for r in range(self.ranks))

    def waiting(self) -> tuple[bool, int, str | None]:
        """(adaptive, repeats, factor text): whether the benchmark sections
        are md-workbench -T's (adaptive_waiting=1), the repeats md-workbench -R counts, and the -t of the
        others (None without waiting). md-workbench has one -t for every
        repeat: a run whose factors differ otherwise gives its first
        nonzero one."""
        bench = [x for x in self.sections if x.phase == "benchmark"]
        if any(x.int_opt("adaptive_waiting") == 1 for x in bench):
            return True, self.repeats, None
        factors = [x.float_opt("waiting_factor") for x in bench]
        return False, self.repeats, next((text for v, text in factors if v > 0), None)

    def chosen_issue(self) -> bool:
        """Whether mdfio-uring chose how to issue operations (issue=auto)
        in any section: its figures then mix the ring and system calls as
        each job chose."""
        return any("mdfio-uring" in x.opts.get("ioengine", "") and x.opt("issue") == "auto"
                   for x in self.sections)

    def md_workbench_args(self) -> list[str]:
        """The arguments of IOR's md-workbench that run what this run ran,
        its ranks being mpiexec's (the Nodemap's digits): md-workbench's
        size and content parameters always (its seed defaults to the
        clock), the others when they differ from its defaults. -a is
        POSIX for every engine: the same operations on the same names."""
        sec = self.first
        adaptive, repeats, factor = self.waiting()
        args = ["-a", "POSIX", "-D", self.d, "-P", self.p, "-I", self.i, "-S", self.s, "-R", repeats,
                "-O", sec.int_opt("rank_offset"), "-o", sec.opt("directory"), "-G", sec.opt("random_seed").strip()]
        packet = sec.opt("data_packet_type").strip()
        if packet != "t":
            args += ["--dataPacketType", packet]

        # an option may be set in some sections only (a benchmark's
        # stonewall_timer): the first section's that sets it counts
        def given(key, read):
            return next((v for v in (read(x, key) for x in self.sections) if v), None)
        flags = (("verify_read", "-X"), ("read_only", "--read-only"))
        args += [flag for key, flag in flags if given(key, Section.int_opt)]
        if sec.int_opt("start_index"):
            args += ["--start-item", sec.int_opt("start_index")]
        present = {x.phase for x in self.sections}
        if len(present) < 3:
            args += [flag for ph, flag in (("precreate", "-1"), ("benchmark", "-2"), ("cleanup", "-3"))
                     if ph in present]
        if given("stonewall_timer", Section.int_opt):
            args += ["-w", given("stonewall_timer", Section.int_opt)]
        if given("stonewall_wear_out", Section.bool_opt):
            args.append("-W")
        if adaptive:
            args.append("-T")
        elif factor is not None:
            args += ["-t", factor]
        if given("latency_log", Section.opt):
            args += ["-L", given("latency_log", Section.opt)]
        flags = (("latency_all", "--latency-all"), ("ignore_precreate_errors", "--ignore-precreate-errors"))
        args += [flag for key, flag in flags if given(key, Section.bool_opt)]
        if given("run_info_file", Section.opt):
            args += ["--run-info-file", given("run_info_file", Section.opt)]
        args += ["-v"] * (given("verbose", Section.int_opt) or 0)
        return [str(a) for a in args]

    def params(self) -> dict[str, str | int]:
        """md-workbench's parameter lines, and iodepth."""
        sec = self.first
        # units in flight per process: 1 for mdfio-posix, which fio caps
        depth = 1 if "mdfio-posix" in sec.opts.get("ioengine", "") else sec.int_opt("iodepth", default=1)
        return {"interface": sec.opts.get("ioengine", ""), "iodepth": depth, "root": sec.opt("directory"),
                "ranks": self.ranks, "offset": sec.int_opt("rank_offset"), "obj-per-proc": self.i,
                "precreate-per-set": self.p, "data-sets": self.d, "object-size": self.s,
                "iterations": self.repeats, "start-item": sec.int_opt("start_index"),
                "read-only": sec.int_opt("read_only"), "verify-read": sec.int_opt("verify_read"),
                "lim-free-mem": sec.int_opt("lim_free_mem"), "lim-free-mem-phase": sec.int_opt("lim_free_mem_phase")}


def load_run(paths: Iterable[str | os.PathLike[str]]) -> Run:
    """The Run of fio's JSON output files (or '-' for stdin): one file, or
    one per fio process of the run."""
    return Run([load(p) for p in paths])


# the figures of a data job (docs/reports.md "Metadata under data load")
DATA_FIGURES = ("mib_per_s", "iops", "p50_s", "p99_s", "runtime_s")
# fio's keys of the latency percentiles the report gives
DATA_PERCENTILES = {"p50_s": "50.000000", "p99_s": "99.000000"}


@dataclass
class DataFigures:
    """A data job's figures in one slot (read, write) over its processes,
    from fio's JSON: bandwidth (fio's bw_bytes) and iops summed, fio's own
    completion latency percentiles p50 and p99 (clat_ns; of several
    processes, from their merged json+ histograms), fio's job_runtime;
    None when fio has no such figure (a job that did no I/O)."""
    job: str
    slot: str
    processes: int
    mib_per_s: float | None
    iops: float | None
    p50_s: float | None
    p99_s: float | None
    runtime_s: float | None
    groupid: int
    errors: list[int]

    def record(self) -> dict[str, Any]:
        return {"job": self.job, "slot": self.slot, "processes": self.processes,
                **{k: getattr(self, k) for k in DATA_FIGURES}, "fio_group": self.groupid, "errors": self.errors}


def nearest_rank(bins: Sequence[tuple[int, int]], n: int, pct: float) -> int:
    """The sample at percentile pct of a histogram of n samples, as fio
    picks it (stat.c, calc_clat_percentiles): the first bucket where the
    samples so far reach pct/100 of n."""
    want = pct / 100.0 * n
    seen = 0
    for value, count in bins:
        seen += count
        if seen >= want:
            return value
    return bins[-1][0]


def data_figures(jobs: Sequence[DataJob], slot: str) -> DataFigures:
    """The figures of one data job's processes in slot."""
    first = jobs[0]
    slots = [j.job.slot(slot) for j in jobs]
    lats = [Latency(r.child("clat_ns")) for r in slots]
    moved = sum(r.counter("total_ios") for r in slots)
    mib = sum(r.counter("bw_bytes") for r in slots) / 2**20 if moved else None
    iops = sum(r.number("iops") for r in slots) if moved else None
    pcts = dict.fromkeys(DATA_PERCENTILES)
    if len(lats) == 1 and lats[0].n:
        pcts = {k: lats[0].percentile.get(v) for k, v in DATA_PERCENTILES.items()}
    elif sum(o.n for o in lats):
        merged = {}
        for o in lats:
            for value, count in o.bins.items():
                merged[value] = merged.get(value, 0) + count
        n = sum(o.n for o in lats)
        if sum(merged.values()) == n:
            pcts = {k: nearest_rank(sorted(merged.items()), n, float(v)) for k, v in DATA_PERCENTILES.items()}
    runtime = max(j.runtime_ms for j in jobs)
    return DataFigures(job=first.key, slot=slot, processes=len(jobs), mib_per_s=mib, iops=iops,
                       p50_s=None if pcts["p50_s"] is None else pcts["p50_s"] / 1e9,
                       p99_s=None if pcts["p99_s"] is None else pcts["p99_s"] / 1e9,
                       runtime_s=runtime / 1000.0 if moved else None, groupid=first.job.groupid,
                       errors=sorted({j.job.error for j in jobs if j.job.error}))


def ratio(loaded: float | None, alone: float | None) -> float | None:
    """loaded / alone; None where either is unknown or alone is 0."""
    if loaded is None or not alone:
        return None
    return loaded / alone


# fio's end of a time_based job: at its next I/O after its runtime, in
# whole milliseconds; how far a data job's runtime may pass the loaded
# benchmark's time and still count as within it
WINDOW_SLACK_S = 0.1


class LoadRun:
    """An mdfio run under data load (jobfiles/md-workbench-under-load.fio):
    md-workbench alone and under load (two Runs of the same documents,
    fiojson.in_part), and the data jobs alone and under load, paired by
    name (pairs: the pair's name, fio's slot, DataFigures alone and under
    load). problems lists every way the run falls short, for the report to
    say and exit 1: a data job's fio error; a data job under load outside
    the fio group of the loaded benchmark repeats (benchmark_groups), in a
    group with another md-workbench section, or running longer than the
    loaded benchmark's time (benchmark_time) by more than WINDOW_SLACK_S;
    a data job alone in a group with md-workbench; md-workbench run with
    other parameters under load."""

    def __init__(self, docs):
        self.name = ", ".join(name for _, name in docs)
        self.data = [j for doc, name in docs for j in data_jobs(doc, name)]
        for part, what in ((LOADED, f"no mdfio section named {LOADED_PREFIX}..."),
                           (ALONE, f"no mdfio section but those named {LOADED_PREFIX}...")):
            if not any(s for doc, name in docs for s in mdfio_sections_or_none(doc, name, part)):
                raise BadInput(f"{self.name}: data jobs (load-...) but {what}: not the JSON of "
                               "md-workbench-under-load.fio (md-workbench alone, then under load)")
        self.alone, self.loaded = Run(docs, part=ALONE), Run(docs, part=LOADED)
        keys = list(dict.fromkeys(j.key for j in self.data))
        self.pairs = []
        for key in keys:
            alone = [j for j in self.data if j.key == key and j.alone]
            loaded = [j for j in self.data if j.key == key and not j.alone]
            slots = list(dict.fromkeys(s for j in alone + loaded for s in j.slots))
            for slot in slots:
                self.pairs.append((key, slot, data_figures(alone, slot) if alone else None,
                                   data_figures(loaded, slot) if loaded else None))
        self.benchmarks = self._benchmarks()
        self.problems = self._problems()
        if self.alone.md_workbench_args() != self.loaded.md_workbench_args():
            self.problems.append("md-workbench ran with other parameters under load: "
                                 + " ".join(self.loaded.md_workbench_args()))

    def _benchmarks(self):
        """(repeat, alone, loaded) of each benchmark repeat: a PhaseFigures
        or a PhaseMark each, None where a run lacks the repeat."""
        def by_repeat(run):
            return {e.repeat: e for e in run.entries if e.phase == "benchmark"}
        alone, loaded = by_repeat(self.alone), by_repeat(self.loaded)
        return [(k, alone.get(k), loaded.get(k)) for k in sorted(set(alone) | set(loaded))]

    def benchmark_time(self) -> float | None:
        """The loaded benchmark's time: the sum of its repeats' T (each
        the slowest rank's); None if a repeat has none."""
        times = [f.t_max_s if isinstance(f, PhaseFigures) else None for _, _, f in self.benchmarks]
        return None if not times or None in times else sum(times)

    def benchmark_groups(self) -> set[int]:
        return {j.groupid for sec in self.loaded.sections if sec.phase == "benchmark" for j in sec.jobs}

    def _problems(self):
        out = []
        for j in self.data:
            if j.job.error:
                out.append(f"data job {j.name} ({'alone' if j.alone else 'under load'}) ended with fio error "
                           f"{j.job.error}: its figures are not the workload's")
        bench_groups = self.benchmark_groups()
        other_groups = {j.groupid for run in (self.alone, self.loaded) for sec in run.sections
                        if not (run is self.loaded and sec.phase == "benchmark") for j in sec.jobs}
        limit = self.benchmark_time()
        for j in self.data:
            if j.alone:
                if j.job.groupid in bench_groups | other_groups:
                    out.append(f"data job {j.name} ran in fio group {j.job.groupid} beside md-workbench: "
                               "not alone (stonewall it)")
                continue
            if j.job.groupid not in bench_groups or j.job.groupid in other_groups:
                out.append(f"data job {j.name} ran in fio group {j.job.groupid}, not (only) in the loaded "
                           f"benchmark's ({', '.join(map(str, sorted(bench_groups))) or 'none'})")
            elif limit is not None and j.runtime_ms / 1000.0 > limit + WINDOW_SLACK_S:
                out.append(f"data job {j.name} ran {j.runtime_ms / 1000.0:.3f} s, beyond the loaded benchmark's "
                           f"{limit:.3f} s: a repeat ran out of steps before its stonewall timer (raise MDW_I "
                           "and MDW_P)")
        return out

    @property
    def marks(self) -> list[PhaseMark]:
        return self.alone.marks + self.loaded.marks

    @property
    def errors(self) -> int:
        return self.alone.errors + self.loaded.errors


def mdfio_sections_or_none(doc: dict[str, Any], name: str, part: str) -> list[Section]:
    """The mdfio sections of part in a document; [] when it has none."""
    try:
        return mdfio_sections(doc, name, part)
    except BadInput:
        return []


def under_data_load(docs: Sequence[tuple[dict[str, Any], str]]) -> bool:
    """Whether fio's documents are a run under data load: any data job.
    Documents it cannot read are not: the Run of them says why, as it
    did before runs under data load were known."""
    try:
        return any(data_jobs(doc, name) for doc, name in docs)
    except BadInput:
        return False
