"""Draws an mdfio run with gnuplot, as PNG (1200x800) and SVG.

    mdfio-plot RUN.json [RUN.json ...] [--logs PREFIX [--window SEC]] [--out DIR]
    mdfio-plot --scaling LABEL=RUN.json[,RUN.json...] [LABEL=... ...] [--out DIR]
    mdfio-plot --study DB [--label L] [--out DIR]
    mdfio-plot --history DB [--config NAME] [--label L] [--alpha A] [--min-history N] [--out DIR]

The first form draws each phase (precreate, every benchmark repeat, cleanup)
from fio's JSON (json+) and the per-operation latency logs that the engine
option latency_log=PREFIX wrote (md-workbench -L): a latency timeline per
operation type, boxplots of the four operations, latency histograms, the
exact latency quantiles of each time window with the operations completed
per second (mdfio.plot_windows), and the rate of every benchmark repeat;
without --logs only the boxplots and the rates, which fio's JSON alone
gives. The second form draws objects/s per phase
against the number of ranks, one line per label (the layout of the
MD-REAL-IO report's figures). The third draws a study's runs from the
history database (mdfio.plot_study), the fourth a configuration's runs over
time with mdfio-compare's bands (mdfio.plot_history). A run is one JSON file, or one per fio process
of the run (mpirun, srun), comma-separated in --scaling; its figures are over
every rank of every host, as mdfio-report's. Every figure is written with the data file and gnuplot script that
make it. A phase not every rank of the run completed (a host died) is not
drawn: a line on stderr names it. Exit status: 0; 1 when a phase was not
drawn so; 2 with one line on stderr.
"""
from __future__ import annotations

import math
import os
import re
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from .cli import ArgumentParser, positive_int, positive_seconds
from .compare import alpha, at_least_two
from .fiojson import CONTROL, BadInput, error_line, iozone_sweep, load
from .figures import OPS, PhaseFigures, Run, load_run

SIZE = (1200, 800)
COLORS = {"create": "#1b9e77", "stat": "#d95f02", "read": "#7570b3", "delete": "#e7298a"}
BINS_PER_DECADE = 40


def label(f: PhaseFigures) -> str:
    return f.phase if f.phase != "benchmark" else f"benchmark-{f.repeat}"


def scope_note(run: Run) -> str:
    """What a title adds for a run over many hosts: its ranks and hosts."""
    return f" ({run.ranks} ranks on {len(run.hosts)} hosts)" if run.multi_host else ""


def gp(text: object) -> str:
    """text as a gnuplot string: single-quoted, a quote doubled, a control
    character (a label's line break) shown as '?'."""
    return "'" + CONTROL.sub("?", str(text)).replace("'", "''") + "'"


def write(path: Path, text: str) -> None:
    """Writes a file of the figures; a failure names it."""
    try:
        path.write_text(text)
    except OSError as e:
        raise BadInput(f"{path}: cannot write it: {e.strerror}") from None


def gnuplot(out: Path, name: str, body: str) -> None:
    """Writes <name>.gp and runs it for the PNG and the SVG."""
    script = out / f"{name}.gp"
    text = []
    for term, ext in (("pngcairo noenhanced font ',13'", "png"), ("svg noenhanced font ',13'", "svg")):
        text += [f"set terminal {term} size {SIZE[0]},{SIZE[1]}", f"set output {gp(out / (name + '.' + ext))}",
                 body, "unset output"]
    write(script, "\n".join(text) + "\n")
    try:
        proc = subprocess.run(["gnuplot", str(script)], capture_output=True, text=True, errors="replace")
    except FileNotFoundError:
        raise BadInput("gnuplot: not found: mdfio-plot draws its figures with gnuplot (package gnuplot)") from None
    if proc.returncode:
        said = proc.stderr.strip().splitlines()
        raise BadInput(f"{script}: gnuplot failed on it: {said[-1] if said else f'exit status {proc.returncode}'}")


def output_dir(out: Path) -> None:
    """Makes the directory of the figures, its parents too, if missing:
    one line if it cannot be made or written."""
    try:
        out.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise BadInput(f"--out {out}: is not a directory") from None
    except OSError as e:
        raise BadInput(f"--out {out}: cannot create it: {e.strerror}") from None
    if not os.access(out, os.W_OK | os.X_OK):
        raise BadInput(f"--out {out}: not writable")


