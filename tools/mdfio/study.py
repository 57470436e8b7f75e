"""A study: a matrix of md-workbench runs (or of another workload's:
[study] workload, WORKLOADS) described in one TOML file (docs/studies.md),
expanded into points and run one fresh file system per point and repeat,
each fio run's JSON kept and recorded in the history database
(mdfio.history).

    mdfio-study run STUDY.toml --db DB [--out DIR] [--label TEXT] [--format-devices] [--engine-dir DIR]
    mdfio-study list STUDY.toml
    mdfio-study report STUDY.toml --db DB [--label TEXT] --html PAGE

parse() reads and checks the file, Study.points() expands it, Runner.run()
runs it; mdfio.htmlpage.study_page() writes its page; main() is the
command."""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import itertools
import json
import os
import re
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, TextIO

from . import fio as fio_runs
from .cgroups import MemCgroup
from .cli import ArgumentParser
from .filesystems import Filesystem, FilesystemError, mounted
from .fiojson import BadInput, read_documents
from .history import (HistoryError, not_recordable, open_db, outputs_digest, read_outputs, record, record_workload,
                      run_of)
from .jobfile import global_section, shipped_jobfile, with_repeats
from .workloads import workload_run

# [parameters]: name -> (md-workbench's default, the MDW_* variable of the
# shipped jobfile, or None for what goes into the jobfile itself, the
# least value); in the order of a point's name
PARAMETERS: dict[str, tuple[Any, str | None, int]] = {
    "engine": ("posix", None, 0),
    "iodepth": (1, None, 1),
    "ranks": (1, "MDW_N", 1),
    "D": (10, "MDW_D", 1),
    "P": (3000, "MDW_P", 1),
    "I": (1000, "MDW_I", 1),
    "S": (3901, "MDW_S", 1),
    "R": (3, "MDW_R", 1),
    "offset": (1, "MDW_O", 0),
    "lim_free_mem": (0, "MDW_LIM_FREE_MEM", 0),
    "lim_free_mem_phase": (0, "MDW_LIM_FREE_MEM_PHASE", 0),
    "drop_caches": (False, "MDW_DROP_CACHES", 0),
}
# how each parameter shows in a point's name
SHORT = {"engine": "", "iodepth": "qd", "ranks": "n", "D": "D", "P": "P", "I": "I", "S": "S", "R": "R",
         "offset": "O", "lim_free_mem": "m", "lim_free_mem_phase": "M", "drop_caches": "dc"}
STUDY_KEYS = ("name", "label", "repeats", "workdir", "memory_cgroup", "workload")
# the other workloads a study runs (docs/studies.md "Other workloads"): the
# shipped jobfile, its engine and the variable of its directory; its
# [parameters] are the jobfile's other variables
WORKLOADS = {"postmark": ("postmark.fio", "postmark", "PM_ROOT"),
             "mdtest": ("mdtest.fio", "mdtest", "MDT_ROOT"),
             "tree": ("tree-study.fio", "tree", "TREE_ROOT")}
# an IOzone sweep (mdfio-iozone, docs/iozone.md) as a study's workload:
# its [parameters] and the tool's option each gives; a parameter not given
# takes the tool's default
IOZONE_OPTIONS = {"file_min": "-n", "file_max": "-g", "record_min": "-y", "record_max": "-q", "tests": "-i",
                  "direct": "--direct", "fsync": "--fsync", "drop_caches": "--no-drop-caches"}
# a variable of a jobfile: ${NAME}
JOBFILE_VARIABLE = re.compile(r"\$\{([A-Z][A-Z0-9_]*)\}")
FS_KEYS = ("kind", "name", "size", "mkfs_options", "mount_options", "device", "direct_io")
FS_KINDS = ("tmpfs", "ext4", "xfs", "btrfs")
# what a file system is made with when its entry gives no size
DEFAULT_SIZE = {"tmpfs": "1G", "ext4": "1G", "xfs": "1G", "btrfs": "1G"}
# with memory_cgroup, fio's own memory and the ranks' beside what the
# page cache may hold: the cgroup's limit is the point's limit plus this
CGROUP_MARGIN = 256 << 20
# a name that is a file name and a configuration name without quoting
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


class StudyError(Exception):
    """A study file that cannot be used, or a device that may not be
    formatted: one line naming the file and the key (the command prints
    it and exits 2)."""


@dataclass(frozen=True)
class FilesystemSpec:
    """One [[filesystem]] entry: what each point's fresh file system is."""
    name: str
    kind: str
    size: str | None
    mkfs_options: tuple[str, ...]
    mount_options: str
    device: str | None
    direct_io: bool


@dataclass(frozen=True)
class Point:
    """One configuration of the matrix: a file system and a value of every
    parameter (P computed from fixed_count where it is given)."""
    filesystem: FilesystemSpec
    values: dict[str, Any] = field(hash=False)
    workload: str = "md-workbench"

    @property
    def name(self) -> str:
        """Stable: the file system's name and every value, in PARAMETERS'
        order, so that a point keeps its name (and its results) when other
        dimensions change; another workload's: its variables as named, in
        the file's order, each value's characters that a file name may not
        hold as '_'."""
        parts = [self.filesystem.name]
        if self.workload != "md-workbench":
            parts += [f"{key}{re.sub(r'[^A-Za-z0-9._+-]', '_', str(v))}" for key, v in self.values.items()]
            return "-".join(parts)
        for key in PARAMETERS:
            v = self.values[key]
            parts.append(f"{SHORT[key]}{int(v) if isinstance(v, bool) else v}")
        return "-".join(parts)


