"""The other workloads in the history database (mdfio.workloads): a real run
of mdfio-postmark, mdfio-mdtest, mdfio-tree and an mdfio-iozone sweep, each
on a tmpfs of its own, and of mdfio-mdtest over two fio servers, recorded by
mdfio-report --record; the rows checked against fio's JSON by hand; a slower run of each flagged by mdfio-compare
with md-workbench's statistics; mdfio-plot --history drawing their figures."""
import contextlib
import json
import os
import random
import sqlite3
import subprocess
import sys

import pytest

import mdfio.fio
from conftest import SOURCE_ROOT, client_env, engine_path, fio_env, job, mounted_tmpfs, run_fio
from mdfio.fiojson import load
from mdfio.hosts import fio_servers, need_unshare

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
COMPARE = SOURCE_ROOT / "tools" / "mdfio-compare"
PLOT = SOURCE_ROOT / "tools" / "mdfio-plot"
IOZONE = SOURCE_ROOT / "tools" / "mdfio-iozone"
MDTEST_PHASES = ("tree_create", "dir_create", "dir_stat", "dir_remove", "file_create", "file_stat", "file_read",
                 "file_remove", "tree_remove")
MDTEST_SLOT = {"tree_create": "write", "dir_create": "write", "dir_stat": "read", "dir_remove": "trim",
               "file_create": "write", "file_stat": "read", "file_read": "read", "file_remove": "trim",
               "tree_remove": "trim"}


