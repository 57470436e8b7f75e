"""An IOzone-style sweep with fio's own engine (docs/iozone.md):

    mdfio-iozone [-n MIN] [-g MAX] [-y MIN] [-q MAX] [-i TEST ...] [--directory DIR]
                 [--direct] [--fsync] [--no-drop-caches] [--out DIR] [--json] [--fio PROGRAM]

For each file size from -n to -g and each record size from -y to -q (both
doubling, in KB or with k, m, g; a record larger than the file skipped, as
IOzone does), each test asked for runs as one fio run of fio's psync engine
on one file, of two passes: test 0 write and rewrite, 1 read and reread, 2
random read and random write, the record size fio's bs. The page cache is
dropped (sync, then 3 to /proc/sys/vm/drop_caches) before each test, so the
first pass of a test meets a cold cache and the second the cache the first
left, as IOzone's purged runs do. The jobfiles and fio's JSON are kept in
--out, read back through mdfio.fiojson, and printed as IOzone's -R report
(record sizes across, file sizes down, KB/s), or as JSON; per test a 3D
surface and per-record-size curves are drawn with gnuplot into --out.
Exit status: 0; 1 when fio failed; 2 with one line on stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import stat
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import fio
from .cli import ArgumentParser
from .fiojson import IOZONE_DROPPED, IOZONE_PREFIX, BadInput, IozonePass, error_line, iozone_passes, load
from .plot import gnuplot, gp, output_dir, write

TOOL = "mdfio-iozone"
# IOzone's tests (-i) and their passes, in the order of its report
TESTS = {0: ("write", "rewrite"), 1: ("read", "reread"), 2: ("randread", "randwrite")}
# IOzone's titles of the passes' tables (-R)
TITLES = {"write": "Writer report", "rewrite": "Re-writer report", "read": "Reader report",
          "reread": "Re-Reader report", "randread": "Random read report", "randwrite": "Random write report"}
# fio's rw of each pass
RW = {"write": "write", "rewrite": "write", "read": "read", "reread": "read",
      "randread": "randread", "randwrite": "randwrite"}
# IOzone's -a grid (iozone.c: KILOBYTES_START/END, RECLEN_START/END), in KB
FILE_KB = (64, 512 * 1024)
RECORD_KB = (4, 16 * 1024)
# the file the sweep writes in --directory, named by the tool
TEST_FILE = "mdfio-iozone.tmp"
WRITES = ("write", "randwrite")
DROP_CACHES = Path("/proc/sys/vm/drop_caches")
COLORS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666",
          "#1f78b4", "#b2df8a", "#fb9a99", "#cab2d6", "#6a3d9a")


def kb_size(text: str) -> int:
    """argparse type: IOzone's size, in KB, or with k, m or g (-g 1g)."""
    m = re.fullmatch(r"([0-9]{1,12})([kKmMgG]?)", text.strip())
    value = int(m.group(1)) << {"": 0, "k": 0, "m": 10, "g": 20}[m.group(2).lower()] if m else 0
    if value < 1 or value & (value - 1):
        raise argparse.ArgumentTypeError(f"expected a power of 2 in KB (64, 512k, 16m, 1g), not {text!r}")
    return value


def doubling(low: int, high: int) -> list[int]:
    out = []
    while low <= high:
        out.append(low)
        low *= 2
    return out


@dataclass
class Cell:
    """One pass at one file size and record size: what fio's JSON says,
    and the KB/s IOzone would print of it."""
    test: str
    file_kb: int
    record_kb: int
    bytes: int
    seconds: float
    timed_by: str
    kb_per_s: int
    json: str
    direct: bool
    fsync: bool
    cache_dropped: bool
    filename: str

    def record(self) -> dict[str, object]:
        return dict(self.__dict__)


def cell(p: IozonePass) -> Cell:
    """IOzone's rate of a pass: bytes over seconds in whole bytes per
    second, shifted down to KB (iozone.c: the rate is an integer, >>= 10).
    The time is the sum of the pass's I/O latencies, in ns (fio's runtime is
    in whole ms, more than a small file takes); a write ended by an fsync
    (--fsync) is timed by fio's runtime, the only figure of fio's that
    holds the fsync."""
    if p.end_fsync:
        seconds, timed_by = p.runtime_ms / 1000.0, "fio runtime (ms), end fsync included"
    else:
        seconds, timed_by = p.io_ns / 1e9, "sum of I/O latencies (lat_ns)"
    rate = int(p.bytes / seconds) >> 10 if seconds else 0
    return Cell(p.test, p.file_size >> 10, p.record_size >> 10, p.bytes, seconds, timed_by, rate, p.file,
                p.direct, p.end_fsync, p.cache_dropped, p.filename.replace("\\:", ":"))


