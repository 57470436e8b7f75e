"""Turns fio's JSON output of an mdfio run into md-workbench's report.

    mdfio-report [--process-reports] [-q] [--print-detailed-stats]
                 [--format F | --json | --csv] [FILE...|-]
    mdfio-report --follow [--timeout S] [...] [FILE|-]
    mdfio-report --record DB [--label TEXT] [--config NAME] [...] [FILE...|-]
    mdfio-report --html PAGE [--logs PREFIX] [...] [FILE...|-]

Formats: md-workbench (default, IOR's current md-workbench), md-workbench-2020
(IOR's md-workbench of November 2020, with its options as lines),
md-real-io-2017 and md-real-io-2016 (the one-line formats of the MD-REAL-IO
papers), and the machine-readable --json and --csv (field names in
docs/reports.md).

Reads --output-format=json or json+ (json+ carries latency histograms, which
the aggregated quantiles of several processes need), also a file of several
concatenated documents (--status-interval: the last counts) and client/server
JSON (client_stats). One run may be several files, one per fio process
(mpirun, srun: mdfio-report run.*.json), and a client's JSON many hosts: the
figures are over every rank of the run, each rank once in every phase.
With --follow it reads fio's output while fio writes it (--status-interval)
and prints each phase's lines as soon as every rank has completed it, a
live line while one runs, then the report (mdfio.follow).
A phase (or benchmark repeat) that not every rank of the run completed
(a host died, a rank failed) has a line saying which ranks and hosts and
why, and no figures (records: status, reason).
The JSON of jobfiles/md-workbench-under-load.fio (data jobs named load-...)
is reported as one comparison: md-workbench's benchmark under load beside
alone, with ratios, and the data jobs under load beside alone (text or
--json; docs/reports.md "Metadata under data load").
With --record DB it also keeps the run in a history database
(mdfio.history, docs/reports.md "History database"), unless the run did
not complete or had errors; a run of PostMark, mdtest, the tree study or
an IOzone sweep too, its own phases and operations (mdfio.workloads).
With --html PAGE it also writes one self-contained HTML page of the run
(mdfio.htmlpage): the report as printed, the parameters, the environment
and mdfio-plot's figures, embedded.
Exit status: 0, 1 when the run reported errors or a phase did not complete
on every rank (under data load also: a data job's error, or a data job
that ran outside the loaded benchmark), 2 when the input cannot be used
(one line on stderr).
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import datetime
import io
import json
import math
import sqlite3
import sys
from collections.abc import Sequence
from typing import Any

from .cli import ArgumentParser, positive_seconds
from . import postmark
from .fiojson import (BadInput, error_line, iozone_sweep, is_mdtest, load, mdtest_phases, postmark_phases,
                      read_documents)
from .figures import (DATA_FIGURES, FIELDS, OPS, DataFigures, LoadRun, PhaseFigures, PhaseMark, Run, ratio,
                      under_data_load)
from .follow import follow
from .mdtest import render as render_mdtest
from .tree import TreeRun, is_tree_run
from .tree import render as render_tree
from .tree import render_json as render_tree_json
from .history import (HistoryError, not_recordable, open_db, read_outputs, record, record_workload, recorded_as,
                      recorded_environment)
from .workloads import WorkloadRun, workload_run


def local_time(epoch: float) -> str:
    """A time of fio's JSON (fiojson.document_header checked its range)."""
    return datetime.datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M:%S")


def start_time(run: Run) -> str:
    """The run's start: its end less fio's run time; n/a when fio's JSON
    gives no run time (a fio client's)."""
    return "n/a" if run.runtime is None else local_time(run.end - run.runtime)


def num(v: float | None, spec: str, unit: str = "") -> str:
    """A figure in format spec, then unit; 'n/a' for None (a time not
    measured, a rate over it)."""
    return "n/a" if v is None else format(v, spec) + unit


def e4(v: float | None) -> str:
    return num(v, ".4e", "s")