def log_files(prefix: str, run: Run) -> dict[str, dict[str, Path | None]]:
    """The merged log of each operation of each phase, matched to the JSON's
    sections: precreate is iteration 0, the benchmark repeats take the
    benchmark iterations found in order, cleanup the cleanup file."""
    base = Path(prefix)
    folder, stem = base.parent, base.name
    found = {}
    if not folder.is_dir():
        raise BadInput(f"--logs {prefix}: no such directory {folder}")
    pat = re.compile(re.escape(stem) +
                     r"-[0-9]+\.[0-9][0-9]-([0-9]+)-(precreate|cleanup|read|stat|create|delete)-all\.csv")
    for p in folder.iterdir():
        m = pat.fullmatch(p.name)
        if m:
            found.setdefault(m.group(2), {})[int(m.group(1))] = p
    if not found:
        raise BadInput(f"--logs {prefix}: no latency logs there ({stem}-0.00-<iteration>-<op>-all.csv; "
                       f"run fio with latency_log={prefix} and latency_all=1: without it only rank 0 logs, as in md-workbench)")
    bench_iters = sorted(found.get("read", {}))
    out = {}
    for f in run.phases:
        key = label(f)
        if f.phase == "precreate":
            out[key] = {"create": found.get("precreate", {}).get(0)}
        elif f.phase == "cleanup":
            its = sorted(found.get("cleanup", {}))
            out[key] = {"delete": found["cleanup"][its[-1]] if its else None}
        else:
            it = bench_iters[f.repeat - 1] if f.repeat <= len(bench_iters) else None
            out[key] = {op: (found.get(op, {}).get(it) if it is not None else None) for op in OPS}
        for op, path in out[key].items():
            if f.ops[op].count and path is None:
                raise BadInput(f"--logs {prefix}: no log of {op} for {key}; the logs are from another run")
    return out


# what the engine writes (engines/lib/oplog.c): the header, then a row per
# operation of two non-negative decimal numbers of seconds ('12.345678901'),
# each line ended and at most 43 bytes long; a byte no row holds
LOG_HEADER = b"time,runtime\n"
NOT_IN_A_ROW = re.compile(rb"[^0-9.,\n]")
ROW_MAX = 64


def read_log(path: Path, expect: int, cache: dict[Path, list[tuple[float, float]]]) -> list[tuple[float, float]]:
    """Rows (start s, latency s) of a latency log, checked against what
    the engine writes, read once into cache; their count must be the JSON's
    operations. A log at fault is named, with the line."""
    if path not in cache:
        try:
            data = Path(path).read_bytes()
        except IsADirectoryError:
            raise BadInput(f"{path}: is a directory, expected a latency log") from None
        except OSError as e:
            raise BadInput(f"{path}: cannot read it: {e.strerror}") from None
        if not data.startswith(LOG_HEADER):
            what = "is empty" if not data else "does not begin with the line 'time,runtime'"
            raise BadInput(f"{path}: {what}: not a latency log of the engine")
        body = data[len(LOG_HEADER):]
        rows, lines = None, body.splitlines()
        if body[-1:] in (b"", b"\n") and not NOT_IN_A_ROW.search(body) and max(map(len, lines), default=0) <= ROW_MAX:
            try:
                rows = [(float(t), float(d)) for t, d in (line.split(b",") for line in lines)]
            except ValueError:
                pass
        if rows is None:
            raise _log_fault(path, body)
        cache[path] = rows
    rows = cache[path]
    if len(rows) != expect:
        raise BadInput(f"{path}: {len(rows)} rows, but the run's JSON has {expect} operations: "
                       "the logs are from another run")
    return rows


def _log_fault(path, body):
    """The BadInput of the first line of a log's rows that is not a row."""
    lines = body.split(b"\n")
    for n, line in enumerate(lines[:-1], 2):
        if not _is_row(line):
            return BadInput(f"{path}:{n}: not a row 'time,runtime' of two non-negative decimal numbers (seconds)")
    assert lines[-1], "read_log refused rows that are all whole"
    return BadInput(f"{path}:{len(lines) + 1}: cut off in its last row (no end of line): a log truncated, or "
                    "still being written")


