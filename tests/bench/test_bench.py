"""bench/run on its tiny configuration: the harness runs every section and
writes its result files, Markdown and the same numbers as JSON. Speed is
never asserted here; bench/run itself measures it."""
import contextlib
import json
import math
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

import mdfio.fio
import mdfio.versitygw
from conftest import (ENGINE_DIR, SOURCE_ROOT, build_fio, fio_env, io_uring_missing, loops_under, mounts_under,
                      need_root)

SECTIONS = ("free-pages", "pairs", "fio-patch", "engines", "uring-features", "uring-handoffs", "uring-issue",
            "scaling", "hosts", "callgrind", "reference", "walltime", "barrier", "s3", "postmark")


def is_spread(cell, signed=False):
    """median [min, max] of repeated measurements, with every value."""
    return (set(cell) == {"median", "min", "max", "values"} and cell["values"]
            and cell["min"] == min(cell["values"]) and cell["max"] == max(cell["values"])
            and cell["min"] <= cell["median"] <= cell["max"] and (signed or cell["min"] >= 0))


def rows(doc, title_start):
    tables = [t for t in doc["tables"] if t["title"].startswith(title_start)]
    assert tables, [t["title"] for t in doc["tables"]]
    return [r for t in tables for r in t["rows"]]


@pytest.mark.skipif(bool(os.environ.get("MDFIO_PRELOAD")),
                    reason="benchmarks measure the normal build; a sanitized one means nothing")
