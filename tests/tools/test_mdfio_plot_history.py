"""tools/mdfio-plot's figures from the history database (--study, --history):
a study's database made here from two real runs (1 and 2 ranks) recorded
many times with seeded noise under a study's configuration names, two file
systems, two memory limits and two engines; a configuration's history made
from a saved run with noise and a planted regression. Each data file's
numbers against the database's op_results, queried here, and the bands and
verdicts against what mdfio-compare prints."""
import copy
import itertools
import math
import random
import re
import sqlite3
import statistics
import subprocess
import sys

import pytest

from conftest import SOURCE_ROOT, job, perturbed_run, run_fio, synthetic_outputs
from mdfio.figures import load_run
from mdfio.history import Environment, open_db, read_outputs, record

PLOT = SOURCE_ROOT / "tools" / "mdfio-plot"
HEADLINE = {"precreate": "create", "benchmark": "read", "cleanup": "delete"}
FILESYSTEMS = (("ext4", "ext4"), ("btrfs-zstd", "btrfs"))
LIMITS = (0, 1000)
ENGINES = (("posix", 1), ("uring", 4))
RUNS_PER_POINT = 2


def plot(*args):
    return subprocess.run([sys.executable, str(PLOT), *map(str, args)], capture_output=True, text=True, timeout=120)


def environment(fs_type):
    return Environment(hostname="node1", kernel="6.1.0", cpu_model="test CPU", cpus=2, memory_bytes=2 << 30,
                       directory="/tmp/mdfio-root", fs_type=fs_type, mount_source="/dev/loop9", mount_point="/mnt",
                       mount_options="rw", device_model="unknown")


def variant(run, rng, limit, engine, depth):
    """A copy of run with lognormal noise on each phase's time (its rates
    recomputed as the report does), the memory limit and engine set in its
    sections' options as a jobfile would."""
    run = copy.deepcopy(run)
    for f in run.phases:
        f.t_max_s *= rng.lognormvariate(0, 0.2)
        f.obj_per_s = f.objects / f.t_max_s
    for x in run.sections:
        x.opts["lim_free_mem"] = str(limit)
        x.opts["ioengine"] = f"external:/usr/lib/mdfio/mdfio-{engine}.so"
        x.opts["iodepth"] = str(depth)
    return run


@pytest.fixture(scope="module")
def study_db(tmp_path_factory):
    """The database of a study 'demo' labelled 'demo', and one more run of
    one of its points labelled 'other'."""
    base = tmp_path_factory.mktemp("study")
    runs = {}
    for ranks in (1, 2):
        root = base / f"root{ranks}"
        root.mkdir()
        run_fio(job(["precreate", "benchmark", "benchmark", "benchmark", "cleanup"], root, numjobs=ranks,
                    datasets=2, precreate_per_set=20, steps_per_set=10, bs=300), base,
                args=["--output-format=json+", f"--output={base / f'n{ranks}.json'}"], check=True)
        runs[ranks] = (load_run([base / f"n{ranks}.json"]), read_outputs([base / f"n{ranks}.json"]))
    rng = random.Random(31)
    path = base / "study.db"
    db = open_db(path)
    for (fs, fs_type), limit, (engine, depth), ranks in itertools.product(FILESYSTEMS, LIMITS, ENGINES, (1, 2)):
        run, outputs = runs[ranks]
        point = f"{fs}-{engine}-qd{depth}-n{ranks}-D2-P20-I10-S300-R3-O1-m{limit}-M0-dc0"
        for _ in range(RUNS_PER_POINT):
            record(db, variant(run, rng, limit, engine, depth), synthetic_outputs(outputs), label="demo",
                   config_name=f"demo/{point}", environment=environment(fs_type))
    record(db, variant(runs[1][0], rng, 0, "posix", 1), synthetic_outputs(runs[1][1]), label="other",
           config_name="demo/ext4-posix-qd1-n1-D2-P20-I10-S300-R3-O1-m0-M0-dc0", environment=environment("ext4"))
    db.close()
    return path


def blocks(path, numbers=True):
    """{block header: [[fields of a line]]} of a data file of blocks (as
    numbers, or as written)."""
    out = {}
    for block in path.read_text().strip().split("\n\n\n"):
        lines = block.splitlines()
        assert lines[0].startswith("# ") and lines[1].startswith("# ")
        out[lines[0][2:]] = [[float(x) if numbers else x for x in line.split()] for line in lines[2:]]
    return out