@dataclass
class Study:
    """A parsed study file."""
    path: Path
    name: str
    label: str
    repeats: int
    workdir: Path | None
    memory_cgroup: bool
    filesystems: list[FilesystemSpec]
    # name -> the values of that dimension (one value: not a dimension)
    parameters: dict[str, list[Any]]
    fixed_count: list[int] | None
    workload: str = "md-workbench"

    def points(self) -> list[Point]:
        """Every point: the file systems outermost, then the parameters in
        PARAMETERS' order, each list's values in the file's order."""
        keys = list(PARAMETERS) if self.workload == "md-workbench" else list(self.parameters)
        dims = [self.parameters[k] for k in keys]
        counts: list[int | None] = list(self.fixed_count) if self.fixed_count else [None]
        out = []
        for fs in self.filesystems:
            for combo in itertools.product(*dims, counts):
                values = dict(zip(keys, combo[:-1]))
                count = combo[-1]
                if count is not None:
                    values["P"] = count // values["ranks"]
                    if values["P"] < 1:
                        raise StudyError(f"{self.path}: [parameters] fixed_count = {count} with ranks = "
                                         f"{values['ranks']} gives P = 0 objects per dataset: raise "
                                         f"fixed_count or lower ranks")
                out.append(Point(fs, values, self.workload))
        # a fixed count may give two combinations the same P
        seen: dict[str, Point] = {}
        for p in out:
            seen.setdefault(p.name, p)
        return list(seen.values())


def config_name(study: Study, point: Point) -> str:
    """The configuration name point's runs are recorded under."""
    return f"{study.name}/{point.name}"


def _fail(path: Path, where: str, message: str) -> NoReturn:
    raise StudyError(f"{path}: {where}: {message}")


def _unknown(path: Path, table: str, given: dict[str, Any], known: Sequence[str]) -> None:
    for key in given:
        if key not in known:
            _fail(path, f"{table} {key}".lstrip(), f"unknown key (expected one of {', '.join(known)})")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _values(path: Path, where: str, raw: Any, check: Callable[[Any], str | None]) -> list[Any]:
    """The values of a parameter that may be a list (a dimension): each
    checked by check, which says what was expected or None."""
    values = raw if isinstance(raw, list) else [raw]
    if not values:
        _fail(path, where, "an empty list (a dimension needs at least one value)")
    for v in values:
        why = check(v)
        if why:
            _fail(path, where, f"expected {why} or a list of them, not {v!r}")
    if len(set(map(repr, values))) != len(values):
        _fail(path, where, f"a value is listed twice: {values!r}")
    return values


def _int_check(least: int) -> Callable[[Any], str | None]:
    def check(v: Any) -> str | None:
        if _is_int(v) and v >= least:
            return None
        return "a positive integer" if least == 1 else f"an integer of at least {least}"
    return check


def _engine_check(v: Any) -> str | None:
    return None if isinstance(v, str) and re.fullmatch(r"[a-z0-9_]+", v) else \
        "an engine name (posix, uring, aio)"


def _bool_check(v: Any) -> str | None:
    return None if isinstance(v, bool) else "true or false"


def _string(path: Path, where: str, v: Any, pattern: re.Pattern[str] | None = None) -> str:
    if not isinstance(v, str) or not v or (pattern is not None and not pattern.fullmatch(v)):
        what = "a name of letters, digits, '.', '_', '+', '-'" if pattern is not None else "a non-empty string"
        _fail(path, where, f"expected {what}, not {v!r}")
    return v


def _filesystem(path: Path, i: int, entry: Any) -> FilesystemSpec:
    where = f"[[filesystem]] #{i + 1}"
    if not isinstance(entry, dict):
        _fail(path, where, "expected a table")
    _unknown(path, where, entry, FS_KEYS)
    if "kind" not in entry:
        _fail(path, f"{where} kind", f"missing (one of {', '.join(FS_KINDS)})")
    kind = entry["kind"]
    if kind not in FS_KINDS:
        _fail(path, f"{where} kind", f"expected one of {', '.join(FS_KINDS)}, not {kind!r}")
    name = _string(path, f"{where} name", entry.get("name", kind), NAME)
    device = entry.get("device")
    if device is not None:
        device = _string(path, f"{where} device", device)
        if kind == "tmpfs":
            _fail(path, f"{where} device", "a tmpfs is made in memory, not on a device")
        if not device.startswith("/dev/"):
            _fail(path, f"{where} device", f"expected a block device under /dev, not {device!r}")
        for key in ("size", "direct_io"):
            if key in entry:
                _fail(path, f"{where} {key}", "not with device (it is the image's, of a loop device)")
    size = entry.get("size", None if device else DEFAULT_SIZE[kind])
    if size is not None and (not isinstance(size, str) or not re.fullmatch(r"\d+[KMGT]?", size)):
        _fail(path, f"{where} size", f"expected a size as \"512M\" or \"4G\", not {size!r}")
    mkfs = entry.get("mkfs_options", [])
    if isinstance(mkfs, str):
        mkfs = shlex.split(mkfs)
    if not isinstance(mkfs, list) or not all(isinstance(o, str) for o in mkfs):
        _fail(path, f"{where} mkfs_options", f"expected a string or a list of strings, not {mkfs!r}")
    if mkfs and kind == "tmpfs":
        _fail(path, f"{where} mkfs_options", "a tmpfs has no mkfs")
    mount = entry.get("mount_options", "")
    if not isinstance(mount, str):
        _fail(path, f"{where} mount_options", f"expected a string (as mount -o takes it), not {mount!r}")
    direct = entry.get("direct_io", False)
    if not isinstance(direct, bool):
        _fail(path, f"{where} direct_io", f"expected true or false, not {direct!r}")
    if direct and kind == "tmpfs":
        _fail(path, f"{where} direct_io", "a tmpfs has no loop device")
    return FilesystemSpec(name, kind, size, tuple(mkfs), mount, device, direct)


