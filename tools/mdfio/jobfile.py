"""Writing md-workbench's jobfile for a number of benchmark repeats: the
shipped jobfile's [global] section, then one section per phase and repeat,
all in one fio group. The engine runs a root's sections in jobfile order
(each waits for the previous one's clones), so no stonewall is needed, and
fio's wait between stonewalled groups (a poll per group) is not paid.
Also md-workbench under data load: the same run alone, fio's own data jobs
alone, then both at once (under_load)."""
from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from .cli import ArgumentParser, positive_int
# the names the report reads a run under data load by
from .fiojson import ALONE_SUFFIX, LOAD_PREFIX, LOADED_PREFIX

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


# md-workbench under data load (docs/reports.md "Metadata under data
# load"): the LOAD_* variables mdfio-jobfile --under-load reads, with their
# defaults. fio gives an unset ${VAR} no default (an empty value is refused
# by every fio option), so only the engine's own options can default at
# fio's start; the data jobs' options are written when the jobfile is.
LOAD_DEFAULTS = {"LOAD_TIME": "1", "LOAD_ENGINE": "psync", "LOAD_DIRECT": "0", "LOAD_IODEPTH": "1",
                 "LOAD_WRITE_BS": "1m", "LOAD_WRITE_SIZE": "64m", "LOAD_WRITE_RATE": "",
                 "LOAD_READ_BS": "4k", "LOAD_READ_SIZE": "64m", "LOAD_READ_IOPS": ""}
LOAD_ENGINES = ("psync", "io_uring")
# md-workbench's parameters under load: steps enough that LOAD_TIME, not
# the steps, ends each benchmark repeat on tmpfs (the report says when a
# repeat ran out of steps first)
LOAD_MDW_DEFAULTS = {"precreate_per_set": "5000", "steps_per_set": "5000"}


def load_settings(env: dict[str, str]) -> dict[str, str]:
    """The LOAD_* values of env, each checked, defaults for the unset;
    ValueError names a bad one."""
    out = {k: env.get(k) or v for k, v in LOAD_DEFAULTS.items()}
    if not re.fullmatch(r"[1-9][0-9]{0,5}", out["LOAD_TIME"]):
        raise ValueError(f"LOAD_TIME={out['LOAD_TIME']!r}: expected whole seconds from 1 to 999999 "
                         "(md-workbench -w of each benchmark repeat)")
    if out["LOAD_ENGINE"] not in LOAD_ENGINES:
        raise ValueError(f"LOAD_ENGINE={out['LOAD_ENGINE']!r}: expected one of {', '.join(LOAD_ENGINES)}")
    if out["LOAD_DIRECT"] not in ("0", "1"):
        raise ValueError(f"LOAD_DIRECT={out['LOAD_DIRECT']!r}: expected 0 (buffered) or 1 (O_DIRECT)")
    if not re.fullmatch(r"[1-9][0-9]{0,4}", out["LOAD_IODEPTH"]):
        raise ValueError(f"LOAD_IODEPTH={out['LOAD_IODEPTH']!r}: expected a positive integer")
    for key in ("LOAD_WRITE_BS", "LOAD_WRITE_SIZE", "LOAD_READ_BS", "LOAD_READ_SIZE", "LOAD_WRITE_RATE",
                "LOAD_READ_IOPS"):
        if out[key] and not re.fullmatch(r"[1-9][0-9]{0,15}[kKmMgG]?", out[key]):
            raise ValueError(f"{key}={out[key]!r}: expected a positive number with an optional k, m or g")
    return out


def mdfio_options(global_text: str, repeats: int, seconds: str) -> str:
    """The md-workbench options of the shipped [global] section (its
    comments dropped) for one section of the under-load jobfile: repeats
    and md-workbench -w fixed, as the data jobs' time is; larger P and I."""
    lines = []
    for line in global_text.splitlines()[1:]:
        if not line.strip() or line.startswith(";") or line.startswith("percentile_list="):
            continue
        key = line.split("=", 1)[0]
        if key == "repeats":
            line = f"repeats={repeats}"
        elif key == "stonewall_timer":
            line = f"stonewall_timer={seconds}"
        elif key in LOAD_MDW_DEFAULTS:
            line = re.sub(r"\|[^|]*$", "|" + LOAD_MDW_DEFAULTS[key], line)
        lines.append(line)
    return "\n".join(lines) + "\n"


def data_job(name: str, rw: str, load: dict[str, str], seconds: int | None, unlink: bool,
             create_only: bool = False) -> str:
    """A data job of fio's own engine on a file beside md-workbench's root
    (${MDW_ROOT}.load/, made by fio); time_based for seconds."""
    kind = "WRITE" if rw == "write" else "READ"
    out = [f"[{name}]", f"ioengine={load['LOAD_ENGINE']}", f"rw={rw}", f"bs={load[f'LOAD_{kind}_BS']}",
           f"size={load[f'LOAD_{kind}_SIZE']}", f"direct={load['LOAD_DIRECT']}", f"iodepth={load['LOAD_IODEPTH']}",
           # one file per kind: the read file is laid out once, read alone
           # and under load
           f"filename=${{MDW_ROOT}}.load/{rw}.dat"]
    if create_only:
        out.append("create_only=1")
    else:
        out += ["time_based=1", f"runtime={seconds}"]
    if rw == "write" and load["LOAD_WRITE_RATE"]:
        out.append(f"rate={load['LOAD_WRITE_RATE']}")
    if rw != "write" and load["LOAD_READ_IOPS"]:
        out.append(f"rate_iops={load['LOAD_READ_IOPS']}")
    out.append(f"unlink={int(unlink)}")
    return "\n".join(out) + "\n"