def test_study_figures_against_the_database(study_db, tmp_path):
    """Each point of study-<phase> is the mean, min, max, sd and count of
    the headline operation's rate (op_results: the phase's objects/s) over
    the point's runs labelled demo, every benchmark repeat of each; the
    engines are lines (they differ at one file system, limit and ranks),
    P is not; the study's file system names are the panels' columns."""
    proc = plot("--study", study_db, "--label", "demo", "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == [str(tmp_path / f"study-{n}.png") for n in
                                   ("precreate", "benchmark", "cleanup", "variability")]
    con = sqlite3.connect(study_db)
    for phase in ("precreate", "benchmark", "cleanup"):
        got = blocks(tmp_path / f"study-{phase}.dat")
        want = {}
        for name, rate, repeat in con.execute(
                "SELECT config_name, rate, repeat FROM op_results WHERE label = 'demo' AND phase = ? AND op = ?",
                (phase, HEADLINE[phase])):
            fs, engine, depth, ranks, limit = re.fullmatch(
                r"demo/(.+)-(\w+)-qd(\d+)-n(\d+)-D2-P20-I10-S300-R3-O1-m(\d+)-M0-dc0", name).groups()
            head = (f"{fs} | {'unlimited' if limit == '0' else f'lim_free_mem {limit} (x 1000 KiB)'} | "
                    f"engine=mdfio-{engine} iodepth={depth}")
            want.setdefault(head, {}).setdefault(int(ranks), []).append(rate)
        assert set(got) == set(want), phase
        for head, lines in got.items():
            assert [int(x[0]) for x in lines] == [1, 2]
            for ranks, mean, lo, hi, sd, n in lines:
                values = want[head][int(ranks)]
                assert n == len(values) == RUNS_PER_POINT * (3 if phase == "benchmark" else 1)
                assert (mean, lo, hi, sd) == pytest.approx(
                    (statistics.mean(values), min(values), max(values), statistics.stdev(values)), rel=1e-6)
        script = (tmp_path / f"study-{phase}.gp").read_text()
        assert "set multiplot layout 2,2" in script and "set logscale y" in script
        for title in ("ext4, unlimited", "btrfs-zstd, lim_free_mem 1000 (x 1000 KiB)"):
            assert f"set title '{title}'" in script
    # the variability figure: each repeat's mean over the point's runs
    got = blocks(tmp_path / "study-variability.dat")
    rows = con.execute("SELECT config_name, repeat, rate FROM op_results WHERE label = 'demo' AND "
                       "phase = 'benchmark' AND op = 'read'")
    by_repeat = {}
    for name, repeat, rate in rows:
        if name == "demo/ext4-posix-qd1-n2-D2-P20-I10-S300-R3-O1-m0-M0-dc0":
            by_repeat.setdefault(repeat, []).append(rate)
    lines = got["ext4 | unlimited | ranks=2 engine=mdfio-posix iodepth=1"]
    assert [int(x[0]) for x in lines] == [1, 2, 3]
    for repeat, mean, lo, hi, sd, n in lines:
        values = by_repeat[int(repeat)]
        assert n == RUNS_PER_POINT and (mean, lo, hi) == pytest.approx(
            (statistics.mean(values), min(values), max(values)), rel=1e-6)
    assert len(got) == len(FILESYSTEMS) * len(LIMITS) * len(ENGINES) * 2
    # without --label the run labelled 'other' counts too
    every = tmp_path / "every"
    assert plot("--study", study_db, "--out", every).returncode == 0
    line = blocks(every / "study-precreate.dat")["ext4 | unlimited | engine=mdfio-posix iodepth=1"][0]
    assert line[0] == 1 and line[5] == RUNS_PER_POINT + 1
    con.close()


def test_study_bad_input(study_db, tmp_path):
    def one_line(proc, needle):
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert len(proc.stderr.splitlines()) == 1 and needle in proc.stderr, proc.stderr

    one_line(plot("--study", study_db, "--label", "none", "--out", tmp_path), "no run of a study labelled 'none'")
    one_line(plot("--study", tmp_path / "absent.db", "--out", tmp_path), "no such database")
    one_line(plot("--study", study_db, "--logs", "x"), "one of them")
    one_line(plot("--label", "demo", "--out", tmp_path), "--label: only with --study")
    other = tmp_path / "two.db"
    other.write_bytes(study_db.read_bytes())
    con = sqlite3.connect(other)
    with con:
        con.execute("UPDATE runs SET config_name = 'another/x' WHERE label = 'other'")
    con.close()
    one_line(plot("--study", other, "--out", tmp_path), "runs of 2 studies (another, demo): choose one with --label")