def parse_text(text: str, path: str | os.PathLike[str]) -> Study:
    """The study of a file's text; StudyError (one line naming the file and
    the key) for anything it cannot use: TOML it cannot read, an unknown
    key, a value of the wrong type, an empty list."""
    path = Path(path)
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise StudyError(f"{path}: not valid TOML: {e}") from None
    _unknown(path, "", doc, ("study", "parameters", "filesystem"))
    for table in ("study", "parameters"):
        if not isinstance(doc.get(table, {}), dict):
            _fail(path, table, "expected a table ([" + table + "])")
    st = doc.get("study")
    if st is None:
        _fail(path, "[study]", "missing (it names the study)")
    _unknown(path, "[study]", st, STUDY_KEYS)
    if "name" not in st:
        _fail(path, "[study] name", "missing")
    name = _string(path, "[study] name", st["name"], NAME)
    label = _string(path, "[study] label", st.get("label", name))
    repeats = st.get("repeats", 1)
    if not _is_int(repeats) or repeats < 1:
        _fail(path, "[study] repeats", f"expected a positive integer (runs per point), not {repeats!r}")
    workdir = st.get("workdir")
    if workdir is not None:
        workdir = Path(_string(path, "[study] workdir", workdir))
    cgroup = st.get("memory_cgroup", False)
    if not isinstance(cgroup, bool):
        _fail(path, "[study] memory_cgroup", f"expected true or false, not {cgroup!r}")

    workload = st.get("workload", "md-workbench")
    if workload != "md-workbench" and workload not in WORKLOADS and workload != "iozone":
        _fail(path, "[study] workload", f"expected one of md-workbench, {', '.join(WORKLOADS)}, iozone, "
                                        f"not {workload!r}")
    params = doc.get("parameters", {})
    if workload != "md-workbench":
        values = (_iozone_parameters(path, params) if workload == "iozone"
                  else _workload_parameters(path, workload, params))
        entries_ = _filesystems(path, doc)
        study = Study(path, name, label, repeats, workdir, cgroup, entries_, values, None, workload)
        if cgroup:
            _fail(path, "[study] memory_cgroup", "md-workbench's (its lim_free_mem): not with another workload")
        for point in study.points():
            if workload == "iozone":
                _check_iozone_point(path, point)
        return study
    _unknown(path, "[parameters]", params, (*PARAMETERS, "fixed_count"))
    values = {}
    for key, (default, _, least) in PARAMETERS.items():
        check = _engine_check if key == "engine" else _bool_check if key == "drop_caches" else _int_check(least)
        values[key] = _values(path, f"[parameters] {key}", params.get(key, default), check)
    fixed = None
    if "fixed_count" in params:
        if "P" in params:
            _fail(path, "[parameters] fixed_count", "not with P (fixed_count sets P = fixed_count // ranks)")
        fixed = _values(path, "[parameters] fixed_count", params["fixed_count"], _int_check(1))

    filesystems = _filesystems(path, doc)
    study = Study(path, name, label, repeats, workdir, cgroup, filesystems, values, fixed)
    study.points()      # a fixed count that gives P = 0 is refused now
    return study


def _filesystems(path: Path, doc: dict[str, Any]) -> list[FilesystemSpec]:
    entries = doc.get("filesystem")
    if entries is None:
        _fail(path, "[[filesystem]]", "missing: at least one file system to run on")
    if not isinstance(entries, list) or not entries:
        _fail(path, "[[filesystem]]", "expected one or more [[filesystem]] tables")
    filesystems = [_filesystem(path, i, e) for i, e in enumerate(entries)]
    names = [f.name for f in filesystems]
    for n in names:
        if names.count(n) > 1:
            _fail(path, "[[filesystem]] name", f"{n!r} names two entries: give each its own name")
    devices = [f.device for f in filesystems if f.device]
    for d in devices:
        if devices.count(d) > 1:
            _fail(path, "[[filesystem]] device", f"{d} is named twice")
    return filesystems


