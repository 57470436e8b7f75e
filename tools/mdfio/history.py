"""A history of mdfio runs in SQLite (docs/reports.md "History database"):
each run's fio JSON as it was written, its parameters, the environment it
ran in, and md-workbench's figures per phase, repeat and operation, exactly
as mdfio-report computes them (mdfio.figures); the other workloads' runs
(mdfio.workloads) in the same tables (record_workload). record() is the library call
(mdfio-report --record wraps it); mdfio-compare (mdfio.compare) reads it.

The schema is versioned (SCHEMA_VERSION, in the table meta): a database of
another version is refused, never half read or silently changed."""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import socket
import sqlite3
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

from . import VERSION
from .fiojson import read_documents, read_input
from .figures import LATENCY, OPS, Run
from .workloads import WorkloadRun

# raised by one with every change of a table or the view; a database says
# which version it holds in meta, and one of another version is refused
SCHEMA_VERSION = 1

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY,
    recorded_at TEXT NOT NULL,
    run_end INTEGER NOT NULL,
    runtime_s INTEGER,
    label TEXT,
    config_name TEXT,
    config_key TEXT NOT NULL,
    config TEXT NOT NULL,
    outputs_sha256 TEXT NOT NULL UNIQUE,
    mdfio_version TEXT NOT NULL,
    fio_version TEXT NOT NULL,
    params TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_by_config ON runs (config_key, id);
