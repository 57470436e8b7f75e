"""The runs of mdfio's other workloads as the history keeps them
(docs/reports.md "Other workloads in the history"): mdfio-postmark,
mdfio-mdtest, mdfio-tree and an mdfio-iozone sweep, each read through
fiojson as mdfio-report reads it, as rows of the history's phases and ops
tables, so that mdfio-compare and mdfio-plot --history treat them as they
treat md-workbench's.

A row of ops is one figure mdfio-compare tests: its rate (and, where fio
measured each operation, its latency quantiles). Which rows a workload has:
PostMark: per phase (pool, transactions, delete) each kind of operation it
did, and the transactions' own rate in the transactions phase; mdtest: per
phase and iteration its SUMMARY row's rate (mdtest's), with the phase's
latencies; the tree study: per section each operation and the names it went
through; IOzone: per test, file size and record size IOzone's KB/s."""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from .fiojson import (BadInput, Latency, document_header, iozone_sweep, is_mdtest, mdfio_sections, mdtest_phases,
                      postmark_phases)
from .figures import latency_seconds
from .mdtest import ROWS, TREE_ROWS, phase_rate

# the unit of each workload's rates: what mdfio-compare and the history
# figures print beside them
RATE_UNIT = {"md-workbench": "objects/s", "postmark": "ops/s", "mdtest": "ops/s", "tree": "ops/s",
             "iozone": "KB/s"}
# options that say where and how a run was written down, not what it did:
# left out of the configuration that makes runs comparable
NOT_COMPARED = ("directory", "root", "filename", "hosts", "ioengine", "description", "desc", "latency_log",
                "write_lat_log", "write_bw_log", "write_iops_log", "log_avg_msec", "output", "run_info_file",
                "percentile_list", "name", "new_group", "group_reporting")
NO_LATENCY = (None,) * 7
MDTEST_TITLE = dict((phase, title) for title, phase in ROWS + TREE_ROWS if phase)


@dataclass
class OpRow:
    """One row of ops: an operation (or a phase's own figure) of a phase,
    its rate in the workload's unit, count, failures and latency quantiles
    (figures.LATENCY's order; None where fio measured none)."""
    op: str
    rate: float | None
    count: int
    errors: int = 0
    latencies: Sequence[float | None] = NO_LATENCY


@dataclass
class PhaseRow:
    """One row of phases: a phase (repeat: mdtest's iteration, else 0), its
    fio section, ranks and time T, and its ops."""
    phase: str
    repeat: int
    section: str
    ranks: int
    t_s: float | None
    ops: list[OpRow] = field(default_factory=list)


@dataclass
class WorkloadRun:
    """A run of one of the other workloads, as the history records it."""
    workload: str
    name: str
    fio_version: str
    end: int
    runtime: int | None
    ranks: int
    hosts: list[str]
    root: str
    # what makes two runs comparable, beside the engine, ranks and hosts
    options: dict[str, Any]
    phases: list[PhaseRow]
    # why the run may not join the history (errors, a phase not completed)
    refused: str | None = None


def op_row(name: str, lats: Sequence[Latency], t: float | None, errors: int = 0) -> OpRow:
    """An operation over the latency objects of its ranks: its count (the
    samples), its rate over T, its quantiles as md-workbench's."""
    n = sum(o.n for o in lats)
    return OpRow(name, (n / t if t else None) if n else 0.0, n, errors,
                 latency_seconds(lats, n) if n else NO_LATENCY)


def _jobs(doc: dict[str, Any]) -> list[Any]:
    jobs = doc.get("client_stats", doc.get("jobs"))
    return [j for j in jobs if isinstance(j, dict) and j.get("jobname") != "All clients"] \
        if isinstance(jobs, list) else []


def _header(docs: Sequence[tuple[dict[str, Any], str]]) -> tuple[str, int, int | None, list[str]]:
    """fio's version, the last document's time, fio's run time in whole
    seconds (None from a fio client) and the fio servers' host names."""
    heads = [document_header(doc, name) for doc, name in docs]
    elapsed = [j["elapsed"] for doc, _ in docs for j in _jobs(doc) if isinstance(j.get("elapsed"), int)]
    # the hosts the ranks name, as md-workbench's runs record them; else
    # the fio servers a client reached
    ranked = {(j.rank, j.host) for doc, name in docs if not iozone_sweep([(doc, name)])
              for sec in mdfio_sections(doc, name) for j in sec.jobs if j.host}
    hosts = [h for _, h in sorted(ranked)]
    hosts = hosts or [str(j["hostname"]) for doc, _ in docs for j in _jobs(doc)
                      if "client_stats" in doc and "hostname" in j]
    return heads[0][0], max(end for _, end in heads), max(elapsed, default=None), list(dict.fromkeys(hosts))


def _options(docs: Sequence[tuple[dict[str, Any], str]]) -> tuple[str, dict[str, Any]]:
    """The run's directory and its sections' options that are compared:
    {"engine": ..., "sections": {name: {option: value}}}."""
    from .history import engine_name
    secs = mdfio_sections(*docs[0])
    opts = {s.name: {k: v for k, v in sorted(s.opts.items()) if k not in NOT_COMPARED} for s in secs}
    return secs[0].opts.get("directory", ""), {"engine": engine_name(secs[0].opts.get("ioengine", "")),
                                               "sections": opts}


