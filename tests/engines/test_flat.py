"""mdfio-flat (engines/backends/flat.c, built for the tests only): a
backend whose datasets are not directories but key prefixes in one flat
directory, flat_dir=. The core reaches its datasets through the store table
alone, and directory= holds only the run's coordination."""
import os
import subprocess
import json
from pathlib import Path

import mdfio.fio
from conftest import SOURCE_ROOT, after_cleanup, but_killed_updates, job, kill_fio_when, run_fio

FLAT = Path(os.environ.get("MDFIO_TEST_LIB_DIR", SOURCE_ROOT / "build" / "tests")) / "mdfio-flat.so"
REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
# what mdfio keeps in directory= for a run: the status file and the rank file
COORDINATION = ["mdfio.ranks", "mdfio.status"]


def flat_job(phases, root, flat, numjobs=1, **opts):
    assert FLAT.is_file(), f"{FLAT} not built"
    return mdfio.fio.jobfile(phases, root, FLAT, numjobs=numjobs, flat_dir=flat, **opts)


def dirs(tmpfs):
    root, flat = tmpfs / "root", tmpfs / "flat"
    root.mkdir()
    flat.mkdir()
    return root, flat


def keys(ranks, datasets, lo, hi):
    """The flat directory of a namespace: each dataset's marker and its
    objects' keys file-lo .. file-(hi-1)."""
    out = []
    for r in range(ranks):
        for d in range(datasets):
            out += [f"{r}_{d}"] + [f"{r}_{d}@file-{i}" for i in range(lo, hi)]
    return sorted(out)


def test_phases_keep_objects_as_keys_and_only_coordination_in_directory(tmpfs, tmp_path):
    """precreate, two benchmark repeats and cleanup, verifying every read:
    no error, the objects are keys <rank>_<d>@file-<i> beside a marker per
    dataset, and directory= holds nothing but mdfio's status and rank
    files; the cleanup leaves both directories empty."""
    root, flat = dirs(tmpfs)
    R, D, P, I = 2, 2, 20, 8
    opts = dict(numjobs=R, datasets=D, precreate_per_set=P, steps_per_set=I, bs=100, verify_read=1)
    run_fio(flat_job(["precreate"], root, flat, **opts), tmp_path, check=True)
    assert sorted(os.listdir(flat)) == keys(R, D, 0, P)
    assert sorted(os.listdir(root)) == COORDINATION
    run = run_fio(flat_job(["benchmark", "benchmark"], root, flat, **opts), tmp_path, check=True)
    assert sum(j["read"]["total_ios"] for j in run.jobs()) == 2 * R * D * I
    assert sum(j["read"]["drop_ios"] + j["write"]["drop_ios"] + j["trim"]["drop_ios"] for j in run.jobs()) == 0
    assert sorted(os.listdir(flat)) == keys(R, D, 2 * I, P + 2 * I)
    assert sorted(os.listdir(root)) == COORDINATION
    run_fio(flat_job(["cleanup"], root, flat, **opts), tmp_path, check=True)
    assert os.listdir(flat) == []
    assert after_cleanup(root) == []


def counts(path):
    """mdfio-report's figures that count, per phase and repeat."""
    proc = subprocess.run([str(REPORT), "--json", str(path)], capture_output=True, text=True, check=True)
    fields = ("objects", "dsets", "errors", "create_count", "stat_count", "read_count", "delete_count")
    return [(r["phase"], r["repeat"], *(r[f] for f in fields))
            for r in json.loads(proc.stdout)["records"] if r["process"] == "all"]