def md_workbench_line(f: PhaseFigures, aggregated: bool = True, quiet: bool = False, spread: str = ".2f") -> str:
    """md-workbench's line of a phase; quiet as its -q (no error count
    without errors); spread: the format of min and mean ('.1f' in 2020)."""
    out = f"{f.phase} process max:{num(f.t_max_s, '.2f', 's')} "
    if aggregated:
        out += (f"min:{num(f.t_min_s, spread, 's')} mean: {num(f.t_mean_s, spread, 's')} "
                f"balance:{num(f.balance_pct, '.1f')} stddev:{num(f.t_stddev_s, '.1f')} ")
    if f.phase == "benchmark":
        out += (f"rate:{num(f.iops, '.1f')} iops/s objects:{f.objects} rate:{num(f.obj_per_s, '.1f')} obj/s "
                f"tp:{num(f.tp_mib_per_s, '.1f')} MiB/s op-max:{f.op_max_s:.4e}s")
        if f.waiting_factor > 1e-9:     # md-workbench's print_p_stat
            out += f" waiting_factor:{f.waiting_factor:.2f}"
        order = ("read", "stat", "create", "delete")
    elif f.phase == "precreate":
        out += (f"rate:{num(f.iops, '.1f')} iops/s dsets: {f.dsets} objects:{f.objects} "
                f"rate:{num(f.dset_per_s, '.3f')} dset/s rate:{num(f.obj_per_s, '.1f')} obj/s "
                f"tp:{num(f.tp_mib_per_s, '.1f')} MiB/s op-max:{f.op_max_s:.4e}s")
        order = ("create",)
    else:
        out += (f"rate:{num(f.iops, '.1f')} iops/s objects:{f.objects} dsets: {f.dsets} "
                f"rate:{num(f.obj_per_s, '.1f')} obj/s rate:{num(f.dset_per_s, '.3f')} dset/s "
                f"op-max:{f.op_max_s:.4e}s")
        order = ("delete",)
    if f.errors or not quiet:
        out += f" ({f.errors} errs" + ("!!!)" if f.errors else ")")
    if f.stonewall_iter and not quiet:
        out += f" stonewall-iter:{f.stonewall_iter}"
    for op in order:
        lat = f.ops[op].latencies
        if lat:
            out += f" {op}(" + ", ".join(e4(v) for v in lat) + ")"
    return out


def process_label(run: Run, p: PhaseFigures) -> str:
    """A process line's label: its global rank, and its host when the run
    spans more than one."""
    return f"{p.process}@{p.host}: " if run.multi_host else f"{p.process}: "


DETAILED_HEADER = "phase\t\td name\tcreate\tdelete\tob nam\tcreate\tread\tstat\tdelete\tt_inc_b\tt_no_bar\tthp\tmax_t"


def detailed_line(f: PhaseFigures) -> str:
    """md-workbench --print-detailed-stats's line of a phase: the counts
    of what succeeded, the phase time twice (md-workbench prints its phase
    time in both t_inc_b and t_no_bar), the throughput of objects written
    and read, and the longest operation; with errors, the error counts in
    their place, as md-workbench prints them instead."""
    ops = f.ops
    dsets = f.dsets or 0
    made, removed = (dsets, 0) if f.phase == "precreate" else (0, dsets) if f.phase == "cleanup" else (0, 0)
    errs = f.errors + f.dsets_undone
    if errs:
        undone = (f.dsets_undone, 0) if f.phase == "precreate" else (0, f.dsets_undone)
        counts = (*undone, *(ops[op].errors for op in ("create", "read", "stat", "delete")))
        return f"{f.phase} err\t" + "\t".join(map(str, counts))
    counts = (made, removed, *(ops[op].count for op in ("create", "read", "stat", "delete")))
    t = f.t_max_s
    # md-workbench's tp counts the objects written and read in every phase
    tp = 0.0 if ops["create"].count + ops["read"].count == 0 else f.tp_mib_per_s
    return (f"{f.phase} \t" + "\t".join(map(str, counts)) + f"\t{num(t, '.3f', 's')}\t{num(t, '.3f', 's')}"
            f"\t{num(tp, '.2f')} MiB/s {f.op_max_s:.4e}")


def header(run: Run, quiet: bool) -> list[str]:
    """md-workbench's lines before its first phase: Args (which its -q
    does not hold back: md-workbench prints it before reading -q), then,
    without -q, the total objects and md-workbench's warning of more
    steps than precreated objects (the engine refuses to run such a
    benchmark, but a run without one may have them), and a line naming
    mdfio-uring's issue=auto where a job chose how to issue operations."""
    lines = ["Args: md-workbench" + "".join(f' "{a}"' for a in run.md_workbench_args())]
    if not quiet:
        lines.append(f"MD-Workbench total objects: {run.total_objects} workingset size: "
                     f"{run.working_set:.3f} MiB (version: {run.version}) time: {start_time(run)}")
        if run.i > run.p:
            lines.append("WARNING: num > precreate, this may cause the situation that no objects are available to read")
        if run.chosen_issue():
            lines.append("mdfio-uring issue=auto: each job chose between io_uring and system calls, and one that "
                         "moved to the ring mid-phase said so on fio's error output")
    return lines