def jobfile(path: Path, passes: Sequence[str], file_kb: int, record_kb: int, direct: bool, fsync: bool,
            dropped: bool) -> str:
    """The jobfile of one test: its two passes on path, the second waiting
    for the first. fio's own cache dropping (invalidate) and preallocation
    (fallocate) are off: the tool drops the cache once per test, and a
    write creates the file as IOzone's does."""
    # fio splits filename at ':' (a list of files); '\:' is a colon
    name = str(path).replace(":", "\\:")
    lines = ["[global]", "ioengine=psync", f"filename={name}", f"size={file_kb}k", f"bs={record_kb}k",
             "invalidate=0", "fallocate=none", f"direct={int(direct)}"]
    if dropped:
        # said in fio's JSON, so that the kept files tell it (mdfio-report)
        lines.append(f"description={IOZONE_DROPPED}")
    for i, p in enumerate(passes):
        lines += ["", f"[{IOZONE_PREFIX}{p}]", f"rw={RW[p]}"]
        if fsync and RW[p] in WRITES:
            lines.append("end_fsync=1")
        if i:
            lines.append("stonewall")
    return "\n".join(lines) + "\n"


def drop_caches() -> None:
    os.sync()
    try:
        DROP_CACHES.write_text("3\n")
    except OSError as e:
        raise BadInput(f"--drop-caches: cannot write 3 to {DROP_CACHES}: {e.strerror} (run as root, "
                       "or give --no-drop-caches to measure with what the cache holds)") from None


def check_drop_caches() -> None:
    """Refuses a sweep that would not drop the cache it says it drops."""
    if not os.access(DROP_CACHES, os.W_OK):
        raise BadInput(f"--drop-caches: cannot write {DROP_CACHES} (run as root, or give --no-drop-caches "
                       "to measure with what the cache holds)")


def run_sweep(args: argparse.Namespace, out: Path) -> list[Cell]:
    """Runs every test at every grid point; the cells, read back from the
    kept JSON of each fio run. The test file is the tool's own: one there
    before is refused, and it is removed at the end however the sweep ends."""
    target = args.directory / TEST_FILE
    if os.path.lexists(target):
        raise BadInput(f"--directory {args.directory}: {TEST_FILE} is there already; not the tool's to "
                       "overwrite: remove it, or give another directory")
    cells = []
    try:
        for file_kb in doubling(*args.file_kb):
            for record_kb in doubling(*args.record_kb):
                if record_kb > file_kb:
                    break
                if os.path.lexists(target):
                    os.unlink(target)
                for test in args.tests:
                    cells += run_test(args, out, target, test, file_kb, record_kb)
    finally:
        if os.path.lexists(target):
            os.unlink(target)
    return cells


def run_test(args: argparse.Namespace, out: Path, target: Path, test: int, file_kb: int,
             record_kb: int) -> list[Cell]:
    """One test at one grid point: the cache dropped, fio run, its cells."""
    passes = TESTS[test]
    job = out / f"{file_kb}k-{record_kb}k-{passes[0]}.fio"
    if args.drop_caches:
        drop_caches()
    r = fio.run(job, jobfile(target, passes, file_kb, record_kb, args.direct, args.fsync, args.drop_caches),
                fio=args.fio)
    if r.rc:
        said = r.stderr.strip().splitlines() or [f"exit status {r.rc}"]
        raise FioFailed(f"{job}: fio failed: {said[-1]}")
    return read_cells(job.with_suffix(".json"), passes)


class FioFailed(BadInput):
    """fio ran and failed, or left a pass short of its file: mdfio-iozone
    ends with exit status 1; a report of the kept JSON refuses the file."""


def read_cells(path: Path, passes: Sequence[str]) -> list[Cell]:
    """The cells of one kept fio JSON file of the test of passes."""
    return sweep_cells([load(path)], passes)


def sweep_cells(docs: Sequence[tuple[dict, str]], passes: Sequence[str] | None = None) -> list[Cell]:
    """The cells of fio's documents [(doc, name)] of a sweep, each of one
    test (of passes, if given), each pass checked whole: fio's error of 0
    and every byte of the file moved. FioFailed names one that is not."""
    cells, seen = [], {}
    names = [name for _, name in docs]
    twice = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if twice is not None:
        raise BadInput(f"{twice}: given twice")
    for doc, name in docs:
        for c in _cells(doc, name, passes):
            key = (c.test, c.file_kb, c.record_kb)
            if key in seen:
                raise BadInput(f"files of different sweeps: {c.test} of a {c.file_kb} KB file in {c.record_kb} KB "
                               f"records in {seen[key]} and {name}")
            seen[key] = name
            cells.append(c)
    return cells


