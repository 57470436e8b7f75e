"""mdfio-study with a workload other than md-workbench ([study] workload):
a real matrix of mdfio-postmark over two tmpfs by two transaction counts,
each run recorded with its own configuration and the figures of its kept
JSON, resumed without a run, its HTML page and each point's history drawn;
mdtest's and the tree study's points listed; an IOzone sweep per point,
its cells recorded as the sweep's JSON has them; what such a study cannot
use refused in one line."""
import json
import sqlite3
import subprocess
import sys

import pytest

from conftest import SOURCE_ROOT, engine_path, fio_env, need_root

PLOT = SOURCE_ROOT / "tools" / "mdfio-plot"


STUDY = SOURCE_ROOT / "tools" / "mdfio-study"


def tool(path, *args):
    return subprocess.run([sys.executable, str(path), *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def study_file(tmp_path, workload, parameters):
    path = tmp_path / f"{workload}.toml"
    path.write_text(f'[study]\nname = "{workload}-matrix"\nlabel = "m"\nworkload = "{workload}"\n'
                    f'workdir = "{tmp_path}"\n[parameters]\n{parameters}\n'
                    '[[filesystem]]\nkind = "tmpfs"\nsize = "64M"\n'
                    '[[filesystem]]\nkind = "tmpfs"\nname = "tmpfs-noatime"\nsize = "64M"\nmount_options = "noatime"\n')
    return path


def test_a_postmark_study_is_a_matrix_in_the_history(tmp_path):
    """A matrix of two file systems by two transaction counts of
    mdfio-postmark: four runs, each recorded with its own configuration,
    fs_type and mount options, the figures those of its kept JSON."""
    need_root("mounts a tmpfs per run")
    study = study_file(tmp_path, "postmark", "PM_FILES = 30\nPM_TRANSACTIONS = [100, 200]")
    listed = tool(STUDY, "list", study)
    assert listed.returncode == 0, listed.stderr
    names = [line.split("\t")[0] for line in listed.stdout.splitlines()[:-1]]
    assert names == ["tmpfs-PM_FILES30-PM_TRANSACTIONS100", "tmpfs-PM_FILES30-PM_TRANSACTIONS200",
                     "tmpfs-noatime-PM_FILES30-PM_TRANSACTIONS100", "tmpfs-noatime-PM_FILES30-PM_TRANSACTIONS200"]
    db, out = tmp_path / "h.db", tmp_path / "out"
    ran = subprocess.run([sys.executable, str(STUDY), "run", str(study), "--db", str(db), "--out", str(out),
                          "--engine-dir", str(engine_path("postmark").parent)], capture_output=True, text=True,
                         timeout=300, env=fio_env())
    assert ran.returncode == 0, ran.stderr
    con = sqlite3.connect(db)
    got = con.execute("SELECT r.id, r.config_name, r.config, e.fs_type, e.mount_options FROM runs r "
                      "JOIN environment e ON e.run_id = r.id ORDER BY r.id").fetchall()
    assert [r[1] for r in got] == [f"postmark-matrix/{n}" for n in names]
    assert len({json.loads(r[2])["workload"] for r in got}) == 1 and len({r[2] for r in got}) == 4
    assert all(r[3] == "tmpfs" for r in got) and "noatime" in got[2][4] and "noatime" not in got[0][4]
    for run_id, name, *_ in got:
        kept = out / name.split("/")[1] / "repeat-1.json"
        doc = json.loads(kept.read_text())
        tx = next(j for j in doc["jobs"] if j["jobname"] == "transactions")
        (rate, count) = con.execute("SELECT o.rate, o.count FROM ops o JOIN phases p ON p.run_id = o.run_id AND "
                                    "p.position = o.position WHERE o.run_id = ? AND p.phase = 'transactions' "
                                    "AND o.op = 'transactions'", (run_id,)).fetchone()
        assert count == int(name.rsplit("PM_TRANSACTIONS", 1)[1])
        assert rate == count / (tx["read"]["slat_ns"]["max"] / 1e9)
    con.close()
    # resumed: nothing run again
    again = subprocess.run([sys.executable, str(STUDY), "run", str(study), "--db", str(db), "--out", str(out),
                            "--engine-dir", str(engine_path("postmark").parent)], capture_output=True, text=True,
                           timeout=120, env=fio_env())
    assert again.returncode == 0 and "0 run, 4 recorded before" in again.stderr, again.stderr
    # its page: a table per phase and operation; each point's history drawn
    page = tool(STUDY, "report", study, "--db", db, "--html", tmp_path / "p.html")
    assert page.returncode == 0, page.stderr
    text = (tmp_path / "p.html").read_text()
    assert "transactions: transactions ops/s per point" in text and "pool: create ops/s per point" in text
    drawn = tool(PLOT, "--history", db, "--label", "m", "--out", tmp_path / "fig")
    assert drawn.returncode == 0, drawn.stderr
    assert len(list((tmp_path / "fig").glob("history-postmark-matrix_*-transactions.png"))) == 4
    refused = tool(PLOT, "--study", db, "--out", tmp_path / "fig2")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "runs of a study of postmark" in refused.stderr


@pytest.mark.parametrize("workload, parameters, says", [
    ("postmark", "PM_ROOT = \"/x\"", "[parameters] PM_ROOT: unknown key (expected one of PM_FILES,"),
    ("mdtest", "ranks = 2", "[parameters] ranks: unknown key (expected one of MDT_N,"),
    ("tree", "TREE_SOURCE = []", "[parameters] TREE_SOURCE: an empty list"),
    ("iozone", "tests = \"1\"", "mdfio-iozone -i: expected test 0 (write) among the tests"),
    ("nfs", "", "[study] workload: expected one of md-workbench, postmark, mdtest, tree, iozone, not 'nfs'"),
])
def test_a_study_of_another_workload_refuses_what_it_cannot_use(tmp_path, workload, parameters, says):
    proc = tool(STUDY, "list", study_file(tmp_path, workload, parameters))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and says in proc.stderr, proc.stderr


def test_an_mdtest_and_a_tree_study_list_their_points(tmp_path):
    proc = tool(STUDY, "list", study_file(tmp_path, "mdtest", "MDT_N = [1, 2]\nMDT_ITEMS = 50"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0].split("\t")[0] == "tmpfs-MDT_N1-MDT_ITEMS50"
    proc = tool(STUDY, "list", study_file(tmp_path, "tree", "TREE_SOURCE = \"/usr/share/doc\""))
    assert proc.stdout.splitlines()[0].split("\t")[0] == "tmpfs-TREE_SOURCE_usr_share_doc"


def test_an_iozone_study_records_each_point_as_its_sweep(tmp_path):
    """Two points of a one-cell grid (test 0, then tests 0 and 1) on a
    tmpfs: each recorded with a row per pass whose rate and time are those
    of the sweep's own JSON (mdfio-iozone --json); resumed without a run;
    its page tables each cell."""
    need_root("mounts a tmpfs per run, drops the page cache")
    study = tmp_path / "iozone.toml"
    study.write_text(f'[study]\nname = "ioz"\nlabel = "m"\nworkload = "iozone"\nworkdir = "{tmp_path}"\n'
                     '[parameters]\nfile_min = 64\nfile_max = 64\nrecord_min = "64k"\nrecord_max = 64\n'
                     'tests = ["0", "0,1"]\n[[filesystem]]\nkind = "tmpfs"\nsize = "16M"\n')
    db, out = tmp_path / "h.db", tmp_path / "out"
    run = [sys.executable, str(STUDY), "run", str(study), "--db", str(db), "--out", str(out),
           "--engine-dir", str(engine_path("postmark").parent)]
    ran = subprocess.run(run, capture_output=True, text=True, timeout=300, env=fio_env())
    assert ran.returncode == 0, ran.stderr
    con = sqlite3.connect(db)
    runs = con.execute("SELECT id, config_name, config FROM runs ORDER BY id").fetchall()
    names = ["tmpfs-file_min64-file_max64-record_min64k-record_max64-tests0",
             "tmpfs-file_min64-file_max64-record_min64k-record_max64-tests0_1"]
    assert [r[1] for r in runs] == [f"ioz/{n}" for n in names]
    assert all(json.loads(r[2])["workload"] == "iozone" for r in runs)
    for (run_id, name, _), passes in zip(runs, (["write", "rewrite"], ["write", "rewrite", "read", "reread"])):
        sweep = json.loads((out / name.split("/")[1] / "repeat-1.stdout").read_text())
        assert [c["test"] for c in sweep["cells"]] == passes
        rows = con.execute("SELECT p.phase, p.t_max_s, o.op, o.rate, o.count FROM phases p JOIN ops o ON "
                           "o.run_id = p.run_id AND o.position = p.position WHERE p.run_id = ? ORDER BY p.position",
                           (run_id,)).fetchall()
        assert rows == [(f"{c['test']} 64KB", c["seconds"], "record 64KB", c["kb_per_s"], 1) for c in sweep["cells"]]
    con.close()
    again = subprocess.run(run, capture_output=True, text=True, timeout=120, env=fio_env())
    assert again.returncode == 0 and "0 run, 2 recorded before" in again.stderr, again.stderr
    page = tool(STUDY, "report", study, "--db", db, "--html", tmp_path / "p.html")
    assert page.returncode == 0, page.stderr
    assert "reread 64KB: record 64KB KB/s per point" in (tmp_path / "p.html").read_text()