def _is_row(line):
    """Whether a line is a row, as read_log reads rows."""
    if NOT_IN_A_ROW.search(line) or len(line) > ROW_MAX:
        return False
    try:
        t, d = line.split(b",")
        float(t), float(d)
        return True
    except ValueError:
        return False


def thin(rows: list[tuple[float, float]], max_points: int) -> tuple[list[tuple[float, float]], int]:
    """Every k-th row, plus every row at or above the 99th percentile of
    the log itself (IOR's element round(0.99(n-1)+0.49)), so a large run
    draws quickly and no outlier goes missing."""
    if len(rows) <= max_points:
        return rows, 1
    q99 = sorted(d for _, d in rows)[round(0.99 * (len(rows) - 1) + 0.49)]
    k = math.ceil(len(rows) / max_points)
    return [r for i, r in enumerate(rows) if i % k == 0 or r[1] >= q99], k


def plot_timeline(out: Path, f: PhaseFigures, logs: Mapping[str, Path | None],
                  cache: dict[Path, list[tuple[float, float]]], max_points: int, scope: str = "") -> str | None:
    name = f"{label(f)}-timeline"
    plots, notes = [], []
    for op in OPS:
        path = logs.get(op)
        if not path or not f.ops[op].count:
            continue
        rows = read_log(path, f.ops[op].count, cache)
        kept, k = thin(rows, max_points)
        dat = out / f"{name}-{op}.dat"
        write(dat, "# time_s latency_s\n" + "".join(f"{t:.9f} {d:.9f}\n" for t, d in kept))
        plots.append(f"{gp(dat)} using 1:2 with points pt 7 ps 0.35 lc rgb '{COLORS[op]}' title '{op} ({len(rows)})'")
        if k > 1:
            notes.append(f"{op}: every {k}th + all >= q99")
    if not plots:
        return None
    title = f"{label(f)}{scope}: latency of every operation" + (f" (thinned: {'; '.join(notes)})" if notes else "")
    gnuplot(out, name, "\n".join([
        f"set title {gp(title)}", "set xlabel 'time since phase start (s)'", "set ylabel 'latency (s)'",
        "set logscale y", "set format y '%.0e'", "set grid", "set key outside right top",
        "plot " + ", ".join(plots)]))
    return name


def plot_boxplot(out: Path, f: PhaseFigures, scope: str = "") -> str | None:
    name = f"{label(f)}-boxplot"
    rows = []
    for op in OPS:
        lat = f.ops[op].latencies
        if lat and None not in lat:
            rows.append(f"{len(rows) + 1} {op} {lat[0]:.9e} {lat[1]:.9e} {lat[2]:.9e} {lat[3]:.9e} {lat[6]:.9e} "
                        f"{lat[4]:.9e} {lat[5]:.9e} {f.ops[op].count}")
    if not rows:
        return None
    dat = out / f"{name}.dat"
    write(dat, "# x op min_s q1_s median_s q3_s max_s q90_s q99_s count\n" + "\n".join(rows) + "\n")
    title = f"{label(f)}{scope}: latency per operation (box: q1-q3, line: median, whiskers: min-max, x: q99)"
    gnuplot(out, name, "\n".join([
        f"set title {gp(title)}",
        "set ylabel 'latency (s)'", "set logscale y", "set format y '%.0e'", "set grid ytics",
        f"set xrange [0.3:{len(rows) + 0.7}]", "set boxwidth 0.5", "set style fill solid 0.3", "set key top left",
        f"plot {gp(dat)} using 1:4:3:7:6:xtic(2) with candlesticks whiskerbars lw 2 lc rgb '#4a6fa5' "
        "title 'operations', "
        f"'' using 1:5:5:5:5 with candlesticks lt -1 lw 2 notitle, "
        f"'' using 1:9 with points pt 2 ps 2 lc rgb '#c0392b' title 'q99'"]))
    return name


