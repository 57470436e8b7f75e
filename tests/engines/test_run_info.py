"""md-workbench's run-info file (run_info_file=, md-workbench's
--run-info-file): mdfio writes it after a precreate and a benchmark exactly
as md-workbench does, adopts a namespace md-workbench made from it, and
refuses a file that is not one, or one that disagrees with mdfio.status.

Everywhere: the files md-workbench wrote, recorded in
tests/fixtures/md-workbench/run-info (its README says how). Where
md-workbench can run (MDFIO_MD_WORKBENCH, with mpirun): the round trip
with the real program, both ways."""
import json
import os
import re
import shutil
from pathlib import Path

import pytest

from conftest import MDW_RANKS, edit_status, job, namespace, run_fio

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "md-workbench"
CASES = json.loads((FIXTURES / "cases.json").read_text())["run_info"]


def case_options(case, info, **extra):
    """mdfio's options for the parameters md-workbench recorded the case
    with (record.py: -S 100 -G=1)."""
    return dict(numjobs=case["ranks"], bs=100, datasets=case["datasets"],
                precreate_per_set=case["precreate"], steps_per_set=case["steps"], random_seed=1,
                **({"run_info_file": info} if info else {}), **extra)


def mdfio_phases(case):
    """The mdfio sections of the md-workbench phases of a case."""
    benchmarks = ["benchmark"] * case["iterations"] if "-2" in case["phases"] else []
    return ["precreate", *benchmarks]


def drop_status(root):
    """What md-workbench's own precreate leaves: the datasets and nothing of
    mdfio's (the fio that made them has ended)."""
    (root / "mdfio.status").unlink()
    (root / "mdfio.ranks").unlink(missing_ok=True)


def errors(run):
    return sum(j[d]["drop_ios"] for j in run.jobs() for d in ("read", "write", "trim"))


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_mdfio_writes_the_run_info_file_md_workbench_writes(tmpfs, tmp_path, case):
    info = tmp_path / "md-workbench.status"
    opts = case_options(case, info)
    if case["start_item"]:
        opts["start_index"] = case["start_item"]
    run_fio(job(mdfio_phases(case), tmpfs, **opts), tmp_path, check=True)
    assert info.read_bytes() == (FIXTURES / "run-info" / case["name"]).read_bytes()


@pytest.mark.parametrize("case", [c for c in CASES if not c["start_item"]],
                         ids=[c["name"] for c in CASES if not c["start_item"]])
def test_mdfio_adopts_the_namespace_of_a_recorded_run_info_file(tmpfs, tmp_path, case):
    """A namespace with md-workbench's objects at the recorded position and
    no mdfio.status: mdfio's benchmark (verify_read) and cleanup run on it
    from the recorded file, and leave the root empty."""
    info = tmp_path / "md-workbench.status"
    run_fio(job(mdfio_phases(case), tmpfs, **case_options(case, tmp_path / "mine")), tmp_path, check=True)
    drop_status(tmpfs)
    shutil.copyfile(FIXTURES / "run-info" / case["name"], info)
    run = run_fio(job(["benchmark", "cleanup"], tmpfs, verify_read=1, **case_options(case, info)), tmp_path,
                  check=True)
    assert errors(run) == 0
    assert os.listdir(tmpfs) == []
    # the benchmark stored its end; a cleanup stores nothing, as md-workbench's
    pos = int((FIXTURES / "run-info" / case["name"]).read_text().split()[1])
    assert info.read_text() == f"pos: {pos + case['steps']}\n"