def test_quick_bench_writes_every_section(request, tmp_path):
    need_root("bench/run mounts tmpfs and ext4")
    if io_uring_missing():
        pytest.skip(f"bench/run measures mdfio-uring: {io_uring_missing()}")
    # bench/run builds the patched fio too: the fixture builds it once, under
    # a lock, while other test files may want it; bench/run then reuses it,
    # and the unpatched build beside it, made here so that the timeout below
    # is the harness's alone, not two compilations of fio
    nr_ios = request.getfixturevalue("nr_ios_fio")
    build_fio(nr_ios.parent / "fio-stock", "--unpatched")
    env = dict(os.environ, MDFIO_BUILD=str(ENGINE_DIR.parent))
    out = tmp_path / "results"
    proc = subprocess.run([str(SOURCE_ROOT / "bench" / "run"), "--quick", "--out", str(out)], capture_output=True,
                          text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr
    docs = {}
    for section in SECTIONS:
        [md] = out.glob(f"????-??-??-{section}.md")
        doc = json.loads(md.with_suffix(".json").read_text())
        assert doc["section"] == section and doc["quick"] is True
        assert doc["command"] == ["bench/run", "--quick", "--out", str(out)]
        head = subprocess.run(["git", "-C", str(SOURCE_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
        if head.returncode == 0:
            assert doc["commit"] == head.stdout.strip() and isinstance(doc["tree_clean"], bool), doc
            assert f"Measured at commit {doc['commit']}" in md.read_text()
        machine = doc["machine"]
        assert machine["cpus"] == os.cpu_count() and machine["kernel"] == os.uname().release
        assert machine["fio_version"].startswith("fio-")
        assert machine["min_free_ms"] is None or isinstance(machine["min_free_ms"], int)
        # the Markdown file has the same tables: under its heading, the
        # columns, then a line per row starting with the row's first cell
        lines = md.read_text().splitlines()
        for table in doc["tables"]:
            at = lines.index(f"### {table['title']}")
            start = next(k for k in range(at, len(lines)) if lines[k] == "| " + " | ".join(table["columns"]) + " |")
            body = [line for line in lines[start + 2:start + 2 + len(table["rows"])] if line.startswith("| ")]
            assert [line.split(" | ")[0][2:] for line in body] == [str(r[table["columns"][0]]) for r in table["rows"]]
        docs[section] = doc

    phases = ("precreate", "benchmark", "cleanup")
    pairs = rows(docs["pairs"], "Engines against the bare loop")
    assert sorted((r["file system"], r["variant"]) for r in pairs) == sorted(
        (fs, v) for fs in ("tmpfs", "ext4") for v in ("mdfio-posix", "mdfio-uring qd=1", "mdfio-aio qd=1",
                                                      "loop + timer"))
    assert all(is_spread(r[ph]) for r in pairs for ph in phases)
    assert docs["pairs"]["facts"]["clock_read_ns"] > 0

    # free page reporting: the machine's setting and held back, or why not
    if docs["free-pages"]["facts"].get("free_page_reporting") is False:
        assert not docs["free-pages"]["tables"]
    else:
        free = rows(docs["free-pages"], "Free page reporting")
        assert len(free) == 2
        assert all(is_spread(r[k]) for r in free for k in ("1st", "2nd", "3rd", "4th"))

    # the fio patch: three fio builds against the loop, then instructions
    patched = docs["fio-patch"]["tables"][0]["rows"]
    assert docs["fio-patch"]["tables"][0]["title"].startswith("mdfio-posix in a fio that counts several I/Os")
    assert [r["fio"] for r in patched] == ["Debian's fio 3.33", "fio 3.33 built from its source",
                                           "the same + io_u-nr-ios.patch"]
    assert all(is_spread(r[ph]) for r in patched for ph in phases)
    instructions = docs["fio-patch"]["tables"][1]["rows"]
    assert [r["program"] for r in instructions] == ["bare loop", "fio 3.33 built from its source",
                                                    "the same + io_u-nr-ios.patch"]
    # --quick's instruction counts span a few dozen units, so fio's
    # timing-dependent clock calibration can even make them negative
    assert all(isinstance(r[k], (int, float)) for r in instructions for k in ("benchmark step", "cleanup unit"))

    # uring's features and the cost of a step (net of fio's start-up, which
    # at --quick's size, and GNU time's 10 ms resolution, can go negative)
    features = rows(docs["uring-features"], "mdfio-uring's features")
    assert len(features) == 7 and features[0]["precreate"] == 1
    assert all(is_spread(r[k], signed=True) for r in features for k in ("CPU µs per step",
                                                                         "context switches per step"))

    # handoffs to io-wq: a row per variant, or a fact saying why there are none
    if docs["uring-handoffs"]["facts"].get("io_uring_tracepoints") is False:
        assert not docs["uring-handoffs"]["tables"]
    else:
        handoffs = rows(docs["uring-handoffs"], "io_uring handoffs")
        assert [r["mdfio-uring"] for r in handoffs] == ["qd=1", "qd=16", "qd=16 linked=0"]
        assert all(r["requests submitted per step"] > 0 for r in handoffs)

    # engines: one table per file system, and per page cache on the loop
    # devices, posix's objects/s, and uring and aio at --quick's depths as
    # ratios to it, then the ratio of posix's two runs of each round
    on = ["tmpfs", *(f"{fs} ({temp} cache)" for fs in ("ext4", "xfs") for temp in ("cold", "warm"))]
    engines = docs["engines"]["tables"]
    assert [t["title"].split(":")[0] for t in engines] == [f"Engines on {fs}" for fs in on]
    for t in engines:
        assert t["rows"][0]["engine"] == "mdfio-posix (objects/s)"
        assert all(t["rows"][0][ph] > 0 for ph in phases)
        # mdfio-uring above iodepth 1 is issue=auto: its ranks that moved
        # to the ring are counted under the ratios
        assert [r["engine"] for r in t["rows"][1:]] == [
            *(f"mdfio-{e} qd={q}" for e in ("uring", "aio") for q in (1, 4)),
            "mdfio-uring qd=4: ranks that took the ring mid-phase", "mdfio-posix, last run ÷ first"]
        assert all(is_spread(r[ph]) for r in t["rows"][1:] if "mid-phase" not in r["engine"] for ph in phases)
        assert all(t["rows"][-2][ph]["runs"] == 1 for ph in phases)
    # a cold table's runs drop caches before the benchmark phase, a warm
    # one's do not, and each says how to run it again
    lines = next(out.glob("????-??-??-engines.md")).read_text().splitlines()
    for t in engines[1:]:
        setup = lines[lines.index(f"### {t['title']}") + 2]
        temp = "cold" if "(cold cache)" in t["title"] else "warm"
        assert f"--cache {temp} " in setup
        assert ("drop_caches" in setup) == (temp == "cold") and ("no cache drop" in setup) == (temp == "warm")

    # issue=syscall and issue=ring at --quick's depths, and issue=auto above
    # iodepth 1, as ratios to posix
    issue = docs["uring-issue"]["tables"]
    assert [t["title"].split(":")[0] for t in issue] == [
        f"mdfio-uring's issue=syscall, issue=ring and issue=auto on {fs}" for fs in on]
    for t in issue:
        assert t["rows"][0]["engine"] == "mdfio-posix (objects/s)"
        assert all(t["rows"][0][ph] > 0 for ph in phases)
        assert [r["engine"] for r in t["rows"][1:]] == [
            *(f"mdfio-uring qd={q} issue={how}" for how in ("syscall", "ring") for q in (1, 4)),
            "mdfio-uring qd=4 issue=auto", "mdfio-uring qd=4 issue=auto: ranks that took the ring mid-phase",
            "mdfio-posix, last run ÷ first"]
        assert all(is_spread(r[ph]) for r in t["rows"][1:] if "mid-phase" not in r["engine"] for ph in phases)
        assert all(t["rows"][-2][ph]["runs"] == 1 for ph in phases)

    scaling = rows(docs["scaling"], "Scaling")
    assert [(r["fs"], r["processes"], r["objects"]) for r in scaling] == [("tmpfs", n, total) for total in (200, 400)
                                                                           for n in (1, 2)]
    assert all(is_spread(r[ph]) and r[ph]["min"] > 0 for r in scaling for ph in phases)
    assert all(is_spread(r["peak RSS"]) and r["peak RSS"]["min"] > 0 for r in scaling)

    hosts = rows(docs["hosts"], "Runs over fio servers against one fio")
    assert [r["layout"] for r in hosts] == ["one fio (objects/s)", "1 host × 4 clones", "2 hosts × 2 clones",
                                            "4 hosts × 1 clone"]
    assert all(is_spread(r[ph]) and r[ph]["min"] > 0 for r in hosts for ph in phases)

    callgrind = docs["callgrind"]["tables"]
    assert [r["program"] for r in callgrind[0]["rows"]] == ["bare loop", "mdfio-posix in fio"]
    assert len(callgrind[1]["rows"]) == 5
    assert "clock_gettime_instructions_per_step" in docs["callgrind"]["facts"]

    # mdfio-posix and md-workbench (where its binary is given) against the
    # loop, 1 and 2 processes
    reference = rows(docs["reference"], "mdfio-posix and md-workbench against the bare loop")
    mdw = bench_md_workbench()
    ratios = ["mdfio-posix ÷ bare loop"] + (["md-workbench ÷ bare loop", "mdfio-posix ÷ md-workbench"] if mdw else [])
    assert [(r["processes"], r["ratio"]) for r in reference] == [(n, v) for n in (1, 2) for v in ratios]
    assert all(is_spread(r[ph]) and r[ph]["min"] > 0 for r in reference for ph in phases)
    assert mdw or "not measured (set MDFIO_MD_WORKBENCH" in (out / next(out.glob("*-reference.md")).name).read_text()


    # wall time of R = 1, 3, 10 against the sum of the phases and one fio start
    wall = rows(docs["walltime"], "Wall time against the phases")
    runs = [("mdfio", r) for r in (1, 3, 10)] + ([("md-workbench", r) for r in (1, 3, 10)] if mdw else [])
    assert [(r["run"], r["repeats"]) for r in wall] == runs
    # md-workbench prints its phase times with 2 decimals: --quick's are 0.00
    assert all(is_spread(r[k]) and (r[k]["min"] > 0 or (k, r["run"]) == ("phases s", "md-workbench"))
               for r in wall for k in ("wall s", "phases s"))
    assert all(is_spread(r["wall ÷ (phases + one fio start)"]) for r in wall if r["run"] == "mdfio")
    assert docs["walltime"]["facts"]["fio_start_s"] > 0


def bench_md_workbench():
    """What bench/run measures md-workbench with: its binary, if given."""
    path = os.environ.get("MDFIO_MD_WORKBENCH")
    return path if path and os.access(path, os.X_OK) else None


def fio_job_processes(pid):
    """The live fio job processes below pid: fio processes whose parent is a
    fio (fio forks one per job)."""
    table = mdfio.fio.processes()
    return [p for p in mdfio.fio.descendants(pid, table) if p in table and table[p][0] == "fio"
            and table[p][1] != "Z" and table.get(table[p][2], ("",))[0] == "fio"]


@pytest.mark.skipif(bool(os.environ.get("MDFIO_PRELOAD")),
                    reason="benchmarks measure the normal build; a sanitized one means nothing")
def test_a_run_stopped_by_sigterm_leaves_no_mount_loop_device_cgroup_or_setting(tmp_path):
    """kill in the middle of a section's fio run: bench/run unwinds as on a
    normal end, so its ext4 is unmounted, its loop device detached, its
    memory cgroup removed and min_free_ms given back. The fio's job process
    is held stopped first, so that it cannot end by itself when its fio
    main process goes: bench/run must kill it too to free its ext4."""
    need_root("bench/run mounts ext4 on a loop device")
    if io_uring_missing():
        pytest.skip(f"bench/run measures mdfio-uring: {io_uring_missing()}")
    min_free = Path("/sys/module/page_reporting/parameters/min_free_ms")
    before = min_free.read_text() if min_free.exists() else None
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, MDFIO_BUILD=str(ENGINE_DIR.parent))
    proc = subprocess.Popen([str(SOURCE_ROOT / "bench" / "run"), "--quick", "--only", "uring-issue", "--engine-fs",
                             "ext4", "--workdir", str(work), "--out", str(tmp_path / "out")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
    held = []
    try:
        deadline = time.monotonic() + 120
        # a fio job of the section runs on the mounted ext4: stop it there
        while not held:
            assert proc.poll() is None and time.monotonic() < deadline, "bench/run ran no fio job on its ext4"
            for job in fio_job_processes(proc.pid) if mounts_under(work) else ():
                with contextlib.suppress(ProcessLookupError):
                    os.kill(job, signal.SIGSTOP)
                    held.append(job)
            time.sleep(0.01)
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=120)
        mounted, looped = mounts_under(work), loops_under(work)
    finally:
        # a test that failed before its signal still lets bench/run unwind
        # (a kill -9 would leave min_free_ms held back for the machine)
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        for job in held:
            with contextlib.suppress(ProcessLookupError):
                os.kill(job, signal.SIGKILL)
        # what a failed run leaves must not outlive the test
        for mnt in mounts_under(work):
            subprocess.run(["umount", "-l", mnt], check=False)
        for dev in loops_under(work):
            subprocess.run(["losetup", "-d", dev], check=False)
    assert proc.returncode != 0 and "bench: stopped by signal SIGTERM" in err, err
    assert mounted == [] and looped == {}, err
    assert not list(Path("/sys/fs/cgroup/memory").glob(f"**/mdfio-bench-{proc.pid}"))
    if before is not None:
        assert min_free.read_text() == before


def quick_uring_issue(tmp_path, *args, fs="tmpfs"):
    """The result file of bench/run --quick --only uring-issue on fs with
    args."""
    need_root(f"bench/run mounts {fs}")
    if io_uring_missing():
        pytest.skip(f"bench/run measures mdfio-uring: {io_uring_missing()}")
    env = dict(os.environ, MDFIO_BUILD=str(ENGINE_DIR.parent))
    out = tmp_path / "results"
    proc = subprocess.run([str(SOURCE_ROOT / "bench" / "run"), "--quick", "--only", "uring-issue", "--engine-fs",
                           fs, *args, "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    [md] = out.glob("????-??-??-uring-issue.md")
    return md


@pytest.mark.skipif(bool(os.environ.get("MDFIO_PRELOAD")),
                    reason="benchmarks measure the normal build; a sanitized one means nothing")
def test_depths_runs_only_those_rows_and_says_so_in_reproduce(tmp_path):
    """--depths 2,3 gives the uring-issue section exactly those iodepths'
    rows (auto's too), and the Reproduce line names them, so that the
    file can be made again."""
    md = quick_uring_issue(tmp_path, "--depths", "2,3")
    [table] = json.loads(md.with_suffix(".json").read_text())["tables"]
    runs = [f"mdfio-uring qd={q} issue={how}" for how in ("syscall", "ring", "auto") for q in (2, 3)]
    assert [r["engine"] for r in table["rows"][1:-1]] == [
        *runs, *(f"{run}: ranks that took the ring mid-phase" for run in runs[-2:])]
    assert "Reproduce: `bench/run --only uring-issue --engine-fs tmpfs --depths 2,3 --rounds 1 --quick`" \
        in md.read_text()


@pytest.mark.skipif(bool(os.environ.get("MDFIO_PRELOAD")),
                    reason="benchmarks measure the normal build; a sanitized one means nothing")
def test_ranks_share_the_objects_of_one_and_the_reproduce_line_names_them(tmp_path):
    """--ranks 2 runs every row with numjobs=2, each rank with half the
    objects and steps of one (--quick's P=I=100), and says so."""
    text = quick_uring_issue(tmp_path, "--depths", "2", "--ranks", "2").read_text()
    assert f"2 ranks (fio's numjobs) on {len(os.sched_getaffinity(0))} CPUs, each, D=2, P=50, I=50, S=3901;" \
        in text
    assert "Reproduce: `bench/run --only uring-issue --engine-fs tmpfs --depths 2 --ranks 2 --rounds 1 --quick`" \
        in text


@pytest.mark.skipif(bool(os.environ.get("MDFIO_PRELOAD")),
                    reason="benchmarks measure the normal build; a sanitized one means nothing")
def test_a_rank_that_took_the_ring_mid_phase_is_counted_under_its_row(tmp_path):
    """On ext4 with its cache dropped, issue=auto at iodepth 4 starts its
    benchmark with system calls, which wait for the device, and moves to
    the ring during it: the row under auto's says so, with the share of
    steps made before, in the Markdown and the JSON. Its precreate and
    cleanup (200 requests each, fewer than the 4 windows of 64 that a
    switch needs) and the tmpfs run (system calls there) never move."""
    md = quick_uring_issue(tmp_path, "--depths", "4", "--cache", "cold", fs="ext4")
    [table] = json.loads(md.with_suffix(".json").read_text())["tables"]
    [row] = [r for r in table["rows"] if r["engine"].endswith("ranks that took the ring mid-phase")]
    assert row["engine"] == "mdfio-uring qd=4 issue=auto: ranks that took the ring mid-phase"
    assert row["precreate"] == row["cleanup"] == {"runs": 1, "switched_after": []}
    [share] = row["benchmark"]["switched_after"]
    assert row["benchmark"]["runs"] == 1 and 0 < share < 1, row
    assert f"| 0 of 1 | 1 of 1 (after {share:.1%}) | 0 of 1 |" in md.read_text()
    text = quick_uring_issue(tmp_path / "tmpfs", "--depths", "4").read_text()
    assert "| mdfio-uring qd=4 issue=auto: ranks that took the ring mid-phase | 0 of 1 | 0 of 1 | 0 of 1 |" in text


@pytest.mark.skipif(bool(os.environ.get("MDFIO_PRELOAD")),
                    reason="benchmarks measure the normal build; a sanitized one means nothing")
def test_fuse_runs_on_bindfs_where_auto_moves_to_the_ring_on_sleeps_alone(tmp_path):
    """--engine-fs fuse runs on bindfs over a tmpfs, one table with no cache
    variants; there every call sleeps on the daemon's reply, reads no
    block device, and issue=auto's benchmark (800 requests) moves to the
    ring; its precreate and cleanup (200 each) are too short to."""
    if not shutil.which("bindfs"):
        pytest.skip("bindfs is not installed (./setup installs it)")
    md = quick_uring_issue(tmp_path, "--depths", "4", "--workdir", str(tmp_path), fs="fuse")
    [table] = json.loads(md.with_suffix(".json").read_text())["tables"]
    assert table["title"].startswith("mdfio-uring's issue=syscall, issue=ring and issue=auto on fuse:")
    assert "bindfs (FUSE) over tmpfs" in md.read_text()
    [row] = [r for r in table["rows"] if r["engine"].endswith("ranks that took the ring mid-phase")]
    assert row["precreate"] == row["cleanup"] == {"runs": 1, "switched_after": []}
    assert row["benchmark"]["runs"] == 1 and len(row["benchmark"]["switched_after"]) == 1, row
    # the bindfs mount and the tmpfs under it are gone, and their directories
    assert str(tmp_path) not in Path("/proc/self/mounts").read_text()
    assert not list(tmp_path.glob("mdfio-fuse-*"))


@pytest.mark.parametrize("option,value,expected", [
    *(("--ranks", v, "expected a number of ranks, 1 or more") for v in ("0", "x", "", "\u00b2")),
    *(("--depths", v, "expected iodepths of 1 or more, as 4,8") for v in ("4,x", "0", "", "4,,8")),
    *(("--engine-fs", v, "expected some of tmpfs, ext4, xfs and fuse, each once, as tmpfs,xfs")
      for v in ("nfs", "", "tmpfs,,xfs", "xfs,xfs")),
])
def test_a_bad_ranks_depths_or_engine_fs_value_is_one_line(option, value, expected):
    proc = subprocess.run([str(SOURCE_ROOT / "bench" / "run"), "--only", "uring-issue", option, value],
                          capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [f"bench: {option} {value}: {expected}"]


@pytest.mark.skipif(bool(os.environ.get("MDFIO_PRELOAD")),
                    reason="benchmarks measure the normal build; a sanitized one means nothing")
def test_barrier_compares_builds_and_finds_one_poller_per_fio(tmp_path):
    """The barrier section measures this build and the one given, as one
    run over its fio processes, and this build under mpirun, whose ranks
    wait in PMIx_Fence; it sees the rank file polled by one process
    of each waiting fio at a time, backing off: never two of its ranks
    polling side by side, one lock, read and unlock a poll, and no more
    polls a second than a back-off from 50 us, doubling, allows in the
    first second of a wait (16 at most: 50 us * 2^15 > 1 s; the issue's
    engines polled hundreds of times a second)."""
    need_root("bench/run mounts tmpfs")
    env = dict(os.environ, MDFIO_BUILD=str(ENGINE_DIR.parent))
    out = tmp_path / "results"
    proc = subprocess.run([str(SOURCE_ROOT / "bench" / "run"), "--quick", "--only", "barrier", "--before-build",
                           str(ENGINE_DIR.parent), "--out", str(out)], capture_output=True, text=True, env=env,
                          timeout=600)
    assert proc.returncode == 0, proc.stderr
    [md] = out.glob("????-??-??-barrier.md")
    doc = json.loads(md.with_suffix(".json").read_text())
    table = rows(doc, "Requests to the file system at the barrier")
    assert [(r["engines"], r["ranks"]) for r in table] == [("this build", 4), ("before", 4),
                                                           ("this build, PMIx", 4)]
    polled, fenced = table[:2], table[2]
    assert [r["most pollers at once per fio"] for r in polled] == [1, 1], table
    assert all(0 < r["polls/s per waiting fio"] <= 16 and r["requests per poll"] <= 3 for r in polled), table
    assert all(r["waiting: requests/s"] > 0 and r["per barrier"] > 0 for r in polled), table
    # under mpirun the waiting ranks wait in PMIx_Fence: no request at all
    # while the last fio is held back (join_timeout's probes come later)
    assert fenced["waiting: requests/s"] == 0 and fenced["per barrier"] > 0, table
    assert "Reproduce: `bench/run --only barrier --before-build DIR --quick`" in md.read_text()



@pytest.mark.skipif(bool(os.environ.get("MDFIO_PRELOAD")),
                    reason="benchmarks measure the normal build; a sanitized one means nothing")
def test_s3_measures_mdfio_s3_against_the_bare_libcurl_loop_and_posix_in_one_run(tmp_path):
    """The s3 section on one versitygw: objects/s of mdfio-posix and of
    mdfio-s3 and the bare loop at --quick's iodepths 1 and 4, and the
    ratios made of those very runs; the bucket is left empty (the section
    checks it) and its tmpfs unmounted."""
    need_root("bench/run mounts a tmpfs")
    loop = ENGINE_DIR.parent / "bench" / "s3-loop"
    if not mdfio.fio.engine_path(ENGINE_DIR, "s3").is_file() or not loop.is_file():
        pytest.skip("mdfio-s3 and bench/s3-loop not built (meson builds them only where libcurl is)")
    why = mdfio.versitygw.need_versitygw(SOURCE_ROOT)
    if why:
        pytest.skip(why)
    # bad input to the loop is one line
    proc = subprocess.run([str(loop), "Bad_Bucket", "benchmark", "1", "1", "1", "1", "0", "1"],
                          capture_output=True, text=True)
    assert proc.returncode == 1 and proc.stderr == "s3-loop: BUCKET: expected 3 to 63 of a-z, 0-9, '-' and '.'\n"
    env = dict(os.environ, MDFIO_BUILD=str(ENGINE_DIR.parent))
    out = tmp_path / "results"
    proc = subprocess.run([str(SOURCE_ROOT / "bench" / "run"), "--quick", "--only", "s3", "--workdir", str(tmp_path),
                           "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert mounts_under(tmp_path) == []
    [md] = out.glob("????-??-??-s3.md")
    doc = json.loads(md.with_suffix(".json").read_text())
    rates, ratios = doc["tables"]
    variants = ["mdfio-posix", *(f"{who} qd={q}" for q in (1, 4) for who in ("mdfio-s3", "bare loop"))]
    assert [r["variant"] for r in rates["rows"]] == variants
    phases = ("precreate", "benchmark", "cleanup")
    assert all(is_spread(r[ph]) and r[ph]["min"] > 0 for r in rates["rows"] for ph in phases)
    of = {**{f"mdfio-s3 ÷ bare loop, qd={q}": (f"mdfio-s3 qd={q}", f"bare loop qd={q}") for q in (1, 4)},
          **{f"mdfio-posix ÷ mdfio-s3 qd={q}": ("mdfio-posix", f"mdfio-s3 qd={q}") for q in (1, 4)}}
    assert [r["ratio"] for r in ratios["rows"]] == list(of)
    # one round: each ratio is of the objects/s above it
    rate = {r["variant"]: r for r in rates["rows"]}
    for r in ratios["rows"]:
        a, b = of[r["ratio"]]
        for ph in phases:
            assert r[ph]["values"] == pytest.approx([rate[a][ph]["median"] / rate[b][ph]["median"]], rel=1e-9)
    assert "Reproduce: `bench/run --only s3 --rounds 1 --quick`" in md.read_text()


@pytest.mark.skipif(bool(os.environ.get("MDFIO_PRELOAD")),
                    reason="benchmarks measure the normal build; a sanitized one means nothing")
def test_postmark_section_compares_postmark_and_mdfio_on_tmpfs_and_ext4(tmp_path):
    """The postmark section: a row per file system, each rate a ratio
    over the rounds run, and the command that makes the file again."""
    need_root("bench/run mounts tmpfs and ext4")
    if not shutil.which("postmark"):
        pytest.skip("postmark not installed (./setup installs it)")
    env = dict(os.environ, MDFIO_BUILD=str(ENGINE_DIR.parent))
    out = tmp_path / "results"
    proc = subprocess.run([str(SOURCE_ROOT / "bench" / "run"), "--quick", "--only", "postmark", "--rounds", "2",
                           "--out", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    [md] = out.glob("????-??-??-postmark.md")
    table = rows(json.loads(md.with_suffix(".json").read_text()), "mdfio-postmark ÷ Debian's postmark")
    assert [r["file system"] for r in table] == ["tmpfs", "ext4"]
    assert all(is_spread(r[k]) and len(r[k]["values"]) == 2 for r in table for k in r if k != "file system")
    # pm_io=uring beside pm_io=sync in the same rounds, at each iodepth
    uring = rows(json.loads(md.with_suffix(".json").read_text()), "mdfio-postmark pm_io=uring ÷ pm_io=sync")
    assert [(r["file system"], r["uring iodepth"]) for r in uring] == \
        [(fs, q) for fs in ("tmpfs", "ext4") for q in (1, 4, 16)]
    assert all(is_spread(r[k]) and len(r[k]["values"]) == 2 for r in uring for k in r
               if k not in ("file system", "uring iodepth"))
    assert "Reproduce: `bench/run --only postmark --rounds 2 --quick`" in md.read_text()


@pytest.mark.skipif(bool(os.environ.get("MDFIO_PRELOAD")),
                    reason="benchmarks measure the normal build; a sanitized one means nothing")
def test_mdtest_calls_separates_the_causes_in_one_chain(tmp_path):
    """The mdtest-calls section against IOR's mdtest (MDFIO_MDTEST): a row
    per cause, each over the pairs run, and in each pair the causes'
    ratios multiply to mdfio-mdtest's over mdtest's; without the binary,
    one line says what is missing."""
    need_root("bench/run mounts a tmpfs")
    env = dict(os.environ, MDFIO_BUILD=str(ENGINE_DIR.parent))
    out = tmp_path / "results"
    cmd = [str(SOURCE_ROOT / "bench" / "run"), "--quick", "--only", "mdtest-calls", "--pairs", "2", "--fs", "tmpfs",
           "--workdir", str(tmp_path), "--out", str(out)]
    if not os.environ.get("MDFIO_MDTEST"):
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert "mdtest-calls: not measured (set MDFIO_MDTEST" in next(out.glob("*-mdtest-calls.md")).read_text()
        pytest.skip("MDFIO_MDTEST does not name IOR's mdtest (tests/fixtures/mdtest/README.md builds it)")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert mounts_under(tmp_path) == []
    [md] = out.glob("????-??-??-mdtest-calls.md")
    table = rows(json.loads(md.with_suffix(".json").read_text()), "What separates mdfio-mdtest")
    causes = ["mdtest before its closing barrier ÷ mdtest", "mdtest, MPI yielding when idle ÷ mdtest",
              "mdfio-mdtest whole paths + lseek ÷ mdtest before its barrier",
              "mdfio-mdtest whole paths ÷ whole paths + lseek", "mdfio-mdtest ÷ whole paths", "mdfio-mdtest ÷ mdtest",
              "both SCHED_FIFO: mdfio-mdtest whole paths + lseek ÷ mdtest before its barrier"]
    assert [(r["ranks"], r["ratio"]) for r in table] == [(n, c) for n in (1, 2) for c in causes]
    phases = [k for k in table[0] if k not in ("file system", "ranks", "ratio")]
    assert phases == ["Directory creation", "Directory stat", "Directory removal", "File creation", "File stat",
                      "File read", "File removal"]
    assert all(is_spread(r[ph]) and len(r[ph]["values"]) == 2 and r[ph]["min"] > 0
               for r in table for ph in phases)
    for rows_of_n in (table[:7], table[7:]):
        for ph in phases:
            for k in range(2):
                product = math.prod(rows_of_n[i][ph]["values"][k] for i in (0, 2, 3, 4))
                assert product == pytest.approx(rows_of_n[5][ph]["values"][k], rel=1e-9), ph
    assert "Reproduce: `MDFIO_MDTEST=PATH bench/run --only mdtest-calls --pairs 2 --quick`" in md.read_text()


@pytest.mark.parametrize("variant", ["whole-paths", "whole-paths-lseek"])
def test_mdtest_calls_variants_load_and_make_the_engines_tree(tmp_path, variant):
    """The bench's builds of mdfio-mdtest load in fio and make the same items
    as the engine: without IOR's mdtest the section never loads them, so
    a source the engine gained and they lacked went unseen."""
    built = {}
    for name, engine in (("engine", ENGINE_DIR / "mdfio-mdtest.so"),
                         (variant, ENGINE_DIR.parent / "bench" / f"mdfio-mdtest-{variant}.so")):
        root = tmp_path / name / "mdtest"
        root.mkdir(parents=True)
        text = mdfio.fio.jobfile(("tree_create", "dir_create", "file_create"), root, engine, numjobs=2, bs=1,
                                 items=6, branching_factor=2, depth=1, write_bytes=10)
        # under the sanitizers' build, with their runtime preloaded
        run = mdfio.fio.run(tmp_path / name / "m.fio", text, env=fio_env(), timeout=120)
        assert run.rc == 0, run.stderr
        built[name] = sorted((str(p.relative_to(root)), p.is_dir(), p.is_file() and p.stat().st_size)
                             for p in root.rglob("*"))
    assert built[variant] == built["engine"] and len(built["engine"]) > 12
