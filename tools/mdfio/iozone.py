"""An IOzone-style sweep with fio's own engine (docs/iozone.md):

    mdfio-iozone [-n MIN] [-g MAX] [-y MIN] [-q MAX] [-i TEST ...] [--directory DIR]
                 [--direct] [--fsync] [--no-drop-caches] [--hosts FILE] [--out DIR] [--json]
                 [--fio PROGRAM]

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
With --hosts, every test runs at once on every fio server of fio's host
list, each on a file of its own, and the report adds up the hosts' rates
as IOzone's throughput mode (-t) adds up its children's.
Exit status: 0; 1 when fio failed; 2 with one line on stderr.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import secrets
import stat
import sys
from collections.abc import Iterator, Sequence
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
# with --hosts, the n-th host's (from 1), in the same directory on every
# host: a directory shared by the hosts holds each host's own
HOST_FILE = "mdfio-iozone-{}.tmp"
HOST_FILE_NAME = re.compile(r"/mdfio-iozone-([0-9]+)\.tmp$")
# a --directory that fio's exec_prerun can name: fio runs it through a
# shell and cuts an option's value at ";" or "#"; fio reads ":" in a
# filename as a list of files
SHELL_SAFE_PATH = re.compile(r"/[A-Za-z0-9_.+@/-]*")
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


def grid(args: argparse.Namespace) -> Iterator[tuple[int, int]]:
    """IOzone's grid: each file size, with each record size up to it."""
    for file_kb in doubling(*args.file_kb):
        for record_kb in doubling(*args.record_kb):
            if record_kb > file_kb:
                break
            yield file_kb, record_kb


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
    host: str | None

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
                p.direct, p.end_fsync, p.cache_dropped, p.filename.replace("\\:", ":"), p.host)


def jobfile(path: Path | str, passes: Sequence[str], file_kb: int, record_kb: int, direct: bool, fsync: bool,
            dropped: bool, prepare: Sequence[str] = ()) -> str:
    """The jobfile of one test: its two passes on path, the second waiting
    for the first; prepare, the lines of a job that runs before both (a
    host's shell_job). fio's own cache dropping (invalidate) and
    preallocation (fallocate) are off: the tool drops the cache once per
    test, and a write creates the file as IOzone's does."""
    # fio splits filename at ':' (a list of files); '\:' is a colon
    name = str(path).replace(":", "\\:")
    lines = ["[global]", "ioengine=psync", f"size={file_kb}k", f"bs={record_kb}k",
             "invalidate=0", "fallocate=none", f"direct={int(direct)}"]
    if dropped:
        # said in fio's JSON, so that the kept files tell it (mdfio-report)
        lines.append(f"description={IOZONE_DROPPED}")
    lines += prepare
    for i, p in enumerate(passes):
        # the file in each job, not in [global]: a fio 3.33 client's JSON
        # keeps one [global] for all its servers, each of which has its own
        lines += ["", f"[{IOZONE_PREFIX}{p}]", f"filename={name}", f"rw={RW[p]}"]
        if fsync and RW[p] in WRITES:
            lines.append("end_fsync=1")
        if i or prepare:
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
        for file_kb, record_kb in grid(args):
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


# Over hosts, fio is the tool's only way onto them: a job of fio's null
# engine whose exec_prerun runs a shell command on its host (a fio server)
# before it moves its one block. fio skips the job's I/O when the command
# fails, so the bytes it moved in the kept JSON say whether the command
# succeeded. fio saves the command's output in "<jobname>.prerun.txt":
# the job is named by a path in --directory with a name no one else's
# (a random token), and the command's first act is to remove that file.
SHELL_BLOCK = 4096


def read_hosts(path: Path) -> list[str]:
    """fio's host list (fio --client=FILE): one server a line."""
    try:
        lines = path.read_text().splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise BadInput(f"--hosts {path}: cannot read it: {getattr(e, 'strerror', None) or e}") from None
    hosts = [line.strip() for line in lines if line.strip() and not line.strip().startswith("#")]
    if not hosts:
        raise BadInput(f"--hosts {path}: no host in it: expected fio's host list, one fio server a line")
    return hosts


