"""mdfio-mdtest against IOR's mdtest: for each case of
tests/fixtures/mdtest/cases.json, the namespace its create phases leave and
each phase's operations per process, in order, as strace sees them, equal
what the real mdtest did with the same options (recorded by
tests/fixtures/mdtest/record.py, README.md there); then its counts in
fio's JSON, and its refusals of bad input in one line."""
import json
import shutil
import subprocess
import sys

import pytest

from conftest import MDTEST_ORDER as ORDER, MDTEST_SLOT, MPI_ENV, MPIRUN, SOURCE_ROOT, engine_path, fio_env, job, \
    need_mpirun, run_fio

FIXTURES = SOURCE_ROOT / "tests" / "fixtures" / "mdtest"
sys.path.insert(0, str(FIXTURES))
import trace  # noqa: E402

CASES = json.loads((FIXTURES / "cases.json").read_text())
CREATES = ("tree_create", "dir_create", "file_create")
REST = ("dir_stat", "dir_rename", "dir_remove", "file_stat", "file_read", "file_remove", "tree_remove")


def sections(case, names):
    """The case's phases among names, in mdtest's order (-F leaves out the
    directories' phases; the rename phase is mdtest's -U)."""
    return [p for p in ORDER if p in names and not (case.get("files_only") and p.startswith("dir_"))
            and (p != "dir_rename" or "-U" in case["args"])]


def mdtest_job(case, root, phases, **extra):
    return job(phases, root, engine="mdtest", numjobs=case["ranks"], **case["mdfio"], **extra)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_names_tree_and_order_are_mdtests(case, tmp_path):
    if not shutil.which("strace"):
        pytest.skip("strace not found: it records the operations compared")
    root = tmp_path / "out"
    root.mkdir()
    log = tmp_path / "strace"
    prefix = ["strace", "-ff", "-y", "-qq", "-e", f"trace={trace.SYSCALLS}", "-o", str(log)]
    run_fio(mdtest_job(case, root, sections(case, CREATES)), tmp_path, prefix=prefix, check=True)
    want = (FIXTURES / "tree" / case["name"]).read_text().split()
    assert trace.tree(root) == want
    run_fio(mdtest_job(case, root, sections(case, REST)), tmp_path, prefix=prefix, check=True)
    assert list(root.iterdir()) == []
    want = json.loads((FIXTURES / "phases" / f"{case['name']}.json").read_text())
    got = trace.phases(log, str(root))
    for phase in ORDER:
        assert got.get(phase) == want.get(phase), phase


def test_counts_and_phase_times_in_fios_json(tmp_path):
    """2 ranks, -n 10 -b 2 -z 2: 7 directories of one item each per rank."""
    root = tmp_path / "out"
    root.mkdir()
    case = CASES[0]
    run = run_fio(mdtest_job(case, root, list(ORDER)), tmp_path, check=True)
    for phase in ORDER:
        jobs = [j for j in run.jobs() if j["job options"]["phase"] == phase]
        assert len(jobs) == 2
        for j in jobs:
            rank = int(j["desc"].split("rank=")[1].split()[0])
            n = 7 if not phase.startswith("tree") or rank == 0 else 0
            s = j[MDTEST_SLOT[phase]]
            assert (s["total_ios"], s["clat_ns"]["N"], s["drop_ios"]) == (n, n, 0), (phase, rank)
            # the rank's exact phase time: one sample, at least its
            # operations' time
            assert s["slat_ns"]["N"] == (1 if n else 0)
            if n:
                assert s["slat_ns"]["min"] >= s["clat_ns"]["min"] * n
            assert j["error"] == 0
    assert list(root.iterdir()) == []