def workload_variables(workload: str) -> list[str]:
    """The variables of another workload's shipped jobfile that a study
    may set, in the file's order (its directory's is the point's own);
    StudyError when the jobfile is not there."""
    name, _, root = WORKLOADS[workload]
    shipped = shipped_jobfile(name)
    if shipped is None:
        raise StudyError(f"no shipped {name} beside this tool (share/mdfio, or the source tree's jobfiles/)")
    # the options' variables, not those its comments name
    found = [v for line in shipped.read_text().splitlines() if not line.lstrip().startswith((";", "#"))
             for v in JOBFILE_VARIABLE.findall(line)]
    return [v for v in dict.fromkeys(found) if v != root]


def _variable_check(v: Any) -> str | None:
    ok = (_is_int(v) and v >= 0) or (isinstance(v, str) and v and "\n" not in v)
    return None if ok else "an integer of at least 0 or a non-empty string"


def _workload_parameters(path: Path, workload: str, params: dict[str, Any]) -> dict[str, list[Any]]:
    """[parameters] of another workload: its jobfile's variables, each a
    value or a list of them (a dimension); a variable not given takes the
    jobfile's default, and is no part of the points' names."""
    _unknown(path, "[parameters]", params, workload_variables(workload))
    return {key: _values(path, f"[parameters] {key}", raw, _variable_check) for key, raw in params.items()}


def _iozone_parameters(path: Path, params: dict[str, Any]) -> dict[str, list[Any]]:
    """[parameters] of an IOzone sweep: mdfio-iozone's options
    (IOZONE_OPTIONS), each a value or a list of them (a dimension)."""
    from .iozone import kb_size
    _unknown(path, "[parameters]", params, list(IOZONE_OPTIONS))

    def size(v: Any) -> str | None:
        try:
            if not isinstance(v, bool) and isinstance(v, (int, str)):
                kb_size(str(v))
                return None
        except argparse.ArgumentTypeError:
            pass
        return 'a power of 2 in KB (64) or with k, m, g ("512k", "16m")'

    def tests(v: Any) -> str | None:
        return None if isinstance(v, str) and re.fullmatch(r"[0-2](,[0-2])*", v) else \
            'IOzone\'s tests in one string, as "0,1,2" (0 write, 1 read, 2 random)'
    checks = {"tests": tests, "direct": _bool_check, "fsync": _bool_check, "drop_caches": _bool_check}
    return {key: _values(path, f"[parameters] {key}", raw, checks.get(key, size)) for key, raw in params.items()}


def iozone_arguments(values: dict[str, Any]) -> list[str]:
    """mdfio-iozone's options of a point's values."""
    args = []
    for key, v in values.items():
        if key == "tests":
            args += [a for t in v.split(",") for a in ("-i", t)]
        elif isinstance(v, bool):
            # drop_caches is on unless said otherwise; the others off
            if v != (key == "drop_caches"):
                args.append(IOZONE_OPTIONS[key])
        else:
            args += [IOZONE_OPTIONS[key], str(v)]
    return args


def _check_iozone_point(path: Path, point: Point) -> None:
    """What mdfio-iozone checks across its options (sizes in order, test 0
    among the tests), refused before anything runs."""
    from .iozone import check, parser
    args = iozone_arguments(point.values)
    try:
        check(parser().parse_args(args))
    except BadInput as e:
        _fail(path, f"[parameters] point {point.name}", f"mdfio-iozone {e}")


def iozone_tool() -> Path | None:
    """mdfio-iozone: beside this mdfio-study (installed, both in bindir),
    or in the source tree's tools/."""
    for d in (Path(sys.argv[0]).resolve().parent, Path(__file__).resolve().parent.parent):
        if (d / "mdfio-iozone").is_file():
            return d / "mdfio-iozone"
    return None


def parse(path: str | os.PathLike[str]) -> Study:
    """The study in the file at path (parse_text)."""
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise StudyError(f"{path}: cannot read it: {e.strerror}") from None
    except UnicodeDecodeError:
        raise StudyError(f"{path}: not UTF-8 text: expected a TOML study file") from None
    return parse_text(text, path)


def device_holds(device: str) -> str | None:
    """What blkid finds on device (a file system, a partition table, any
    signature it knows), in words; None when it finds nothing."""
    if not shutil.which("blkid"):
        raise StudyError(f"{device}: blkid is not installed: cannot tell whether it holds a file system")
    done = subprocess.run(["blkid", "-p", "-o", "export", device], capture_output=True, text=True)
    if done.returncode == 2 and not done.stdout.strip():
        return None
    if done.returncode not in (0, 2):
        why = " ".join(done.stderr.split()) or f"blkid exited with {done.returncode}"
        raise StudyError(f"{device}: blkid cannot probe it: {why}")
    tags = dict(line.split("=", 1) for line in done.stdout.splitlines() if "=" in line)
    if "PTTYPE" in tags:
        return f"a {tags['PTTYPE']} partition table"
    if "TYPE" in tags:
        return f"a{'n' if tags['TYPE'][:1] in 'aeiouxAEIOUX' else ''} {tags['TYPE']} file system"
    return "a signature blkid knows (" + ", ".join(f"{k}={v}" for k, v in tags.items()) + ")"


