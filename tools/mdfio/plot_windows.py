"""mdfio-plot's figure of a phase over time windows (docs/reports.md
"Figures"): per operation, the exact p50, p90, p99 and max latency of the
operations that started in each window, over every rank of every host,
and below them the operations completed per second of each window.

The rows are the engine's merged latency logs (plot.read_log): each row's
start is seconds since its rank's first unit of the phase, which every
rank starts right after it leaves the phase's last barrier, so window k
holds the same span [kW, (k+1)W) of the phase for every rank and every
host, to within how late each noticed the barrier's release (no clocks of
two hosts are compared). Times are taken in integer nanoseconds,
as the engine measured them, so a row on a window's edge is in the later
window whatever the float rounding."""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from decimal import Decimal
from pathlib import Path

from .figures import OPS, PhaseFigures
from .plot import COLORS, gnuplot, gp, label, read_log, write

# (column name, nearest-rank percentile, colour); max is the 100th
QUANTILES = (("p50", 50, "#1f78b4"), ("p90", 90, "#33a02c"), ("p99", 99, "#ff7f00"), ("max", 100, "#e31a1c"))
# the default window: about this many windows in the phase
WINDOWS_PER_PHASE = 50


def nearest_rank(ordered: Sequence[int], p: int) -> int:
    """The p-th percentile of ordered values by nearest rank: the value at
    rank ceil(p/100 n), counted from 1 (the smallest for p near 0)."""
    return ordered[max(1, -(-p * len(ordered) // 100)) - 1]


def default_window(phase_s: float | None) -> float:
    """A phase's default window in seconds: its length over
    WINDOWS_PER_PHASE, rounded up to 1, 2 or 5 times a power of ten, at
    least 1 ms; 1 s for a phase of no measured length."""
    if not phase_s or phase_s <= 0:
        return 1.0
    return tick_step(max(phase_s / WINDOWS_PER_PHASE, 1e-3))


def tick_step(raw: float) -> float:
    """raw rounded up to 1, 2 or 5 times a power of ten."""
    power = 10 ** math.floor(math.log10(raw))
    return next(float(Decimal(str(step)) * Decimal(str(power))) for step in (1, 2, 5, 10)
                if step * power >= raw * (1 - 1e-9))


def ns(seconds: float) -> int:
    """seconds, as the log writes them (9 decimals), in nanoseconds: the
    double nearest such a decimal is off by far less than half a
    nanosecond below 10^6 s, so the product rounds back to it exactly."""
    return round(seconds * 1e9)


def windows(rows: Sequence[tuple[float, float]], window_ns: int, count: int) -> list[dict[str, object]]:
    """count windows of window_ns each: the latencies (ns, sorted) of the
    rows that started in each, and how many rows completed in each (a
    completion at or after the last window's end is counted in the last)."""
    started: list[list[int]] = [[] for _ in range(count)]
    completed = [0] * count
    last = count - 1
    # inlined (ns()): a large phase has millions of rows
    for t, d in rows:
        start, lat = round(t * 1e9), round(d * 1e9)
        k = start // window_ns
        started[k if k < last else last].append(lat)
        k = (start + lat) // window_ns
        completed[k if k < last else last] += 1
    return [{"latencies": sorted(s), "completed": c} for s, c in zip(started, completed)]


def plot_windows(out: Path, f: PhaseFigures, logs: Mapping[str, Path | None],
                 cache: dict[Path, list[tuple[float, float]]], window_s: float | None, scope: str = "") -> str | None:
    """<phase>-windows: per operation the latency quantiles of each
    window (log y), and the operations completed per second below."""
    name = f"{label(f)}-windows"
    ops = [op for op in OPS if logs.get(op) and f.ops[op].count]
    if not ops:
        return None
    rows = {op: read_log(logs[op], f.ops[op].count, cache) for op in ops}
    window = window_s if window_s is not None else default_window(f.t_max_s)
    window_ns = ns(window)
    # every operation's windows span the phase: to the last completion
    end_ns = max(round(t * 1e9) + round(d * 1e9) for op in ops for t, d in rows[op])
    count = max(1, -(-end_ns // window_ns))
    # the last window ends with the phase's last completion
    spans = [(k * window_ns, min((k + 1) * window_ns, max(end_ns, k * window_ns + 1))) for k in range(count)]
    panels, rate_plots = [], []
    for op in ops:
        dat = out / f"{name}-{op}.dat"
        lines = ["# window_start_s window_end_s started p50_s p90_s p99_s max_s completed completed_per_s"]
        for (lo, hi), w in zip(spans, windows(rows[op], window_ns, count)):
            lat = w["latencies"]
            q = " ".join(f"{nearest_rank(lat, p) / 1e9:.9f}" if lat else "?" for _, p, _ in QUANTILES)
            lines.append(f"{lo / 1e9:.9f} {hi / 1e9:.9f} {len(lat)} {q} {w['completed']} "
                         f"{w['completed'] / ((hi - lo) / 1e9):.6f}")
        write(dat, "\n".join(lines) + "\n")
        styles = ", ".join(
            f"{gp(dat) if i == 0 else chr(39) * 2} using (($1+$2)/2):{4 + i} with linespoints pt 7 ps 0.5 lw 2 "
            f"lc rgb '{color}' title '{q}'" for i, (q, _, color) in enumerate(QUANTILES))
        panels.append((op, f"plot {styles}"))
        rate_plots.append(f"{gp(dat)} using (($1+$2)/2):9 with histeps lw 2 lc rgb '{COLORS[op]}' title '{op}'")
    width = 1.0 / len(panels)
    # reset: the SVG's pass must not start from the PNG's last panel
    body = ["reset", f"set multiplot title {gp(f'{label(f)}{scope}: latency of the operations started in each {window:g} s window (all ranks), and operations completed per second')}",
            "set datafile missing '?'", "set grid", f"set xrange [0:{end_ns / 1e9:.9f}]",
            f"set xtics {tick_step(max(end_ns, 1) / 1e9 / (3 if len(panels) > 1 else 8)):g}"]
    for i, (op, plot) in enumerate(panels):
        body += [f"set origin {i * width:.4f},0.36", f"set size {width:.4f},0.58", f"set title '{op}'",
                 "set logscale y", "set yrange [*:*]", "set format y '%.0e'", "set ylabel 'latency (s)'" if i == 0 else "unset ylabel",
                 "set xlabel 'time since phase start (s)'", "set key top right font ',10'", plot]
    body += ["set origin 0,0", "set size 1,0.36", "set title 'operations completed per second of each window'",
             "unset logscale y", "set format y '%g'", "set yrange [0:*]", "set ylabel 'operations/s'",
             "set xlabel 'time since phase start (s)'", "set key top right", "plot " + ", ".join(rate_plots),
             "unset multiplot"]
    gnuplot(out, name, "\n".join(body))
    return name