def tool(path, *args):
    return subprocess.run([sys.executable, str(path), *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def postmark_job(root):
    lines = ["[global]", f"ioengine=external:{engine_path('postmark')}", f"directory={root}", "pm_files=40",
             "pm_transactions=200", "pm_size_low=100", "pm_size_high=3000", "pm_seed=7", "pm_buffering=false"]
    for phase in ("pool", "transactions", "delete"):
        lines += ["", f"[{phase}]", "stonewall", f"phase={phase}"]
    return "\n".join(lines) + "\n"


def mdtest_job(root):
    text = job([], root, engine="mdtest", numjobs=2, items="12", branching_factor="2", depth="1",
               write_bytes="4", read_bytes="4")
    for it in range(2):
        for phase in MDTEST_PHASES:
            text += f"\n[{phase}-{it}]\nphase={phase}\niteration={it}\nstonewall\n"
    return text


def tree_job(root, src):
    lines = ["[global]", f"ioengine=external:{engine_path('tree')}", f"directory={root}"]
    for i, (phase, opts) in enumerate([("copy", [f"tree_source={src}"]), ("find", ["find_iname=*a*"]),
                                       ("read", ["numjobs=3"]), ("delete", [])]):
        lines += ["", f"[{phase}-{i}]", "stonewall", f"phase={phase}", *opts]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """{workload: [its fio JSON files]} of one real run each, on a tmpfs
    of its own, mounted while the module's tests record them."""
    found = {}
    with contextlib.ExitStack() as mounts:
        yield from _runs(tmp_path_factory, found, mounts)


def _runs(tmp_path_factory, found, mounts):
    for workload in ("postmark", "mdtest", "tree", "iozone"):
        base = tmp_path_factory.mktemp(workload)
        root = mounts.enter_context(mounted_tmpfs(options="size=64m,mode=0755", prefix=f"mdfio-wlhist-{workload}-"))
        if True:
            if workload == "iozone":
                out = base / "sweep"
                proc = tool(IOZONE, "-n", "64", "-g", "128", "-y", "4", "-q", "8", "-i", "0",
                            "--no-drop-caches", "--directory", root, "--out", out, "--json")
                assert proc.returncode == 0, proc.stderr
                found[workload] = sorted(out.glob("*.json"))
                continue
            if workload == "tree":
                src = base / "src"
                for d in range(3):
                    (src / f"dir{d}").mkdir(parents=True)
                    for f in range(8):
                        (src / f"dir{d}" / f"file-{f}.txt").write_bytes(os.urandom(200 * (f + 1)))
                text = tree_job(root, src)
            else:
                text = postmark_job(root) if workload == "postmark" else mdtest_job(root)
            out = base / "run.json"
            run_fio(text, base, args=["--output-format=json+", f"--output={out}"], check=True, timeout=120)
            found[workload] = [out]
    yield found


@pytest.fixture(scope="module")
def recorded(runs, tmp_path_factory):
    """The four runs recorded into one database: its path and
    {workload: (run id, mdfio-report's process)}."""
    db = tmp_path_factory.mktemp("db") / "history.db"
    ids = {}
    for n, (workload, files) in enumerate(runs.items(), 1):
        proc = tool(REPORT, "--record", db, "--config", workload, *files)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.strip() == f"mdfio-report: recorded run {n} in {db}"
        ids[workload] = (n, proc)
    return db, ids


def rows(db, run_id):
    """{(phase, repeat, op): ops row} of a run, with its phase's columns."""
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    got = con.execute("SELECT p.phase, p.repeat, p.section, p.t_max_s, p.ranks, o.* FROM ops o JOIN phases p "
                      "ON p.run_id = o.run_id AND p.position = o.position WHERE o.run_id = ?", (run_id,)).fetchall()
    con.close()
    return {(r["phase"], r["repeat"], r["op"]): r for r in got}


def config_of(db, run_id):
    con = sqlite3.connect(db)
    (text,) = con.execute("SELECT config FROM runs WHERE id = ?", (run_id,)).fetchone()
    con.close()
    return json.loads(text)


def test_the_report_is_printed_as_without_record(runs, recorded):
    _, ids = recorded
    for workload, files in runs.items():
        alone = tool(REPORT, *files)
        assert alone.returncode == 0, alone.stderr
        assert ids[workload][1].stdout == alone.stdout, workload


def test_postmark_rows_are_its_json(runs, recorded):
    db, ids = recorded
    doc = json.loads(runs["postmark"][0].read_text())
    jobs = {j["jobname"]: j for j in doc["jobs"]}
    got = rows(db, ids["postmark"][0])
    headline = {"pool": "write", "transactions": "read", "delete": "trim"}
    slot_of = {"create": ("write", "clat_ns"), "read": ("read", "clat_ns"), "append": ("sync", "lat_ns"),
               "delete": ("trim", "clat_ns")}
    for phase, j in jobs.items():
        seconds = j[headline[phase]]["slat_ns"]["max"] / 1e9
        for op, (slot, obj) in slot_of.items():
            n = j[slot][obj]["N"]
            if not n:
                assert (phase, 0, op) not in got
                continue
            r = got[(phase, 0, op)]
            assert r["count"] == n and r["errors"] == 0
            assert r["rate"] == n / seconds
            assert r["min_s"] == j[slot][obj]["min"] / 1e9 and r["max_s"] == j[slot][obj]["max"] / 1e9
    tx = int(jobs["transactions"]["desc"].split("transactions=")[1].split(";")[0])
    assert tx == 200
    r = got[("transactions", 0, "transactions")]
    assert r["count"] == 200 and r["rate"] == 200 / (jobs["transactions"]["read"]["slat_ns"]["max"] / 1e9)
    assert got[("pool", 0, "create")]["count"] == 40
    config = config_of(db, ids["postmark"][0])
    assert config["workload"] == "postmark" and config["engine"] == "mdfio-postmark"
    assert config["sections"]["pool"]["pm_transactions"] == "200" and "directory" not in config["sections"]["pool"]
    assert config["fs_type"] == "tmpfs"


def check_mdtest_rows(jobs_of, got, iterations, ranks):
    """Each phase and iteration's rate in got is mdtest's, by hand from
    fio's jobs: the least items/time over the ranks times the ranks; a
    tree's rank 0's over the longest."""
    assert len(got) == iterations * len(MDTEST_PHASES)
    for it in range(iterations):
        for phase in MDTEST_PHASES:
            slot = MDTEST_SLOT[phase]
            jobs = {int(j["desc"].split("rank=")[1].split()[0]): j for j in jobs_of
                    if j["jobname"] == f"{phase}-{it}"}
            assert sorted(jobs) == list(range(ranks))
            times = {r: j[slot]["slat_ns"]["max"] / 1e9 for r, j in jobs.items() if j[slot]["slat_ns"]["N"]}
            if phase.startswith("tree"):
                want = jobs[0][slot]["total_ios"] / max(times.values())
            else:
                want = min(jobs[r][slot]["total_ios"] / t for r, t in times.items()) * len(jobs)
            (r,) = [r for k, r in got.items() if k[:2] == (phase, it)]
            assert r["rate"] == pytest.approx(want, rel=1e-12), (phase, it)
            assert r["t_max_s"] == max(times.values()) and r["ranks"] == ranks
            assert r["count"] == sum(j[slot]["clat_ns"]["N"] for j in jobs.values())


def test_mdtest_rows_are_its_summary(runs, recorded):
    db, ids = recorded
    doc = json.loads(runs["mdtest"][0].read_text())
    got = rows(db, ids["mdtest"][0])
    check_mdtest_rows(doc["jobs"], got, 2, 2)
    assert got[("file_create", 1, "File creation")]["count"] == 24
    # mdfio-report's SUMMARY's mean of File creation is the mean of the two rates
    line = next(x for x in ids["mdtest"][1].stdout.splitlines() if x.strip().startswith("File creation"))
    mean = (got[("file_create", 0, "File creation")]["rate"] + got[("file_create", 1, "File creation")]["rate"]) / 2
    assert line.split()[-2] == f"{mean:.3f}"


def test_tree_rows_are_its_phases(runs, recorded):
    db, ids = recorded
    doc = json.loads(runs["tree"][0].read_text())
    got = rows(db, ids["tree"][0])
    report = json.loads(tool(REPORT, "--json", runs["tree"][0]).stdout)
    for p in report["phases"]:
        names = got[(p["section"], 0, "names")]
        assert names["rate"] == p["names_per_s"] and names["count"] == p["names"]
        assert names["t_max_s"] == p["t_s"]
        for o in p["ops"]:
            if o["count"]:
                r = got[(p["section"], 0, o["name"])]
                assert r["count"] == o["count"] and r["rate"] == o["count"] / p["t_s"]
                assert r["median_s"] == o["median_s"] and r["q99_s"] == o["q99_s"]
    # by hand: the copy made 24 files, its time the engine's slat_ns
    copy = [j for j in doc["jobs"] if j["jobname"] == "copy-0"]
    assert got[("copy-0", 0, "names")]["t_max_s"] == max(j["write"]["slat_ns"]["max"] for j in copy) / 1e9
    assert config_of(db, ids["tree"][0])["workload"] == "tree"


def test_iozone_rows_are_its_kb_per_s(runs, recorded):
    db, ids = recorded
    got = rows(db, ids["iozone"][0])
    seen = 0
    for path in runs["iozone"]:
        for j in json.loads(path.read_text())["jobs"]:
            test = j["jobname"].split("-", 1)[1]
            slot = "read" if test.endswith("read") else "write"
            lat = j[slot]["lat_ns"]
            # the sweep names each file by its file and record size: 64k-4k-write.json
            file_kb, record_kb = (int(x.rstrip("k")) for x in path.name.split("-")[:2])
            want = int(j[slot]["io_bytes"] / (lat["mean"] * lat["N"] / 1e9)) >> 10
            r = got[(f"{test} {file_kb}KB", 0, f"record {record_kb}KB")]
            assert r["rate"] == want and r["count"] == file_kb // record_kb and r["median_s"] is None
            seen += 1
    # 64 KB in 4 and 8 KB records, 128 KB in 4 and 8: a write and a rewrite each
    assert seen == len(got) == 8
    assert config_of(db, ids["iozone"][0])["workload"] == "iozone"


def test_a_run_recorded_twice_or_with_errors_is_refused(runs, recorded, tmp_path):
    db, _ = recorded
    proc = tool(REPORT, "--record", db, runs["postmark"][0])
    assert proc.returncode == 0
    assert proc.stderr.strip().endswith("not recorded: already recorded as run 1"), proc.stderr
    proc = tool(REPORT, "--record", db, "--html", tmp_path / "p.html", runs["mdtest"][0])
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "--html" in proc.stderr


def scaled(text, factor, rng):
    """fio's JSON of a run whose phase times (the engine's exact slat_ns,
    IOzone's summed latencies) are factor times as long, with a little
    seeded noise: another run of the same configuration, slower by factor."""
    doc = json.loads(text)
    for j in doc["jobs"]:
        f = factor * (1 + rng.uniform(-0.03, 0.03))
        for slot in ("read", "write", "trim", "sync"):
            s = j.get(slot, {})
            if s.get("slat_ns", {}).get("N") == 1:
                s["slat_ns"]["max"] = s["slat_ns"]["min"] = s["slat_ns"]["mean"] = int(s["slat_ns"]["max"] * f)
            if j["jobname"].startswith("iozone-") and s.get("lat_ns", {}).get("N"):
                s["lat_ns"]["mean"] *= f
    return json.dumps(doc)


@pytest.mark.parametrize("workload", ["postmark", "mdtest", "tree", "iozone"])
def test_a_slower_run_is_flagged(runs, workload, tmp_path):
    """Five runs of the configuration with a few percent of noise, then one
    three times as slow: its rates are flagged slower, its latencies (the
    same samples) within noise; a sixth run like the five is not flagged."""
    rng = random.Random(20261127)
    db = tmp_path / "h.db"
    for k, factor in enumerate([1.0] * 5 + [3.0, 1.0]):
        d = tmp_path / f"run{k}"
        d.mkdir()
        files = []
        for path in runs[workload]:
            files.append(d / path.name)
            files[-1].write_text(scaled(path.read_text(), factor, rng))
        proc = tool(REPORT, "--record", db, "--config", workload, *files)
        assert proc.returncode == 0, proc.stderr
    slow = tool(COMPARE, db, "--run", 6)
    assert slow.returncode == 1, slow.stdout + slow.stderr
    rates = [x for x in slow.stdout.splitlines() if " rate " in x]
    assert rates and all(": slower (history of 5 runs" in x for x in rates), slow.stdout
    unit = "KB/s" if workload == "iozone" else "ops/s"
    assert all(f" {unit}: slower" in x for x in rates)
    assert all("within noise" in x for x in slow.stdout.splitlines() if " median " in x or " p99 " in x)
    # the history of run 7 holds the slow one: wider, and run 7 within it
    normal = tool(COMPARE, db, "--run", 7)
    assert normal.returncode == 0, normal.stdout
    assert "slower" not in normal.stdout


def test_history_figures_are_drawn(recorded, tmp_path):
    db, _ = recorded
    for workload in ("postmark", "mdtest", "tree", "iozone"):
        proc = tool(PLOT, "--history", db, "--config", workload, "--out", tmp_path, "--min-history", 2)
        assert proc.returncode == 0, proc.stderr
    pngs = sorted(p.name for p in tmp_path.glob("*.png"))
    assert "history-postmark-transactions.png" in pngs and "history-mdtest-file_create.png" in pngs
    assert "history-tree-copy-0.png" in pngs and "history-iozone-write_64KB.png" in pngs
    dat = (tmp_path / "history-iozone-write_64KB.dat").read_text()
    # rates alone: one panel per record size, no latency rows
    assert dat.count("# record") == 2 and "median" not in dat


def test_an_mdtest_run_over_two_hosts(tmp_path):
    """mdfio-mdtest over two fio servers (each in its own UTS namespace,
    on loopback), two ranks each: one client JSON recorded with its four
    ranks and two hosts, mdtest's rates over all four."""
    why = need_unshare()
    if why:
        pytest.skip(why)
    with mounted_tmpfs(options="size=64m,mode=0755", prefix="mdfio-wlhist-hosts-") as root:
        with fio_servers(2, tmp_path, env=fio_env()) as servers:
            text = job([], root, engine="mdtest", numjobs=2, items="12", branching_factor="2", depth="1",
                       hosts=",".join(s.name for s in servers))
            text += "".join(f"\n[{phase}-0]\nphase={phase}\niteration=0\nstonewall\n" for phase in MDTEST_PHASES)
            hosts = tmp_path / "hosts.list"
            hosts.write_text("".join(f"ip:{s.address},{s.port}\n" for s in servers))
            run = mdfio.fio.run(tmp_path / "job.fio", text, output_format="json+", args=[f"--client={hosts}"],
                                env=client_env(), timeout=120)
        assert run.rc == 0, run.stderr
        db = tmp_path / "h.db"
        proc = tool(REPORT, "--record", db, tmp_path / "job.json")
    assert proc.returncode == 0, proc.stderr
    # a client's output has the servers' lines before its JSON
    doc, _ = load(tmp_path / "job.json")
    check_mdtest_rows([j for j in doc["client_stats"] if j["jobname"] != "All clients"], rows(db, 1), 1, 4)
    con = sqlite3.connect(db)
    assert con.execute("SELECT ranks, hosts FROM environment").fetchone() == (4, '["host1", "host2"]')
    con.close()
    assert config_of(db, 1)["hosts"] == 2 and config_of(db, 1)["ranks"] == 4