def _cells(doc, name, passes):
    found = iozone_passes(doc, name)
    if passes is None:
        passes = next((ps for ps in TESTS.values() if ps[0] == found[0].test), ()) if found else ()
    if [p.test for p in found] != list(passes):
        raise BadInput(f"{name}: jobs {', '.join(p.name for p in found) or 'none'}, expected "
                       f"{', '.join(IOZONE_PREFIX + p for p in passes)}")
    for p in found:
        if p.error or p.bytes != p.file_size:
            raise FioFailed(f"{name}: job {p.name}: moved {p.bytes} of the file's {p.file_size} bytes, fio error "
                            f"{p.error}: the pass did not complete (a full file system?)")
    return [cell(p) for p in found]


def table(cells: Sequence[Cell], test: str, record_kbs: Sequence[int]) -> list[str]:
    """IOzone's -R table of a pass (iozone.c, dump_report): a line of the
    record sizes, quoted; a line per file size, quoted, then its rates."""
    lines = [f'"{TITLES[test]}"', "      " + "".join(f'  "{r}"' for r in record_kbs)]
    rows = {}
    for c in cells:
        if c.test == test:
            rows.setdefault(c.file_kb, []).append(c)
    for file_kb, row in sorted(rows.items()):
        lines.append(f'"{file_kb}"  ' + "".join(f" {c.kb_per_s} " for c in sorted(row, key=lambda c: c.record_kb)))
    return lines


@dataclass
class Settings:
    """How a sweep ran, as its cells say: one value each, or the cells are
    of different sweeps."""
    directory: str
    direct: bool
    fsync: bool
    cache_dropped: bool


def settings(cells: Sequence[Cell]) -> Settings:
    def one(what, values):
        values = sorted(set(values))
        if not values:
            return False
        if len(values) != 1:
            raise BadInput(f"files of different sweeps: {what} {' and '.join(map(str, values))} among them "
                           f"({cells[0].json}, ...)")
        return values[0]
    return Settings(one("directory", (os.path.dirname(c.filename) for c in cells)),
                    one("direct", (c.direct for c in cells)),
                    one("end_fsync", (c.fsync for c in cells if RW[c.test] in WRITES)),
                    one("page cache dropped", (c.cache_dropped for c in cells)))


def report(cells: Sequence[Cell]) -> list[str]:
    """IOzone's report of a sweep: a line of how it ran, then the table of
    each pass run, in IOzone's order, over the record sizes from the
    smallest run to the largest."""
    s = settings(cells)
    records = doubling(min(c.record_kb for c in cells), max(c.record_kb for c in cells))
    cache = "dropped before each test" if s.cache_dropped else "not dropped (--no-drop-caches)"
    lines = [f"{TOOL}: fio psync on {s.directory}, {'O_DIRECT' if s.direct else 'buffered'}"
             f"{', fsync in the write timings' if s.fsync else ''}, page cache {cache}",
             "Output is in kBytes/sec", "", "Excel output is below:"]
    for test in TITLES:
        if any(c.test == test for c in cells):
            lines += [""] + table(cells, test, records)
    return lines


def report_sweep(docs: Sequence[tuple[dict, str]], form: str) -> list[str]:
    """mdfio-report's lines of a sweep's kept JSON: IOzone's table, or
    (form "json") the JSON mdfio-iozone --json prints."""
    if form not in ("md-workbench", "json"):
        raise BadInput(f"--format {form}: an IOzone sweep (mdfio-iozone) is reported as IOzone's table, or --json")
    cells = sweep_cells(docs)
    return [report_json(cells)] if form == "json" else report(cells)


def report_json(cells: Sequence[Cell], figures: Sequence[str] = ()) -> str:
    s = settings(cells)
    return json.dumps({**s.__dict__, "cells": [c.record() for c in cells], "figures": list(figures)}, indent=2)


def plot_sweep(out: Path, cells: Sequence[Cell]) -> list[str]:
    """Every pass's figures into out (made if missing); their names."""
    s = settings(cells)
    output_dir(out)
    return [f for test in TITLES for f in plot_test(out, cells, test, note(s, test))]


