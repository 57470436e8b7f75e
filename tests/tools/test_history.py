"""The history database (tools/mdfio/history.py, mdfio-report --record): a
real run recorded holds exactly the figures mdfio-report prints, its fio
JSON as written and its environment; the schema is made once and another
version is refused; a run that did not complete is not recorded."""
import json
import os
import sqlite3
import subprocess
import sys

import pytest

from conftest import SOURCE_ROOT, job, mounted_tmpfs, run_fio
from mdfio import VERSION
from mdfio.figures import LATENCY, OPS, load_run
from mdfio.history import (SCHEMA_VERSION, HistoryError, capture_environment, config_key, configuration, open_db,
                           read_outputs, record)

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
FIXTURE = SOURCE_ROOT / "tests" / "fixtures" / "fio" / "posix-2-ranks.json"
PHASE_COLUMNS = ("phase", "repeat", "waiting_factor", "ranks", "t_max_s", "t_min_s", "t_mean_s", "balance_pct",
                 "t_stddev_s", "iops", "objects", "obj_per_s", "dsets", "dset_per_s", "tp_mib_per_s", "op_max_s",
                 "errors", "stonewall_iter")


def report(*args):
    return subprocess.run([sys.executable, str(REPORT), *map(str, args)], capture_output=True, text=True,
                          timeout=120)


@pytest.fixture(scope="module")
def real_run(tmp_path_factory):
    """A real run of two ranks with two benchmark repeats, on a tmpfs of
    its own (json+, whose histograms give every quantile)."""
    base = tmp_path_factory.mktemp("run")
    with mounted_tmpfs(options="size=64m,mode=0755", prefix="mdfio-history-") as root:
        phases = ["precreate", "benchmark", "benchmark", "cleanup"]
        text = job(phases, root, numjobs=2, datasets=2, precreate_per_set=30, steps_per_set=12, bs=1000)
        run_fio(text, base, args=["--output-format=json+", f"--output={base / 'run.json'}"], check=True)
        db = base / "history.db"
        proc = report("--record", db, "--label", "first", "--config", "small", "--json", base / "run.json")
        yield base / "run.json", db, proc, root


def test_recorded_figures_are_the_reports(real_run):
    """Every figure of the phases and ops tables equals the record of
    mdfio-report --json, exactly (SQLite's REAL is the same double); an
    operation's rate is its count over T, and the phase's objects/s is
    that of its headline operation."""
    path, db, proc, _ = real_run
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip() == f"mdfio-report: recorded run 1 in {db}", proc.stderr
    records = json.loads(proc.stdout)["records"]
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    phases = con.execute("SELECT * FROM phases WHERE run_id = 1 ORDER BY position").fetchall()
    assert [(r["phase"], r["repeat"]) for r in phases] == [("precreate", 0), ("benchmark", 1), ("benchmark", 2),
                                                           ("cleanup", 0)]
    assert len(records) == len(phases)
    headline = {"precreate": "create", "benchmark": "read", "cleanup": "delete"}
    for rec, row in zip(records, phases):
        for k in PHASE_COLUMNS:
            assert row[k] == rec[k], (rec["phase"], rec["repeat"], k)
        ops = {o["op"]: o for o in con.execute("SELECT * FROM ops WHERE run_id = 1 AND position = ?",
                                               (row["position"],))}
        assert set(ops) == {op for op in OPS if rec[f"{op}_count"] or rec[f"{op}_errors"]}
        for op, o in ops.items():
            assert o["count"] == rec[f"{op}_count"] and o["errors"] == rec[f"{op}_errors"]
            for k in LATENCY:
                assert o[k] == rec[f"{op}_{k}"] and o[k] is not None, (rec["phase"], op, k)
            assert o["rate"] == o["count"] / rec["t_max_s"]
        assert ops[headline[row["phase"]]]["rate"] == rec["obj_per_s"]
    # the view: one row per run, phase, repeat and operation
    rows = con.execute("SELECT fs_type, label, config_name, phase, repeat, op FROM op_results").fetchall()
    assert len(rows) == 1 + 4 + 4 + 1 and {tuple(r)[:3] for r in rows} == {("tmpfs", "first", "small")}
    con.close()