def plot_histogram(out: Path, f: PhaseFigures, logs: Mapping[str, Path | None],
                   cache: dict[Path, list[tuple[float, float]]], scope: str = "") -> str | None:
    name = f"{label(f)}-histogram"
    plots = []
    for op in OPS:
        path = logs.get(op)
        if not path or not f.ops[op].count:
            continue
        rows = read_log(path, f.ops[op].count, cache)
        counts = {}
        for _, d in rows:
            b = math.floor(math.log10(max(d, 1e-9)) * BINS_PER_DECADE)
            counts[b] = counts.get(b, 0) + 1
        dat = out / f"{name}-{op}.dat"
        n = len(rows)
        write(dat, "# bin_low_s bin_high_s count fraction\n" + "".join(
            f"{10 ** (b / BINS_PER_DECADE):.9e} {10 ** ((b + 1) / BINS_PER_DECADE):.9e} {c} {c / n:.9f}\n"
            for b, c in sorted(counts.items())))
        plots.append(f"{gp(dat)} using (sqrt($1*$2)):4 with steps lw 2 lc rgb '{COLORS[op]}' title '{op} ({n})'")
    if not plots:
        return None
    gnuplot(out, name, "\n".join([
        f"set title {gp(f'{label(f)}{scope}: latency distribution ({BINS_PER_DECADE} bins per decade)')}",
        "set xlabel 'latency (s)'", "set ylabel 'fraction of operations per bin'", "set logscale x",
        "set format x '%.0e'", "set grid", "set key top right", "plot " + ", ".join(plots)]))
    return name


def plot_repeats(out: Path, run: Run, scope: str = "") -> str | None:
    """obj/s of every benchmark repeat that has one: a repeat whose rate is
    n/a (no time measured, see figures.phase_figures) has no point."""
    bench = [f for f in run.phases if f.phase == "benchmark" and f.obj_per_s is not None]
    if not bench:
        return None
    name = "repeats-rate"
    dat = out / f"{name}.dat"
    write(dat, "# repeat obj_per_s iops t_max_s\n" + "".join(
        f"{f.repeat} {f.obj_per_s:.6f} {f.iops:.6f} {'?' if f.t_max_s is None else f'{f.t_max_s:.6f}'}\n"
        for f in bench))
    mean = sum(f.obj_per_s for f in bench) / len(bench)
    spread = (max(f.obj_per_s for f in bench) - min(f.obj_per_s for f in bench)) / mean * 100 if mean else 0
    repeats = len([f for f in run.entries if f.phase == "benchmark"])
    title = f"benchmark rate per repeat{scope} (mean {mean:.1f} obj/s, spread {spread:.1f}% of the mean)"
    # a repeat not every rank completed has no point, and the title says why
    broken = [f"{m.repeat} {m.status}" for m in run.marks if m.phase == "benchmark"]
    if broken:
        title += f"; repeat {', '.join(broken)}"
    gnuplot(out, name, "\n".join([
        f"set title {gp(title)}",
        "set xlabel 'repeat'", "set ylabel 'objects/s'", "set yrange [0:*]", "set xtics 1", "set grid",
        "set datafile missing '?'", f"set xrange [0.5:{repeats + 0.5}]", "set key bottom right",
        f"plot {gp(dat)} using 1:2 with linespoints pt 7 ps 1.5 lw 2 title 'obj/s', "
        f"{mean} with lines dt 2 lw 2 title 'mean'"]))
    return name


