"""mdfio-plot's figures of a study from the history database (docs/reports.md
"Figures of a study"), the layout of the MD-REAL-IO study's:

- study-<phase> for precreate, benchmark and cleanup: objects/s (the
  phase's obj_per_s as recorded) against ranks, log y, one panel per file
  system (columns) and memory limit (rows), one line per value of any other
  dimension of the study; each point the mean of the point's values (the
  benchmark: every repeat of every run of the point; precreate and
  cleanup: one value per run), its bar from the smallest to the largest;
- study-variability: the benchmark's objects/s of each repeat (x = repeat),
  the same panels, one line per ranks value (and other dimension), each
  point the mean over the point's runs of that repeat.

What a run is (its ranks, engine, memory limit, ...) is read from its
recorded configuration (history.configuration); only the file system's
name in the study, which the database keeps nowhere else, from the point's
name in its configuration name (<study>/<point>, mdfio.study)."""
from __future__ import annotations

import json
import math
import re
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .fiojson import BadInput
from .history import HistoryError, open_db
from .plot import gnuplot, gp, output_dir, write

PHASES = ("precreate", "benchmark", "cleanup")
# the configuration's keys that are not a line's: the panels' and the x axis'
# dimensions, and what is the same for every run of a point by design
NOT_LINES = ("fs_type", "config", "ranks", "lim_free_mem", "lim_free_mem_phase", "phases")
# a point's name after the file system's name (mdfio.study.Point.name)
POINT_TAIL = re.compile(r"-[a-z0-9_]+-qd\d+-n\d+-D\d+-P\d+-I\d+-S\d+-R\d+-O\d+-m\d+-M\d+-dc[01]")
# gnuplot's colours of the lines, by the line's position in a panel
LINE_COLORS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666")


@dataclass
class StudyRun:
    """One recorded run of a study: where it goes in the figures, and its
    phases' objects/s ({phase: [(repeat, obj_per_s)]})."""
    run_id: int
    study: str
    filesystem: str
    limit: tuple[int, int]
    ranks: int
    config: dict[str, Any]
    rates: dict[str, list[tuple[int, float | None]]]


def limit_name(limit: tuple[int, int]) -> str:
    """A memory limit (lim_free_mem, lim_free_mem_phase) as a panel says it."""
    m, phase = limit
    parts = ([f"lim_free_mem {m}"] if m else []) + ([f"lim_free_mem_phase {phase}"] if phase else [])
    return ", ".join(parts) + " (x 1000 KiB)" if parts else "unlimited"


def filesystem_of(point: str, fs_type: str) -> str:
    """The file system's name in the study: the point's name before its
    parameters; the recorded type for a name of another form."""
    m = POINT_TAIL.search(point)
    return point[:m.start()] if m and m.end() == len(point) and m.start() > 0 else fs_type


def study_runs(db: sqlite3.Connection, label: str | None) -> list[StudyRun]:
    """The runs of the study in db (labelled label, if given), in the order
    they were recorded. Runs of more than one study, or none, raise
    BadInput."""
    rows = db.execute("SELECT r.id, r.config_name, r.config FROM runs r "
                      "WHERE (? IS NULL OR r.label = ?) AND r.config_name LIKE '%_/_%' ORDER BY r.id",
                      (label, label)).fetchall()
    scope = f" labelled {label!r}" if label is not None else ""
    if not rows:
        raise BadInput(f"no run of a study{scope} (a configuration name <study>/<point>, as mdfio-study "
                       "records)")
    studies = sorted({name.split("/", 1)[0] for _, name, _ in rows})
    if len(studies) > 1:
        raise BadInput(f"runs of {len(studies)} studies{scope} ({', '.join(studies)}): choose one with --label")
    others = sorted({json.loads(c).get("workload") for _, _, c in rows} - {None})
    if others:
        raise BadInput(f"runs of a study of {', '.join(others)}{scope}: --study draws md-workbench's studies; "
                       "--history DB --label L draws each point's runs")
    rates: dict[int, dict[str, list[tuple[int, float | None]]]] = {}
    for run_id, phase, repeat, rate in db.execute(
            "SELECT run_id, phase, repeat, obj_per_s FROM phases WHERE run_id IN (SELECT r.id FROM runs r WHERE "
            "(? IS NULL OR r.label = ?) AND r.config_name LIKE '%_/_%') ORDER BY run_id, position", (label, label)):
        rates.setdefault(run_id, {}).setdefault(phase, []).append((repeat, rate))
    out = []
    for run_id, name, config_text in rows:
        config = json.loads(config_text)
        point = name.split("/", 1)[1]
        out.append(StudyRun(run_id, studies[0], filesystem_of(point, config["fs_type"]),
                            (config["lim_free_mem"], config["lim_free_mem_phase"]), config["ranks"], config,
                            rates.get(run_id, {})))
    return out


