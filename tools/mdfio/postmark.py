"""PostMark's report (Debian's postmark 1.53, "set report verbose"), line for
line, from a run's counts and the whole seconds of its phase boundaries.

PostMark times its run with time(): whole seconds of the wall clock, read at
the start of the pool, of the transactions, at their end and after the
deletion. Each difference of 0 counts as 1 (it divides by them), every rate
is an integer division, and its byte totals are single-precision floats
summed one operation at a time; the engine sums them in the same way, so the
Data lines here are postmark's to the last digit.
"""
from __future__ import annotations

import re
import struct
from dataclasses import dataclass

KILOBYTE = 1024
MEGABYTE = KILOBYTE * KILOBYTE

OUT_OF_FILES = ("out of files!\n"
                "For this workload, either increase the number of files or\n"
                "decrease the number of transactions.\n")


def f32(x: float) -> float:
    """x rounded to a C float, as postmark holds its byte totals."""
    return struct.unpack("f", struct.pack("f", x))[0]


def scalef(v: float) -> str:
    """postmark's scalef(): a float amount of bytes in its unit."""
    if f32(v / MEGABYTE) > 1:
        return "%.2f megabytes" % f32(v / MEGABYTE)
    if f32(v / KILOBYTE):
        return "%.2f kilobytes" % f32(v / KILOBYTE)
    return "%f bytes" % v


@dataclass
class Run:
    """One PostMark run: its parameters, counters and phase boundaries
    (seconds since the epoch, truncated as time() gives them)."""
    number: int
    transactions: int
    created: int
    read: int
    appended: int
    deleted: int
    deleted_alone: int
    bytes_read: float
    bytes_written: float
    start: int
    t_start: int
    t_end: int
    end: int
    out_of_files: bool = False


def _diff(t1: int, t0: int) -> int:
    return (t1 - t0) or 1


def report(r: Run) -> str:
    """postmark's verbose report; only its out-of-files lines when the
    transactions ran out of files (postmark prints no report then)."""
    if r.out_of_files:
        return OUT_OF_FILES
    elapsed = _diff(r.end, r.start)
    t_elapsed = _diff(r.t_end, r.t_start)
    pool = _diff(r.t_start, r.start)
    deletion = _diff(r.end, r.t_end)
    mixed_created = r.created - r.number
    mixed_deleted = r.deleted - r.deleted_alone
    read_rate = f32(f32(r.bytes_read) / f32(elapsed))
    write_rate = f32(f32(r.bytes_written) / f32(elapsed))
    return (
        "Time:\n"
        f"\t{elapsed} seconds total\n"
        f"\t{t_elapsed} seconds of transactions ({r.transactions // t_elapsed} per second)\n"
        "\nFiles:\n"
        f"\t{r.created} created ({r.created // elapsed} per second)\n"
        f"\t\tCreation alone: {r.number} files ({r.number // pool} per second)\n"
        f"\t\tMixed with transactions: {mixed_created} files ({mixed_created // t_elapsed} per second)\n"
        f"\t{r.read} read ({r.read // t_elapsed} per second)\n"
        f"\t{r.appended} appended ({r.appended // t_elapsed} per second)\n"
        f"\t{r.deleted} deleted ({r.deleted // elapsed} per second)\n"
        f"\t\tDeletion alone: {r.deleted_alone} files ({r.deleted_alone // deletion} per second)\n"
        f"\t\tMixed with transactions: {mixed_deleted} files ({mixed_deleted // t_elapsed} per second)\n"
        "\nData:\n"
        f"\t{scalef(f32(r.bytes_read))} read ({scalef(read_rate)} per second)\n"
        f"\t{scalef(f32(r.bytes_written))} written ({scalef(write_rate)} per second)\n")


# the quantiles of each operation's latency line (fio's own percentiles)
QUANTILES = ("50.000000", "90.000000", "99.000000", "99.900000")