def test_a_failed_operation_is_counted_and_fails_the_job(tmp_path):
    root = tmp_path / "out"
    root.mkdir()
    case = CASES[4]     # -n 6 -I 3: two test directories
    run_fio(mdtest_job(case, root, ["tree_create", "file_create"]), tmp_path, check=True)
    (root / "test-dir.0-1" / "mdtest_tree.0" / "file.mdtest.1.2").unlink()
    run = run_fio(mdtest_job(case, root, ["file_stat"]), tmp_path, check=False)
    assert run.rc != 0
    stat = [j["read"] for j in run.jobs()]
    assert sorted((s["total_ios"], s["drop_ios"]) for s in stat) == [(6, 0), (6, 1)]
    assert "file_stat: 1 errors (first: " in run.stderr
    assert "file.mdtest.1.2: No such file or directory" in run.stderr


def test_tree_create_never_runs_over_an_existing_test_dir(tmp_path):
    root = tmp_path / "out"
    (root / "test-dir.0-0").mkdir(parents=True)
    (root / "test-dir.0-0" / "mine").write_text("keep")
    run = run_fio(mdtest_job(CASES[0], root, ["tree_create"]), tmp_path, check=False)
    assert run.rc != 0
    assert f"{root}/test-dir.0-0 already exists: refusing to run mdtest's tree_create over it (nothing was touched)" \
        in run.stderr
    assert sorted(p.name for p in root.rglob("*")) == ["mine", "test-dir.0-0"]


@pytest.mark.parametrize("opts, line", [
    ({"items": "ten"}, "items=ten: expected an integer from 0 to 1099511627776"),
    ({"items": "0"}, "items= (mdtest -n) or items_per_dir= (-I) is required"),
    ({"items": "7", "items_per_dir": "2"}, "items=7 is not a multiple of items_per_dir=2"),
    ({"items": "4", "items_per_dir": "2", "unique_dir": "1"},
     "items=4 and items_per_dir=2 with unique_dir=1: give one of them"),
    ({"items": "3", "branching_factor": "2", "depth": "2"},
     "items=3 is fewer than the 7 directories of the tree"),
    ({"items": "4", "unique_dir": "2"}, "unique_dir=2: expected an integer from 0 to 1"),
    ({"items": "4", "branching_factor": "0"}, "branching_factor=0: expected an integer from 1 to"),
    ({"items": "4", "leaf_only": "yes"}, "leaf_only=yes: expected an integer from 0 to 1"),
    ({"items": "4", "sync_file": "2"}, "sync_file=2: expected an integer from 0 to 1"),
    ({"items": "4", "shared_file": "1", "unique_dir": "1"},
     "shared_file=1 with unique_dir=1: give one of them (mdtest: -u not compatible with -S)"),
    ({"items": "4", "shared_file": "1", "make_node": "1"},
     "shared_file=1 with make_node=1: every rank but the first would fail its mknod of a shared name"),
    ({"items": "4", "sync_after_phase": "yes"}, "sync_after_phase=yes: expected an integer from 0 to 1"),
    ({"items": "4", "collective_creates": "1", "shared_file": "1"},
     "collective_creates=1 with shared_file=1: not taken together (mdtest: -c not compatible with -S)"),
    ({"items": "4", "collective_creates": "1", "make_node": "1"},
     "collective_creates=1 with make_node=1: each rank would mknod a file rank 0 has made"),
    ({"items": "4", "random_seed": "-1"}, "random_seed=-1: expected an integer from 0 to 2147483647"),
    ({"items": "4", "make_node": "1", "write_bytes": "3"},
     "make_node=1 with write_bytes=3: a file mknod makes is not written (mdtest: -k not compatible with -w)"),
    ({"items": "2", "branching_factor": "3", "depth": "1", "leaf_only": "1"},
     "items=2 is fewer than the 3 deepest directories of the tree"),
])
def test_bad_options_are_refused_in_one_line(tmp_path, opts, line):
    root = tmp_path / "out"
    root.mkdir()
    run = run_fio(job(["tree_create"], root, engine="mdtest", **opts), tmp_path, check=False)
    assert run.rc != 0
    assert [m for m in run.stderr.splitlines() if m.startswith("mdfio:")][0].startswith(f"mdfio: {line}")
    assert list(root.iterdir()) == []


