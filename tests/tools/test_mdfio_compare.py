"""tools/mdfio-compare on histories made here: runs recorded from a saved
fio JSON whose figures are perturbed with seeded noise, then a planted
regression and a planted noise-only change, of which exactly the first is
flagged; Student's t quantile against its table; bad input. No fio runs."""
import random
import re
import shutil
import sqlite3
import subprocess
import sys

import pytest

from conftest import SOURCE_ROOT, perturbed_run, synthetic_outputs
from mdfio.compare import betainc, t_cdf, t_quantile
from mdfio.figures import load_run
from mdfio.history import Environment, open_db, read_outputs, record

COMPARE = SOURCE_ROOT / "tools" / "mdfio-compare"
FIXTURE = SOURCE_ROOT / "tests" / "fixtures" / "fio" / "posix-2-ranks.json"
HISTORY = 8


def compare(db, *args):
    return subprocess.run([sys.executable, str(COMPARE), str(db), *map(str, args)], capture_output=True,
                          text=True, timeout=60)


# Student's t quantiles as printed in tables (to the digits given)
T_TABLE = [(0.975, 1, 12.706), (0.975, 2, 4.303), (0.975, 5, 2.571), (0.975, 10, 2.228), (0.975, 30, 2.042),
           (0.95, 7, 1.895), (0.995, 4, 4.604), (0.995, 10, 3.169), (0.999, 7, 4.785), (0.9995, 3, 12.924),
           (0.9995, 20, 3.850), (0.75, 2, 0.816)]


@pytest.mark.parametrize("p, df, want", T_TABLE)
def test_t_quantile_matches_the_table(p, df, want):
    got = t_quantile(p, df)
    assert round(got, 3) == want, (p, df, got)
    assert t_quantile(1 - p, df) == pytest.approx(-got)
    assert t_cdf(got, df) == pytest.approx(p, abs=1e-12)


def test_incomplete_beta_matches_closed_forms():
    # I_x(2, 3) = sum_{j=2..4} C(4, j) x^j (1-x)^(4-j); I_x(a, 1) = x^a;
    # I_x(1, b) = 1 - (1-x)^b; I_1/2(a, a) = 1/2
    assert betainc(2, 3, 0.4) == pytest.approx(0.5248, rel=1e-12)
    for x in (0.01, 0.3, 0.7, 0.99):
        assert betainc(3.5, 1, x) == pytest.approx(x ** 3.5, rel=1e-12)
        assert betainc(1, 4.5, x) == pytest.approx(1 - (1 - x) ** 4.5, rel=1e-12)
    for a in (0.5, 3, 40):
        assert betainc(a, a, 0.5) == pytest.approx(0.5, rel=1e-12)


ENV = Environment(hostname="node1", kernel="6.1.0", cpu_model="test CPU", cpus=2, memory_bytes=2 << 30,
                  directory="/tmp/mdfio-root", fs_type="ext4", mount_source="/dev/sdz1", mount_point="/",
                  mount_options="rw,relatime", device_model="unknown")


@pytest.fixture(scope="module")
def history(tmp_path_factory):
    """A database of HISTORY runs of one configuration with seeded noise,
    and the run and outputs they come from."""
    outputs = read_outputs([FIXTURE])
    run = load_run([FIXTURE])
    rng = random.Random(20261126)
    path = tmp_path_factory.mktemp("history") / "history.db"
    db = open_db(path)
    for i in range(HISTORY):
        record(db, perturbed_run(run, rng), synthetic_outputs(outputs), label=f"night {i}", environment=ENV)
    db.close()
    return path, run, outputs


def with_one_more(history, tmp_path, rate_factor):
    """A copy of the history with one more run, its benchmark rates
    rate_factor times the history's, with the same noise."""
    path, run, outputs = history
    copy_path = tmp_path / "history.db"
    shutil.copy(path, copy_path)
    db = open_db(copy_path)
    record(db, perturbed_run(run, random.Random(7), rate_factor), synthetic_outputs(outputs), label="tonight", environment=ENV)
    db.close()
    return copy_path


def verdicts(out):
    """{'phase op metric': verdict} of mdfio-compare's lines."""
    found = dict(re.findall(r"^run \d+: (\w+ \w+ \w+) \S+: (faster|slower|within noise)", out, re.M))
    assert found, out
    return found


def test_planted_regression_is_slower_and_fails(history, tmp_path):
    """Benchmark rates 30% lower than a history with 3% noise: each
    benchmark rate is slower, exit 1; the other phases are within noise."""
    db = with_one_more(history, tmp_path, 0.7)
    proc = compare(db, "--latest")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    found = verdicts(proc.stdout)
    rates = {k: v for k, v in found.items() if k.startswith("benchmark") and k.endswith(" rate")}
    assert len(rates) == 4 and set(rates.values()) == {"slower"}, proc.stdout
    assert {v for k, v in found.items() if k not in rates} == {"within noise"}, proc.stdout
    assert f"{HISTORY} earlier runs of its configuration" in proc.stdout
    assert "slower than the noise" in proc.stderr


