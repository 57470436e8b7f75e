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