def line_keys(runs: Sequence[StudyRun]) -> list[str]:
    """The configuration's keys that set lines apart: those with more than
    one value among the runs of one file system, memory limit and ranks (a
    P that a fixed count sets from the ranks is not one)."""
    keys = []
    for key in sorted({k for r in runs for k in r.config} - set(NOT_LINES)):
        seen: dict[tuple[Any, ...], set[str]] = {}
        for r in runs:
            seen.setdefault((r.filesystem, r.limit, r.ranks), set()).add(json.dumps(r.config.get(key)))
        if any(len(v) > 1 for v in seen.values()):
            keys.append(key)
    return keys


def stats(values: Sequence[float]) -> tuple[float, float, float, float, int]:
    """(mean, min, max, sample standard deviation (0 of one value), n)."""
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return mean, min(values), max(values), sd, n


def facets(runs: Sequence[StudyRun]) -> tuple[list[str], list[tuple[int, int]]]:
    """The panels' columns (file systems, in the order recorded) and rows
    (memory limits, the smallest first, unlimited last)."""
    columns = list(dict.fromkeys(r.filesystem for r in runs))
    rows = sorted({r.limit for r in runs}, key=lambda lim: (lim == (0, 0), lim))
    return columns, rows


def log_ticks(low: float, high: float, most: int = 4) -> list[float]:
    """Ticks of a log axis from low to high: the powers of ten, else 1, 2
    and 5 times them, else 1 to 9 times them, the first that gives at
    least 3 (a narrow range still has some), every k-th of them so that
    there are at most most (a short panel stays legible)."""
    ticks: list[float] = []
    for steps in ((1,), (1, 2, 5), range(1, 10)):
        ticks = [m * 10.0 ** e for e in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
                 for m in steps if low <= m * 10.0 ** e <= high]
        if len(ticks) >= 3:
            break
    return ticks[::-(-len(ticks) // most)] if ticks else ticks


def multiplot(out: Path, name: str, title: Sequence[str], dat: Path, panels: dict[tuple[str, tuple[int, int]], list[tuple[int, str]]],
              columns: list[str], rows: list[tuple[int, int]], values: list[float], xlabel: str,
              xtics: list[int]) -> None:
    """One figure of panels rows x columns: each panel's lines are blocks
    (index, title) of dat, drawn as linespoints of the mean (column 2) with
    a bar from column 3 to 4 where column 6 (n) is above 1; one log y range
    for every panel. title: its lines, which a long study name and label
    would push past the figure's edges as one."""
    low, high = min(values), max(values)
    body = ["reset", f"set multiplot layout {len(rows)},{len(columns)} title "
            + ' . "\\n" . '.join(gp(line) for line in title),
            "set logscale y", f"set yrange [{low / 1.6:.6g}:{high * 1.6:.6g}]", "set format y '%g'",
            "set ytics (" + ", ".join(f"{t:g}" for t in log_ticks(low / 1.6, high * 1.6)) + ")",
            "set grid", f"set xrange [{min(xtics) - 0.5}:{max(xtics) + 0.5}]",
            "set xtics (" + ", ".join(str(x) for x in xtics) + ")", "set key below horizontal maxcols 2 font ',9' samplen 1.5",
            f"set xlabel {gp(xlabel)}", "set ylabel 'objects/s'", "set bars small"]
    if all(t == "mean" for lines in panels.values() for _, t in lines):
        # one line a panel, which the figure's title names
        body.append("unset key")
    for limit in rows:
        for fs in columns:
            lines = panels.get((fs, limit), [])
            body.append(f"set title {gp(f'{fs}, {limit_name(limit)}')}")
            if not lines:
                body.append("set multiplot next")
                continue
            plots = []
            # the bars first: the means' points are drawn over them
            for i, (index, _) in enumerate(lines):
                color = LINE_COLORS[i % len(LINE_COLORS)]
                plots.append(f"{gp(dat)} index {index} using 1:($6 > 1 ? $2 : NaN):3:4 with yerrorbars pt 7 "
                             f"ps 0.1 lw 1.5 lc rgb '{color}' notitle")
            for i, (index, line_title) in enumerate(lines):
                color = LINE_COLORS[i % len(LINE_COLORS)]
                plots.append(f"{gp(dat)} index {index} using 1:2 with linespoints pt 7 ps 0.9 lw 2 "
                             f"lc rgb '{color}' title {gp(line_title)}")
            body.append("plot " + ", ".join(plots))
    body.append("unset multiplot")
    gnuplot(out, name, "\n".join(body))


def line_title(keys: Sequence[str], config: dict[str, Any]) -> str:
    return " ".join(f"{k}={config.get(k)}" for k in keys)


def plot_study(out: Path, runs: Sequence[StudyRun], label: str | None) -> list[str]:
    """The study's figures: study-<phase> for each phase some run has a
    rate of, and study-variability; their names."""
    keys = line_keys(runs)
    columns, rows = facets(runs)
    lines = list(dict.fromkeys(tuple(r.config.get(k) for k in keys) for r in runs))
    what = f"study {runs[0].study}" + (f", label {label}" if label is not None else "")
    made = []
    for phase in PHASES:
        # (fs, limit, line) -> ranks -> the point's values
        points: dict[tuple[str, tuple[int, int], tuple[Any, ...]], dict[int, list[float]]] = {}
        left_out = 0
        for r in runs:
            for _, v in r.rates.get(phase, []):
                if v is None or v <= 0:
                    # the log scale has no 0; n/a has no value
                    left_out += 1
                    continue
                key = (r.filesystem, r.limit, tuple(r.config.get(k) for k in keys))
                points.setdefault(key, {}).setdefault(r.ranks, []).append(v)
        if not points:
            continue
        blocks, panels, values = [], {}, []
        for (fs, limit, line), by_ranks in sorted(points.items(), key=lambda kv: (
                columns.index(kv[0][0]), rows.index(kv[0][1]), lines.index(kv[0][2]))):
            text = [f"# {fs} | {limit_name(limit)} | {line_title(keys, dict(zip(keys, line))) or 'all runs'}",
                    "# ranks mean_obj_per_s min max sd n"]
            for ranks in sorted(by_ranks):
                mean, lo, hi, sd, n = stats(by_ranks[ranks])
                values += [lo, hi]
                text.append(f"{ranks} {mean:.6f} {lo:.6f} {hi:.6f} {sd:.6f} {n}")
            panels.setdefault((fs, limit), []).append(
                (len(blocks), line_title(keys, dict(zip(keys, line))) or "mean"))
            blocks.append("\n".join(text))
        dat = out / f"study-{phase}.dat"
        write(dat, "\n\n\n".join(blocks) + "\n")
        each = ("every repeat of every run" if phase == "benchmark" else "every run")
        note = f"; {left_out} values at 0 or n/a left out" if left_out else ""
        multiplot(out, f"study-{phase}", [f"{phase}: objects/s against processes ({what})",
                                          f"mean of {each} of a point, bar min to max{note}"], dat, panels, columns, rows, values,
                  "processes (ranks)", sorted({r.ranks for r in runs}))
        made.append(f"study-{phase}")
    name = plot_variability(out, runs, keys, columns, rows, what)
    if name:
        made.append(name)
    return made


def plot_variability(out: Path, runs: Sequence[StudyRun], keys: Sequence[str], columns: list[str],
                     rows: list[tuple[int, int]], what: str) -> str | None:
    """study-variability: the benchmark's objects/s of each repeat, one
    line per ranks value (and other dimension), each point the mean over
    the point's runs of that repeat, bar min to max."""
    # (fs, limit, ranks, line) -> repeat -> values
    points: dict[tuple[str, tuple[int, int], int, tuple[Any, ...]], dict[int, list[float]]] = {}
    for r in runs:
        for repeat, v in r.rates.get("benchmark", []):
            if v is not None and v > 0:
                key = (r.filesystem, r.limit, r.ranks, tuple(r.config.get(k) for k in keys))
                points.setdefault(key, {}).setdefault(repeat, []).append(v)
    if not points:
        return None
    lines = list(dict.fromkeys(tuple(r.config.get(k) for k in keys) for r in runs))
    blocks, panels, values = [], {}, []
    for (fs, limit, ranks, line), by_repeat in sorted(points.items(), key=lambda kv: (
            columns.index(kv[0][0]), rows.index(kv[0][1]), kv[0][2], lines.index(kv[0][3]))):
        title = " ".join([f"ranks={ranks}", line_title(keys, dict(zip(keys, line)))]).strip()
        text = [f"# {fs} | {limit_name(limit)} | {title}", "# repeat mean_obj_per_s min max sd n"]
        for repeat in sorted(by_repeat):
            mean, lo, hi, sd, n = stats(by_repeat[repeat])
            values += [lo, hi]
            text.append(f"{repeat} {mean:.6f} {lo:.6f} {hi:.6f} {sd:.6f} {n}")
        panels.setdefault((fs, limit), []).append((len(blocks), title))
        blocks.append("\n".join(text))
    dat = out / "study-variability.dat"
    write(dat, "\n\n\n".join(blocks) + "\n")
    repeats = sorted({k for by_repeat in points.values() for k in by_repeat})
    multiplot(out, "study-variability", [f"benchmark: objects/s of each repeat ({what})",
                                         "mean over a point's runs, bar min to max"], dat, panels, columns, rows, values, "benchmark repeat", repeats)
    return "study-variability"


def study_figures(db_path: str, out: Path, label: str | None) -> list[str]:
    """Reads the study's runs from the database at db_path (only read) and
    draws its figures into out (made); their names."""
    try:
        db = open_db(db_path, create=False)
        try:
            runs = study_runs(db, label)
        finally:
            db.close()
    except HistoryError as e:
        raise BadInput(f"--study {e}") from None
    except sqlite3.Error as e:
        raise BadInput(f"--study {db_path}: not a usable history database: {e}") from None
    output_dir(out)
    return plot_study(out, runs, label)