CREATE TABLE IF NOT EXISTS fio_outputs (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    position INTEGER NOT NULL,
    name TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (run_id, position)
);
CREATE TABLE IF NOT EXISTS environment (
    run_id INTEGER PRIMARY KEY REFERENCES runs (id),
    hostname TEXT NOT NULL,
    kernel TEXT NOT NULL,
    cpu_model TEXT NOT NULL,
    cpus INTEGER NOT NULL,
    memory_bytes INTEGER,
    directory TEXT NOT NULL,
    fs_type TEXT NOT NULL,
    mount_source TEXT NOT NULL,
    mount_point TEXT NOT NULL,
    mount_options TEXT NOT NULL,
    device_model TEXT NOT NULL,
    mkfs_options TEXT,
    ranks INTEGER NOT NULL,
    hosts TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS phases (
    run_id INTEGER NOT NULL REFERENCES runs (id),
    position INTEGER NOT NULL,
    phase TEXT NOT NULL,
    repeat INTEGER NOT NULL,
    section TEXT NOT NULL,
    waiting_factor REAL NOT NULL,
    ranks INTEGER NOT NULL,
    t_max_s REAL,
    t_min_s REAL,
    t_mean_s REAL,
    balance_pct REAL,
    t_stddev_s REAL,
    iops REAL,
    objects INTEGER NOT NULL,
    obj_per_s REAL,
    dsets INTEGER,
    dset_per_s REAL,
    tp_mib_per_s REAL,
    op_max_s REAL NOT NULL,
    errors INTEGER NOT NULL,
    stonewall_iter INTEGER NOT NULL,
    PRIMARY KEY (run_id, position)
);
CREATE TABLE IF NOT EXISTS ops (
    run_id INTEGER NOT NULL,
    position INTEGER NOT NULL,
    op TEXT NOT NULL,
    rate REAL,
    count INTEGER NOT NULL,
    errors INTEGER NOT NULL,
    min_s REAL,
    q1_s REAL,
    median_s REAL,
    q3_s REAL,
    q90_s REAL,
    q99_s REAL,
    max_s REAL,
    PRIMARY KEY (run_id, position, op),
    FOREIGN KEY (run_id, position) REFERENCES phases (run_id, position)
);
CREATE VIEW IF NOT EXISTS op_results AS
    SELECT r.id AS run_id, r.recorded_at, r.label, r.config_name, r.config_key, e.fs_type, e.hostname,
           p.phase, p.repeat, p.section, p.waiting_factor, p.t_max_s, o.op, o.rate, o.count, o.errors,
           o.min_s, o.q1_s, o.median_s, o.q3_s, o.q90_s, o.q99_s, o.max_s
    FROM ops o
    JOIN phases p ON p.run_id = o.run_id AND p.position = o.position
    JOIN runs r ON r.id = o.run_id
    JOIN environment e ON e.run_id = o.run_id;
"""

# the columns of phases that are PhaseFigures' record fields, as named there
PHASE_FIELDS = ("phase", "repeat", "waiting_factor", "ranks", "t_max_s", "t_min_s", "t_mean_s", "balance_pct",
                "t_stddev_s", "iops", "objects", "obj_per_s", "dsets", "dset_per_s", "tp_mib_per_s", "op_max_s",
                "errors", "stonewall_iter")


class HistoryError(Exception):
    """A database that cannot be used, or a run that is not recorded: one
    line saying why (the tools print it and exit)."""


@dataclass
class Environment:
    """Where a run ran, as far as the machine that records it can tell
    (capture_environment), or as a caller that made it knows (a matrix
    runner that ran mkfs passes mkfs_options)."""
    hostname: str
    kernel: str
    cpu_model: str
    cpus: int
    memory_bytes: int | None
    directory: str
    fs_type: str
    mount_source: str
    mount_point: str
    mount_options: str
    device_model: str
    mkfs_options: str | None = None


def open_db(path: str | os.PathLike[str], create: bool = True) -> sqlite3.Connection:
    """The history database at path, its schema made if it is new (making
    it again is harmless); create=False opens only an existing one, read
    only. A file that is not SQLite, a SQLite database that is not an mdfio
    history, or one of another schema version raise HistoryError."""
    name = str(path)
    if not create and not Path(path).is_file():
        raise HistoryError(f"{name}: no such database")
    try:
        if create:
            db = sqlite3.connect(name)
        else:
            db = sqlite3.connect(Path(path).resolve().as_uri() + "?mode=ro", uri=True)
    except sqlite3.Error as e:
        raise HistoryError(f"{name}: cannot open it: {e}") from None
    try:
        tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        if "meta" in tables:
            row = db.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
            version = row[0] if row else None
            if version != str(SCHEMA_VERSION):
                raise HistoryError(f"{name}: history schema version {version}, this mdfio ({VERSION}) reads "
                                   f"version {SCHEMA_VERSION} only: use the mdfio that wrote it")
        elif tables:
            raise HistoryError(f"{name}: a SQLite database, but not an mdfio history (no table meta)")
        elif not create:
            raise HistoryError(f"{name}: an empty database, no run recorded")
        if create:
            with db:
                db.executescript(SCHEMA)
                db.execute("INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', ?)",
                           (str(SCHEMA_VERSION),))
    except sqlite3.Error as e:
        db.close()
        raise HistoryError(f"{name}: not a usable history database: {e}") from None
    except HistoryError:
        db.close()
        raise
    return db


def read_outputs(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[str, str]]:
    """[(name, text)] of fio's output files (or '-' for stdin), as they are."""
    return [(name, text) for text, name in map(read_input, paths)]


def run_of(outputs: Sequence[tuple[str, str]]) -> Run:
    """The Run of fio's outputs [(name, text)], read as load_run reads
    files: the last JSON document of each."""
    return Run([(read_documents(text, name)[-1], name) for name, text in outputs])


def _read(path: str) -> str:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return ""


def _unescape(field: str) -> str:
    """A path of /proc/self/mountinfo, whose space, tab, newline and
    backslash the kernel writes as octal escapes."""
    for code in ("040", "011", "012", "134"):
        field = field.replace("\\" + code, chr(int(code, 8)))
    return field


def mount_of(directory: str) -> dict[str, str] | None:
    """The mount that holds directory, from /proc/self/mountinfo: its
    device number, mount point, file system type, source and options
    (the mount's, then the file system's own); None when directory does
    not exist. Of the mounts of directory's device (a bind mount is
    another), the one whose mount point is the longest prefix of its
    real path, the last mounted on equal ones. A btrfs file's device
    number is its subvolume's, which mountinfo does not show: when no
    mount of the device holds the path, the mount whose point is the
    longest prefix of it, whatever its device."""
    try:
        real = os.path.realpath(directory)
        st = os.stat(real)
    except OSError:
        return None
    dev = f"{os.major(st.st_dev)}:{os.minor(st.st_dev)}"
    best: dict[bool, tuple[int, dict[str, str]]] = {}
    for line in _read("/proc/self/mountinfo").splitlines():
        parts = line.split(" ")
        if "-" not in parts[6:] or len(parts) < 10:
            continue
        sep = parts.index("-", 6)
        point = _unescape(parts[4])
        if not (real == point or real.startswith(point.rstrip("/") + "/")):
            continue
        same_dev = parts[2] == dev
        if same_dev in best and len(point) < best[same_dev][0]:
            continue
        options = list(dict.fromkeys(parts[5].split(",") + parts[sep + 3].split(",")))
        best[same_dev] = (len(point), {"dev": parts[2], "point": point, "fs_type": parts[sep + 1],
                                       "source": _unescape(parts[sep + 2]),
                                       "options": ",".join(o for o in options if o)})
    found = best.get(True) or best.get(False)
    return found[1] if found else None


def device_model(dev: str) -> str:
    """The model of the disk of block device number dev (a partition's:
    its disk's) as /sys says it; "unknown" where it says none (tmpfs, a
    loop device, a virtual disk without a model)."""
    path = Path("/sys/dev/block") / dev
    try:
        path = path.resolve(strict=True)
    except OSError:
        return "unknown"
    if (path / "partition").exists():
        path = path.parent
    return _read(str(path / "device" / "model")).strip() or "unknown"


def capture_environment(directory: str, mkfs_options: str | None = None) -> Environment:
    """The environment of a run whose files are under directory, as this
    machine tells it now: the kernel, CPU, memory, and directory's file
    system (the mount, its options, the disk's model). A directory that
    does not exist here has the file system "unknown"."""
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.split(":", 1)[0].strip() in ("model name", "Processor", "cpu model")), "unknown")
    memory = next((int(line.split()[1]) * 1024 for line in _read("/proc/meminfo").splitlines()
                   if line.startswith("MemTotal:")), None)
    mount = mount_of(directory)
    return Environment(hostname=socket.gethostname(), kernel=os.uname().release, cpu_model=cpu,
                       cpus=os.cpu_count() or 0, memory_bytes=memory, directory=directory,
                       fs_type=mount["fs_type"] if mount else "unknown",
                       mount_source=mount["source"] if mount else "unknown",
                       mount_point=mount["point"] if mount else "unknown",
                       mount_options=mount["options"] if mount else "",
                       device_model=device_model(mount["dev"]) if mount else "unknown",
                       mkfs_options=mkfs_options)


