"""Compares runs of the history database with the earlier runs of their
configuration and flags regressions (docs/reports.md "Comparing with the
history").

    mdfio-compare DB [--run ID... | --latest | --label TEXT] [--alpha A] [--min-history N]

For each phase (and waiting factor) and operation of a run, its rate and
its median and 99th-percentile latency are each tested against a two-sided
prediction interval from the same figure of the earlier runs of the same
configuration key: on the logarithm of the figure (noise on a rate or a
latency is a factor, not an amount), mean plus or minus Student's t
quantile times the standard deviation times sqrt(1 + 1/n). The level of
each interval is 1 - alpha/m, m the number of tests made (Bonferroni), so
that a change of noise alone flags anything with probability at most alpha
in one invocation, however many figures it compares. A benchmark's repeats
count as one value per run: the geometric mean of its repeats.
Exit status: 0, 1 when a figure is slower than the noise allows (a lower
rate, a higher latency), 2 when the input cannot be used.
"""
from __future__ import annotations

import argparse
import math
import sqlite3
import sys
from collections.abc import Sequence
from dataclasses import dataclass

from .cli import ArgumentParser, positive_int
from .history import HistoryError, open_db, workload_of
from .workloads import RATE_UNIT

# (column of ops, name in the output, whether a higher value is better)
METRICS = (("rate", "rate", True), ("median_s", "median", False), ("q99_s", "p99", False))
# fio's latency histogram has 64 buckets per power of two and gives a
# bucket's midpoint (docs/reports.md "Quantiles"): a quantile's logarithm
# is known to within a bucket's width, log(1 + 1/64), whose uniform error
# has this standard deviation; a history whose quantiles all fell in one
# bucket has no spread of its own, but its noise is at least that
QUANTILE_RESOLUTION_SD = math.log1p(1 / 64) / math.sqrt(12)