def test_report_counts_what_mdfio_posix_counts(tmpfs, tmp_path):
    """The same parameters under mdfio-posix and mdfio-flat: mdfio-report
    gives every phase the same object counts."""
    opts = dict(numjobs=2, datasets=3, precreate_per_set=12, steps_per_set=5, bs=200, verify_read=1)
    phases = ["precreate", "benchmark", "benchmark", "cleanup"]
    posix_root = tmpfs / "posix"
    posix_root.mkdir()
    root, flat = dirs(tmpfs)
    runs = {}
    for name, text in (("posix", job(phases, posix_root, **opts)), ("flat", flat_job(phases, root, flat, **opts))):
        work = tmp_path / name
        work.mkdir()
        run_fio(text, work, check=True)
        runs[name] = counts(work / "job-0.json")
    assert runs["flat"] == runs["posix"]
    # R * D * P objects and R * D datasets made and removed; R * D * I steps
    assert [r[:4] for r in runs["flat"]] == [("precreate", 0, 72, 6), ("benchmark", 1, 30, None),
                                            ("benchmark", 2, 30, None), ("cleanup", 0, 72, 6)]


def test_cleanup_after_a_killed_benchmark_recovers_and_leaves_aliens(tmpfs, tmp_path):
    """A benchmark killed with SIGKILL midway, then keys mdfio did not make
    planted under object names inside the recovery's window: a symlink and
    a hard link. The cleanup removes every object mdfio made and leaves the
    two (their datasets' markers stay with them, as a directory holding a
    foreign file does), naming them and failing; without them, a second
    cleanup removes the rest. directory= holds mdfio's own files only."""
    root, flat = dirs(tmpfs)
    p = 20000
    opts = dict(datasets=2, precreate_per_set=p, steps_per_set=p, bs=64)
    run_fio(flat_job(["precreate"], root, flat, **opts), tmp_path, check=True)
    created = lambda: sum(1 for n in os.listdir(flat) if "@file-" in n and int(n.split("-")[-1]) >= p)
    kill_fio_when(flat_job(["benchmark"], root, flat, **opts), tmp_path, lambda: created() > 100)
    left = os.listdir(flat)
    assert created() > 100 and any(n.startswith("0_0@file-") and int(n[9:]) < p for n in left)
    assert " benchmarking 0 " in (root / "mdfio.status").read_text()
    assert but_killed_updates(sorted(os.listdir(root))) == COORDINATION
    victim, other = tmpfs / "victim", tmpfs / "other"
    victim.write_text("precious")
    other.write_text("precious too")
    alien = [f"0_0@file-{2 * p - 1}", f"0_1@file-{2 * p - 1}"]
    (flat / alien[0]).symlink_to(victim)
    os.link(other, flat / alien[1])
    run = run_fio(flat_job(["cleanup"], root, flat, **opts), tmp_path, check=False)
    assert run.rc != 0
    assert sorted(os.listdir(flat)) == ["0_0", alien[0], "0_1", alien[1]]
    assert (flat / alien[0]).is_symlink() and os.stat(flat / alien[1]).st_ino == os.stat(other).st_ino
    assert victim.read_text() == "precious" and other.read_text() == "precious too"
    lines = run.mdfio_lines()
    assert sum(f"rank 0 cleanup: left 2 entries in its datasets (first: {flat}/0_" in l for l in lines) == 1, run.stderr
    assert sum(f"cannot remove dataset {flat}/0_" in l and "Directory not empty" in l for l in lines) == 2, run.stderr
    assert but_killed_updates(sorted(os.listdir(root))) == COORDINATION
    for name in alien:
        (flat / name).unlink()
    run_fio(flat_job(["cleanup"], root, flat, **opts), tmp_path, check=True)
    assert os.listdir(flat) == []
    assert after_cleanup(root) == []


def test_flat_dir_must_not_be_the_coordination_directory(tmpfs, tmp_path):
    """flat_dir= naming directory= is refused before anything is made."""
    root, _ = dirs(tmpfs)
    run = run_fio(flat_job(["precreate"], root, root, datasets=1, precreate_per_set=2), tmp_path, check=False)
    assert run.rc != 0
    assert any(f"flat_dir={root}: is directory=" in l for l in run.mdfio_lines()), run.stderr
    assert after_cleanup(root) == []