def engine_name(ioengine: str) -> str:
    """mdfio-posix of external:/usr/lib/.../mdfio-posix.so: the engine,
    wherever it was installed."""
    path = ioengine.split(":", 1)[1] if ioengine.startswith("external:") else ioengine
    return Path(path).name.removesuffix(".so")


def configuration(run: Run, fs_type: str, config_name: str | None) -> dict[str, Any]:
    """What makes two runs comparable (docs/reports.md lists it): the
    engine and its depth, the ranks and hosts, md-workbench's D, P, I, S,
    R and the options that change what a phase does, the file system
    type and the user's name of the configuration. Not the label, the
    paths, the seed or the time."""
    p = run.params()
    adaptive, repeats, factor = run.waiting()
    return {"engine": engine_name(str(p["interface"])), "iodepth": p["iodepth"], "ranks": run.ranks,
            "hosts": len(run.hosts) or 1, "D": run.d, "P": run.p, "I": run.i, "S": run.s, "R": repeats,
            "read_only": p["read-only"],
            "stonewall_timer": max(x.int_opt("stonewall_timer") for x in run.sections),
            "stonewall_wear_out": any(x.bool_opt("stonewall_wear_out") for x in run.sections),
            "waiting": "adaptive" if adaptive else factor or "0",
            # what the page cache may hold changes what a phase reads from the device
            "lim_free_mem": max(x.int_opt("lim_free_mem") for x in run.sections),
            "lim_free_mem_phase": max(x.int_opt("lim_free_mem_phase") for x in run.sections),
            "drop_caches": any(x.bool_opt("drop_caches") for x in run.sections),
            "phases": sorted({x.phase for x in run.sections}),
            "fs_type": fs_type, "config": config_name}