def footer(run: Run) -> list[str]:
    """md-workbench's last line: the run time (fio's elapsed: whole
    seconds from fio's start to its report) and the time of the end
    (fio's timestamp when it wrote its JSON)."""
    return [f"Total runtime: {num(run.runtime, 'd', 's')} time: {local_time(run.end)}"]


def mark_line(m: PhaseMark) -> str:
    """The line of a phase that not every rank completed, in every text
    format: the phase as its line begins, incomplete or not run, which
    repeat and job, and why, naming the ranks and hosts at fault. No
    figure: those of the ranks that completed it are not the phase's."""
    which = f"repeat {m.repeat}, job {m.section}" if m.phase == "benchmark" else f"job {m.section}"
    return f"{m.phase} {m.status} ({which}): {m.reason}"


def phase_block(run: Run, f: PhaseFigures | PhaseMark, opts: argparse.Namespace) -> list[str]:
    """The lines of phase f in the text format opts.format: its line, then
    its processes' with --process-reports; a phase that not every rank
    completed (a PhaseMark) has its mark line alone. The report prints
    these, and --follow each as soon as every rank has completed its phase."""
    if isinstance(f, PhaseMark):
        return [mark_line(f)]
    if opts.format.startswith("md-real-io"):
        read_only = run.params()["read-only"] == 1
        line = lambda x, whole: md_real_io_line(x, read_only, opts.format == "md-real-io-2017")
    elif opts.print_detailed_stats:
        line = lambda x, whole: detailed_line(x)
    else:
        spread = ".1f" if opts.format == "md-workbench-2020" else ".2f"
        line = lambda x, whole: md_workbench_line(x, aggregated=whole, quiet=opts.quiet, spread=spread)
    lines = [line(f, True)]
    if opts.process_reports:
        lines += [process_label(run, p) + line(p, False) for p in f.processes]
    return lines


def phase_lines(run: Run, opts: argparse.Namespace) -> list[str]:
    return [line for f in run.entries for line in phase_block(run, f, opts)]


def render_md_workbench(run: Run, opts: argparse.Namespace) -> list[str]:
    """IOR's md-workbench since its Nodemap (December 2022)."""
    lines = header(run, opts.quiet)
    # md-workbench prints its Nodemap whatever -q
    lines.insert(1, f"Nodemap: {run.nodemap()}")
    if opts.print_detailed_stats and not opts.quiet:
        lines.append(DETAILED_HEADER)
    lines += phase_lines(run, opts)
    return lines + ([] if opts.quiet else footer(run))


def option_lines_2020(run: Run, opts: argparse.Namespace) -> list[str]:
    """The option lines of IOR's md-workbench of November 2020: every
    option with a value in its table's order, `\tname=value`, an integer
    or float value followed by a space; then each flag set, by name; then
    mdfio's own parameters, which md-workbench has not."""
    p = run.params()
    adaptive, repeats, factor = run.waiting()
    present = {x.phase for x in run.sections}
    phases = [ph for ph in ("precreate", "benchmark", "cleanup") if ph in present]
    value = lambda key: next((v for v in (x.opt(key) for x in run.sections) if v), "")
    lines = [f"\toffset={p['offset']} ", "\tapi=POSIX", f"\tobj-per-proc={run.i} ", f"\tlatency={value('latency_log')}",
             f"\tprecreate-per-set={run.p} ", f"\tdata-sets={run.d} ", f"\to={p['root']}",
             f"\tobject-size={run.s} ", f"\titerations={repeats} ",
             f"\twaiting-time={0.0 if adaptive or factor is None else float(factor):.6f} ",
             f"\tstonewall-timer={max(x.int_opt('stonewall_timer') for x in run.sections)} ",
             f"\tstart-item={p['start-item']}",
             f"\trun-info-file={value('run_info_file') or 'md-workbench.status'}"]
    flags = [("latency-all", any(x.bool_opt("latency_all") for x in run.sections)),
             ("adaptive-waiting", adaptive),
             # md-workbench sets all three phases when none is given
             ("run-precreate", "precreate" in phases), ("run-benchmark", "benchmark" in phases),
             ("run-cleanup", "cleanup" in phases),
             ("stonewall-wear-out", any(x.bool_opt("stonewall_wear_out") for x in run.sections)),
             ("print-detailed-stats", opts.print_detailed_stats), ("read-only", p["read-only"] == 1),
             ("ignore-precreate-errors", any(x.bool_opt("ignore_precreate_errors") for x in run.sections)),
             ("process-reports", opts.process_reports),
             ("verbose", any(x.int_opt("verbose") for x in run.sections))]
    lines += [f"\t{name}" for name, on in flags if on]
    lines += [f"\t{k}={p[k]}" for k in ("interface", "iodepth", "ranks")]
    if run.multi_host:
        lines.append(f"\treads-cross-hosts={run.reads_cross_hosts()}")
    return lines