def postmark_run(docs: Sequence[tuple[dict[str, Any], str]]) -> WorkloadRun:
    phases = [ph for doc, name in docs for ph in postmark_phases(doc, name)]
    kinds = [p.phase for p in phases]
    name = ", ".join(n for _, n in docs)
    if len(set(kinds)) != len(kinds):
        raise BadInput(f"{name}: phases {', '.join(kinds)}: more than one PostMark run; record each run by itself")
    rows = []
    for p in phases:
        row = PhaseRow(p.phase, 0, p.phase, 1, p.seconds)
        for op in ("create", "read", "append", "delete"):
            if p.latency[op].n or p.errors[op]:
                row.ops.append(op_row(op, [p.latency[op]], p.seconds, p.errors[op]))
        if p.phase == "transactions":
            n = p.expected["transactions"]
            row.ops.append(OpRow("transactions", n / p.seconds if p.seconds else None, n))
        rows.append(row)
    errors = sum(sum(p.errors.values()) for p in phases)
    refused = (f"the run reported {errors} errors" if errors else
               "PostMark ran out of files" if phases[0].expected["out_of_files"] else
               f"phase {next(r.phase for r in rows if r.t_s is None)} has no exact time"
               if any(r.t_s is None for r in rows) else None)
    version, end, runtime, hosts = _header(docs)
    root, options = _options(docs)
    return WorkloadRun("postmark", name, version, end, runtime, 1, hosts, root, options, rows, refused)


def mdtest_run(docs: Sequence[tuple[dict[str, Any], str]]) -> WorkloadRun:
    rows = []
    errors = 0
    for p in mdtest_phases(list(docs)):
        timed = [r.seconds for r in p.per_rank if r.seconds]
        t = max(timed) if timed else None
        failed = sum(r.failed for r in p.per_rank)
        errors += failed
        op = op_row(MDTEST_TITLE[p.phase], [r.latency for r in p.per_rank], t, failed)
        # mdtest's own rate of the phase (its SUMMARY row), not the samples over T
        op.rate = phase_rate(p, p.phase.startswith("tree_")) if t else None
        rows.append(PhaseRow(p.phase, p.iteration, p.name, p.ranks, t, [op]))
    version, end, runtime, hosts = _header(docs)
    root, options = _options(docs)
    ranks = max((r.ranks for r in rows), default=1)
    return WorkloadRun("mdtest", ", ".join(n for _, n in docs), version, end, runtime, ranks, hosts, root, options,
                       rows, f"the run reported {errors} errors" if errors else None)


def tree_run(docs: Sequence[tuple[dict[str, Any], str]]) -> WorkloadRun:
    from .tree import TreeRun
    run = TreeRun(docs)
    rows = []
    for p in run.phases:
        row = PhaseRow(p.phase, 0, p.section, p.ranks, p.t_s)
        # a search and a read repeat cold and warm: each section is its own phase
        row.phase = p.section
        for o in p.ops:
            if o.count or o.errors:
                row.ops.append(OpRow(o.name, (o.count / p.t_s if p.t_s else None), o.count, o.errors,
                                     [o.min_s, o.q1_s, o.median_s, o.q3_s, o.q90_s, o.q99_s, o.max_s]))
        row.ops.append(OpRow("names", p.names_per_s, p.names))
        rows.append(row)
    refused = (f"the run reported {run.errors} errors" if run.errors else
               f"job {run.incomplete[0].section} {run.incomplete[0].status}: {run.incomplete[0].reason}"
               if run.incomplete else "; ".join(run.failed) or None)
    version, end, runtime, hosts = _header(docs)
    root, options = _options(docs)
    return WorkloadRun("tree", run.name, version, end, runtime, max((p.ranks for p in run.phases), default=1),
                       hosts, root, options, rows, refused)


def iozone_run(docs: Sequence[tuple[dict[str, Any], str]]) -> WorkloadRun:
    from .iozone import TITLES, settings, sweep_cells
    # IOzone's order: file sizes, then record sizes, then its tests
    cells = sorted(sweep_cells(docs), key=lambda c: (c.file_kb, c.record_kb, list(TITLES).index(c.test)))
    s = settings(cells)
    rows = [PhaseRow(f"{c.test} {c.file_kb}KB", 0, f"iozone-{c.test}", 1, c.seconds,
                     # IOzone's rate, as its report prints it; a pass is
                     # one sweep of the file in records
                     [OpRow(f"record {c.record_kb}KB", float(c.kb_per_s), c.file_kb // c.record_kb)])
            for c in cells]
    version, end, runtime, hosts = _header(docs)
    options = {"engine": "psync", "direct": s.direct, "fsync": s.fsync, "cache_dropped": s.cache_dropped}
    return WorkloadRun("iozone", ", ".join(n for _, n in docs), version, end, runtime, 1, hosts, s.directory,
                       options, rows)


def workload_run(docs: Sequence[tuple[dict[str, Any], str]]) -> WorkloadRun | None:
    """The run of docs [(doc, name)] when it is one of the other workloads,
    told apart as mdfio-report tells them; None for md-workbench's."""
    from .tree import is_tree_run
    if iozone_sweep(docs):
        return iozone_run(docs)
    if any(postmark_phases(doc, name) for doc, name in docs):
        return postmark_run(docs)
    if is_tree_run(docs):
        return tree_run(docs)
    if is_mdtest(docs):
        return mdtest_run(docs)
    return None