@dataclass
class HostRun:
    """A sweep's work over hosts: fio's host list, the directory on every
    host, the random part of the tool's job names."""
    hosts: list[str]
    directory: str
    token: str
    names: dict[int, str]   # the host name each position's server reports

    def file(self, i: int) -> str:
        return f"{self.directory}/{HOST_FILE.format(i + 1)}"

    def shell_job(self, i: int, what: str, command: str) -> list[str]:
        name = f"{self.directory}/.mdfio-iozone-{self.token}-{i + 1}-{what}"
        return ["", f"[{name}]", "ioengine=null", f"size={SHELL_BLOCK}", f"bs={SHELL_BLOCK}", "rw=read",
                f"exec_prerun=sh -c 'rm -f -- {name}.prerun.txt && {command}'"]

    def succeeded(self, doc: dict, what: str) -> dict[int, bool]:
        """{host position: whether its shell job 'what' ran its command}."""
        end = f"-{what}"
        mine = f"{self.directory}/.mdfio-iozone-{self.token}-"
        done = {}
        for j in doc.get("client_stats", []):
            name = str(j.get("jobname", ""))
            if name.startswith(mine) and name.endswith(end):
                i = int(name[len(mine):-len(end)]) - 1
                done[i] = j.get("read", {}).get("io_bytes") == SHELL_BLOCK
                self.names.setdefault(i, str(j.get("hostname")))
        return done

    def run(self, out: Path, base: str, texts: Sequence[str], fio_program: str) -> fio.FioRun:
        """One fio client over every host, each its own jobfile (fio's
        --client=A a.fio --client=B b.fio); fio's JSON kept as base.json."""
        jobs = [out / f"{base}.host{i + 1}.fio" for i in range(len(self.hosts))]
        args = []
        for i, (host, job) in enumerate(zip(self.hosts, jobs)):
            job.write_text(texts[i])
            args += [f"--client={host}"] + ([str(job)] if i + 1 < len(jobs) else [])
        r = fio.run(jobs[-1], args=args, fio=fio_program)
        for suffix in (".json", ".stdout", ".stderr"):
            if jobs[-1].with_suffix(suffix).exists():
                os.replace(jobs[-1].with_suffix(suffix), out / f"{base}{suffix}")
        return r


def host_dir(out: Path) -> Path:
    """Where the runs that check the hosts and remove their files keep
    their jobfiles and JSON: beside the tests' files, not among them (a
    report of out/*.json is of the tests alone)."""
    path = out / "hosts"
    path.mkdir(exist_ok=True)
    return path


def check_hosts(args: argparse.Namespace, out: Path) -> HostRun:
    """The hosts reached and the sweep possible on each: --directory there
    and writable, no test file of the tool's name in it, the page cache
    droppable (as check_drop_caches). Refused in one line naming the
    host."""
    d = str(args.directory)
    hr = HostRun(args.host_list, d.rstrip("/") or "/", secrets.token_hex(8), {})
    checks = [("directory", "test -d {d} && test -w {d}"),
              ("no-test-file", "test ! -e {f} && test ! -L {f}")]
    if args.drop_caches:
        checks.append(("drop-caches", f"test -w {DROP_CACHES}"))
    texts = []
    for i in range(len(hr.hosts)):
        lines = ["[global]", "description=mdfio-iozone: is the sweep possible on this host"]
        for what, command in checks:
            lines += hr.shell_job(i, what, command.format(d=hr.directory, f=hr.file(i)))
        texts.append("\n".join(lines) + "\n")
    r = hr.run(host_dir(out), "check", texts, args.fio)
    if r.rc or r.json is None:
        said = (r.stderr.strip() or r.stdout.strip()).splitlines() or [f"exit status {r.rc}"]
        raise BadInput(f"--hosts {args.hosts}: fio could not run on them: {said[-1]}")
    results = {what: hr.succeeded(r.json, what) for what, _ in checks}
    if sorted(results["directory"]) != list(range(len(hr.hosts))):
        raise BadInput(f"--hosts {args.hosts}: {len(hr.hosts)} fio servers listed, {len(results['directory'])} "
                       "answered")
    names = list(hr.names.values())
    twice = next((n for k, n in enumerate(names) if n in names[:k]), None)
    if twice is not None:
        raise BadInput(f"--hosts {args.hosts}: two of its fio servers are host {twice}: expected each host once")
    for i in range(len(hr.hosts)):
        host = hr.names[i]
        if not results["directory"][i]:
            raise BadInput(f"--directory {d}: host {host}: not a directory its fio server can write")
        if not results["no-test-file"][i]:
            raise BadInput(f"--directory {d}: host {host}: {HOST_FILE.format(i + 1)} is there already; not "
                           "the tool's to overwrite: remove it, or give another directory")
        if args.drop_caches and not results["drop-caches"][i]:
            raise BadInput(f"--drop-caches: host {host}: cannot write {DROP_CACHES} (run its fio server as "
                           "root, or give --no-drop-caches to measure with what the cache holds)")
    return hr