def test_adopted_namespace_recovers_like_mdfio_own(tmpfs, tmp_path):
    """The status mdfio creates on adopting is a status like any: a
    benchmark killed on it leaves it marked, and a cleanup recovers it."""
    case = CASES[0]
    info = tmp_path / "info"
    run_fio(job(["precreate"], tmpfs, **case_options(case, info)), tmp_path, check=True)
    drop_status(tmpfs)
    run_fio(job(["benchmark"], tmpfs, **case_options(case, info)), tmp_path, check=True)
    text = (tmpfs / "mdfio.status").read_text()
    assert "ready 3 0" in text, text
    # a benchmark interrupted in the middle, as a kill leaves it
    edit_status(tmpfs, lambda t: t.replace("rank 1 ready 3 0", "rank 1 benchmarking 3 3"))
    run = run_fio(job(["benchmark"], tmpfs, **case_options(case, info)), tmp_path, check=False)
    assert run.rc != 0 and any("interrupted while benchmarking" in l for l in run.mdfio_lines()), run.stderr
    run = run_fio(job(["cleanup"], tmpfs, **case_options(case, info)), tmp_path, check=True)
    assert os.listdir(tmpfs) == []


def test_a_file_that_is_not_a_run_info_file_is_refused_and_kept(tmpfs, tmp_path):
    case = CASES[0]
    for what in ("text", "symlink", "directory", "trailing"):
        info = tmp_path / f"info-{what}"
        if what == "text":
            info.write_text("notes: keep me\n")
        elif what == "trailing":
            info.write_text("pos: 3\nmore\n")
        elif what == "symlink":
            (tmp_path / "target").write_text("pos: 0\n")
            info.symlink_to(tmp_path / "target")
        else:
            info.mkdir()
        before = info.read_text() if info.is_file() else None
        run = run_fio(job(["precreate"], tmpfs, **case_options(case, info)), tmp_path, check=False)
        lines = run.mdfio_lines()
        assert run.rc != 0 and len(lines) == 1, run.stderr
        assert f"run_info_file={info}: not an md-workbench run-info file" in lines[0], lines
        assert os.listdir(tmpfs) == [], what
        if before is not None:
            assert info.read_text() == before
        assert info.is_symlink() == (what == "symlink")


def test_run_info_file_and_status_that_disagree_are_refused(tmpfs, tmp_path):
    case = CASES[0]
    info = tmp_path / "info"
    run_fio(job(["precreate"], tmpfs, **case_options(case, info)), tmp_path, check=True)
    info.write_text("pos: 7\n")
    status = (tmpfs / "mdfio.status").read_text()
    before = namespace(tmpfs)
    for phase in ("benchmark", "cleanup"):
        run = run_fio(job([phase], tmpfs, **case_options(case, info)), tmp_path, check=False)
        lines = run.mdfio_lines()
        assert run.rc != 0 and len(lines) == 1, run.stderr
        assert lines[0] == (f"mdfio: run_info_file={info} holds pos: 7 but {tmpfs}/mdfio.status says 0: "
                            "which is right? (nothing was touched)"), lines
        assert (tmpfs / "mdfio.status").read_text() == status
        assert namespace(tmpfs) == before
        assert info.read_text() == "pos: 7\n"


def test_without_a_namespace_the_line_says_how_to_adopt_one(tmpfs, tmp_path):
    case = CASES[0]
    run = run_fio(job(["benchmark"], tmpfs, **case_options(case, None)), tmp_path, check=False)
    lines = run.mdfio_lines()
    assert run.rc != 0 and len(lines) == 1, run.stderr
    assert "no namespace here (no mdfio.status): run phase=precreate first, or give run_info_file=" in lines[0]
    info = tmp_path / "info"
    run = run_fio(job(["benchmark"], tmpfs, **case_options(case, info)), tmp_path, check=False)
    lines = run.mdfio_lines()
    assert run.rc != 0 and len(lines) == 1, run.stderr
    assert f"no mdfio.status, and run_info_file={info} does not exist" in lines[0], lines
    assert os.listdir(tmpfs) == [] and not info.exists()