def plot_scaling(out: Path, runs: Iterable[tuple[str, Run]]) -> str:
    """objects/s per phase against ranks, one line per label, log y."""
    by_label = {}
    for lab, run in runs:
        rates = {}
        for ph in ("precreate", "benchmark", "cleanup"):
            # a phase whose rate is n/a (no time measured) has no point
            fs = [f for f in run.phases if f.phase == ph and f.obj_per_s is not None]
            if fs:
                rates[ph] = sum(f.obj_per_s for f in fs) / len(fs)
        by_label.setdefault(lab, []).append((run.ranks, rates))
    # each label's data file: its name made safe, and told apart from another
    # label's that reads the same so (a b, a_b)
    files = {}
    for lab in by_label:
        safe = name = re.sub(r"[^A-Za-z0-9_.-]", "_", lab)
        n = 1
        while name in files.values():
            name, n = f"{safe}-{n}", n + 1
        files[lab] = name
    panels = []
    for ph in ("precreate", "benchmark", "cleanup"):
        plots, zero = [], 0
        for lab, points in by_label.items():
            pts = sorted((n, r[ph]) for n, r in points if ph in r)
            # the log scale has no 0 (a phase none of whose units succeeded)
            zero += sum(1 for _, r in pts if r == 0)
            pts = [(n, r) for n, r in pts if r > 0]
            if not pts:
                continue
            dat = out / f"scaling-{ph}-{files[lab]}.dat"
            write(dat, "# ranks obj_per_s\n" + "".join(f"{n} {r:.6f}\n" for n, r in pts))
            plots.append(f"{gp(dat)} using 1:2 with linespoints pt 7 lw 2 title {gp(lab)}")
        note = f" ({zero} at 0 obj/s, not on the log scale)" if zero else ""
        if plots:
            panels.append("\n".join([f"set title '{ph}{note}'", "plot " + ", ".join(plots)]))
    if not panels:
        raise BadInput("--scaling: no phase of any of the runs has a rate above 0 obj/s")
    gnuplot(out, "scaling", "\n".join([
        f"set multiplot layout 1,{len(panels)} title 'objects/s against processes (mean of the benchmark repeats)'",
        "set xlabel 'processes (ranks of all hosts)'", "set ylabel 'objects/s'", "set logscale y", "set grid",
        "set key bottom right", "set xtics 1", "set offsets 0.3, 0.3, 0, 0", *panels, "unset multiplot"]))
    return "scaling"


def plot_run(out: Path, run: Run, logs_prefix: str | None, max_points: int = 20000,
             window_s: float | None = None) -> tuple[list[str], str | None]:
    """Draws run's figures into out (made if missing): the names of those
    drawn, in the run's order, and without logs_prefix the line naming
    those skipped for lack of the latency logs (None with it). mdfio-plot
    RUN.json draws these, and mdfio-report --html embeds them."""
    # a module that draws with this one's helpers
    from .plot_windows import plot_windows
    # without the logs, the figures of fio's JSON alone (boxplots,
    # repeats-rate), and a line naming those skipped
    logs = log_files(logs_prefix, run) if logs_prefix else {label(f): {} for f in run.phases}
    skipped = None
    if not logs_prefix and run.phases:
        skipped = ("no --logs: skipped the timeline, histogram and windows figures of "
                   f"{', '.join(label(f) for f in run.phases)} (they need the latency logs: run fio with "
                   "latency_log=PREFIX latency_all=1, then give --logs PREFIX)")
    output_dir(out)
    scope = scope_note(run)
    made = []
    for f in run.phases:
        cache = {}   # the phase's logs, read once for its timeline and histogram
        made += [plot_timeline(out, f, logs[label(f)], cache, max_points, scope),
                 plot_boxplot(out, f, scope), plot_histogram(out, f, logs[label(f)], cache, scope),
                 plot_windows(out, f, logs[label(f)], cache, window_s, scope)]
    made.append(plot_repeats(out, run, scope))
    return [name for name in made if name], skipped