def size_name(kb: int) -> str:
    """A size in KB as 64K, 1M, 2G."""
    for unit, shift in (("G", 20), ("M", 10)):
        if kb >= 1 << shift:
            return f"{kb >> shift}{unit}"
    return f"{kb}K"


def log_axis(axis: str, values: Sequence[int]) -> list[str]:
    """gnuplot's commands of a log-2 axis over values (KB): a tic at each,
    named by size_name, and a margin of a third of a step either side, so
    the end tics are drawn."""
    return [f"set logscale {axis} 2", f"set {axis}range [{min(values) / 1.26}:{max(values) * 1.26}]",
            f"set {axis}tics (" + ", ".join(f"{gp(size_name(v))} {v}" for v in values) + ")"]


def note(s: Settings, test: str) -> str:
    """What a figure's title says of how its pass ran."""
    return ((" (O_DIRECT)" if s.direct else "") + (", fsync timed" if s.fsync and RW[test] in WRITES else "")
            + ("" if s.cache_dropped else ", cache not dropped"))


def plot_test(out: Path, cells: Sequence[Cell], test: str, note: str) -> list[str]:
    """The surface (file size x record size x KB/s) and the curves (KB/s
    over file size, one per record size) of a pass."""
    mine = [c for c in cells if c.test == test]
    if not mine:
        return []
    files = sorted({c.file_kb for c in mine})
    records = sorted({c.record_kb for c in mine})
    dat = out / f"{test}.dat"
    # one scan per file size, blank lines between: gnuplot's grid order
    blocks = []
    for f in files:
        blocks.append("".join(f"{f} {c.record_kb} {c.kb_per_s}\n"
                              for c in sorted((c for c in mine if c.file_kb == f), key=lambda c: c.record_kb)))
    write(dat, "# file_kb record_kb kb_per_s\n" + "\n".join(blocks))
    title = f"{TITLES[test]}: KB/s{note}"
    zmax = max(c.kb_per_s for c in mine) or 1
    surface = f"{test}-surface"
    gnuplot(out, surface, "\n".join([
        f"set title {gp(title)}", *log_axis("x", files), *log_axis("y", records),
        "set xlabel 'file size' offset 0,-1", "set ylabel 'record size' offset 3,-1", "set zlabel 'KB/s' rotate offset -4,0",
        f"set zrange [0:{zmax * 1.05:.0f}]", "set format z '%.0f'", "set ticslevel 0", "set view 60,30",
        "set key off",
        *(["set pm3d ftriangles", "set palette rgbformulae 33,13,10", "set cblabel 'KB/s'", "set format cb '%.0f'",
           "set hidden3d", f"splot {gp(dat)} using 1:2:3 with pm3d, '' using 1:2:3 with lines lc rgb '#333333'"]
          if len(files) > 1 and len(records) > 1 else
          # a grid of one row or column has no surface: its points, on stalks
          [f"splot {gp(dat)} using 1:2:3 with impulses lw 3 lc rgb '#4a6fa5', '' using 1:2:3 with points pt 7 "
           "ps 2 lc rgb '#4a6fa5'"])]))
    curves = f"{test}-curves"
    plots = []
    for i, r in enumerate(records):
        rdat = out / f"{test}-record-{r}k.dat"
        write(rdat, "# file_kb kb_per_s\n" + "".join(
            f"{c.file_kb} {c.kb_per_s}\n" for c in sorted((c for c in mine if c.record_kb == r), key=lambda c: c.file_kb)))
        plots.append(f"{gp(rdat)} using 1:2 with linespoints lw 2 pt 7 lc rgb '{COLORS[i % len(COLORS)]}' "
                     f"title {gp(size_name(r) + ' records')}")
    gnuplot(out, curves, "\n".join([
        f"set title {gp(title + ', one line per record size')}", *log_axis("x", files),
        "set xlabel 'file size'", "set ylabel 'KB/s'", "set format y '%.0f'",
        "set yrange [0:*]", "set grid", "set key outside right top",
        "plot " + ", ".join(plots)]))
    return [surface, curves]


