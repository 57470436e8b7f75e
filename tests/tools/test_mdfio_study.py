"""mdfio-study running studies (root: tmpfs mounts and loop devices): a
small matrix killed midway (SIGKILL of its process group) and resumed
skips what was recorded, records every point once with the figures
mdfio-report computes from the kept JSON, and leaves no mount or loop
device; SIGTERM in a point leaves nothing either; a named device that
holds a file system is formatted only with --format-devices; a point whose
fio fails is reported and not recorded; memory limits run in a cgroup only
when asked; the nightly preset runs in under a minute. The study files
without running: test_mdfio_study_parse.py."""
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ENGINE_DIR, SOURCE_ROOT, fio_env, loops_under, mounts_under, need_root
from mdfio.figures import LATENCY, OPS

TOOL = SOURCE_ROOT / "tools" / "mdfio-study"
REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
PHASE_COLUMNS = ("phase", "repeat", "waiting_factor", "ranks", "t_max_s", "t_min_s", "t_mean_s", "balance_pct",
                 "t_stddev_s", "iops", "objects", "obj_per_s", "dsets", "dset_per_s", "tp_mib_per_s", "op_max_s",
                 "errors", "stonewall_iter")
PROGRESS = re.compile(r"^\[(\d+)/(\d+)\] (\S+) #(\d+) (ok|FAILED) [\d.]+s, about \S+ left$")
SKIPPED = re.compile(r"^\[(\d+)/(\d+)\] (\S+) #(\d+): recorded already, skipped$")


@pytest.fixture(autouse=True)
def root_only():
    need_root("mounts file systems and attaches loop devices")