def under_load(global_text: str, repeats: int, load: dict[str, str]) -> str:
    """The under-load jobfile: the read file laid out; md-workbench alone
    (precreate, benchmark repeats, cleanup); the data jobs alone for the
    benchmark's time; md-workbench again with the data jobs in its
    benchmark's stonewall group. Every phase is a stonewall group of its
    own, so the data jobs share fio's time with the loaded benchmark
    repeats only; they stop by their runtime, R times md-workbench -w,
    the least the benchmark lasts (fio's exitall is global, and the
    engine refuses it: it would end ranks mid-phase)."""
    seconds = load["LOAD_TIME"]
    options = mdfio_options(global_text, repeats, seconds)
    span = repeats * int(seconds)
    header = [
        "; md-workbench under data load, written by tools/mdfio-jobfile --under-load"
        + (f" -R {repeats}" if repeats != DEFAULT_REPEATS else "") + ".",
        "; In order, each a stonewall group: the data jobs' read file laid out;",
        "; md-workbench alone (precreate, benchmark repeats, cleanup); the data",
        "; jobs alone; md-workbench again, the data jobs in its benchmark's group.",
        ";   MDW_ROOT=/mnt/x/out fio --output-format=json+ --output=load.json jobfiles/md-workbench-under-load.fio",
        ";   mdfio-report load.json     (md-workbench under load beside alone, ratios)",
        "; md-workbench's MDW_* variables as in md-workbench.fio, but -w (stonewall",
        f"; timer) is LOAD_TIME={seconds} s per repeat and MDW_R is {repeats} (the data jobs run",
        f"; {span} s, every repeat's -w). The data jobs' files are in ${{MDW_ROOT}}.load/",
        "; (.load/ with MDW_ROOT unset), removed at the end. Their settings, from",
        "; the environment of mdfio-jobfile --under-load:",
        ]
    header += [f";   {k}={v}" for k, v in load.items()]
    header.append("; The engine path is relative to the directory fio is started from.")
    out = ["\n".join(header) + "\n", "[global]\n; md-workbench's quantiles, from fio's latency histogram; fio's "
           "p50 and p99 of the data jobs\npercentile_list=25:50:75:90:99\n",
           data_job(f"{LOAD_PREFIX}read-layout", "randread", load, None, unlink=False, create_only=True)]

    def run(prefix):
        sections = [f"[{prefix}precreate]\nstonewall\n{options}phase=precreate\n"]
        for k in range(1, repeats + 1):
            sections.append(f"[{prefix}benchmark-{k}]\n" + ("stonewall\n" if k == 1 else "")
                            + f"{options}phase=benchmark\nrepeat={k}\n")
        return sections, f"[{prefix}cleanup]\nstonewall\n{options}phase=cleanup\n"
    bench, cleanup = run("")
    out += bench + [cleanup]
    out.append(data_job(f"{LOAD_PREFIX}write{ALONE_SUFFIX}", "write", load, span, unlink=True).replace("\n", "\nstonewall\n", 1))
    out.append(data_job(f"{LOAD_PREFIX}randread{ALONE_SUFFIX}", "randread", load, span, unlink=False))
    bench, cleanup = run(LOADED_PREFIX)
    out += bench
    out.append(data_job(f"{LOAD_PREFIX}write", "write", load, span, unlink=True))
    out.append(data_job(f"{LOAD_PREFIX}randread", "randread", load, span, unlink=True))
    out.append(cleanup)
    return "\n".join(out)


def shipped_jobfile(name: str = "md-workbench.fio") -> Path | None:
    """The jobfile name this package came with: the source tree's, or the
    installed one."""
    here = Path(__file__).resolve().parent
    for p in (here.parent.parent / "jobfiles" / name,
              here.parents[3] / "share" / "mdfio" / name if len(here.parents) > 3 else None):
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
    ap.add_argument("--under-load", action="store_true",
                    help="md-workbench alone, fio's data jobs alone, then both at once, for mdfio-report's "
                         "comparison; the data jobs' settings from LOAD_* variables (docs/reports.md)")
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
    if args.under_load and args.adaptive_waiting:
        ap.error("--under-load: not with -T (the data jobs' time is R times md-workbench -w)")
    per_repeat = len(ADAPTIVE_WAITING_FACTORS) if args.adaptive_waiting else 1
    sections = per_repeat * repeats + 2
    if args.under_load:
        # both runs, and five data jobs
        sections = 2 * sections + 5
    if sections > FIO_MAX_JOBS:
        most = (FIO_MAX_JOBS - 5) // 2 - 2 if args.under_load else (FIO_MAX_JOBS - 2) // per_repeat
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
    if args.under_load:
        try:
            text = under_load(g, repeats, load_settings(dict(os.environ)))
        except ValueError as e:
            ap.error(f"--under-load: {e}")
    else:
        text = with_repeats(g, repeats, args.adaptive_waiting)
    sys.stdout.flush()
    sys.stdout.buffer.write(text.encode("utf-8", errors="surrogateescape"))
    return 0