def render_md_workbench_2020(run: Run, opts: argparse.Namespace) -> list[str]:
    """IOR's md-workbench of November 2020 (its first commits in IOR,
    before 4.0.0rc1): no Nodemap, its options as lines and a blank line
    after the header, min and mean with one decimal."""
    lines = header(run, opts.quiet)
    if not opts.quiet:
        lines += option_lines_2020(run, opts) + [""]
        if opts.print_detailed_stats:
            lines.append(DETAILED_HEADER)
    lines += phase_lines(run, opts)
    return lines + ([] if opts.quiet else footer(run))


def md_real_io_line(f: PhaseFigures, read_only: bool, with_iops: bool) -> str:
    """MD-REAL-IO's line; in that era the benchmark's obj counted created
    objects (read ones when read-only) and iops was 4 per object."""
    iops = f" {num(f.iops, '.1f')} iops/s" if with_iops else ""
    errs = f"({f.errors} errs)"
    t = num(f.t_max_s, ".1f", "s")
    if f.phase == "benchmark":
        objects = f.ops["read" if read_only else "create"].count
        rate = 0.0 if objects == 0 else objects / f.t_max_s if f.t_max_s is not None else None
        step_rate = None if rate is None else rate * (2 if read_only else 4)
        iops = f" {num(step_rate, '.1f')} iops/s" if with_iops else ""
        return (f"benchmark {t}{iops} {objects} obj {num(rate, '.1f')} obj/s {num(f.tp_mib_per_s, '.1f')} Mib/s "
                f"{errs}")
    if f.phase == "precreate":
        return (f"precreate {t}{iops} {f.dsets} dset {f.objects} obj {num(f.dset_per_s, '.3f')} dset/s "
                f"{num(f.obj_per_s, '.1f')} obj/s {num(f.tp_mib_per_s, '.1f')} Mib/s {errs}")
    return (f"cleanup {t}{iops} {f.objects} obj {f.dsets} dset {num(f.obj_per_s, '.1f')} obj/s "
            f"{num(f.dset_per_s, '.3f')} dset/s {errs}")


def render_md_real_io(run: Run, opts: argparse.Namespace, era: int) -> list[str]:
    start = start_time(run)
    title = f"MD-REAL-IO total objects: {run.total_objects}"
    if era == 2017:
        title += f" workingset size: {run.working_set:.3f} MiB"
    lines = [f"{title} (version: {run.version}) time: {start}"]
    p = run.params()
    lines += [f"\t{k}={p[k]}" for k in ("offset", "interface", "obj-per-proc", "precreate-per-set",
                                         "data-sets")]
    lines += [f"\tlim-free-mem={p['lim-free-mem']}", f"\tlim-free-mem-phase={p['lim-free-mem-phase']}",
              f"\tobject-size={run.s}",
              f"\titerations={run.repeats}", f"\tstart-index={p['start-item']}"]
    present = {f.phase for f in run.entries}
    lines += [f"\trun-{ph}" for ph in ("precreate", "benchmark", "cleanup") if ph in present]
    if opts.process_reports:
        lines.append("\tprocess-reports")
    lines += ["", f"\troot-dir={p['root']}", ""]
    lines += phase_lines(run, opts)
    lines.append(f"Total runtime: {num(run.runtime, 'd', 's')} time: {local_time(run.end)}")
    return lines


def records(run: Run, process_reports: bool) -> list[dict[str, Any]]:
    """The records of --json and --csv: a phase's, then its processes' when
    asked; a phase that not every rank completed has its record alone."""
    out = []
    for f in run.entries:
        out.append(f.record())
        if process_reports and not isinstance(f, PhaseMark):
            out += [p.record() for p in f.processes]
    return out


def render_json(run: Run, opts: argparse.Namespace) -> list[str]:
    process_reports = opts.process_reports
    params = {**run.params(), "hosts": len(run.hosts) or 1, "reads-cross-hosts": run.reads_cross_hosts()}
    # allow_nan=False: a NaN or inf figure is a bug, never JSON's Infinity
    return [json.dumps({"version": run.version, "parameters": params,
                        "total_objects": run.total_objects, "working_set_mib": run.working_set,
                        "records": records(run, process_reports)}, indent=1, allow_nan=False)]


def render_csv(run: Run, opts: argparse.Namespace) -> list[str]:
    process_reports = opts.process_reports
    def cell(v):
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"a figure is {v}: a bug in the figures")
        return "" if v is None else (repr(v) if isinstance(v, float) else str(v))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(FIELDS)
    writer.writerows([cell(r[k]) for k in FIELDS] for r in records(run, process_reports))
    return buf.getvalue().splitlines()


