"""mdfio-plot's figures of a configuration's history (docs/reports.md "A
configuration's history"): its runs in the order recorded, per phase (and
waiting factor), operation and figure (the rate, the median and the
99th-percentile latency), each run's value with the prediction band that
mdfio-compare tests it against (from the earlier runs of its
configuration key), and the values it calls slower marked in red.

The figures and the bands are mdfio.compare's own (run_values, tests_of,
Comparison.band and verdict): a run's band and verdict are those that
`mdfio-compare DB --run ID` prints for it."""
from __future__ import annotations

import re
import sqlite3
from pathlib import Path

from .compare import METRICS, run_values, tests_of
from .fiojson import BadInput
from .history import HistoryError, open_db, workload_of
from .plot import COLORS, gnuplot, gp, output_dir, write
from .plot_study import log_ticks
from .workloads import RATE_UNIT

OPS_ORDER = ("create", "stat", "read", "delete")
# the line of another workload's operation: each is in a panel of its own
OTHER_COLOR = "#33a02c"


def configurations(db: sqlite3.Connection, config: str | None, label: str | None) -> list[tuple[str, str | None]]:
    """[(config_key, config_name)] of the runs named config (a
    configuration name, or a key) and labelled label, in the order first
    recorded; BadInput if none."""
    rows = db.execute("SELECT config_key, config_name FROM runs WHERE (? IS NULL OR config_name = ? OR "
                      "config_key = ?) AND (? IS NULL OR label = ?) GROUP BY config_key ORDER BY min(id)",
                      (config, config, config, label, label)).fetchall()
    if not rows:
        what = " and ".join(([f"configuration {config!r}"] if config is not None else []) +
                            ([f"label {label!r}"] if label is not None else []))
        raise BadInput(f"--history: no run of {what}")
    return [(key, name) for key, name in rows]


def history_of(db: sqlite3.Connection, key: str, alpha: float,
               min_history: int) -> tuple[list[tuple[int, str]], dict[tuple[str, float, str, str], list[list[object]]]]:
    """The runs of configuration key [(id, recorded_at)] and, per (phase,
    waiting factor, op, metric), a row per run: [position, id, value,
    band low, band high, verdict], as mdfio-compare --run id finds them
    (within_noise for its 'within noise'; low, high None and verdict
    'untested' with too little history)."""
    runs = db.execute("SELECT id, recorded_at FROM runs WHERE config_key = ? ORDER BY id", (key,)).fetchall()
    names = {column: name for column, name, _ in METRICS}
    series: dict[tuple[str, float, str, str], list[list[object]]] = {}
    for position, (run_id, _) in enumerate(runs, 1):
        tests, _ = tests_of(db, run_id, None)
        testable = [t for t in tests if len(t.history) >= min_history]
        # Bonferroni over the run's tests, as mdfio-compare --run ID
        level = 1 - alpha / max(len(testable), 1)
        found = {(t.phase, t.waiting_factor, t.op, t.metric): t for t in tests}
        for (phase, factor, op, column), value in run_values(db, run_id).items():
            t = found[(phase, factor, op, names[column])]
            if len(t.history) >= min_history:
                low, high = t.band(level)
                # one field of the data file
                verdict = t.verdict(level).replace(" ", "_")
            else:
                low = high = None
                verdict = "untested"
            series.setdefault((phase, factor, op, names[column]), []).append(
                [position, run_id, value, low, high, verdict])
    return runs, series