def check_device(spec: FilesystemSpec, format_devices: bool) -> None:
    """Refuses (StudyError, one line) a device that is not a block device,
    is mounted, or holds anything blkid knows unless format_devices."""
    dev = spec.device
    assert dev is not None
    try:
        st = os.stat(dev)
    except OSError as e:
        raise StudyError(f"[[filesystem]] {spec.name}: device {dev}: {e.strerror}") from None
    if not stat.S_ISBLK(st.st_mode):
        raise StudyError(f"[[filesystem]] {spec.name}: device {dev}: not a block device")
    number = f"{os.major(st.st_rdev)}:{os.minor(st.st_rdev)}"
    with open("/proc/self/mountinfo") as f:
        for line in f:
            if line.split(" ")[2] == number:
                raise StudyError(f"{dev} is mounted on {line.split(' ')[4]}: never formatted")
    holds = device_holds(dev)
    if holds and not format_devices:
        raise StudyError(f"{dev} holds {holds}: not formatted without --format-devices")


@dataclass
class Outcome:
    """What running a study did: counts, and each failed point+repeat."""
    ran: int = 0
    skipped: int = 0
    failed: list[str] = field(default_factory=list)


def duration(seconds: float) -> str:
    """A time as 42s, 3m05s or 2h10m."""
    s = int(round(seconds))
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    return f"{s // 3600}h{s % 3600 // 60:02d}m"


class Interrupted(BaseException):
    """SIGTERM (or SIGINT) while a study runs: unwinds the point's set-up,
    as KeyboardInterrupt does, so no mount or loop device is left."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """SIGINT and SIGTERM raise Interrupted in the main thread for the
    duration (restored after)."""
    def stop(signum: int, frame: object) -> None:
        raise Interrupted(signum)
    old = {s: signal.signal(s, stop) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def engine_dir_default() -> Path | None:
    """Where the shipped jobfile's engine is: the installed jobfile names
    it by an absolute path, the source tree's relative to the tree."""
    shipped = shipped_jobfile()
    if shipped is None:
        return None
    m = re.search(r"^ioengine=external:(.*)/mdfio-posix\.so$", shipped.read_text(), re.M)
    if not m:
        return None
    d = Path(m[1])
    return d if d.is_absolute() else (shipped.parent.parent / d).resolve()