def config_key(config: dict[str, Any]) -> str:
    """A stable digest of a configuration: the first 16 hex digits of the
    SHA-256 of its JSON with sorted keys and no spaces."""
    text = json.dumps(config, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def not_recordable(run: Run) -> str | None:
    """Why run may not join the history, or None: a run mdfio-report exits
    1 for (errors, or a phase not every rank completed) has figures that
    are not its configuration's."""
    if run.marks:
        return run.not_completed()
    if run.errors:
        return f"the run reported {run.errors} errors"
    return None


def outputs_digest(outputs: Sequence[tuple[str, str]]) -> str:
    """The SHA-256 of the SHA-256s of fio's outputs' texts, in order (not
    their names: the same file copied elsewhere is the same run)."""
    inner = b"".join(hashlib.sha256(text.encode()).digest() for _, text in outputs)
    return hashlib.sha256(inner).hexdigest()


def recorded_as(db: sqlite3.Connection, outputs: Sequence[tuple[str, str]]) -> int | None:
    """The id of the run recorded from the same outputs, or None: a run
    recorded twice would count twice in its own history."""
    row = db.execute("SELECT id FROM runs WHERE outputs_sha256 = ?", (outputs_digest(outputs),)).fetchone()
    return row[0] if row else None


def op_rate(count: int, t: float | None) -> float | None:
    """An operation's objects per second of its phase's time T, as
    mdfio.figures computes a phase's rates: 0 of none, None (n/a) without
    a measured time."""
    if count == 0:
        return 0.0
    return count / t if t is not None else None


def _insert_run(db: sqlite3.Connection, outputs: Sequence[tuple[str, str]], env: Environment,
                config: dict[str, Any], params: dict[str, Any], label: str | None, config_name: str | None,
                recorded_at: datetime.datetime | None, *, end: int, runtime: int | None, fio_version: str,
                ranks: int, hosts: Sequence[str]) -> int:
    """The rows of runs, fio_outputs and environment of a run, in db's
    open transaction; the run's id."""
    when = (recorded_at or datetime.datetime.now(datetime.timezone.utc)).isoformat(timespec="seconds")
    cur = db.execute("INSERT INTO runs (recorded_at, run_end, runtime_s, label, config_name, config_key, "
                     "config, outputs_sha256, mdfio_version, fio_version, params) "
                     "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                     (when, end, runtime, label, config_name, config_key(config),
                      json.dumps(config, sort_keys=True), outputs_digest(outputs), VERSION, fio_version,
                      json.dumps(params, sort_keys=True)))
    run_id = cur.lastrowid
    db.executemany("INSERT INTO fio_outputs (run_id, position, name, text) VALUES (?, ?, ?, ?)",
                   [(run_id, i, name, text) for i, (name, text) in enumerate(outputs)])
    env_cols = [f.name for f in fields(Environment)]
    db.execute(f"INSERT INTO environment (run_id, {', '.join(env_cols)}, ranks, hosts) "
               f"VALUES ({', '.join('?' * (len(env_cols) + 3))})",
               (run_id, *asdict(env).values(), ranks, json.dumps(list(hosts))))
    return run_id


def record(db: sqlite3.Connection, run: Run, outputs: Sequence[tuple[str, str]], label: str | None = None,
           config_name: str | None = None, environment: Environment | None = None,
           mkfs_options: str | None = None, recorded_at: datetime.datetime | None = None) -> int:
    """Records run, read from fio's outputs [(name, text)], in the history
    db, in one transaction; returns its id. environment: where it ran,
    else captured here for the run's directory (with mkfs_options).
    A run that may not be recorded (not_recordable), or that is recorded
    already, raises HistoryError."""
    why = not_recordable(run)
    if why:
        raise HistoryError(f"{run.name}: not recorded: {why}")
    if recorded_as(db, outputs) is not None:
        raise HistoryError(f"{run.name}: not recorded: already recorded as run {recorded_as(db, outputs)}")
    params = run.params()
    env = environment or capture_environment(str(params["root"]), mkfs_options)
    config = configuration(run, env.fs_type, config_name)
    all_params = {"md-workbench": params, "args": run.md_workbench_args(), "fio_options": run.first.opts}
    with db:
        run_id = _insert_run(db, outputs, env, config, all_params, label, config_name, recorded_at,
                             end=run.end, runtime=run.runtime, fio_version=run.version.split("/", 1)[1],
                             ranks=run.ranks, hosts=run.hosts)
        for position, f in enumerate(run.phases):
            rec = f.record()
            db.execute(f"INSERT INTO phases (run_id, position, section, {', '.join(PHASE_FIELDS)}) "
                       f"VALUES ({', '.join('?' * (len(PHASE_FIELDS) + 3))})",
                       (run_id, position, f.section, *(rec[k] for k in PHASE_FIELDS)))
            for op in OPS:
                o = f.ops[op]
                # only what the phase does: no create row for a cleanup
                if o.count == 0 and o.errors == 0:
                    continue
                db.execute(f"INSERT INTO ops (run_id, position, op, rate, count, errors, {', '.join(LATENCY)}) "
                           f"VALUES ({', '.join('?' * (len(LATENCY) + 6))})",
                           (run_id, position, op, op_rate(o.count, f.t_max_s), o.count, o.errors,
                            *(getattr(o, k) for k in LATENCY)))
    return run_id