def test_run_and_environment_are_recorded(real_run):
    path, db, proc, root = real_run
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    run = con.execute("SELECT * FROM runs").fetchone()
    outputs = con.execute("SELECT name, text FROM fio_outputs WHERE run_id = 1").fetchall()
    # the JSON as fio wrote it, byte for byte
    assert [tuple(o) for o in outputs] == [(str(path), path.read_text())]
    assert run["fio_version"] == json.loads(path.read_text())["fio version"]
    assert run["mdfio_version"] == VERSION
    config = json.loads(run["config"])
    assert config == {"engine": "mdfio-posix", "iodepth": 1, "ranks": 2, "hosts": 1, "D": 2, "P": 30, "I": 12,
                      "S": 1000, "R": 2, "read_only": 0, "stonewall_timer": 0, "stonewall_wear_out": False,
                      "waiting": "0", "lim_free_mem": 0, "lim_free_mem_phase": 0, "drop_caches": False,
                      "phases": ["benchmark", "cleanup", "precreate"], "fs_type": "tmpfs", "config": "small"}
    assert run["config_key"] == config_key(config)
    params = json.loads(run["params"])
    assert params["md-workbench"]["data-sets"] == 2 and "-D" in params["args"]
    env = con.execute("SELECT * FROM environment WHERE run_id = 1").fetchone()
    assert env["kernel"] == os.uname().release and env["cpus"] == os.cpu_count()
    assert env["memory_bytes"] > 0 and env["cpu_model"]
    assert (env["directory"], env["fs_type"], env["mount_point"]) == (str(root), "tmpfs", str(root))
    # the mount's own options, then the file system's
    assert "size=65536k" in env["mount_options"].split(",") and "mode=755" in env["mount_options"].split(",")
    assert env["device_model"] == "unknown" and env["mkfs_options"] is None
    assert env["ranks"] == 2 and len(json.loads(env["hosts"])) == 1
    con.close()


def test_environment_of_a_missing_directory_is_unknown(tmp_path):
    env = capture_environment(str(tmp_path / "gone"), mkfs_options="-b 4096")
    assert (env.fs_type, env.mount_point, env.device_model, env.mkfs_options) == ("unknown", "unknown",
                                                                                  "unknown", "-b 4096")


@pytest.mark.parametrize("fstype", ["ext4", "xfs", "btrfs"])
def test_environment_names_a_loop_mounted_file_system(loopfs, fstype):
    # a btrfs file's device number is its subvolume's, not the one
    # mountinfo gives the mount
    mnt = loopfs(fstype, "300M")
    (mnt / "run").mkdir()
    env = capture_environment(str(mnt / "run"))
    assert (env.fs_type, env.mount_point) == (fstype, str(mnt))
    assert env.mount_source.startswith("/dev/loop"), env.mount_source


def test_config_key_is_that_of_the_configuration_only():
    """Label, time and paths do not change the key; the file system type
    and the configuration's name do."""
    run = load_run([FIXTURE])
    key = config_key(configuration(run, "ext4", None))
    assert key == config_key(configuration(load_run([FIXTURE]), "ext4", None)) and len(key) == 16
    assert key != config_key(configuration(run, "xfs", None))
    assert key != config_key(configuration(run, "ext4", "nightly"))