def run_of(phases: list) -> tuple[Run, dict[str, float]]:
    """PostMark's Run from the phases of an mdfio-postmark run (fiojson's
    PostmarkPhase, one each of pool, transactions, delete), and the exact
    seconds of each phase. Counts are what the engine did; the byte totals
    are the sequence's (postmark's float sums), the JSON holding no
    operation's size. The whole seconds are those time() would give for a
    run whose pool began on a second and whose phases followed without a
    gap: fio's start of a section between them is not postmark's."""
    by = {p.phase: p for p in phases}
    exp = phases[0].expected
    seconds = {ph: by[ph].seconds if ph in by and by[ph].seconds is not None else 0.0
               for ph in ("pool", "transactions", "delete")}
    n = {op: sum(p.latency[op].n for p in phases) for op in ("create", "read", "append", "delete")}
    pool_created = by["pool"].latency["create"].n if "pool" in by else 0
    t1 = seconds["pool"]
    t2 = t1 + seconds["transactions"]
    t3 = t2 + seconds["delete"]
    run = Run(number=pool_created, transactions=exp["transactions"],
              created=n["create"], read=n["read"], appended=n["append"], deleted=n["delete"],
              deleted_alone=by["delete"].latency["delete"].n if "delete" in by else 0,
              bytes_read=float(exp["bytes_read"]), bytes_written=float(exp["bytes_written"]),
              start=0, t_start=int(t1), t_end=int(t2), end=int(t3), out_of_files=bool(exp["out_of_files"]))
    return run, seconds


def _us(ns) -> str:
    return "-" if ns is None else f"{ns / 1000:.1f}"


def render(phases: list) -> list[str]:
    """mdfio-report's lines for an mdfio-postmark run: postmark's report,
    the exact phase times, and each operation's latency quantiles."""
    run, seconds = run_of(phases)
    lines = report(run).rstrip("\n").split("\n")
    total = sum(seconds.values())
    tx = seconds["transactions"]
    lines += ["", "Exact (mdfio):",
              f"\t{total:.6f} seconds total: pool {seconds['pool']:.6f}, transactions {tx:.6f}, "
              f"deletion {seconds['delete']:.6f}",
              f"\t{run.transactions / tx if tx else 0:.2f} transactions per second, "
              f"{run.created / total if total else 0:.2f} files created per second",
              "", "Latency (us): ops errors min p50 p90 p99 p99.9 max"]
    for op in ("create", "read", "append", "delete"):
        n = sum(p.latency[op].n for p in phases)
        errors = sum(p.errors[op] for p in phases)
        mins = [p.latency[op].min for p in phases if p.latency[op].n]
        maxs = [p.latency[op].max for p in phases if p.latency[op].n]
        # quantiles of the phase with the most of them (fio keeps no
        # histogram across sections without json+)
        big = max(phases, key=lambda p: p.latency[op].n)
        q = [big.latency[op].percentile.get(k) if n else None for k in QUANTILES]
        lines.append(f"\t{op}: {n} {errors} {_us(min(mins) if mins else None)} "
                     + " ".join(_us(v) for v in q) + f" {_us(max(maxs) if maxs else None)}")
    return lines


def _address_key(host: str) -> list:
    """127.0.0.10 after 127.0.0.9: numbers as numbers."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", host)]


def render_hosts(phases: list) -> list[str]:
    """render's lines for a run on one host; for a run over several
    (hosts=, a fio client's JSON), each host's report, in the order of its
    address (the JSON's order is the order the hosts ended in), and their
    aggregate: the phases start together on every host
    (the rank file's barrier), so a phase's time is the slowest host's,
    and a rate the sum of the hosts' rates."""
    hosts: dict[str, list] = {}
    for p in phases:
        hosts.setdefault(p.host, []).append(p)
    if len(hosts) == 1:
        return render(phases)
    lines = []
    runs = []
    for host, mine in sorted(hosts.items(), key=lambda h: _address_key(h[0])):
        lines += [f"Host {host}:", *(f"\t{line}" if line else "" for line in render(mine)), ""]
        runs.append(run_of(mine))
    seconds = {ph: max(s[ph] for _, s in runs) for ph in ("pool", "transactions", "delete")}
    total = sum(seconds.values())
    tx_rate = sum(r.transactions / s["transactions"] for r, s in runs if s["transactions"])
    created_rate = sum(r.created / sum(s.values()) for r, s in runs if sum(s.values()))
    counts = {k: sum(getattr(r, k) for r, _ in runs) for k in ("transactions", "created", "read", "appended",
                                                               "deleted")}
    lines += [f"All {len(runs)} hosts (mdfio):",
              f"\t{total:.6f} seconds total, each phase the slowest host's from their common start: "
              f"pool {seconds['pool']:.6f}, transactions {seconds['transactions']:.6f}, "
              f"deletion {seconds['delete']:.6f}",
              f"\t{counts['transactions']} transactions, {counts['created']} created, {counts['read']} read, "
              f"{counts['appended']} appended, {counts['deleted']} deleted",
              f"\t{tx_rate:.2f} transactions per second, {created_rate:.2f} files created per second "
              "(the sum of the hosts' rates)"]
    return lines