def safe(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", text)


def plot_history(out: Path, db: sqlite3.Connection, key: str, name: str | None, alpha: float,
                 min_history: int) -> list[str]:
    """history-<name>-<phase>[-t<factor>]: for each phase of the
    configuration, a panel per metric (rows) and operation (columns)."""
    runs, series = history_of(db, key, alpha, min_history)
    base = f"history-{safe(name) if name else key}"
    rate_unit = RATE_UNIT[workload_of(db, runs[-1][0])]
    made = []
    for phase, factor in dict.fromkeys((p, f) for p, f, _, _ in series):
        # md-workbench's operations in their order, another workload's as recorded
        found = list(dict.fromkeys(op for p, f, op, _ in series if (p, f) == (phase, factor)))
        ops = sorted(found, key=lambda op: OPS_ORDER.index(op) if op in OPS_ORDER else len(OPS_ORDER))
        # an IOzone sweep has rates alone: no rows of empty latency panels
        metrics = [m for _, m, _ in METRICS if any((phase, factor, op, m) in series for op in ops)]
        fig = f"{base}-{safe(phase)}" + (f"-t{factor:g}" if factor else "")
        dat = out / f"{fig}.dat"
        blocks, body = [], []
        for metric in metrics:
            for op in ops:
                rows = series.get((phase, factor, op, metric), [])
                if not rows:
                    # no block in the data file for it: gnuplot's index
                    # counts the blocks that hold data
                    body.append("set multiplot next")
                    continue
                lines = [f"# {op} {metric}", "# run_position run_id value band_low band_high verdict"]
                lines += [f"{p} {r} {v:.9g} {'?' if lo is None else f'{lo:.9g}'} "
                          f"{'?' if hi is None else f'{hi:.9g}'} {verdict}" for p, r, v, lo, hi, verdict in rows]
                blocks.append("\n".join(lines))
                values = [row[2] for row in rows]
                edges = [v for row in rows for v in row[3:5] if v is not None]
                unit = rate_unit if metric == "rate" else "latency (s)"
                # the key once, in the first panel: the others' are the same
                body += [f"set title {gp(f'{op} {metric}')}", f"set ylabel {gp(unit)}",
                         "set key top left font ',9' samplen 1" if len(blocks) == 1 else "unset key"]
                # the bands as far as a decade beyond the values: a short
                # history's wide band would flatten the runs into a line
                low = max(min(values + edges), min(values) / 10) / 1.3
                high = min(max(values + edges), max(values) * 10) * 1.3
                index = len(blocks) - 1
                body += [f"set yrange [{low:.6g}:{high:.6g}]",
                         "set ytics (" + ", ".join(f"{t:g}" for t in log_ticks(low, high)) + ")",
                         "set format y '%g'" if metric == "rate" else "set format y '%.1e'",
                         f"plot {gp(dat)} index {index} using 1:(($4+$5)/2):($1-0.4):($1+0.4):4:5 with boxxyerror "
                         "fs solid 0.25 noborder lc rgb '#4a6fa5' title 'band', "
                         f"'' index {index} using 1:3 with linespoints pt 7 ps 0.7 lw 1.5 "
                         f"lc rgb '{COLORS.get(op, OTHER_COLOR)}' title 'run', "
                         f"'' index {index} using 1:(strcol(6) eq 'slower' ? $3 : NaN) with points pt 7 ps 2.2 "
                         "lc rgb '#e31a1c' title 'slower', "
                         f"'' index {index} using 1:3:(strcol(6) eq 'slower' ? sprintf('run %d', $2) : '') "
                         "with labels offset 0,1.2 tc rgb '#e31a1c' font ',10' notitle"]
        write(dat, "\n\n\n".join(blocks) + "\n")
        title = (f"{name or key} ({key}): {phase}" + (f" (waiting factor {factor:g})" if factor else "") +
                 f", {len(runs)} runs")
        legend = (f"band: mdfio-compare's prediction interval from the earlier runs (alpha {alpha:g}, at least "
                  f"{min_history} runs); red: slower")
        gnuplot(out, fig, "\n".join([
            "reset", f"set multiplot layout {len(metrics)},{len(ops)} title {gp(title)}.\"\\n\".{gp(legend)} "
            "font ',11'",
            "set datafile missing '?'", "set logscale y", "set grid", f"set xrange [0.5:{len(runs) + 0.5}]",
            f"set xtics {max(1, -(-len(runs) // (5 if len(ops) > 1 else 12)))}", "set xlabel 'run (in recording order)'",
            *body, "unset multiplot"]))
        made.append(fig)
    return made


def history_figures(db_path: str, out: Path, config: str | None, label: str | None, alpha: float,
                    min_history: int) -> list[str]:
    """The history figures of every configuration named config (and with a
    run labelled label), from the database at db_path (only read), drawn
    into out (made); their names."""
    try:
        db = open_db(db_path, create=False)
        try:
            keys = configurations(db, config, label)
            output_dir(out)
            made = []
            for key, name in keys:
                made += plot_history(out, db, key, name, alpha, min_history)
            return made
        finally:
            db.close()
    except HistoryError as e:
        raise BadInput(f"--history {e}") from None
    except sqlite3.Error as e:
        raise BadInput(f"--history {db_path}: not a usable history database: {e}") from None