def test_shared_file_has_no_directory_phases(tmp_path):
    root = tmp_path / "out"
    root.mkdir()
    run = run_fio(job(["dir_create"], root, engine="mdtest", items="4", shared_file="1"), tmp_path, check=False)
    assert run.rc != 0
    assert "mdfio: phase=dir_create with shared_file=1: mdtest -S has files only, no directory phases" in run.stderr
    assert list(root.iterdir()) == []


def test_a_phase_without_its_tree_is_refused(tmp_path):
    root = tmp_path / "out"
    root.mkdir()
    run = run_fio(mdtest_job(CASES[0], root, ["file_stat"]), tmp_path, check=False)
    assert run.rc != 0
    assert f"mdfio: {root}/test-dir.0-0: missing: run phase=tree_create first" in run.stderr
    assert list(root.iterdir()) == []


def test_an_unknown_phase_is_refused(tmp_path):
    root = tmp_path / "out"
    root.mkdir()
    run = run_fio(job(["file_rename"], root, engine="mdtest", items="4"), tmp_path, check=False)
    assert run.rc != 0
    assert "mdfio: phase=file_rename: expected tree_create, dir_create" in run.stderr


def test_ranks_over_processes_under_mpirun(tmp_path):
    """mpirun -np 2 fio with numjobs=2: the fio of process p runs ranks
    2p and 2p+1 (OMPI_COMM_WORLD_RANK), each phase starts on all four at
    the rank file's barrier, and mdfio-report reads the run from both
    processes' JSON."""
    need_mpirun()
    root = tmp_path / "out"
    root.mkdir()
    text = job(["tree_create", "file_create"], root, engine="mdtest", numjobs=2, items="3",
               unique_dir="1", stride="1", join_timeout="30")
    jobfile = tmp_path / "mpi.fio"
    jobfile.write_text(text)
    cmd = [*MPIRUN, "--bind-to", "none", "-np", "2", "sh", "-c",
           f'exec fio --output-format=json --output="{tmp_path}/out.$OMPI_COMM_WORLD_RANK.json" "{jobfile}"']
    proc = subprocess.run(cmd, capture_output=True, text=True, env=fio_env(MPI_ENV), timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # rank r made its tree, and its files in rank r+1's (-u -N 1)
    assert trace.tree(root) == ["test-dir.0-0/"] + [
        p for r in range(4) for p in (f"test-dir.0-0/mdtest_tree.{r}.0/",
                                      *(f"test-dir.0-0/mdtest_tree.{r}.0/file.mdtest.{(r + 3) % 4}.{i}"
                                        for i in range(3)))]
    report = subprocess.run([str(SOURCE_ROOT / "tools" / "mdfio-report"), f"{tmp_path}/out.0.json",
                             f"{tmp_path}/out.1.json"], capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    assert "   File creation      " in report.stdout
    lat = [line for line in report.stdout.splitlines() if line.startswith("   File creation")][1]
    assert lat.split()[2] == "12"


def test_the_shipped_jobfile_runs_every_phase(tmp_path):
    root = tmp_path / "out"
    root.mkdir()
    env = {"MDT_N": "2", "MDT_ROOT": str(root), "MDT_ITEMS": "9", "MDT_B": "2", "MDT_Z": "1",
           "MDT_W": "7", "MDT_E": "7", "MDT_Y": "1", "MDT_SYNC": "1", "MDT_C": "1"}
    shipped = "ioengine=external:./build/engines/mdfio-mdtest.so"
    text = (SOURCE_ROOT / "jobfiles" / "mdtest.fio").read_text()
    assert shipped in text
    text = text.replace(shipped, f"ioengine=external:{engine_path('mdtest')}")
    run = run_fio(text, tmp_path, env=env, check=True)
    assert [j["jobname"] for j in run.jobs()][::2] == list(ORDER)
    assert all(j["error"] == 0 for j in run.jobs())
    assert list(root.iterdir()) == []