def nothing_left(path, wait=10.0):
    """Whether no mount and no loop device under path is left, within wait
    seconds (a lazily unmounted file system lets its loop device go when
    its last user has)."""
    deadline = time.monotonic() + wait
    while mounts_under(path) or loops_under(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def write_study(tmp_path, work, name, filesystems, ranks=(1, 2), extra=""):
    path = tmp_path / f"{name}.toml"
    path.write_text(f'[study]\nname = "{name}"\nlabel = "test"\nworkdir = "{work}"\n'
                    f'[parameters]\nranks = {list(ranks)}\nD = 2\nP = 20\nI = 10\nR = 2\n{extra}'
                    + "".join(f"[[filesystem]]\n{fs}\n" for fs in filesystems))
    return path


def counting_fio(tmp_path):
    """A fio that appends a line to a log at each invocation, then runs fio:
    (its path, the log)."""
    log = tmp_path / "fio-invocations"
    wrapper = tmp_path / "fio-counting"
    wrapper.write_text(f'#!/bin/sh\necho "$MDW_N" >> {log}\nexec fio "$@"\n')
    wrapper.chmod(0o755)
    return wrapper, log


def invocations(log):
    return len(log.read_text().splitlines()) if log.exists() else 0


def start(study, db, out, *args, fio="fio"):
    """mdfio-study run in a process group of its own."""
    return subprocess.Popen([sys.executable, str(TOOL), "run", str(study), "--db", str(db), "--out", str(out),
                             "--engine-dir", str(ENGINE_DIR), "--fio", str(fio), *map(str, args)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=fio_env(),
                            start_new_session=True)


def run(study, db, out, *args, fio="fio", timeout=300):
    proc = start(study, db, out, *args, fio=fio)
    stdout, stderr = proc.communicate(timeout=timeout)
    return proc.returncode, stdout, stderr


def wait_for(cond, what, timeout=120.0):
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"waited {timeout} s for {what}"
        time.sleep(0.02)


def db_rows(db, sql, *params):
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    try:
        return con.execute(sql, params).fetchall()
    finally:
        con.close()


def test_killed_midway_and_resumed(tmp_path, work):
    """2 file systems (ext4 on a loop device first, then tmpfs) x 2 ranks:
    killed (SIGKILL of the study's process group) once the first point is
    recorded, while the second runs fio; the second run clears what the
    killed one left, skips the recorded point (its progress line, and
    one fio fewer), and ends with every point recorded once, each with
    the figures mdfio-report --json computes from its kept JSON."""
    study = write_study(tmp_path, work, "resume", ['kind = "ext4"\nsize = "64M"\nmount_options = "noatime"',
                                                   'kind = "tmpfs"\nsize = "64M"'])
    db, out = tmp_path / "h.db", tmp_path / "out"
    fio, log = counting_fio(tmp_path)
    first = out / "ext4-posix-qd1-n1-D2-P20-I10-S3901-R2-O1-m0-M0-dc0"
    proc = start(study, db, out, fio=fio)
    try:
        wait_for(lambda: (first / "repeat-1.done").exists() or proc.poll() is not None, "the first point")
        # the second point's fio has started: killed in the middle of it
        wait_for(lambda: invocations(log) >= 2 or proc.poll() is not None, "the second point's fio")
        assert proc.poll() is None, proc.communicate()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
    _, stderr = proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    done_before = sorted(p.parent.name for p in out.glob("*/repeat-1.done"))
    assert first.name in done_before and len(done_before) < 4, done_before
    # the killed run's second point is still mounted, on its loop device,
    # and its journal names it: the resume clears it
    assert mounts_under(work) and loops_under(work) and (out / "mounted").exists()
    before = invocations(log)
    rc, _, stderr = run(study, db, out, fio=fio)
    assert rc == 0, stderr
    lines = stderr.splitlines()
    skipped = [SKIPPED.match(line)[3] for line in lines if SKIPPED.match(line)]
    ran = [PROGRESS.match(line)[3] for line in lines if PROGRESS.match(line)]
    assert sorted(skipped) == done_before and first.name in skipped, stderr
    assert len(ran) == 4 - len(skipped) and all(PROGRESS.match(line)[5] == "ok" for line in lines
                                                if PROGRESS.match(line)), stderr
    assert invocations(log) - before == len(ran), stderr
    assert lines[-1] == f"mdfio-study: {len(ran)} run, {len(skipped)} recorded before, 0 failed ({out})", stderr
    assert nothing_left(work), (mounts_under(work), loops_under(work))
    assert sorted(os.listdir(work)) == [], os.listdir(work)

    runs = db_rows(db, "SELECT r.id, r.label, r.config_name, e.fs_type, e.mount_options, e.mkfs_options "
                       "FROM runs r JOIN environment e ON e.run_id = r.id ORDER BY r.config_name")
    points = sorted(p.parent.name for p in out.glob("*/repeat-1.done"))
    assert [r["config_name"] for r in runs] == [f"resume/{p}" for p in points] and len(points) == 4
    assert {r["label"] for r in runs} == {"test"}
    assert sorted((r["fs_type"], "noatime" in r["mount_options"].split(",")) for r in runs) == [
        ("ext4", True), ("ext4", True), ("tmpfs", False), ("tmpfs", False)]
    for r in runs:
        kept = out / r["config_name"].split("/", 1)[1] / "repeat-1.json"
        [(text,)] = db_rows(db, "SELECT text FROM fio_outputs WHERE run_id = ?", r["id"])
        assert text == kept.read_text()
        proc = subprocess.run([sys.executable, str(REPORT), "--json", str(kept)], capture_output=True, text=True,
                              timeout=120)
        assert proc.returncode == 0, proc.stderr
        records = json.loads(proc.stdout)["records"]
        phases = db_rows(db, "SELECT * FROM phases WHERE run_id = ? ORDER BY position", r["id"])
        assert [(p["phase"], p["repeat"]) for p in phases] == [("precreate", 0), ("benchmark", 1), ("benchmark", 2),
                                                               ("cleanup", 0)]
        assert len(records) == len(phases)
        for rec, row in zip(records, phases):
            for k in PHASE_COLUMNS:
                assert row[k] == rec[k], (r["config_name"], rec["phase"], k)
            for o in db_rows(db, "SELECT * FROM ops WHERE run_id = ? AND position = ?", r["id"], row["position"]):
                assert o["op"] in OPS and o["count"] == rec[f"{o['op']}_count"]
                for k in LATENCY:
                    assert o[k] == rec[f"{o['op']}_{k}"], (r["config_name"], rec["phase"], o["op"], k)
        assert records[0]["objects"] == records[0]["ranks"] * 2 * 20

    # a third run has nothing to do; nor has one whose DIR was lost: the
    # database holds each point under the label
    rc, _, stderr = run(study, db, out, fio=fio)
    assert rc == 0 and stderr.splitlines()[-1].startswith("mdfio-study: 0 run, 4 recorded before"), stderr
    rc, _, stderr = run(study, db, tmp_path / "elsewhere", fio=fio)
    assert rc == 0 and stderr.splitlines()[-1].startswith("mdfio-study: 0 run, 4 recorded before"), stderr
    # another label (the next night) runs them all again, into the same DIR
    before = invocations(log)
    rc, _, stderr = run(study, db, out, "--label", "night-2", fio=fio)
    assert rc == 0 and stderr.splitlines()[-1].startswith("mdfio-study: 4 run, 0 recorded before"), stderr
    assert invocations(log) - before == 4
    assert [tuple(r) for r in db_rows(db, "SELECT label, count(*) FROM runs GROUP BY label ORDER BY label")] == [
        ("night-2", 4), ("test", 4)]


def test_sigterm_in_a_point_leaves_nothing(tmp_path, work):
    """SIGTERM while a point's fio runs on ext4: fio and its jobs killed,
    the file system unmounted, the loop device and image gone; exit status
    143, the point not marked done; run again, it is run."""
    study = write_study(tmp_path, work, "term", ['kind = "ext4"\nsize = "64M"'], ranks=(2,))
    study.write_text(study.read_text().replace("P = 20", "P = 20000"))
    db, out = tmp_path / "h.db", tmp_path / "out"
    proc = start(study, db, out)
    try:
        wait_for(lambda: fio_running_under(work) or proc.poll() is not None, "fio")
        time.sleep(0.5)
        assert proc.poll() is None and mounts_under(work) and loops_under(work), proc.communicate()
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 143, stderr
    assert stderr.splitlines()[-1] == "mdfio-study: stopped by SIGTERM; run it again to resume", stderr
    assert not mounts_under(work) and not loops_under(work) and os.listdir(work) == []
    assert not list(out.glob("*/*.done")) and not (out / "mounted").exists()
    assert not db.exists() or not db_rows(db, "SELECT id FROM runs")


def fio_running_under(path):
    """Whether a fio whose MDW_ROOT is under path runs."""
    for p in Path("/proc").glob("[0-9]*"):
        try:
            if (p / "comm").read_text().strip() == "fio" and \
                    f"MDW_ROOT={path}/".encode() in (p / "environ").read_bytes():
                return True
        except OSError:
            continue
    return False


def blkid(device):
    return subprocess.run(["blkid", "-p", "-o", "export", device], capture_output=True, text=True).stdout


def test_a_device_holding_a_file_system_is_formatted_only_when_told(tmp_path, work):
    """A loop device with ext4 on it, named by device =: refused in one
    line naming it and what it holds, untouched; with --format-devices the
    study makes its file system there and records the run on it."""
    image = tmp_path / "disk.img"
    subprocess.run(["truncate", "-s", "64M", str(image)], check=True)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    dev = subprocess.run(["losetup", "--find", "--show", str(image)], capture_output=True, text=True,
                         check=True).stdout.strip()
    try:
        held = blkid(dev)
        assert "TYPE=ext4" in held, held
        study = write_study(tmp_path, work, "device", [f'kind = "ext4"\ndevice = "{dev}"\nmkfs_options = "-b 1024"'],
                            ranks=(1,))
        db, out = tmp_path / "h.db", tmp_path / "out"
        rc, _, stderr = run(study, db, out)
        assert rc == 2 and stderr.splitlines() == [
            f"mdfio-study: {dev} holds an ext4 file system: not formatted without --format-devices"], stderr
        assert blkid(dev) == held and not db.exists()
        rc, _, stderr = run(study, db, out, "--format-devices")
        assert rc == 0, stderr
        assert "TYPE=ext4" in blkid(dev) and blkid(dev) != held, "made anew"
        [row] = db_rows(db, "SELECT e.fs_type, e.mount_source, e.mkfs_options FROM environment e")
        assert tuple(row) == ("ext4", dev, "-b 1024")
        assert not mounts_under(work) and dev not in Path("/proc/self/mounts").read_text().split()
    finally:
        subprocess.run(["losetup", "-d", dev], check=False)


def test_a_point_whose_fio_fails_is_reported_not_recorded(tmp_path, work):
    failing = tmp_path / "fio-failing"
    failing.write_text('#!/bin/sh\nif [ "$MDW_N" = 2 ]; then echo "no luck" >&2; exit 3; fi\nexec fio "$@"\n')
    failing.chmod(0o755)
    study = write_study(tmp_path, work, "fails", ['kind = "tmpfs"\nsize = "64M"'])
    db, out = tmp_path / "h.db", tmp_path / "out"
    rc, _, stderr = run(study, db, out, fio=failing)
    bad = "tmpfs-posix-qd1-n2-D2-P20-I10-S3901-R2-O1-m0-M0-dc0"
    assert rc == 1, stderr
    assert f"mdfio-study: failed: {bad} #1: fio exited with 3: no luck" in stderr.splitlines(), stderr
    assert (out / bad / "repeat-1.failed").read_text() == "fio exited with 3: no luck\n"
    assert [r["config_name"] for r in db_rows(db, "SELECT config_name FROM runs")] == [
        "fails/tmpfs-posix-qd1-n1-D2-P20-I10-S3901-R2-O1-m0-M0-dc0"]
    assert nothing_left(work)
    # a failed point is run again on resume
    rc, _, stderr = run(study, db, out)
    assert rc == 0 and f"[2/2] {bad} #1 ok" in stderr, stderr
    assert not (out / bad / "repeat-1.failed").exists()


@pytest.mark.parametrize("asked", [False, True])
def test_memory_limits_in_a_cgroup_only_when_asked(tmp_path, work, asked):
    """A point with lim_free_mem runs machine-wide, as md-real-io, unless
    [study] memory_cgroup asks for a memory cgroup: then fio runs inside
    one limited to the point's limit and a margin. A fio that says where
    it runs, then fails (a real one would take the machine's memory
    without the cgroup)."""
    if asked and not Path("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists():
        pytest.skip("no cgroup v1 memory controller")
    where = tmp_path / "where"
    fio = tmp_path / "fio-where"
    fio.write_text(f'#!/bin/sh\ncg=$(sed -n "s/^[0-9]*:memory://p" /proc/self/cgroup)\n'
                   f'echo "$cg $(cat /sys/fs/cgroup/memory$cg/memory.limit_in_bytes)" > {where}\nexit 1\n')
    fio.chmod(0o755)
    study = write_study(tmp_path, work, "memory", ['kind = "tmpfs"\nsize = "64M"'], ranks=(1,),
                        extra="lim_free_mem = 100\n")
    study.write_text(study.read_text().replace("[parameters]", f"memory_cgroup = {str(asked).lower()}\n"
                                                              "[parameters]"))
    rc, _, stderr = run(study, tmp_path / "h.db", tmp_path / "out", fio=fio)
    assert rc == 1 and "fio exited with 1" in stderr, stderr
    cgroup, limit = where.read_text().split()
    own = next(line.split(":", 2)[2] for line in Path("/proc/self/cgroup").read_text().splitlines()
               if line.split(":")[1] == "memory")
    if asked:
        assert re.fullmatch(r".*/mdfio-study-memory-\d+", cgroup) and int(limit) == 100 * 1000 * 1024 + (256 << 20)
        assert not Path(f"/sys/fs/cgroup/memory{cgroup}").exists(), "the cgroup is removed after"
    else:
        assert cgroup == own, (cgroup, own)


def test_the_nightly_preset_runs_in_under_a_minute(tmp_path):
    db, out = tmp_path / "nightly.db", tmp_path / "out"
    began = time.monotonic()
    rc, _, stderr = run(SOURCE_ROOT / "jobfiles" / "studies" / "nightly.toml", db, out, timeout=600)
    took = time.monotonic() - began
    print(f"the nightly preset took {took:.1f} s")
    assert rc == 0, stderr
    assert len(db_rows(db, "SELECT id FROM runs WHERE label = 'nightly'")) == 4
    # generous: the machine is shared
    assert took < 120, f"{took:.1f} s"
