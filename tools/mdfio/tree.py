"""The figures of a run of mdfio-tree, the small-file tree study
(docs/studies.md, "The small-file tree study"), read through fiojson as
every mdfio run is: per phase its time, names per second, MiB/s and each
operation's latency quantiles, and the lines and JSON mdfio-report prints
of them."""
from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from .figures import latency_seconds
from .fiojson import COMPLETE, TREE_OPS, BadInput, Job, Latency, RunSections, Section, mdfio_sections

# an operation's latency figures, as md-workbench's report orders them
LATENCY = ("min_s", "q1_s", "median_s", "q3_s", "q90_s", "q99_s", "max_s")


@dataclass
class TreeOp:
    """One operation of a phase over its ranks: its count, its failures and
    its latency quantiles in seconds (None without samples)."""
    name: str
    count: int
    errors: int
    min_s: float | None = None
    q1_s: float | None = None
    median_s: float | None = None
    q3_s: float | None = None
    q90_s: float | None = None
    q99_s: float | None = None
    max_s: float | None = None


@dataclass
class TreePhase:
    """A section of the study: its phase, ranks, time T (the largest of its
    ranks' exact times), the names it went through (made, seen, read,
    rewritten or removed) and bytes it moved, their rates over T, and its
    operations. status and reason say whether every rank completed it."""
    section: str
    phase: str
    ranks: int
    t_s: float | None
    names: int
    names_per_s: float | None
    bytes: int
    mib_per_s: float | None
    matched: int | None
    errors: int
    status: str
    reason: str | None
    ops: list[TreeOp] = field(default_factory=list)


def op_figures(jobs: Sequence[Job], name: str, slot: str, kind: str) -> TreeOp:
    """An operation's figures over ranks, as figures.op_figures gives
    md-workbench's."""
    lats = [Latency(j.slot(slot).child(kind)) for j in jobs]
    n = sum(o.n for o in lats)
    if kind == "lat_ns":
        errors = sum(max(j.total_ios(slot) - o.n, 0) for j, o in zip(jobs, lats))
    else:
        errors = sum(j.drop_ios(slot) for j in jobs)
    if not n:
        return TreeOp(name, 0, errors)
    return TreeOp(name, n, errors, *latency_seconds(lats, n))


def phase_figures(sec: Section, status: str, reason: str | None) -> TreePhase:
    head, jobs = sec.headline, sec.jobs
    ops = [op_figures(jobs, *op) for op in TREE_OPS[sec.phase]]
    if status != COMPLETE:
        return TreePhase(sec.name, sec.phase, len(jobs), None, 0, None, 0, None, None,
                         sum(o.errors for o in ops), status, reason, ops)
    times = [j.phase_s(head) for j in jobs]
    known = [x for x in times if x is not None]
    t = max(known) if known else None
    if sec.phase == "find":
        names = sum(j.slot("read").counter("short_ios") for j in jobs)
        matched = sum(j.slot("write").counter("short_ios") for j in jobs)
    else:
        names, matched = sum(j.total_ios(head) for j in jobs), None
    moved = sum(j.slot(head).counter("io_bytes") for j in jobs)
    # a search and a delete move no bytes: their MiB/s is n/a, not 0
    mib = moved / 2**20 / t if t and sec.phase not in ("find", "delete") else None
    return TreePhase(sec.name, sec.phase, len(jobs), t, names, names / t if t else None, moved, mib, matched, sum(o.errors for o in ops), status, reason, ops)


def is_tree_run(docs: Sequence[tuple[dict[str, Any], str]]) -> bool:
    """Whether the documents hold mdfio-tree's phases; documents that mix
    them with md-workbench's are refused."""
    kinds = {sec.tree for doc, name in docs for sec in mdfio_sections(doc, name)}
    if kinds == {True, False}:
        raise BadInput(f"{docs[0][1]}: phases of mdfio-tree beside md-workbench's: report them from separate runs")
    return kinds == {True}


class TreeRun:
    """The study's phases of one fio run, in the jobfile's order."""

    def __init__(self, docs):
        self.name = ", ".join(name for _, name in docs)
        layout = RunSections(docs)
        self.phases = []
        for sec in layout.sections:
            if sec.phase not in TREE_OPS:
                raise BadInput(f"{sec.doc_name}: job {sec.name} has phase={sec.phase!r}, not a phase of mdfio-tree")
            status, reason = layout.completion(sec)
            self.phases.append(phase_figures(sec, status, reason))
        self.failed = layout.failed(layout.sections)

    @property
    def errors(self) -> int:
        return sum(p.errors for p in self.phases)

    @property
    def incomplete(self) -> list[TreePhase]:
        return [p for p in self.phases if p.status != COMPLETE]


def num(v: float | None, spec: str) -> str:
    return "n/a" if v is None else format(v, spec)


def render(run: TreeRun) -> list[str]:
    """The report's lines: a line per phase, then one per operation."""
    lines = [f"{'phase':<16} {'ranks':>5} {'time_s':>10} {'names':>9} {'names/s':>11} {'MiB/s':>9} {'errors':>6}"]
    for p in run.phases:
        if p.status != COMPLETE:
            lines.append(f"{p.section:<16} {p.status}: {p.reason}")
            continue
        lines.append(f"{p.section:<16} {p.ranks:>5} {num(p.t_s, '.6f'):>10} {p.names:>9} "
                     f"{num(p.names_per_s, '.1f'):>11} {num(p.mib_per_s, '.2f'):>9} {p.errors:>6}"
                     + (f"  matched {p.matched}" if p.matched is not None else ""))
        for o in p.ops:
            if not o.count and not o.errors:
                continue
            lat = " ".join(f"{k[:-2]}={num(getattr(o, k), '.6f')}" for k in LATENCY)
            lines.append(f"  {o.name:<16} count={o.count} errors={o.errors} {lat}")
    return lines


def render_json(run: TreeRun) -> list[str]:
    return [json.dumps({"run": run.name, "phases": [asdict(p) for p in run.phases]}, indent=1)]
