"""mdtest's report of an mdfio-mdtest run (mdfio-report): the SUMMARY table
IOR's mdtest prints, with its rows, rounding and statistics over
iterations, and then each phase's per-operation latencies, which mdtest
does not have (docs/reports.md "mdtest")."""
from __future__ import annotations

import math
from collections.abc import Sequence

from .figures import nearest_rank
from .fiojson import MdtestPhase

# mdtest's rows in its order (mdtest.c, mdtest_test_name): Directory read
# is never printed; Directory rename is 0 without a dir_rename section, as
# mdtest prints it without its rename phase
ROWS = [("Directory creation", "dir_create"), ("Directory stat", "dir_stat"), ("Directory rename", "dir_rename"),
        ("Directory removal", "dir_remove"), ("File creation", "file_create"), ("File stat", "file_stat"),
        ("File read", "file_read"), ("File removal", "file_remove")]
TREE_ROWS = [("Tree creation", "tree_create"), ("Tree removal", "tree_remove")]
PERCENTILES = (50.0, 90.0, 99.0, 99.9)


def phase_rate(p: MdtestPhase | None, tree: bool) -> float:
    """One iteration's rate of a phase as mdtest computes it: the slowest
    rank's items over its time, times the ranks (the least of
    items/time over the ranks, times their number); a tree phase's is rank
    0's directories over the phase's time (mdtest counts one tree, its rank
    0's). 0 for a phase not run, as mdtest prints it."""
    if p is None:
        return 0.0
    timed = [r for r in p.per_rank if r.seconds]
    if not timed:
        return 0.0
    if tree:
        return p.per_rank[0].ops / max(r.seconds for r in timed)
    return min(r.ops / r.seconds for r in timed) * p.ranks


def stats(values: Sequence[float]) -> tuple[float, float, float, float]:
    """max, min, mean and mdtest's standard deviation (over n-1; 0 for one
    iteration)."""
    n = len(values)
    mean = sum(values) / n
    sd = math.sqrt(sum((mean - v) ** 2 for v in values) / (n - 1)) if n > 1 else 0.0
    return max(values), min(values), mean, sd


def summary(phases: Sequence[MdtestPhase]) -> list[str]:
    """mdtest's 'SUMMARY rate' table: a row per phase over the iterations
    (the iteration= values present), files or directories alone when the
    run has no section of the other (mdtest -F, -D)."""
    its = sorted({p.iteration for p in phases})
    by = {(p.iteration, p.phase): p for p in phases}
    names = {p.phase for p in phases}
    files = any(n.startswith("file_") for n in names)
    dirs = any(n.startswith("dir_") for n in names)
    rows = ROWS if files == dirs else ROWS[4:] if files else ROWS[:4]
    if not files and not dirs:
        rows = []
    out = [f"SUMMARY rate (in ops/sec): (of {len(its)} iterations)",
           "   Operation     " + " " * 15 + " Max            Min           Mean        Std Dev",
           "   ---------      " + " " * 15 + "---            ---           ----        -------"]
    for title, phase in rows:
        mx, mn, mean, sd = stats([phase_rate(by.get((i, phase)), False) for i in its])
        out.append(f"   {title:<18s} " + "    " + f"{mx:14.3f} {mn:14.3f} {mean:14.3f} {sd:14.3f}")
    for title, phase in TREE_ROWS:
        mx, mn, mean, sd = stats([phase_rate(by.get((i, phase)), True) for i in its])
        out.append(f"   {title:<22s} " + f"{mx:14.3f} {mn:14.3f} {mean:14.3f} {sd:14.3f}")
    return out


def latencies(phases: Sequence[MdtestPhase]) -> list[str]:
    """Each phase's latencies over its ranks and iterations, in
    microseconds: exact N, min, mean, max; percentiles from fio's merged
    histograms (json+: --output-format=json+), as fio picks them."""
    out = ["", "Per-operation latency (us): (of all ranks and iterations)",
           "   Operation                 N            Min           Mean" + "".join(
               f"{'p' + format(q, 'g'):>15s}" for q in PERCENTILES) + "            Max"]
    for title, phase in ROWS + TREE_ROWS:
        ranks = [r for p in phases if p.phase == phase for r in p.per_rank if r.latency.n]
        if not ranks:
            continue
        n = sum(r.latency.n for r in ranks)
        mean = sum(r.mean_ns * r.latency.n for r in ranks) / n
        bins: dict[int, int] = {}
        for r in ranks:
            for v, c in r.latency.bins.items():
                bins[v] = bins.get(v, 0) + c
        merged = sorted(bins.items())
        if sum(bins.values()) == n:
            # a bucket's midpoint may lie beyond the exact min or max
            lo, hi = min(r.latency.min for r in ranks), max(r.latency.max for r in ranks)
            pct = "".join(f"{min(max(nearest_rank(merged, n, q), lo), hi) / 1e3:15.3f}" for q in PERCENTILES)
        else:
            pct = "".join(f"{'-':>15s}" for _ in PERCENTILES)
        out.append(f"   {title:<18s} {n:>10d} {min(r.latency.min for r in ranks) / 1e3:14.3f} {mean / 1e3:14.3f}"
                   f"{pct} {max(r.latency.max for r in ranks) / 1e3:14.3f}")
    if any(line.split()[-2] == "-" for line in out[3:]):
        out.append("   (percentiles need fio's --output-format=json+)")
    return out


def render(phases: Sequence[MdtestPhase]) -> list[str]:
    return summary(phases) + latencies(phases)