def recorded_environment(db: sqlite3.Connection, run_id: int) -> dict[str, Any]:
    """The environment recorded with run run_id, as its columns name it
    (hosts a list), with the run's fio_version, mdfio_version, label,
    config_name and recorded_at; HistoryError when no such run."""
    cur = db.execute("SELECT e.*, r.fio_version, r.mdfio_version, r.label, r.config_name, r.recorded_at "
                     "FROM environment e JOIN runs r ON r.id = e.run_id WHERE e.run_id = ?", (run_id,))
    row = cur.fetchone()
    if row is None:
        raise HistoryError(f"no run {run_id} recorded")
    env = dict(zip((d[0] for d in cur.description), row))
    env["hosts"] = json.loads(env["hosts"])
    return env


def workload_configuration(run: WorkloadRun, fs_type: str, config_name: str | None) -> dict[str, Any]:
    """What makes two runs of another workload comparable: the workload,
    its engine, ranks and hosts, its sections' options but where it wrote
    (workloads.NOT_COMPARED), the file system type and the configuration's
    name. md-workbench's configurations have no "workload" key, so that
    their keys are those recorded before the other workloads were."""
    return {"workload": run.workload, **run.options, "ranks": run.ranks, "hosts": len(run.hosts) or 1,
            "fs_type": fs_type, "config": config_name}


def workload_of(db: sqlite3.Connection, run_id: int) -> str:
    """The workload of a recorded run: its configuration's, md-workbench's
    when it names none."""
    row = db.execute("SELECT config FROM runs WHERE id = ?", (run_id,)).fetchone()
    return json.loads(row[0]).get("workload", "md-workbench") if row else "md-workbench"


def record_workload(db: sqlite3.Connection, run: WorkloadRun, outputs: Sequence[tuple[str, str]],
                    label: str | None = None, config_name: str | None = None,
                    environment: Environment | None = None, mkfs_options: str | None = None,
                    recorded_at: datetime.datetime | None = None) -> int:
    """record() for a run of another workload (mdfio.workloads): the same
    runs, fio_outputs and environment rows, and its phases and operations
    in phases and ops, the columns that are md-workbench's alone (waiting
    factor, datasets, stonewall) 0 or NULL."""
    if run.refused:
        raise HistoryError(f"{run.name}: not recorded: {run.refused}")
    earlier = recorded_as(db, outputs)
    if earlier is not None:
        raise HistoryError(f"{run.name}: not recorded: already recorded as run {earlier}")
    env = environment or capture_environment(run.root, mkfs_options)
    config = workload_configuration(run, env.fs_type, config_name)
    with db:
        run_id = _insert_run(db, outputs, env, config, {run.workload: run.options}, label, config_name,
                             recorded_at, end=run.end, runtime=run.runtime, fio_version=run.fio_version,
                             ranks=run.ranks, hosts=run.hosts)
        for position, p in enumerate(run.phases):
            # the operations fio timed one by one (an IOzone pass's records: its one row)
            counted = [o for o in p.ops if o.latencies[0] is not None] or (p.ops if len(p.ops) == 1 else [])
            objects = sum(o.count for o in counted)
            op_max = max((o.latencies[-1] for o in counted if o.latencies[-1] is not None), default=0.0)
            db.execute("INSERT INTO phases (run_id, position, phase, repeat, section, waiting_factor, ranks, "
                       "t_max_s, objects, obj_per_s, op_max_s, errors, stonewall_iter) "
                       "VALUES (?, ?, ?, ?, ?, 0, ?, ?, ?, ?, ?, ?, 0)",
                       (run_id, position, p.phase, p.repeat, p.section, p.ranks, p.t_s, objects,
                        objects / p.t_s if p.t_s and objects else None, op_max, sum(o.errors for o in p.ops)))
            db.executemany(f"INSERT INTO ops (run_id, position, op, rate, count, errors, {', '.join(LATENCY)}) "
                           f"VALUES ({', '.join('?' * (len(LATENCY) + 6))})",
                           [(run_id, position, o.op, o.rate, o.count, o.errors, *o.latencies) for o in p.ops])
    return run_id