# md-workbench's figures of a benchmark repeat the comparison gives: (label,
# a function of PhaseFigures, format); then each operation's quantiles
LOAD_RATES = (("time", lambda f: f.t_max_s, "e4"), ("rate iops/s", lambda f: f.iops, ".1f"),
              ("rate obj/s", lambda f: f.obj_per_s, ".1f"), ("tp MiB/s", lambda f: f.tp_mib_per_s, ".1f"))
QUANTILE_NAMES = {"q1_s": "q1", "median_s": "median", "q3_s": "q3", "q90_s": "q90", "q99_s": "q99"}
DATA_LABELS = {"mib_per_s": ("MiB/s", ".1f"), "iops": ("IOPS", ".1f"), "p50_s": ("p50", "e4"),
               "p99_s": ("p99", "e4"), "runtime_s": ("runtime", "e4")}


def load_rows(f: PhaseFigures) -> list[tuple[str, float | None, str]]:
    """(label, value, format) of a benchmark repeat's compared figures."""
    rows = [(label, get(f), spec) for label, get, spec in LOAD_RATES]
    for op in OPS:
        o = f.ops[op]
        rows += [(f"{op} {QUANTILE_NAMES[k]}", getattr(o, k) if o.count else None, "e4") for k in QUANTILE_NAMES]
    return rows


def data_rows(f: DataFigures | None) -> list[tuple[str, float | None, str]]:
    return [(DATA_LABELS[k][0], None if f is None else getattr(f, k), DATA_LABELS[k][1]) for k in DATA_FIGURES]


def cell(v: float | None, spec: str) -> str:
    return e4(v) if spec == "e4" else num(v, spec)


def table(title: str, alone: list, loaded: list) -> list[str]:
    """A comparison table: a row per figure, alone, under load, ratio."""
    lines = [f"{title:<30} {'alone':>14} {'under load':>14} {'ratio':>8}"]
    for (label, a, spec), (_, b, _) in zip(alone, loaded):
        lines.append(f"  {label:<28} {cell(a, spec):>14} {cell(b, spec):>14} {num(ratio(b, a), '.3f'):>8}")
    return lines


def load_window(load: LoadRun) -> str:
    """The line saying where the data jobs under load ran."""
    groups = ", ".join(map(str, sorted(load.benchmark_groups()))) or "none"
    loaded = [j for j in load.data if not j.alone]
    longest = max((j.runtime_ms for j in loaded), default=0) / 1000.0
    return (f"data jobs under load: in fio group {groups} with the loaded benchmark repeats; the longest ran "
            f"{longest:.3f} s, the benchmark {num(load.benchmark_time(), '.3f', ' s')}")


def render_load(load: LoadRun, opts: argparse.Namespace) -> list[str]:
    """The comparison of a run under data load, as text."""
    lines = [f"md-workbench under data load (version: {load.alone.version}) time: {start_time(load.alone)}",
             "Args: md-workbench" + "".join(f' "{a}"' for a in load.alone.md_workbench_args())]
    for k, a, b in load.benchmarks:
        title = f"benchmark {k}"
        if isinstance(a, PhaseFigures) and isinstance(b, PhaseFigures):
            lines += table(title, load_rows(a), load_rows(b))
            continue
        lines.append(f"{title}: no comparison")
        lines += [f"  {'alone' if f is a else 'under load'}: " + (mark_line(f) if f is not None else "not in the run")
                  for f in (a, b) if not isinstance(f, PhaseFigures)]
    for key, slot, a, b in load.pairs:
        lines += table(f"data {key} ({slot})", data_rows(a), data_rows(b))
    lines.append(load_window(load))
    lines += [f"PROBLEM: {p}" for p in load.problems]
    return lines + footer(load.loaded)