def parser() -> ArgumentParser:
    ap = ArgumentParser(prog=TOOL, description="IOzone's write, rewrite, read, reread, random read and random "
                        "write over a grid of file sizes and record sizes, each run by fio's psync engine; "
                        "IOzone's report (-R) and gnuplot figures of it (docs/iozone.md)")
    ap.add_argument("-n", dest="min_file", type=kb_size, default=FILE_KB[0], metavar="KB",
                    help=f"the smallest file size, KB or with k, m, g (IOzone's -n; default {FILE_KB[0]})")
    ap.add_argument("-g", dest="max_file", type=kb_size, default=FILE_KB[1], metavar="KB",
                    help="the largest file size (IOzone's -g; default 512m)")
    ap.add_argument("-y", dest="min_record", type=kb_size, default=RECORD_KB[0], metavar="KB",
                    help=f"the smallest record size, at least 4 (IOzone's -y; default {RECORD_KB[0]})")
    ap.add_argument("-q", dest="max_record", type=kb_size, default=RECORD_KB[1], metavar="KB",
                    help="the largest record size, at most 16m (IOzone's -q; default 16m)")
    ap.add_argument("-i", dest="tests", type=int, action="append", choices=sorted(TESTS), metavar="TEST",
                    help="a test to run, repeated for more: 0 write/rewrite, 1 read/reread, 2 random read/"
                    "random write; 0 is needed for the others' file, as in IOzone (default: all three)")
    ap.add_argument("--directory", type=Path, default=Path("."), metavar="DIR",
                    help=f"where the test file {TEST_FILE} is written and removed (default: .)")
    ap.add_argument("--direct", action="store_true", help="O_DIRECT I/O (IOzone's -I; fio's direct=1)")
    ap.add_argument("--fsync", action="store_true",
                    help="end each write pass with an fsync, in its time (IOzone's -e; fio's end_fsync=1)")
    ap.add_argument("--drop-caches", dest="drop_caches", action="store_true", default=True,
                    help="drop the page cache before each test (the default; needs root)")
    ap.add_argument("--no-drop-caches", dest="drop_caches", action="store_false",
                    help="keep the page cache as it is")
    ap.add_argument("--out", type=Path, default=Path("mdfio-iozone"), metavar="DIR",
                    help="where the jobfiles, fio's JSON and the figures are kept: a new or empty directory "
                    "(default: ./mdfio-iozone)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON, not IOzone's table")
    ap.add_argument("--fio", default="fio", metavar="PROGRAM", help="the fio to run (default: fio on PATH)")
    return ap


def check(args: argparse.Namespace) -> None:
    """The options that argparse alone does not check; BadInput names one."""
    if args.min_record < RECORD_KB[0]:
        raise BadInput(f"-y {args.min_record}: expected a record size of at least {RECORD_KB[0]} KB, as IOzone's")
    if args.max_record > RECORD_KB[1]:
        raise BadInput(f"-q {args.max_record}: expected a record size of at most {RECORD_KB[1]} KB, as IOzone's")
    for low, high, lo_opt, hi_opt in ((args.min_file, args.max_file, "-n", "-g"),
                                      (args.min_record, args.max_record, "-y", "-q")):
        if low > high:
            raise BadInput(f"{lo_opt} {low} is above {hi_opt} {high}: expected {lo_opt} <= {hi_opt}")
    if args.min_file < args.min_record:
        raise BadInput(f"-n {args.min_file}: below the smallest record size (-y {args.min_record}): "
                       "expected -n >= -y, so that every file of the grid holds a record")
    args.tests = sorted(set(args.tests or TESTS))
    if 0 not in args.tests:
        raise BadInput("-i: expected test 0 (write) among the tests: the others read and write its file, "
                       "as in IOzone")
    try:
        if not stat.S_ISDIR(args.directory.stat().st_mode):
            raise BadInput(f"--directory {args.directory}: not a directory")
    except OSError as e:
        raise BadInput(f"--directory {args.directory}: cannot use it: {e.strerror}") from None
    args.file_kb, args.record_kb = (args.min_file, args.max_file), (args.min_record, args.max_record)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        check(args)
        if args.drop_caches:
            check_drop_caches()
        out = args.out
        output_dir(out)
        if any(out.iterdir()):
            # the sweep's names (write.dat, 64k-4k-write.json) would
            # replace files that may not be a sweep's
            raise BadInput(f"--out {out}: not empty: expected a new or empty directory for the sweep's files")
        cells = run_sweep(args, out)
        figures = plot_sweep(out, cells)
    except FioFailed as e:
        print(f"{TOOL}: {e}", file=sys.stderr)
        return 1
    except BadInput as e:
        print(error_line(TOOL, e), file=sys.stderr)
        return 2
    except OSError as e:
        print(f"{TOOL}: {e.filename}: {e.strerror}", file=sys.stderr)
        return 1
    if args.json:
        print(report_json(cells, [str(out / f"{f}.png") for f in figures]))
    else:
        print("\n".join(report(cells)))
    return 0