def main(argv: Sequence[str] | None = None) -> int:
    # the figures of other modules, which draw with this one's helpers
    from .plot_history import history_figures
    from .plot_study import study_figures
    ap = ArgumentParser(prog="mdfio-plot", description=__doc__.split("\n\n")[0])
    ap.add_argument("run", nargs="*", help="fio JSON (json+) of an mdfio run: one file, or one per fio process")
    ap.add_argument("--logs", help="the latency_log= prefix the run was made with (for the timelines, "
                                   "histograms and windows; without it, the figures of the JSON alone)")
    ap.add_argument("--scaling", nargs="+", metavar="LABEL=RUN.json[,RUN.json...]",
                    help="draw objects/s against the number of ranks")
    ap.add_argument("--study", metavar="DB",
                    help="draw the study recorded in the history database DB (mdfio-study's runs): objects/s "
                         "per phase against ranks by file system and memory limit, and the repeats' variability")
    ap.add_argument("--history", metavar="DB",
                    help="draw the runs of a configuration (--config, or those with a run labelled --label) of "
                         "the history database DB over time, with mdfio-compare's prediction bands")
    ap.add_argument("--config", metavar="NAME", help="with --history: the configuration name (or key)")
    ap.add_argument("--label", metavar="L", help="with --study: only the runs recorded with label L; with "
                                                 "--history: the configurations of the runs labelled L")
    ap.add_argument("--alpha", type=alpha, default=0.01,
                    help="with --history: mdfio-compare's --alpha (default 0.01)")
    ap.add_argument("--min-history", type=at_least_two, default=5, metavar="N",
                    help="with --history: mdfio-compare's --min-history (default 5)")
    ap.add_argument("--out", default=".", help="directory for the figures, made if missing (default: .)")
    ap.add_argument("--max-points", type=positive_int, default=20000,
                    help="points per operation in a timeline before thinning (default 20000)")
    ap.add_argument("--window", type=positive_seconds, metavar="SEC",
                    help="with --logs: the time window of the per-window latency quantiles, in seconds "
                         "(default: the phase's time / 50, rounded up to 1, 2 or 5 times a power of ten)")
    args = ap.parse_args(argv)
    if args.scaling and (args.run or args.logs):
        ap.error("--scaling draws the runs it names: give RUN.json [--logs PREFIX], or --scaling, not both")
    if sum(map(bool, (args.run or args.logs, args.scaling, args.study, args.history))) > 1:
        ap.error("give RUN.json [--logs PREFIX], --scaling, --study or --history, one of them")
    if args.label is not None and not (args.study or args.history):
        ap.error("--label: only with --study or --history")
    if args.history and args.config is None and args.label is None:
        ap.error("--history: name the configuration with --config NAME, or --label L")
    given = [flag for flag, default in (("config", None), ("alpha", 0.01), ("min_history", 5))
             if getattr(args, flag) != default]
    if given and not args.history:
        ap.error(f"--{given[0].replace('_', '-')}: only with --history")
    if args.window is not None and not args.logs:
        ap.error("--window: only with RUN.json --logs PREFIX (the windows are of the latency logs)")
    out = Path(args.out)
    skipped = None
    try:
        made = []
        named = []
        if args.study:
            made += study_figures(args.study, out, args.label)
        elif args.history:
            made += history_figures(args.history, out, args.config, args.label, args.alpha, args.min_history)
        elif args.scaling:
            runs = []
            for item in args.scaling:
                lab, sep, path = item.partition("=")
                if not sep or not lab or not path:
                    raise BadInput(f"--scaling {item}: expected LABEL=RUN.json[,RUN.json...]")
                runs.append((lab, load_run(path.split(","))))
            output_dir(out)
            made.append(plot_scaling(out, runs))
            named = [(f"--scaling {item}", run) for item, (_, run) in zip(args.scaling, runs)]
        elif args.run:
            docs = [load(p) for p in args.run]
            if iozone_sweep(docs):
                # the kept JSON of mdfio-iozone (docs/iozone.md)
                from .iozone import plot_sweep, sweep_cells
                if args.logs:
                    raise BadInput(f"--logs {args.logs}: an IOzone sweep (mdfio-iozone) has no latency logs")
                made = plot_sweep(out, sweep_cells(docs))
            else:
                run = Run(docs)
                made, skipped = plot_run(out, run, args.logs, args.max_points, args.window)
                named = [(run.name, run)]
        else:
            raise BadInput("no run: give RUN.json [--logs PREFIX], --scaling LABEL=RUN.json ..., --study DB or --history DB")
    except BadInput as e:
        print(error_line("mdfio-plot", e), file=sys.stderr)
        return 2
    for name in filter(None, made):
        print(out / f"{name}.png")
    if skipped:
        print(f"mdfio-plot: {skipped}", file=sys.stderr)
    # the phases not every rank completed have no figures (no point in
    # repeats-rate or scaling): said as mdfio-report says it, exit 1
    broken = [(name, run) for name, run in named if run.marks]
    for name, run in broken:
        print(f"mdfio-plot: {name}: {run.not_completed()}; not drawn", file=sys.stderr)
    return 1 if broken else 0