def render_load_json(load: LoadRun, opts: argparse.Namespace) -> list[str]:
    """The comparison as one JSON document: each benchmark repeat's records
    (those of --json) alone and under load with the ratio of every figure,
    each data job's figures alone and under load with their ratios."""
    def ratios(a, b, keys):
        return {k: ratio(b[k], a[k]) if isinstance(a.get(k), (int, float)) and isinstance(b.get(k), (int, float))
                else None for k in keys}
    keys = [k for k in FIELDS if k.endswith(("_s", "iops", "per_s", "_pct")) or k in ("objects",)]
    bench = []
    for k, a, b in load.benchmarks:
        ra, rb = (None if f is None else f.record() for f in (a, b))
        bench.append({"repeat": k, "alone": ra, "loaded": rb,
                      "ratio": ratios(ra, rb, keys) if ra is not None and rb is not None else None})
    data = []
    for key, slot, a, b in load.pairs:
        ra, rb = (None if f is None else f.record() for f in (a, b))
        data.append({"job": key, "slot": slot, "alone": ra, "loaded": rb,
                     "ratio": ratios(ra, rb, DATA_FIGURES) if ra is not None and rb is not None else None})
    doc = {"version": load.alone.version, "parameters": load.alone.params(),
           "md_workbench_args": load.alone.md_workbench_args(), "benchmark": bench, "data": data,
           "window": {"fio_groups": sorted(load.benchmark_groups()), "benchmark_s": load.benchmark_time(),
                      "data_runtime_s": {j.name: j.runtime_ms / 1000.0 for j in load.data}},
           "problems": load.problems}
    return [json.dumps(doc, indent=1, allow_nan=False)]


def check_load_options(args: argparse.Namespace) -> str | None:
    """Why the options do not apply to a run under data load; None if they do."""
    if args.format not in ("md-workbench", "json"):
        return f"--format {args.format}" if args.format != "csv" else "--csv"
    for flag, given in (("--process-reports", args.process_reports), ("-q/--quiet", args.quiet),
                        ("--print-detailed-stats", args.print_detailed_stats), ("--record", args.record),
                        ("--html", args.html)):
        if given:
            return flag
    return None


RENDER = {"md-workbench": render_md_workbench, "md-workbench-2020": render_md_workbench_2020,
          "md-real-io-2017": lambda run, opts: render_md_real_io(run, opts, 2017),
          "md-real-io-2016": lambda run, opts: render_md_real_io(run, opts, 2016),
          "json": render_json, "csv": render_csv}


def report_load(load: LoadRun, args: argparse.Namespace, notes: list[str]) -> int:
    """Prints the comparison of a run under data load; its exit status."""
    refused = check_load_options(args)
    if refused is not None:
        print(f"mdfio-report: {load.name}: {refused}: a run under data load is reported as its comparison "
              "(text or --json), and not recorded", file=sys.stderr)
        return 2
    lines = (render_load_json if args.format == "json" else render_load)(load, args)
    print("\n".join(lines))
    for note in notes:
        print(f"mdfio-report: {note}", file=sys.stderr)
    for run in (load.alone, load.loaded):
        for line in run.failed():
            print(f"mdfio-report: {load.name}: {line}", file=sys.stderr)
        if run.marks:
            print(f"mdfio-report: {load.name}: {run.not_completed()}", file=sys.stderr)
    for problem in load.problems:
        print(f"mdfio-report: {load.name}: {problem}", file=sys.stderr)
    return 1 if load.errors or load.marks or load.problems else 0


def report_tree(docs: Sequence[tuple[dict[str, Any], str]], args: argparse.Namespace) -> int:
    """A run of mdfio-tree, the tree study: its phases' lines, or --json."""
    given = [flag for flag, on in (("--html", args.html is not None), ("--process-reports", args.process_reports),
                                   ("-q", args.quiet), ("--print-detailed-stats", args.print_detailed_stats))
             if on]
    if given or args.format not in ("md-workbench", "json"):
        what = given[0] if given else f"--format {args.format}"
        raise BadInput(f"{docs[0][1]}: a run of mdfio-tree: {what} is md-workbench's; expected the default "
                       "lines or --json")
    run = TreeRun(docs)
    print("\n".join(render_tree_json(run) if args.format == "json" else render_tree(run)))
    for line in run.failed:
        print(f"mdfio-report: {run.name}: {line}", file=sys.stderr)
    for p in run.incomplete:
        print(f"mdfio-report: {run.name}: job {p.section} {p.status}: {p.reason}", file=sys.stderr)
    return 1 if run.errors or run.incomplete or run.failed else 0


def write_html(path: str, run: Run, lines: Sequence[str], logs: str | None, recorded: dict[str, Any] | None) -> None:
    """--html: the page of run, with the environment recorded with it
    (history.recorded_environment), else as captured now."""
    # loaded for --html only: the page's module brings the plotting in
    from .htmlpage import run_page, write_page
    write_page(path, run_page(run, lines, logs, recorded))


def report_postmark(phases: list) -> int:
    """An mdfio-postmark run: PostMark's report and mdfio's lines
    (docs/postmark.md); 1 if an operation failed."""
    print("\n".join(postmark.render_hosts(phases)))
    errors = sum(sum(p.errors.values()) for p in phases)
    if errors:
        print(f"mdfio-report: {errors} postmark operations failed: the counts above are those done",
              file=sys.stderr)
    return 1 if errors else 0


