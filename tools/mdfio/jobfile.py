"""Writing md-workbench's jobfile for a number of benchmark repeats: the
shipped jobfile's [global] section, then one section per phase and repeat,
all in one fio group. The engine runs a root's sections in jobfile order
(each waits for the previous one's clones), so no stonewall is needed, and
fio's wait between stonewalled groups (a poll per group) is not paid."""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from .cli import ArgumentParser, positive_int

# md-workbench's -T: after each repeat at waiting factor 0, seven more at
# 0.0625 doubled up to 4
ADAPTIVE_WAITING_FACTORS = ("0", "0.0625", "0.125", "0.25", "0.5", "1", "2", "4")
DEFAULT_REPEATS = 3
# The most jobs one fio runs, clones included: REAL_MAX_JOBS (4096) in
# segments of JOBS_PER_SEG (8), of which fio fills one less than its
# REAL_MAX_SEG (fio.h, init.c: add_thread_segment), in 3.33 and 3.41
FIO_MAX_JOBS = 4088
# the most a --from jobfile may hold: far beyond a [global] section
MAX_JOBFILE = 16 << 20


def global_section(text: str) -> str:
    """The [global] section of a jobfile's text (its comments included)."""
    m = re.search(r"^\[global\]\n(.*?)(?=^\[)", text, re.S | re.M)
    if not m:
        raise ValueError("no [global] section followed by a job section")
    return "[global]\n" + m.group(1).rstrip("\n") + "\n"


def with_repeats(global_text: str, repeats: int, adaptive_waiting: bool = False,
                 repeats_option: str | None = None) -> str:
    """A jobfile of precreate, benchmark repeats 1..repeats (eight each, one
    per waiting factor, with adaptive_waiting) and cleanup. repeats= is set
    to repeats_option (text, e.g. an ${MDW_R} reference) or to repeats."""
    g = re.sub(r"^repeats=.*$", f"repeats={repeats_option or repeats}", global_text, flags=re.M)
    if "\nrepeats=" not in g:
        g += f"repeats={repeats_option or repeats}\n"
    out = [g, "[precreate]\nphase=precreate\n"]
    for k in range(1, repeats + 1):
        if not adaptive_waiting:
            out.append(f"[benchmark-{k}]\nphase=benchmark\nrepeat={k}\n")
            continue
        for f in ADAPTIVE_WAITING_FACTORS:
            out.append(f"[benchmark-{k}-waiting-{f}]\nphase=benchmark\nrepeat={k}\nadaptive_waiting=1\n"
                       f"waiting_factor={f}\n")
    # the factor md-workbench is left with names its cleanup's latency logs
    out.append("[cleanup]\nphase=cleanup\n" + ("adaptive_waiting=1\nwaiting_factor=8\n" if adaptive_waiting else ""))
    return "\n".join(out)


def shipped_jobfile() -> Path | None:
    """The jobfile this package came with: the source tree's, or the
    installed one."""
    here = Path(__file__).resolve().parent
    for p in (here.parent.parent / "jobfiles" / "md-workbench.fio",
              here.parents[3] / "share" / "mdfio" / "md-workbench.fio" if len(here.parents) > 3 else None):
        if p is not None and p.is_file():
            return p
    return None


def main(argv: Sequence[str] | None = None) -> int:
    ap = ArgumentParser(prog="mdfio-jobfile", description=(
        "Writes md-workbench's fio jobfile for exactly R benchmark repeats to stdout "
        "(run it with: mdfio-jobfile -R 20 | fio -). Every other parameter stays an "
        "MDW_* variable of the environment fio runs in."))
    ap.add_argument("-R", "--repeats", type=positive_int,
                    help=f"benchmark repeats (md-workbench -R); default: $MDW_R, else {DEFAULT_REPEATS}")
    ap.add_argument("-T", "--adaptive-waiting", action="store_true",
                    help="md-workbench -T: eight benchmark sections per repeat, waiting_factor "
                         + ", ".join(ADAPTIVE_WAITING_FACTORS))
    ap.add_argument("--from", dest="source", metavar="JOBFILE",
                    help="take the [global] section from JOBFILE (default: the shipped md-workbench.fio)")
    args = ap.parse_args(argv)
    repeats = args.repeats
    if repeats is None:
        env = os.environ.get("MDW_R", "")
        try:
            repeats = positive_int(env) if env else DEFAULT_REPEATS
        except Exception:
            ap.error(f"MDW_R={env!r}: expected a positive integer (the benchmark repeats)")
    per_repeat = len(ADAPTIVE_WAITING_FACTORS) if args.adaptive_waiting else 1
    sections = per_repeat * repeats + 2
    if sections > FIO_MAX_JOBS:
        most = (FIO_MAX_JOBS - 2) // per_repeat
        ap.error(f"-R {repeats}{' -T' if args.adaptive_waiting else ''}: {sections} sections, more than the "
                 f"{FIO_MAX_JOBS} jobs one fio runs; at most {most} repeats, fewer with numjobs > 1 (each "
                 f"clone is a job): run more as separate fio runs")
    source = Path(args.source) if args.source else shipped_jobfile()
    if source is None:
        ap.error("--from: no shipped md-workbench.fio found beside this tool; name a jobfile")
    try:
        with open(source, "rb") as f:
            data = f.read(MAX_JOBFILE + 1)
    except OSError as e:
        ap.error(f"--from {source}: cannot read it: {e.strerror}")
    # a device or binary data is no jobfile (/dev/zero was read until
    # memory ran out); bytes that are not UTF-8 (a Latin-1 comment) are
    # fio's to read, and pass through as they are
    if len(data) > MAX_JOBFILE:
        ap.error(f"--from {source}: more than {MAX_JOBFILE >> 20} MiB: expected a fio jobfile")
    if b"\0" in data:
        ap.error(f"--from {source}: holds NUL bytes: binary data, expected a fio jobfile")
    text = data.decode("utf-8", errors="surrogateescape")
    try:
        g = global_section(text)
    except ValueError as e:
        ap.error(f"--from {source}: {e}")
    sys.stdout.flush()
    sys.stdout.buffer.write(with_repeats(g, repeats, args.adaptive_waiting).encode("utf-8", errors="surrogateescape"))
    return 0