def run_sweep_hosts(args: argparse.Namespace, out: Path, hr: HostRun) -> list[Cell]:
    """run_sweep over hosts: each test at once on every host, each host's
    file its own; the hosts' files removed at the end however the sweep
    ends (they were not there before: check_hosts)."""
    cells = []
    try:
        for file_kb, record_kb in grid(args):
            for test in args.tests:
                cells += run_host_test(args, out, hr, test, file_kb, record_kb)
    except BaseException:
        # the sweep's own failure is the one to tell
        remove_host_files(args, out, hr)
        raise
    left = remove_host_files(args, out, hr)
    if left:
        raise FioFailed(f"{host_dir(out) / 'remove.json'}: the test file was not removed on {', '.join(left)}: "
                        f"remove {args.directory}/mdfio-iozone-*.tmp there")
    return cells


def remove_host_files(args: argparse.Namespace, out: Path, hr: HostRun) -> list[str]:
    """Removes each host's test file; the hosts where that failed."""
    texts = ["[global]\ndescription=mdfio-iozone: the test file removed\n" +
             "\n".join(hr.shell_job(i, "remove", f"rm -f -- {hr.file(i)}")) + "\n" for i in range(len(hr.hosts))]
    r = hr.run(host_dir(out), "remove", texts, args.fio)
    done = hr.succeeded(r.json or {}, "remove")
    return [hr.names.get(i, hr.hosts[i]) for i in range(len(hr.hosts)) if not done.get(i)]


def run_host_test(args: argparse.Namespace, out: Path, hr: HostRun, test: int, file_kb: int,
                  record_kb: int) -> list[Cell]:
    """One test at one grid point on every host: before it, on each host,
    the previous grid point's file removed (test 0) and the cache dropped."""
    passes = TESTS[test]
    base = f"{file_kb}k-{record_kb}k-{passes[0]}"
    commands = (["rm -f -- {f}"] if test == 0 else []) + (
        [f"sync && echo 3 > {DROP_CACHES}"] if args.drop_caches else [])
    texts = []
    for i in range(len(hr.hosts)):
        prepare = hr.shell_job(i, "prepare", " && ".join(commands).format(f=hr.file(i))) if commands else []
        texts.append(jobfile(hr.file(i), passes, file_kb, record_kb, args.direct, args.fsync, args.drop_caches,
                             prepare))
    r = hr.run(out, base, texts, args.fio)
    json_file = out / f"{base}.json"
    if r.rc or r.json is None:
        said = r.stderr.strip().splitlines() or [f"exit status {r.rc}"]
        raise FioFailed(f"{json_file}: fio failed: {said[-1]}")
    if commands:
        done = hr.succeeded(r.json, "prepare")
        failed = [hr.names.get(i, hr.hosts[i]) for i in range(len(hr.hosts)) if not done.get(i)]
        if failed:
            raise FioFailed(f"{json_file}: on {', '.join(failed)} the test ran without "
                            f"{'the cache dropped' if args.drop_caches else 'the previous file removed'}")
    cells = read_cells(json_file, passes)
    hosts = sorted({c.host for c in cells})
    if len(hosts) != len(hr.hosts):
        raise FioFailed(f"{json_file}: passes of {len(hosts)} hosts, expected {len(hr.hosts)}")
    return cells


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
            key = (c.host, c.test, c.file_kb, c.record_kb)
            if key in seen:
                on = f" on host {c.host}" if c.host is not None else ""
                raise BadInput(f"files of different sweeps: {c.test} of a {c.file_kb} KB file in {c.record_kb} KB "
                               f"records{on} in {seen[key]} and {name}")
            seen[key] = name
            cells.append(c)
    return cells