def report_workload(docs: Sequence[tuple[dict[str, Any], str]], args: argparse.Namespace) -> int | None:
    """Prints the report of a run of another workload than md-workbench
    (an IOzone sweep, PostMark, the tree study, mdtest); its exit status,
    None for md-workbench's run."""
    if iozone_sweep(docs):
        # the kept JSON of mdfio-iozone (docs/iozone.md)
        from .iozone import report_sweep
        print("\n".join(report_sweep(docs, args.format)))
        return 0
    phases = [ph for doc, name in docs for ph in postmark_phases(doc, name)]
    if phases:
        if args.format != "md-workbench":
            raise BadInput(f"--format {args.format}: a run of mdfio-postmark has PostMark's report only "
                           "(no --format, --json or --csv)")
        return report_postmark(phases)
    if is_tree_run(docs):
        return report_tree(docs, args)
    if is_mdtest(docs):
        # mdfio-mdtest's run: mdtest's own report (mdtest.py)
        if args.format != "md-workbench" or args.follow or args.html:
            raise BadInput(f"{docs[0][1]}: an mdfio-mdtest run: its report is mdtest's table alone "
                           "(no --format, --json, --csv, --follow or --html)")
        print("\n".join(render_mdtest(mdtest_phases(list(docs)))))
        return 0
    return None