def test_noise_only_change_is_within_noise(history, tmp_path):
    """A draw from the history's own distribution: nothing flagged, exit 0."""
    db = with_one_more(history, tmp_path, 1.0)
    proc = compare(db)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert set(verdicts(proc.stdout).values()) == {"within noise"}, proc.stdout


def test_faster_is_not_a_regression(history, tmp_path):
    db = with_one_more(history, tmp_path, 1.5)
    proc = compare(db)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    found = verdicts(proc.stdout)
    assert found["benchmark read rate"] == "faster" and "slower" not in found.values(), proc.stdout


def test_too_little_history_says_so(history, tmp_path):
    path, run, outputs = history
    db = open_db(tmp_path / "short.db")
    for i in range(3):
        record(db, perturbed_run(run, random.Random(i)), synthetic_outputs(outputs), environment=ENV)
    record(db, perturbed_run(run, random.Random(9), 0.7), synthetic_outputs(outputs), environment=ENV)
    db.close()
    proc = compare(tmp_path / "short.db")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = [l for l in proc.stdout.splitlines() if ": " in l and not l.endswith("prediction interval")]
    assert lines and all(l.endswith("too little history (3 runs, needs 5)") for l in lines), proc.stdout
    # three runs are tested when asked, but t with 2 degrees of freedom
    # makes a band too wide to tell 30% from the noise
    proc = compare(tmp_path / "short.db", "--min-history", "3")
    assert proc.returncode == 0 and "too little" not in proc.stdout, proc.stdout
    assert len(verdicts(proc.stdout)) == len(lines), proc.stdout


def test_only_runs_of_the_same_configuration_are_history(history, tmp_path):
    """A run of another configuration (another --config name) has no
    history here, whatever its figures."""
    db = with_one_more(history, tmp_path, 1.0)
    con = open_db(db)
    path, run, outputs = history
    run_id = record(con, perturbed_run(run, random.Random(3), 0.5), synthetic_outputs(outputs), config_name="other",
                    environment=ENV)
    con.close()
    proc = compare(db, "--run", run_id)
    assert proc.returncode == 0 and "too little history (0 runs, needs 5)" in proc.stdout, proc.stdout


def test_a_matrix_by_label(history, tmp_path):
    """--label: every run of that label, each with its configuration's
    history; one regression among them fails the whole."""
    path, run, outputs = history
    db = tmp_path / "matrix.db"
    shutil.copy(path, db)
    con = open_db(db)
    record(con, perturbed_run(run, random.Random(1)), synthetic_outputs(outputs), label="matrix", environment=ENV)
    record(con, perturbed_run(run, random.Random(2), 0.7), synthetic_outputs(outputs), label="matrix", environment=ENV)
    con.close()
    proc = compare(db, "--label", "matrix")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(rf"^run {HISTORY + 1}: {HISTORY} earlier runs", proc.stdout, re.M), proc.stdout
    # the matrix's own first run is not the second's history
    assert re.search(rf"^run {HISTORY + 2}: {HISTORY} earlier runs", proc.stdout, re.M), proc.stdout
    slower = re.findall(r"^run (\d+): .*: slower", proc.stdout, re.M)
    assert slower and set(slower) == {str(HISTORY + 2)}, proc.stdout


def one_line(proc, start):
    assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"mdfio-compare: {start}"), proc.stderr


def test_bad_input_is_one_line(history, tmp_path):
    path = history[0]
    one_line(compare(tmp_path / "absent.db"), f"{tmp_path / 'absent.db'}: no such database")
    assert not (tmp_path / "absent.db").exists()
    one_line(compare(path, "--run", 999), f"{path}: no run 999 in it")
    one_line(compare(path, "--label", "nope"), f"{path}: no run labelled 'nope' in it")
    junk = tmp_path / "junk.db"
    junk.write_text("not a database\n" * 100)
    one_line(compare(junk), f"{junk}: not a usable history database")
    newer = tmp_path / "newer.db"
    shutil.copy(path, newer)
    con = sqlite3.connect(newer)
    con.execute("UPDATE meta SET value = '2' WHERE key = 'schema_version'")
    con.commit()
    con.close()
    one_line(compare(newer), f"{newer}: history schema version 2, this mdfio")
    empty = tmp_path / "empty.db"
    open_db(empty).close()
    one_line(compare(empty), f"{empty}: no run recorded in it")
    proc = compare(path, "--alpha", "1.5")
    assert proc.returncode == 2 and "--alpha" in proc.stderr, proc.stderr
    proc = compare(path, "--min-history", "1")
    assert proc.returncode == 2 and "--min-history" in proc.stderr, proc.stderr
