"""Turns fio's JSON output of an mdfio run into md-workbench's report.

    mdfio-report [--process-reports] [--format F | --json | --csv] [FILE...|-]

Formats: md-workbench (default, IOR's current md-workbench), md-real-io-2017
and md-real-io-2016 (the one-line formats of the MD-REAL-IO papers), and the
machine-readable --json and --csv (field names in README "Reports").

Reads --output-format=json or json+ (json+ carries latency histograms, which
the aggregated quantiles of several processes need), also a file of several
concatenated documents (--status-interval: the last counts) and client/server
JSON (client_stats). One run may be several files, one per fio process
(mpirun, srun: mdfio-report run.*.json), and a client's JSON many hosts: the
figures are over every rank of the run, each rank once in every phase.
Exit status: 0, 1 when the run reported errors, 2 when the input cannot be
used (one line on stderr).
"""
import csv
import datetime
import io
import json
import math
import sys

from .cli import ArgumentParser
from .fiojson import BadInput, error_line
from .figures import FIELDS, load_run


def local_time(epoch):
    """A time of fio's JSON (fiojson.document_header checked its range)."""
    return datetime.datetime.fromtimestamp(epoch).strftime("%Y-%m-%d %H:%M:%S")


def start_time(run):
    """The run's start: its end less fio's run time; n/a when fio's JSON
    gives no run time (a fio client's)."""
    return "n/a" if run.runtime is None else local_time(run.end - run.runtime)


def num(v, spec, unit=""):
    """A figure in format spec, then unit; 'n/a' for None (a time not
    measured, a rate over it)."""
    return "n/a" if v is None else format(v, spec) + unit


def e4(v):
    return num(v, ".4e", "s")


def md_workbench_line(f, aggregated=True):
    out = f"{f.phase} process max:{num(f.t_max_s, '.2f', 's')} "
    if aggregated:
        out += (f"min:{num(f.t_min_s, '.2f', 's')} mean: {num(f.t_mean_s, '.2f', 's')} "
                f"balance:{num(f.balance_pct, '.1f')} stddev:{num(f.t_stddev_s, '.1f')} ")
    if f.phase == "benchmark":
        out += (f"rate:{num(f.iops, '.1f')} iops/s objects:{f.objects} rate:{num(f.obj_per_s, '.1f')} obj/s "
                f"tp:{num(f.tp_mib_per_s, '.1f')} MiB/s op-max:{f.op_max_s:.4e}s")
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
    out += f" ({f.errors} errs" + ("!!!)" if f.errors else ")")
    if f.stonewall_iter:
        out += f" stonewall-iter:{f.stonewall_iter}"
    for op in order:
        lat = f.ops[op].latencies
        if lat:
            out += f" {op}(" + ", ".join(e4(v) for v in lat) + ")"
    return out


def process_label(run, p):
    """A process line's label: its global rank, and its host when the run
    spans more than one."""
    return f"{p.process}@{p.host}: " if run.multi_host else f"{p.process}: "


def render_md_workbench(run, process_reports):
    lines = [f"MD-Workbench total objects: {run.total_objects} workingset size: "
             f"{run.working_set:.3f} MiB (version: {run.version}) time: {start_time(run)}"]
    lines += [f"\t{k}={v}" for k, v in run.params().items()]
    if run.multi_host:
        lines.append(f"\treads-cross-hosts={run.reads_cross_hosts()}")
    for f in run.phases:
        lines.append(md_workbench_line(f))
        if process_reports:
            lines += [process_label(run, p) + md_workbench_line(p, aggregated=False) for p in f.processes]
    return lines


def md_real_io_line(f, read_only, with_iops):
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


def render_md_real_io(run, process_reports, era):
    start = start_time(run)
    title = f"MD-REAL-IO total objects: {run.total_objects}"
    if era == 2017:
        title += f" workingset size: {run.working_set:.3f} MiB"
    lines = [f"{title} (version: {run.version}) time: {start}"]
    p = run.params()
    lines += [f"\t{k}={p[k]}" for k in ("offset", "interface", "obj-per-proc", "precreate-per-set",
                                         "data-sets")]
    lines += ["\tlim-free-mem=0", "\tlim-free-mem-phase=0", f"\tobject-size={run.s}",
              f"\titerations={run.repeats}", f"\tstart-index={p['start-item']}"]
    present = {f.phase for f in run.phases}
    lines += [f"\trun-{ph}" for ph in ("precreate", "benchmark", "cleanup") if ph in present]
    if process_reports:
        lines.append("\tprocess-reports")
    lines += ["", f"\troot-dir={p['root']}", ""]
    read_only = p["read-only"] == 1
    for f in run.phases:
        lines.append(md_real_io_line(f, read_only, era == 2017))
        if process_reports:
            lines += [process_label(run, q) + md_real_io_line(q, read_only, era == 2017) for q in f.processes]
    lines.append(f"Total runtime: {num(run.runtime, 'd', 's')} time: {local_time(run.end)}")
    return lines


def records(run, process_reports):
    """The records of --json and --csv: a phase's, then its processes' when asked."""
    out = []
    for f in run.phases:
        out.append(f.record())
        if process_reports:
            out += [p.record() for p in f.processes]
    return out


def render_json(run, process_reports):
    params = {**run.params(), "hosts": len(run.hosts) or 1, "reads-cross-hosts": run.reads_cross_hosts()}
    # allow_nan=False: a NaN or inf figure is a bug, never JSON's Infinity
    return [json.dumps({"version": run.version, "parameters": params,
                        "total_objects": run.total_objects, "working_set_mib": run.working_set,
                        "records": records(run, process_reports)}, indent=1, allow_nan=False)]


def render_csv(run, process_reports):
    def cell(v):
        if isinstance(v, float) and not math.isfinite(v):
            raise ValueError(f"a figure is {v}: a bug in the figures")
        return "" if v is None else (repr(v) if isinstance(v, float) else str(v))
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(FIELDS)
    writer.writerows([cell(r[k]) for k in FIELDS] for r in records(run, process_reports))
    return buf.getvalue().splitlines()


RENDER = {"md-workbench": render_md_workbench,
          "md-real-io-2017": lambda run, pr: render_md_real_io(run, pr, 2017),
          "md-real-io-2016": lambda run, pr: render_md_real_io(run, pr, 2016),
          "json": render_json, "csv": render_csv}


def main(argv=None):
    ap = ArgumentParser(prog="mdfio-report", description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="*", default=["-"], metavar="FILE",
                    help="fio JSON output: one file, or one per fio process of the run (default: stdin)")
    ap.add_argument("--process-reports", action="store_true", help="one line (record) per process too")
    ap.add_argument("--format", choices=["md-workbench", "md-real-io-2017", "md-real-io-2016"],
                    default="md-workbench")
    ap.add_argument("--json", dest="format", action="store_const", const="json",
                    help="every figure as one JSON document")
    ap.add_argument("--csv", dest="format", action="store_const", const="csv",
                    help="every figure as CSV, one record per phase and repeat")
    args = ap.parse_args(argv)
    files = args.files or ["-"]
    if "-" in files and len(files) > 1:
        ap.error("'-' (stdin) is the only input when given")
    try:
        run = load_run(files)
        lines = RENDER[args.format](run, args.process_reports)
    except BadInput as e:
        print(error_line("mdfio-report", e), file=sys.stderr)
        return 2
    print("\n".join(lines))
    for line in run.failed():
        print(f"mdfio-report: {run.name}: {line}", file=sys.stderr)
    return 1 if run.errors else 0