def test_schema_is_made_once_and_another_version_refused(tmp_path):
    path = tmp_path / "h.db"
    outputs = read_outputs([FIXTURE])
    db = open_db(path)
    record(db, load_run([FIXTURE]), outputs)
    db.close()
    # opening again makes nothing twice and keeps what is there
    db = open_db(path)
    assert db.execute("SELECT key, value FROM meta").fetchall() == [("schema_version", str(SCHEMA_VERSION))]
    assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
    db.execute("UPDATE meta SET value = ? WHERE key = 'schema_version'", (str(SCHEMA_VERSION + 1),))
    db.commit()
    db.close()
    for db_path, start in ((path, f"history schema version {SCHEMA_VERSION + 1}, this mdfio"),):
        proc = report("--record", db_path, FIXTURE)
        assert proc.returncode == 2 and proc.stdout == "", proc.stdout
        assert proc.stderr.splitlines() == [proc.stderr.strip()], proc.stderr
        assert proc.stderr.startswith(f"mdfio-report: --record {db_path}: {start}"), proc.stderr
    other = tmp_path / "other.db"
    con = sqlite3.connect(other)
    con.execute("CREATE TABLE t (x)")
    con.commit()
    con.close()
    proc = report("--record", other, FIXTURE)
    assert proc.returncode == 2 and proc.stderr == f"mdfio-report: --record {other}: a SQLite database, but not " \
                                                   "an mdfio history (no table meta)\n", proc.stderr
    proc = report("--label", "x", FIXTURE)
    assert proc.returncode == 2 and "--label: expected with --record" in proc.stderr


def test_a_run_is_recorded_once(tmp_path):
    """The same output again, by another name: the report as always (exit
    0), one line naming the run it is, and still one run in the database,
    which its own history would otherwise count twice."""
    db = tmp_path / "h.db"
    proc = report("--record", db, FIXTURE)
    assert proc.returncode == 0 and proc.stderr == f"mdfio-report: recorded run 1 in {db}\n", proc.stderr
    copy = tmp_path / "copy.json"
    copy.write_text(FIXTURE.read_text())
    proc = report("--record", db, "--label", "again", copy)
    assert proc.returncode == 0 and proc.stdout.startswith("Args: md-workbench"), proc.stderr
    assert proc.stderr == f"mdfio-report: --record {db}: {copy}: not recorded: already recorded as run 1\n"
    con = open_db(db)
    with pytest.raises(HistoryError, match="already recorded as run 1"):
        record(con, load_run([copy]), read_outputs([copy]))
    assert con.execute("SELECT count(*) FROM runs").fetchone()[0] == 1
    con.close()


@pytest.mark.parametrize("key, value, why", [("error", 5, "not every rank completed every phase"),
                                             ("drop_ios", 3, "the run reported 3 errors")])
def test_a_run_with_errors_is_not_recorded(tmp_path, key, value, why):
    """A run of which a rank ended a phase with a fio error (the phase is
    incomplete), or one whose operations failed: the report is printed as
    always, with exit status 1, and one line says the run was not
    recorded and why; the database holds no run."""
    doc = json.loads(FIXTURE.read_text())
    # jobs[2]: rank 0's first benchmark repeat
    if key == "error":
        doc["jobs"][2]["error"] = value
    else:
        doc["jobs"][2]["write"]["drop_ios"] = value
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    db = tmp_path / "h.db"
    proc = report("--record", db, bad)
    assert proc.returncode == 1 and proc.stdout.startswith("Args: md-workbench"), proc.stderr
    assert proc.stderr.splitlines()[-1].startswith(f"mdfio-report: --record {db}: {bad}: not recorded: {why}"), \
        proc.stderr
    assert sqlite3.connect(db).execute("SELECT count(*) FROM runs").fetchone()[0] == 0


def test_example_queries_of_the_docs(real_run):
    """The queries docs/reports.md shows run on a real database."""
    db = real_run[1]
    con = sqlite3.connect(db)
    rows = con.execute("SELECT fs_type, phase, op, avg(rate) FROM op_results GROUP BY fs_type, phase, op "
                       "ORDER BY phase, op").fetchall()
    assert ("tmpfs", "benchmark", "read") in {r[:3] for r in rows} and all(r[3] > 0 for r in rows)
    rows = con.execute("SELECT r.id, r.label, e.kernel, e.fs_type, e.mount_options, o.median_s FROM runs r "
                       "JOIN environment e ON e.run_id = r.id JOIN op_results o ON o.run_id = r.id "
                       "WHERE o.phase = 'benchmark' AND o.op = 'stat' ORDER BY r.id, o.repeat").fetchall()
    assert len(rows) == 2 and rows[0][:2] == (1, "first")
    con.close()