def _cells(doc, name, passes):
    found = iozone_passes(doc, name)
    if passes is None:
        passes = next((ps for ps in TESTS.values() if ps[0] == found[0].test), ()) if found else ()
    # a fio client's JSON holds the passes of every host: each host's own
    by_host = {}
    for p in found:
        by_host.setdefault(p.host, []).append(p)
    for host, mine in by_host.items() or [(None, [])]:
        if [p.test for p in mine] != list(passes):
            on = f" on host {host}" if host is not None else ""
            raise BadInput(f"{name}: jobs {', '.join(p.name for p in mine) or 'none'}{on}, expected "
                           f"{', '.join(IOZONE_PREFIX + p for p in passes)}")
    for p in found:
        if p.error or p.bytes != p.file_size:
            raise FioFailed(f"{name}: job {p.name}: moved {p.bytes} of the file's {p.file_size} bytes, fio error "
                            f"{p.error}: the pass did not complete (a full file system?)")
    return [cell(p) for p in found]


def table(cells: Sequence[Cell | Total], test: str, record_kbs: Sequence[int], title: str = "") -> list[str]:
    """IOzone's -R table of a pass (iozone.c, dump_report): a line of the
    record sizes, quoted; a line per file size, quoted, then its rates."""
    lines = [f'"{title or TITLES[test]}"', "      " + "".join(f'  "{r}"' for r in record_kbs)]
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


@dataclass
class Total:
    """A pass at one grid point over every host: IOzone's throughput mode
    (-t) adds up its children's rates ("Children see throughput", the
    figure its -R report keeps), each child's own bytes over its own time;
    here each host is a child. The sum is of the hosts' rates in bytes per
    second, cut to KB as a cell's rate is."""
    test: str
    file_kb: int
    record_kb: int
    hosts: int
    kb_per_s: int

    def record(self) -> dict[str, object]:
        return dict(self.__dict__)


def hosts_of(cells: Sequence[Cell]) -> list[str]:
    """The hosts of a sweep over hosts, in the order of fio's host list
    (their files' numbers: fio's JSON has them in the order they ended);
    [] for a sweep run here."""
    def position(host):
        m = HOST_FILE_NAME.search(next(c.filename for c in cells if c.host == host))
        return (int(m.group(1)) if m else 0, host)
    return sorted({c.host for c in cells if c.host is not None}, key=position)


def totals(cells: Sequence[Cell]) -> list[Total]:
    """Each pass and grid point's Total; every host must have run it."""
    hosts = hosts_of(cells)
    groups = {}
    for c in cells:
        groups.setdefault((c.test, c.file_kb, c.record_kb), []).append(c)
    out = []
    for (test, file_kb, record_kb), group in groups.items():
        missing = sorted(set(hosts) - {c.host for c in group})
        if missing:
            raise BadInput(f"files of different sweeps: {test} of a {file_kb} KB file in {record_kb} KB records "
                           f"on {', '.join(map(str, missing))} missing ({group[0].json}, ...)")
        rate = sum(c.bytes / c.seconds if c.seconds else 0.0 for c in group)
        out.append(Total(test, file_kb, record_kb, len(group), int(rate) >> 10))
    return out