def record_workload_run(run: WorkloadRun, docs: Sequence[tuple[dict[str, Any], str]],
                        outputs: Sequence[tuple[str, str]], db: sqlite3.Connection, args: argparse.Namespace) -> int:
    """--record of another workload's run: its report (refused options
    refused before anything is recorded), the run recorded, then the report
    printed; its exit status."""
    try:
        if args.html is not None:
            raise BadInput(f"--html: a run of {run.workload} has no page (md-workbench's runs have one)")
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            rc = report_workload(docs, args)
        why = run.refused
        earlier = recorded_as(db, outputs)
        if why is None and earlier is not None:
            why = f"already recorded as run {earlier}"
        recorded = None if why else record_workload(db, run, outputs, label=args.label, config_name=args.config)
    except BadInput as e:
        print(error_line("mdfio-report", e), file=sys.stderr)
        return 2
    except (HistoryError, sqlite3.Error) as e:
        print(f"mdfio-report: --record {args.record}: {e}", file=sys.stderr)
        return 2
    finally:
        db.close()
    sys.stdout.write(printed.getvalue())
    if recorded is not None:
        print(f"mdfio-report: recorded run {recorded} in {args.record}", file=sys.stderr)
    else:
        print(f"mdfio-report: --record {args.record}: {run.name}: not recorded: {why}", file=sys.stderr)
    return rc or 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = ArgumentParser(prog="mdfio-report", description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", default=["-"], metavar="FILE",
                    help="fio JSON output: one file, or one per fio process of the run (default: stdin)")
    ap.add_argument("--process-reports", action="store_true", help="one line (record) per process too")
    ap.add_argument("--format", choices=["md-workbench", "md-workbench-2020", "md-real-io-2017", "md-real-io-2016"],
                    default="md-workbench")
    ap.add_argument("-q", "--quiet", action="store_true",
                    help="as md-workbench -q: no header, footer or error count without errors")
    ap.add_argument("--print-detailed-stats", action="store_true",
                    help="md-workbench's tab-separated counts and times instead of the phase lines")
    ap.add_argument("--json", dest="format", action="store_const", const="json",
                    help="every figure as one JSON document")
    ap.add_argument("--csv", dest="format", action="store_const", const="csv",
                    help="every figure as CSV, one record per phase and repeat")
    ap.add_argument("--follow", action="store_true",
                    help="read fio's output while fio writes it (--status-interval): each phase's lines as soon as "
                         "it has ended on every rank, a live line while one runs, then the report; FILE until no "
                         "process writes it, stdin until its end")
    ap.add_argument("--timeout", type=positive_seconds, metavar="S",
                    help="with --follow: give up after S seconds with nothing new from fio (default 60)")
    ap.add_argument("--record", metavar="DB",
                    help="also keep the run in the history database DB (SQLite, made if missing): its JSON, "
                         "parameters, environment and figures; a run with errors or a phase not completed is "
                         "refused")
    ap.add_argument("--label", metavar="TEXT", help="with --record: the run's label (a note, not compared)")
    ap.add_argument("--config", metavar="NAME",
                    help="with --record: the name of the configuration, part of what makes runs comparable")
    ap.add_argument("--html", metavar="PAGE",
                    help="also write one self-contained HTML page of the run: the report as printed, its parameters "
                         "and environment, and mdfio-plot's figures embedded (no other file, no script)")
    ap.add_argument("--logs", metavar="PREFIX",
                    help="with --html: the latency_log= prefix of the run, for mdfio-plot's timelines and histograms")
    args = ap.parse_args(argv)
    files = args.files or ["-"]
    if "-" in files and len(files) > 1:
        ap.error("'-' (stdin) is the only input when given")
    for flag, given in (("-q/--quiet", args.quiet), ("--print-detailed-stats", args.print_detailed_stats)):
        if given and not args.format.startswith("md-workbench"):
            ap.error(f"{flag}: expected with --format md-workbench or md-workbench-2020, not {args.format}")
    if args.follow:
        if len(files) > 1:
            ap.error(f"--follow: expected one FILE or -, not {len(files)} files")
        if args.format in ("json", "csv"):
            ap.error(f"--follow: expected with a format of lines (--format), not --{args.format}")
        args.timeout = 60.0 if args.timeout is None else args.timeout
    elif args.timeout is not None:
        ap.error("--timeout: expected with --follow")
    for flag, given in (("--label", args.label), ("--config", args.config)):
        if given is not None and args.record is None:
            ap.error(f"{flag}: expected with --record")
    if args.logs is not None and args.html is None:
        ap.error("--logs: expected with --html")
    if args.html is not None and (args.follow or args.format in ("json", "csv")):
        ap.error(f"--html: not with {'--follow' if args.follow else '--' + args.format} (the page holds a report "
                 "of lines: give --html on the file fio wrote once the run has ended)")
    if args.record is not None and args.follow:
        ap.error("--record: not with --follow (record the file fio wrote once the run has ended)")
    notes = []
    db = outputs = None
    try:
        # the database first: one that cannot be used is refused before
        # anything is printed
        if args.record is not None:
            db = open_db(args.record)
        if args.follow:
            run, notes = follow(files[0], args, phase_block, sys.stdout)
            docs = run.docs
        elif db is not None:
            outputs = read_outputs(files)
            # read as history.run_of reads them
            docs = [(read_documents(text, name)[-1], name) for name, text in outputs]
            workload = workload_run(docs)
            if workload is not None:
                return record_workload_run(workload, docs, outputs, db, args)
            run = None if under_data_load(docs) else Run(docs)
        else:
            docs = [load(p) for p in files]
            rc = report_workload(docs, args)
            if rc is not None:
                return rc
            run = None if under_data_load(docs) else Run(docs)
        if under_data_load(docs):
            if db is not None:
                db.close()
            return report_load(LoadRun(docs), args, notes)
        lines = RENDER[args.format](run, args)
    except BadInput as e:
        print(error_line("mdfio-report", e), file=sys.stderr)
        return 2
    except HistoryError as e:
        print(f"mdfio-report: --record {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        # Ctrl-C while following: the live line is gone, no traceback
        return 130
    # recorded before the report is printed: a reader that closes the
    # pipe early (| head) ends the tool at its next write
    recorded = why = env = None
    if db is not None and outputs is not None:
        try:
            earlier = recorded_as(db, outputs)
            why = not_recordable(run) or (f"already recorded as run {earlier}" if earlier is not None else None)
            if why is None:
                recorded = record(db, run, outputs, label=args.label, config_name=args.config)
            # the page shows the environment as the history holds it
            if args.html is not None and (recorded or earlier) is not None:
                env = recorded_environment(db, recorded or earlier)
        except (HistoryError, sqlite3.Error) as e:
            print(f"mdfio-report: --record {args.record}: {e}", file=sys.stderr)
            return 2
        finally:
            db.close()
    if args.html is not None:
        try:
            write_html(args.html, run, lines, args.logs, env)
        except BadInput as e:
            print(error_line("mdfio-report", e), file=sys.stderr)
            return 2
    print("\n".join(lines))
    for note in notes:
        print(f"mdfio-report: {note}", file=sys.stderr)
    for line in run.failed():
        print(f"mdfio-report: {run.name}: {line}", file=sys.stderr)
    # said on stderr too: --json, --csv or a pipe may hide the marks
    if run.marks and run.refused():
        print(f"mdfio-report: {run.name}: {run.refused()}", file=sys.stderr)
    if run.marks:
        print(f"mdfio-report: {run.name}: {run.not_completed()}", file=sys.stderr)
    if recorded is not None:
        print(f"mdfio-report: recorded run {recorded} in {args.record}", file=sys.stderr)
    elif db is not None:
        print(f"mdfio-report: --record {args.record}: {run.name}: not recorded: {why}", file=sys.stderr)
    return 1 if run.errors or run.marks else 0