class Runner:
    """Runs a study's points into out (one directory per point: each
    repeat's jobfile, JSON, stdout, stderr and marker) and db."""

    def __init__(self, study: Study, db_path: str | os.PathLike[str], out: str | os.PathLike[str],
                 engine_dir: str | os.PathLike[str], format_devices: bool = False,
                 progress: TextIO = sys.stderr, fio: str = "fio") -> None:
        self.study = study
        self.db_path = Path(db_path)
        self.out = Path(out)
        self.engine_dir = Path(engine_dir)
        self.format_devices = format_devices
        self.progress = progress
        self.fio = fio

    def files(self, point: Point, repeat: int) -> Path:
        """The jobfile of point's repeat; its JSON, stdout and stderr are
        beside it with their suffixes, and .done once recorded."""
        return self.out / point.name / f"repeat-{repeat}.fio"

    def config_name(self, point: Point) -> str:
        return config_name(self.study, point)

    def marker(self, point: Point, repeat: int) -> str:
        """What the .done marker of point's repeat holds: what it was
        recorded as."""
        return f"{self.config_name(point)} repeat {repeat} label {self.study.label}\n"

    def done(self, db: Any, point: Point, repeat: int) -> bool:
        """Whether point's repeat is recorded under the study's label: its
        marker says so; or its JSON is in db (killed between the record's
        commit and the marker); or db holds repeat runs of the point's
        configuration name with the label (DIR lost)."""
        job = self.files(point, repeat)
        marker = job.with_suffix(".done")
        with contextlib.suppress(OSError):
            if marker.read_text() == self.marker(point, repeat):
                return True
        out = job.with_suffix(".json")
        recorded = False
        if out.exists():
            with contextlib.suppress(Exception):
                row = db.execute("SELECT label FROM runs WHERE outputs_sha256 = ?",
                                 (outputs_digest(read_outputs([out])),)).fetchone()
                recorded = row is not None and row[0] == self.study.label
        if not recorded:
            (count,) = db.execute("SELECT count(*) FROM runs WHERE config_name = ? AND label = ?",
                                  (self.config_name(point), self.study.label)).fetchone()
            recorded = count >= repeat
        if recorded:
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(self.marker(point, repeat))
        return recorded

    def check(self) -> None:
        """What must hold before anything runs: the jobfile and the engines
        exist, and each named device may be formatted."""
        if self.study.workload == "iozone":
            if iozone_tool() is None:
                raise StudyError(f"{self.study.path}: [study] workload iozone: no mdfio-iozone beside this tool")
        elif self.study.workload != "md-workbench":
            workload_variables(self.study.workload)
            path = fio_runs.engine_path(self.engine_dir, WORKLOADS[self.study.workload][1])
            if not path.is_file():
                raise StudyError(f"{self.study.path}: [study] workload {self.study.workload}: no {path} "
                                 f"(--engine-dir names the directory of the built engines)")
        elif shipped_jobfile() is None:
            raise StudyError("no shipped md-workbench.fio beside this tool (share/mdfio, or the source tree's "
                             "jobfiles/)")
        for engine in self.study.parameters.get("engine", []) if self.study.workload == "md-workbench" else []:
            path = fio_runs.engine_path(self.engine_dir, engine)
            if not path.is_file():
                raise StudyError(f"{self.study.path}: [parameters] engine {engine}: no {path} "
                                 f"(--engine-dir names the directory of the built engines)")
        if self.study.memory_cgroup and self.study.workload == "md-workbench" and any(p.values["lim_free_mem"] or p.values["lim_free_mem_phase"]
                                            for p in self.study.points()):
            if not (MemCgroup.BASE / "memory.limit_in_bytes").exists():
                raise StudyError(f"{self.study.path}: [study] memory_cgroup: no cgroup v1 memory controller at "
                                 f"{MemCgroup.BASE}")
        for spec in self.study.filesystems:
            if spec.device:
                check_device(spec, self.format_devices)

    def jobfile(self, point: Point) -> str:
        if point.workload != "md-workbench":
            name, engine_name, _ = WORKLOADS[point.workload]
            shipped = shipped_jobfile(name)
            assert shipped is not None, "check() found it"
            engine = fio_runs.engine_path(self.engine_dir, engine_name).resolve()
            return re.sub(r"^ioengine=.*$", f"ioengine=external:{engine}", shipped.read_text(), flags=re.M)
        shipped = shipped_jobfile()
        assert shipped is not None, "check() found it"
        engine = fio_runs.engine_path(self.engine_dir, point.values["engine"]).resolve()
        g = re.sub(r"^ioengine=.*$", f"ioengine=external:{engine}", global_section(shipped.read_text()), flags=re.M)
        g += f"iodepth={point.values['iodepth']}\n"
        return with_repeats(g, point.values["R"])

    def environment(self, point: Point, root: Path) -> dict[str, str]:
        if point.workload != "md-workbench":
            names = workload_variables(point.workload)
            root_var = WORKLOADS[point.workload][2]
            env = {k: v for k, v in os.environ.items() if k not in names and k != root_var}
            env.update({k: str(v) for k, v in point.values.items()})
            env[root_var] = str(root)
            # what processes_under finds a killed study's fio by
            env["MDW_ROOT"] = str(root)
            return env
        env = {k: v for k, v in os.environ.items() if not k.startswith("MDW_")}
        for key, (_, var, _) in PARAMETERS.items():
            if var:
                v = point.values[key]
                env[var] = str(int(v) if isinstance(v, bool) else v)
        env["MDW_ROOT"] = str(root)
        return env

    def cgroup_limit(self, point: Point) -> int | None:
        """The memory cgroup's limit in bytes for point, None to run
        machine-wide (md-real-io's way, the default)."""
        if point.workload != "md-workbench":
            return None
        units = max(point.values["lim_free_mem"], point.values["lim_free_mem_phase"])
        if not self.study.memory_cgroup or not units:
            return None
        return units * 1000 * 1024 + CGROUP_MARGIN

    def run_one(self, db: Any, point: Point, repeat: int) -> str | None:
        """Runs point's repeat on a fresh file system and records it; the
        reason it failed, or None."""
        spec = point.filesystem
        job = self.files(point, repeat)
        job.parent.mkdir(parents=True, exist_ok=True)
        for suffix in (".failed", ".done"):
            job.with_suffix(suffix).unlink(missing_ok=True)
        workdir = (self.study.workdir or Path(tempfile.gettempdir())).absolute()
        workdir.mkdir(parents=True, exist_ok=True)
        journal = self.out / "mounted"
        prefix = f"mdfio-study-{os.getpid()}-"
        # written before anything is made, so that a run killed with
        # SIGKILL leaves the next one what to remove
        journal.write_text(json.dumps({"workdir": str(workdir), "prefix": prefix}))
        cgroup = fs = None
        try:
            fs = Filesystem(spec.kind, workdir, size=spec.size, options=spec.mount_options,
                            mkfs_options=spec.mkfs_options, direct_io=spec.direct_io, device=spec.device,
                            prefix=prefix)
            root = fs.fresh_dir("mdw")
            limit = self.cgroup_limit(point)
            if limit is not None:
                cgroup = MemCgroup(limit, name=f"mdfio-study-{self.study.name}")
            if point.workload == "iozone":
                sweep = job.with_suffix("")
                why = self.run_iozone(point, sweep, root)
                if why is not None:
                    return why
                # the sweep's fio runs, as mdfio-report --record takes them
                outputs = read_outputs(sorted(map(str, sweep.glob("*.json"))))
            else:
                result = fio_runs.run(job, self.jobfile(point), output_format="json+",
                                      env=self.environment(point, root), prefix=cgroup.wrap() if cgroup else (),
                                      fio=self.fio)
                if result.rc != 0:
                    last = next((line for line in reversed(result.stderr.splitlines()) if line.strip()), "")
                    return f"fio exited with {result.rc}: {last.strip()}"
                outputs = read_outputs([job.with_suffix(".json")])
            mkfs = shlex.join(spec.mkfs_options) if spec.kind != "tmpfs" else None
            if point.workload != "md-workbench":
                other = workload_run([(read_documents(text, name)[-1], name) for name, text in outputs])
                if other is None or other.workload != point.workload:
                    return f"fio's JSON is not a run of {point.workload}"
                if other.refused:
                    return other.refused
                record_workload(db, other, outputs, label=self.study.label, config_name=self.config_name(point),
                                mkfs_options=mkfs)
                job.with_suffix(".done").write_text(self.marker(point, repeat))
                return None
            run = run_of(outputs)
            why = not_recordable(run)
            if why:
                return why
            # recorded while the file system is mounted: the environment
            # is captured from it
            record(db, run, outputs, label=self.study.label, config_name=self.config_name(point),
                   mkfs_options=mkfs)
            job.with_suffix(".done").write_text(self.marker(point, repeat))
            return None
        except (FilesystemError, HistoryError, BadInput) as e:
            return str(e)
        except (OSError, ValueError, KeyError) as e:
            return f"{type(e).__name__}: {e}"
        finally:
            if fs is not None:
                fs.close(lazy=True)
            if cgroup is not None:
                cgroup.close()
            journal.unlink(missing_ok=True)

    def run_iozone(self, point: Point, sweep: Path, root: Path) -> str | None:
        """Runs mdfio-iozone's sweep of point in root, its jobfiles and fio's
        JSON kept in the directory sweep, its stdout and stderr beside;
        why it failed, or None."""
        tool = iozone_tool()
        assert tool is not None, "check() found it"
        if sweep.exists():
            # an earlier, failed attempt's: the study's own files
            shutil.rmtree(sweep)
        cmd = [sys.executable, str(tool), *iozone_arguments(point.values), "--directory", str(root),
               "--out", str(sweep), "--json", "--fio", self.fio]
        # MDW_ROOT: what processes_under finds a killed study's fio by
        env = dict(os.environ, MDW_ROOT=str(root))
        with open(sweep.with_suffix(".stdout"), "w") as so, open(sweep.with_suffix(".stderr"), "w") as se:
            proc = subprocess.Popen(cmd, stdout=so, stderr=se, env=env)
            try:
                proc.wait()
            finally:
                if proc.poll() is None:
                    fio_runs.kill_tree(proc.pid)
                    proc.wait()
        if proc.returncode:
            said = sweep.with_suffix(".stderr").read_text(errors="replace").strip().splitlines()
            return f"mdfio-iozone exited with {proc.returncode}: {said[-1].strip() if said else ''}"
        return None

    def clear_leftovers(self) -> None:
        """Removes what a run killed with SIGKILL in a point left: fio's
        job processes (each in a session of its own, so a kill of the
        study's process group misses them, and they would run on beside
        the next point), its mount, loop device, image and directories
        (named in the journal)."""
        journal = self.out / "mounted"
        if not journal.exists():
            return
        try:
            j = json.loads(journal.read_text())
            workdir, prefix = Path(j["workdir"]), j["prefix"]
        except (ValueError, KeyError, TypeError):
            journal.unlink()
            return
        for pid in processes_under(str(workdir / prefix)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        for mnt in sorted(workdir.glob(f"{glob_escape(prefix)}*")):
            if mnt.suffix == ".img":
                continue
            if mounted(mnt):
                subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
            img = mnt.with_name(mnt.name + ".img")
            if img.exists():
                attached = subprocess.run(["losetup", "-j", str(img)], capture_output=True, text=True).stdout
                for line in attached.splitlines():
                    subprocess.run(["losetup", "-d", line.split(":", 1)[0]], capture_output=True)
                img.unlink()
            with contextlib.suppress(OSError):
                mnt.rmdir()
        journal.unlink()

    def run(self) -> Outcome:
        """Runs every point and repeat not yet recorded; a progress line
        after each on progress."""
        points = self.study.points()
        self.out.mkdir(parents=True, exist_ok=True)
        lock = open(self.out / "lock", "w")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            raise StudyError(f"{self.out}: another mdfio-study runs into this directory") from None
        with lock:
            # first: a device a killed run left mounted would be refused
            self.clear_leftovers()
            self.check()
            db = open_db(self.db_path)
            try:
                return self._run(db, points)
            finally:
                db.close()

    def _run(self, db: Any, points: list[Point]) -> Outcome:
        runs = [(p, k) for p in points for k in range(1, self.study.repeats + 1)]
        done = [self.done(db, p, k) for p, k in runs]
        pending = done.count(False)
        outcome = Outcome()
        times: list[float] = []
        for n, ((point, repeat), recorded) in enumerate(zip(runs, done), 1):
            what = f"{point.name} #{repeat}"
            if recorded:
                outcome.skipped += 1
                print(f"[{n}/{len(runs)}] {what}: recorded already, skipped", file=self.progress, flush=True)
                continue
            start = time.monotonic()
            why = self.run_one(db, point, repeat)
            times.append(time.monotonic() - start)
            outcome.ran += 1
            # the points recorded before take no time
            left = sum(times) / len(times) * (pending - len(times))
            print(f"[{n}/{len(runs)}] {what} {'ok' if why is None else 'FAILED'} {times[-1]:.1f}s, "
                  f"about {duration(left)} left", file=self.progress, flush=True)
            if why is not None:
                self.files(point, repeat).with_suffix(".failed").write_text(why + "\n")
                outcome.failed.append(f"{what}: {why}")
        return outcome


def processes_under(root_prefix: str) -> list[int]:
    """The processes whose MDW_ROOT (the run's root, as the study sets it)
    begins with root_prefix: a killed study's fio and its jobs."""
    key = b"MDW_ROOT=" + root_prefix.encode()
    found = []
    for env in Path("/proc").glob("[0-9]*/environ"):
        try:
            if any(v.startswith(key) for v in env.read_bytes().split(b"\0")):
                found.append(int(env.parent.name))
        except OSError:
            continue
    return found


def glob_escape(text: str) -> str:
    """text with glob's special characters taken literally."""
    return re.sub(r"([*?[])", r"[\1]", text)


def report(study: Study, db_path: str, page: str) -> int:
    """mdfio-study report: the study's page from db_path, written to page."""
    # loaded for report only: the page's module brings the plotting in
    from .fiojson import BadInput
    from .htmlpage import study_page, write_page
    try:
        db = open_db(db_path, create=False)
        try:
            write_page(page, study_page(db, study, study.path.read_text(), study.label))
        finally:
            db.close()
    except HistoryError as e:
        print(f"mdfio-study: --db {e}", file=sys.stderr)
        return 2
    except BadInput as e:
        print(f"mdfio-study: {e}", file=sys.stderr)
        return 2
    print(f"mdfio-study: wrote {page}", file=sys.stderr)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    ap = ArgumentParser(prog="mdfio-study", description=(
        "Runs a matrix of md-workbench runs described in a TOML file (docs/studies.md): every point on a "
        "fresh file system, each run recorded in the history database; a second run resumes."))
    ap.add_argument("command", choices=["run", "list", "report"],
                    help="run: run every point and repeat not yet recorded; list: print the points, running "
                         "nothing; report: write the study's HTML page (--html) from what DB holds")
    ap.add_argument("study", metavar="STUDY.toml", help="the study (docs/studies.md)")
    ap.add_argument("--db", metavar="DB", help="run: the history database each run is recorded in "
                                               "(mdfio-report --record's; made if missing); report: the one "
                                               "it reads")
    ap.add_argument("--out", metavar="DIR", help="run: where each run's jobfile, JSON and state are kept "
                                                 "(default: ./NAME, the study's name)")
    ap.add_argument("--label", metavar="TEXT", help="run: the label the runs are recorded with, in place of "
                                                    "[study] label (a night's date, a commit); report: the "
                                                    "label of the runs it shows")
    ap.add_argument("--html", metavar="PAGE", help="report: the self-contained HTML page to write")
    ap.add_argument("--format-devices", action="store_true",
                    help="run: make file systems on named devices although they hold one (or a partition "
                         "table)")
    ap.add_argument("--engine-dir", metavar="DIR", help="run: the directory of mdfio-<engine>.so (default: the "
                                                        "one the shipped jobfile names)")
    ap.add_argument("--fio", default="fio", metavar="PROGRAM", help="run: the fio to run (default: fio on PATH)")
    args = ap.parse_args(argv)
    if args.command in ("run", "report") and args.db is None:
        ap.error(f"{args.command}: --db DB is required (the history database the runs are recorded in)")
    if args.command == "report" and args.html is None:
        ap.error("report: --html PAGE is required (the page to write)")
    if args.html is not None and args.command != "report":
        ap.error("--html: only with report")
    if args.command != "run":
        for flag, given in (("--db", args.db if args.command == "list" else None), ("--out", args.out),
                            ("--engine-dir", args.engine_dir),
                            ("--label", args.label if args.command == "list" else None),
                            ("--format-devices", args.format_devices or None),
                            ("--fio", None if args.fio == "fio" else args.fio)):
            if given is not None:
                ap.error(f"{flag}: only with run{' or report' if flag in ('--db', '--label') else ''}")
    try:
        study = parse(args.study)
        points = study.points()
    except StudyError as e:
        print(f"mdfio-study: {e}", file=sys.stderr)
        return 2
    if args.command == "list":
        for p in points:
            fs = p.filesystem
            where = fs.device or ("memory" if fs.kind == "tmpfs" else "a loop-backed image")
            print(f"{p.name}\t{fs.kind} on {where}\t"
                  + " ".join(f"{k}={int(v) if isinstance(v, bool) else v}" for k, v in p.values.items()))
        print(f"{len(points)} points x {study.repeats} repeats = {len(points) * study.repeats} runs")
        return 0
    if args.label is not None:
        if not args.label:
            ap.error("--label: expected a non-empty text")
        study.label = args.label
    if args.command == "report":
        return report(study, args.db, args.html)
    engine_dir = args.engine_dir or engine_dir_default()
    if engine_dir is None:
        ap.error("--engine-dir: the shipped jobfile names no engine directory; name one")
    runner = Runner(study, args.db, args.out or study.name, engine_dir, args.format_devices, fio=args.fio)
    try:
        with interruptible():
            outcome = runner.run()
    except StudyError as e:
        print(f"mdfio-study: {e}", file=sys.stderr)
        return 2
    except HistoryError as e:
        print(f"mdfio-study: --db {e}", file=sys.stderr)
        return 2
    except Interrupted as e:
        print(f"mdfio-study: stopped by {e}; run it again to resume", file=sys.stderr)
        return 128 + e.signum
    print(f"mdfio-study: {outcome.ran} run, {outcome.skipped} recorded before, {len(outcome.failed)} failed"
          f" ({runner.out})", file=sys.stderr)
    for line in outcome.failed:
        print(f"mdfio-study: failed: {line}", file=sys.stderr)
    return 1 if outcome.failed else 0