def betainc(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), by its
    continued fraction (evaluated with Lentz's method) on the side of x
    where it converges fast, and I_x(a, b) = 1 - I_(1-x)(b, a) on the other."""
    if not 0 <= x <= 1 or a <= 0 or b <= 0:
        raise ValueError(f"betainc({a}, {b}, {x}): expected a, b > 0 and x in [0, 1]")
    if x in (0.0, 1.0):
        return x
    if x > (a + 1) / (a + b + 2):
        return 1 - betainc(b, a, 1 - x)
    log_front = a * math.log(x) + b * math.log1p(-x) - math.log(a) - (math.lgamma(a) + math.lgamma(b)
                                                                      - math.lgamma(a + b))
    # 1 / (1 + d1 / (1 + d2 / (1 + ...))): the fraction's numerators are 1,
    # then d1, d2, ..., every denominator is 1
    tiny = 1e-300
    f = c = tiny
    d = 0.0
    for j in range(1, 1000):
        if j == 1:
            num = 1.0
        else:
            i = j - 1
            m = i // 2
            if i % 2:
                num = -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))
            else:
                num = m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m))
        d = 1 + num * d
        d = 1 / (d if abs(d) > tiny else tiny)
        c = 1 + num / c
        c = c if abs(c) > tiny else tiny
        step = c * d
        f *= step
        if abs(step - 1) < 1e-15:
            break
    return math.exp(log_front) * f


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) of Student's t distribution with df degrees of freedom."""
    tail = 0.5 * betainc(df / 2, 0.5, df / (df + t * t))
    return 1 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The t with P(T <= t) = p of Student's t distribution with df
    degrees of freedom, by bisection of t_cdf (monotonic)."""
    if not 0 < p < 1 or df <= 0:
        raise ValueError(f"t_quantile({p}, {df}): expected 0 < p < 1 and df > 0")
    if p < 0.5:
        return -t_quantile(1 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        lo, hi = hi, hi * 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return (lo + hi) / 2


@dataclass
class Comparison:
    """One figure of a run against its history: the run's value and the
    earlier runs' (each a run's geometric mean over its repeats)."""
    run_id: int
    phase: str
    waiting_factor: float
    op: str
    metric: str
    higher_is_better: bool
    value: float
    history: list[float]
    # after a rate: md-workbench's objects per second print as "/s", the
    # other workloads' with their unit (workloads.RATE_UNIT)
    rate_unit: str = "/s"

    def where(self) -> str:
        phase = self.phase if not self.waiting_factor else f"{self.phase} (waiting factor {self.waiting_factor:g})"
        return f"run {self.run_id}: {phase} {self.op} {self.metric}"

    def band(self, level: float) -> tuple[float, float]:
        """The two-sided prediction interval of level for one more run's
        value: on the logarithms, mean +- t(1 - (1 - level)/2, n - 1) * s *
        sqrt(1 + 1/n), s at least the histogram's resolution for a
        latency quantile."""
        logs = [math.log(v) for v in self.history]
        n = len(logs)
        mean = sum(logs) / n
        sd = math.sqrt(sum((x - mean) ** 2 for x in logs) / (n - 1))
        if self.metric != "rate":
            sd = max(sd, QUANTILE_RESOLUTION_SD)
        half = t_quantile(1 - (1 - level) / 2, n - 1) * sd * math.sqrt(1 + 1 / n)
        return math.exp(mean - half), math.exp(mean + half)

    def verdict(self, level: float) -> str:
        low, high = self.band(level)
        if low <= self.value <= high:
            return "within noise"
        return "faster" if (self.value > high) == self.higher_is_better else "slower"

    def figure(self, v: float) -> str:
        return f"{v:.1f}{self.rate_unit}" if self.metric == "rate" else f"{v:.4e}s"


def geometric_mean(values: Sequence[float]) -> float:
    return math.exp(sum(math.log(v) for v in values) / len(values))


def run_values(db: sqlite3.Connection, run_id: int) -> dict[tuple[str, float, str, str], float]:
    """{(phase, waiting factor, op, metric column): the run's value}: the
    geometric mean over its repeats; a figure not positive (none measured)
    is left out."""
    rows = db.execute("SELECT p.phase, p.waiting_factor, o.op, o.rate, o.median_s, o.q99_s FROM ops o "
                      "JOIN phases p ON p.run_id = o.run_id AND p.position = o.position WHERE o.run_id = ? "
                      "ORDER BY o.position", (run_id,)).fetchall()
    values: dict[tuple[str, float, str, str], list[float]] = {}
    for phase, factor, op, *figures in rows:
        for (column, _, _), v in zip(METRICS, figures):
            if v is not None and v > 0:
                values.setdefault((phase, factor, op, column), []).append(v)
    return {k: geometric_mean(v) for k, v in values.items()}


def tests_of(db: sqlite3.Connection, run_id: int, exclude_label: str | None) -> tuple[list[Comparison], int]:
    """The tests of run_id against the earlier runs of its configuration
    key (but those labelled exclude_label), and how many runs that history
    holds."""
    key = db.execute("SELECT config_key FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
    earlier = [r[0] for r in db.execute("SELECT id FROM runs WHERE config_key = ? AND id < ? "
                                        "AND (? IS NULL OR label IS NULL OR label != ?) ORDER BY id",
                                        (key, run_id, exclude_label, exclude_label))]
    history = [run_values(db, r) for r in earlier]
    workload = workload_of(db, run_id)
    unit = "/s" if workload == "md-workbench" else " " + RATE_UNIT[workload]
    out = []
    names = {column: (name, higher) for column, name, higher in METRICS}
    for (phase, factor, op, column), value in run_values(db, run_id).items():
        name, higher = names[column]
        past = [h[(phase, factor, op, column)] for h in history if (phase, factor, op, column) in h]
        out.append(Comparison(run_id, phase, factor, op, name, higher, value, past, unit))
    return out, len(earlier)


def selected_runs(db: sqlite3.Connection, args: argparse.Namespace) -> list[int]:
    """The runs to compare: --run's, --label's, else the newest."""
    if args.run:
        known = {r[0] for r in db.execute("SELECT id FROM runs")}
        unknown = [r for r in args.run if r not in known]
        if unknown:
            raise HistoryError(f"{args.db}: no run {unknown[0]} in it")
        return list(dict.fromkeys(args.run))
    if args.label is not None:
        runs = [r[0] for r in db.execute("SELECT id FROM runs WHERE label = ? ORDER BY id", (args.label,))]
        if not runs:
            raise HistoryError(f"{args.db}: no run labelled {args.label!r} in it")
        return runs
    row = db.execute("SELECT max(id) FROM runs").fetchone()
    if row[0] is None:
        raise HistoryError(f"{args.db}: no run recorded in it")
    return [row[0]]


def alpha(text: str) -> float:
    """argparse type: a probability strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1, not {text!r}")
    return value


def at_least_two(text: str) -> int:
    """argparse type: an integer of at least 2 (a spread needs two runs)."""
    value = positive_int(text)
    if value < 2:
        raise argparse.ArgumentTypeError(f"expected at least 2 runs (a spread needs two), not {text!r}")
    return value


def main(argv: Sequence[str] | None = None) -> int:
    ap = ArgumentParser(prog="mdfio-compare", description=__doc__.split("\n\n")[0])
    ap.add_argument("db", metavar="DB", help="the history database (mdfio-report --record DB)")
    which = ap.add_mutually_exclusive_group()
    which.add_argument("--run", type=positive_int, action="append", metavar="ID",
                       help="compare run ID (as mdfio-report --record said it); may be given more than once")
    which.add_argument("--latest", action="store_true", help="compare the newest run (the default)")
    which.add_argument("--label", metavar="TEXT",
                       help="compare every run labelled TEXT (a matrix), each with the earlier runs of its "
                            "configuration that have another label")
    ap.add_argument("--alpha", type=alpha, default=0.01,
                    help="the probability that noise alone flags any figure of this comparison (default 0.01)")
    ap.add_argument("--min-history", type=at_least_two, default=5, metavar="N",
                    help="the fewest earlier runs a figure is tested against (default 5)")
    args = ap.parse_args(argv)
    try:
        db = open_db(args.db, create=False)
        try:
            runs = selected_runs(db, args)
            tests, histories = [], {}
            for run_id in runs:
                found, histories[run_id] = tests_of(db, run_id, args.label)
                tests += found
        finally:
            db.close()
    except HistoryError as e:
        print(f"mdfio-compare: {e}", file=sys.stderr)
        return 2
    except sqlite3.Error as e:
        print(f"mdfio-compare: {args.db}: not a usable history database: {e}", file=sys.stderr)
        return 2
    testable = [t for t in tests if len(t.history) >= args.min_history]
    level = 1 - args.alpha / max(len(testable), 1)
    slower = 0
    for run_id in runs:
        print(f"run {run_id}: {histories[run_id]} earlier runs of its configuration; {len(testable)} tests "
              f"in all, each band a {level:.6g} prediction interval")
        for t in (t for t in tests if t.run_id == run_id):
            if len(t.history) < args.min_history:
                print(f"{t.where()} {t.figure(t.value)}: too little history ({len(t.history)} runs, needs "
                      f"{args.min_history})")
                continue
            low, high = t.band(level)
            verdict = t.verdict(level)
            slower += verdict == "slower"
            print(f"{t.where()} {t.figure(t.value)}: {verdict} (history of {len(t.history)} runs: "
                  f"{t.figure(low)} to {t.figure(high)})")
    if slower:
        print(f"mdfio-compare: {slower} figures slower than the noise of their history", file=sys.stderr)
    return 1 if slower else 0