def test_adopting_refuses_a_namespace_with_a_dataset_missing_or_replaced(tmpfs, tmp_path):
    case = CASES[0]
    info = tmp_path / "info"
    run_fio(job(["precreate"], tmpfs, **case_options(case, info)), tmp_path, check=True)
    drop_status(tmpfs)
    shutil.rmtree(tmpfs / "1_1")
    for what in ("missing", "symlink"):
        if what == "symlink":
            (tmp_path / "elsewhere").mkdir()
            (tmpfs / "1_1").symlink_to(tmp_path / "elsewhere")
        before = namespace(tmpfs)
        run = run_fio(job(["cleanup"], tmpfs, **case_options(case, info)), tmp_path, check=False)
        lines = run.mdfio_lines()
        assert run.rc != 0 and len(lines) == 1, run.stderr
        assert (f"run_info_file={info}: cannot adopt md-workbench's namespace: dataset {tmpfs}/1_1 "
                f"{'is missing' if what == 'missing' else 'is a symlink'} (nothing was touched)") in lines[0], lines
        assert namespace(tmpfs) == before and not (tmpfs / "mdfio.status").exists()


def test_read_only_benchmark_stores_the_same_position(tmpfs, tmp_path):
    case = CASES[0]
    info = tmp_path / "info"
    run_fio(job(["precreate", "benchmark"], tmpfs, **case_options(case, info)), tmp_path, check=True)
    assert info.read_text() == "pos: 3\n"
    info.unlink()      # md-workbench stores it after a read-only run too
    run_fio(job(["benchmark"], tmpfs, read_only=1, **case_options(case, info)), tmp_path, check=True)
    assert info.read_text() == "pos: 3\n"


# ------------------------------------------------------- the real program

N, D, P, I, S, SEED = MDW_RANKS, 2, 4, 3, 100, 5


@pytest.fixture
def md_workbench_ok(md_workbench):
    """md-workbench, whose every phase line must say (0 errs)."""
    def run(args, cwd):
        out = md_workbench(args, cwd)
        errs = re.findall(r"\((\d+) errs", out)
        assert errs and all(e == "0" for e in errs), out
        return out
    return run


def mdw_args(root, *phase):
    return ["-o", str(root), "-D", str(D), "-P", str(P), "-I", str(I), "-R", "1", "-S", str(S),
            f"-G={SEED}", *phase]


def opts(info, **extra):
    return dict(numjobs=N, bs=S, datasets=D, precreate_per_set=P, steps_per_set=I, random_seed=SEED,
                run_info_file=info, **extra)


def test_mdfio_runs_on_what_md_workbench_precreated(md_workbench_ok, tmpfs, tmp_path):
    """md-workbench -1 (its run-info file relative to its directory, by
    default); mdfio's benchmark (verify_read) and cleanup adopt it: no
    error, and nothing is left in the root."""
    root = tmpfs / "mdw"
    md_workbench_ok(mdw_args(root, "-1"), tmp_path)
    info = tmp_path / "md-workbench.status"
    assert info.read_text() == "pos: 0\n"
    run = run_fio(job(["benchmark", "cleanup"], root, verify_read=1, **opts(info)), tmp_path, check=True)
    assert errors(run) == 0
    assert os.listdir(root) == []
    assert info.read_text() == f"pos: {I}\n"


def test_md_workbench_runs_on_what_mdfio_precreated(md_workbench_ok, tmpfs, tmp_path):
    """mdfio's precreate and benchmark store the position; md-workbench's
    -2 -3 -X starts there, verifies every object and removes every
    dataset. The root keeps mdfio's status and rank file, which
    md-workbench does not know (so its rmdir of the root fails)."""
    root = tmpfs / "ns"
    root.mkdir()
    info = tmp_path / "info"
    run_fio(job(["precreate", "benchmark"], root, **opts(info)), tmp_path, check=True)
    assert info.read_text() == f"pos: {I}\n"
    out = md_workbench_ok(mdw_args(root, "-2", "-3", "-X", f"--run-info-file={info}"), tmp_path)
    m = re.search(r"^benchmark process .* objects:(\d+) ", out, re.M)
    assert m and int(m.group(1)) == N * D * I, out
    assert namespace(root) == {}
    assert sorted(os.listdir(root)) == ["mdfio.ranks", "mdfio.status"]