COMPARE = SOURCE_ROOT / "tools" / "mdfio-compare"
FIXTURE = SOURCE_ROOT / "tests" / "fixtures" / "fio" / "posix-2-ranks.json"
@pytest.fixture(scope="module")
def history_db(tmp_path_factory):
    """Eight runs of one configuration with noise, a ninth whose benchmark
    rates are halved, a tenth as the first eight; and a run of another
    configuration. Returns the database and the halved run's id."""
    run, outputs = load_run([FIXTURE]), read_outputs([FIXTURE])
    rng = random.Random(5)
    path = tmp_path_factory.mktemp("history") / "history.db"
    db = open_db(path)
    ids = [record(db, perturbed_run(run, rng, 0.5 if i == 8 else 1.0), synthetic_outputs(outputs), label=f"night {i}",
                  config_name="nightly/ext4-posix", environment=environment("ext4")) for i in range(10)]
    record(db, perturbed_run(run, rng), synthetic_outputs(outputs), label="night 9", config_name="nightly/xfs-posix",
           environment=environment("xfs"))
    db.close()
    return path, ids[8]


COMPARED = re.compile(r"^run (\d+): (\w+) (\w+) (rate|median|p99) (\S+?)(?:/s|s): (slower|faster|within noise|"
                      r"too little history)(?: \(history of \d+ runs: (\S+?)(?:/s|s) to (\S+?)(?:/s|s)\))?", re.M)


def test_history_against_the_database_and_mdfio_compare(history_db, tmp_path):
    """Each run's value is the geometric mean over its repeats of the
    op_results figure; each band and verdict is what mdfio-compare --run
    prints for that run; exactly the halved run's benchmark rates are
    slower, marked in red with their run."""
    db, halved = history_db
    proc = plot("--history", db, "--config", "nightly/ext4-posix", "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    names = ["precreate", "benchmark", "cleanup"]
    assert proc.stdout.split() == [str(tmp_path / f"history-nightly_ext4-posix-{n}.png") for n in names]
    con = sqlite3.connect(db)
    ids = [r for (r,) in con.execute("SELECT id FROM runs WHERE config_name = 'nightly/ext4-posix' ORDER BY id")]
    compared = {}
    for run_id in ids:
        out = subprocess.run([sys.executable, str(COMPARE), str(db), "--run", str(run_id)], capture_output=True,
                             text=True, timeout=60).stdout
        for m in COMPARED.finditer(out):
            compared[(int(m[1]), m[2], m[3], m[4])] = m.groups()[4:]
    slower = set()
    for phase in names:
        got = blocks(tmp_path / f"history-nightly_ext4-posix-{phase}.dat", numbers=False)
        script = (tmp_path / f"history-nightly_ext4-posix-{phase}.gp").read_text()
        assert "set logscale y" in script and "set title 'read rate'" in script or phase != "benchmark"
        for head, rows in got.items():
            op, metric = head.split()
            column = {"rate": "rate", "median": "median_s", "p99": "q99_s"}[metric]
            if not rows:
                continue
            assert [int(r[0]) for r in rows] == list(range(1, len(ids) + 1))
            for position, run_id, value, low, high, verdict in rows:
                values = [v for (v,) in con.execute(f"SELECT {column} FROM op_results WHERE run_id = ? AND "
                                                    "phase = ? AND op = ?", (int(run_id), phase, op))]
                assert float(value) == pytest.approx(math.exp(sum(map(math.log, values)) / len(values)), rel=1e-8)
                shown, said, lo, hi = compared[(int(run_id), phase, op, metric)]
                assert float(shown) == pytest.approx(float(value), rel=1e-4)
                if said == "too little history":
                    assert (low, high, verdict) == ("?", "?", "untested") and int(position) <= 5
                    continue
                assert verdict == said.replace(" ", "_")
                assert (float(low), float(high)) == (pytest.approx(float(lo), rel=1e-4),
                                                     pytest.approx(float(hi), rel=1e-4))
                if verdict == "slower":
                    slower.add((int(run_id), phase, op, metric))
        if phase == "benchmark":
            assert "sprintf('run %d', $2)" in script and "strcol(6) eq 'slower'" in script
    assert slower == {(halved, "benchmark", op, "rate") for op in ("create", "stat", "read", "delete")}
    con.close()
    # --label: every configuration of the runs labelled so, each with its history
    proc = plot("--history", db, "--label", "night 9", "--out", tmp_path / "nine")
    assert proc.returncode == 0, proc.stderr
    assert [p.rsplit("/", 1)[1] for p in proc.stdout.split()] == [
        f"history-nightly_{fs}-posix-{n}.png" for fs in ("ext4", "xfs") for n in names]
    for bad, needle in ((("--config", "nope"), "--history: no run of configuration 'nope'"),
                        ((), "--history: name the configuration"),
                        (("--config", "nightly/ext4-posix", "--alpha", "2"), "argument --alpha")):
        proc = plot("--history", db, *bad, "--out", tmp_path)
        assert proc.returncode == 2 and needle in proc.stderr and len(proc.stderr.splitlines()) == 1, proc.stderr
    proc = plot("--config", "x", "--out", tmp_path)
    assert proc.returncode == 2 and "--config: only with --history" in proc.stderr