def report(cells: Sequence[Cell]) -> list[str]:
    """IOzone's report of a sweep: a line of how it ran, then the table of
    each pass run, in IOzone's order, over the record sizes from the
    smallest run to the largest. Over hosts, each table is of the Totals,
    and each host's own tables follow."""
    s = settings(cells)
    hosts = hosts_of(cells)
    records = doubling(min(c.record_kb for c in cells), max(c.record_kb for c in cells))
    cache = "dropped before each test" if s.cache_dropped else "not dropped (--no-drop-caches)"
    where = f", on {len(hosts)} hosts at once ({', '.join(hosts)})" if hosts else ""
    lines = [f"{TOOL}: fio psync on {s.directory}, {'O_DIRECT' if s.direct else 'buffered'}"
             f"{', fsync in the write timings' if s.fsync else ''}, page cache {cache}{where}",
             "Output is in kBytes/sec"]
    if hosts:
        lines.append(f"Each table is the sum of the {len(hosts)} hosts' rates (IOzone -t's \"Children see "
                     "throughput\"); each host's own tables follow, titled with its name")
    lines += ["", "Excel output is below:"]
    summed = totals(cells) if hosts else cells
    for test in TITLES:
        if any(c.test == test for c in cells):
            lines += [""] + table(summed, test, records)
    for host in hosts:
        mine = [c for c in cells if c.host == host]
        for test in TITLES:
            if any(c.test == test for c in mine):
                lines += [""] + table(mine, test, records, f"{TITLES[test]}, {host}")
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
    hosts = hosts_of(cells)
    over = {"hosts": hosts, "totals": [t.record() for t in totals(cells)]} if hosts else {}
    return json.dumps({**s.__dict__, **over, "cells": [c.record() for c in cells], "figures": list(figures)},
                      indent=2)


def plot_sweep(out: Path, cells: Sequence[Cell]) -> list[str]:
    """Every pass's figures into out (made if missing); their names."""
    s = settings(cells)
    hosts = hosts_of(cells)
    output_dir(out)
    drawn = totals(cells) if hosts else cells
    summed = f", sum of {len(hosts)} hosts" if hosts else ""
    return [f for test in TITLES for f in plot_test(out, drawn, test, note(s, test) + summed)]


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


def plot_test(out: Path, cells: Sequence[Cell | Total], test: str, note: str) -> list[str]:
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
    ap.add_argument("--hosts", type=Path, metavar="FILE",
                    help="fio's host list (fio --client=FILE: one fio server a line): every test runs at once "
                    "on every host, each on its own file in --directory, an absolute path on the hosts")
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
    args.file_kb, args.record_kb = (args.min_file, args.max_file), (args.min_record, args.max_record)
    if args.hosts is not None:
        # the directory is the hosts': check_hosts looks there
        if not SHELL_SAFE_PATH.fullmatch(str(args.directory)):
            raise BadInput(f"--directory {args.directory}: with --hosts, expected an absolute path of letters, "
                           "digits and _.+@/- (fio runs the tool's commands on the hosts through a shell)")
        args.host_list = read_hosts(args.hosts)
        return
    try:
        if not stat.S_ISDIR(args.directory.stat().st_mode):
            raise BadInput(f"--directory {args.directory}: not a directory")
    except OSError as e:
        raise BadInput(f"--directory {args.directory}: cannot use it: {e.strerror}") from None


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        check(args)
        if args.drop_caches and args.hosts is None:
            check_drop_caches()
        out = args.out
        output_dir(out)
        if any(out.iterdir()):
            # the sweep's names (write.dat, 64k-4k-write.json) would
            # replace files that may not be a sweep's
            raise BadInput(f"--out {out}: not empty: expected a new or empty directory for the sweep's files")
        cells = run_sweep(args, out) if args.hosts is None else run_sweep_hosts(args, out, check_hosts(args, out))
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
