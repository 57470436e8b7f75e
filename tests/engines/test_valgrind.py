"""Every engine the suite builds, run by real fio under valgrind's memcheck:
a tiny job of each engine and workload, each of which fails on any error
memcheck reports (an invalid read, write or free, a jump on or a system
call handed uninitialised bytes). build-asan's sanitizers see the engine's
own accesses; memcheck also sees the bytes it reads that nothing wrote and
what it hands the kernel. Leaks are not checked: fio leaks by design at
exit. Valgrind's start of Debian's fio (its 60-odd libraries) is most of a
case's time, so each case is one fio invocation, and the cases run two at
a time (a case waits on fio's sleeps as much as it computes)."""
import concurrent.futures
import contextlib
import os
import re
import shutil
import subprocess

import pytest

from conftest import MDTEST_ORDER, S3, SOURCE_ROOT, engine_path, io_uring_missing, job, mounted_tmpfs, run_fio
from test_postmark import job as postmark_job
from test_tree import make_source, tree_job

pytestmark = pytest.mark.skipif(bool(os.environ.get("MDFIO_PRELOAD")), reason=(
    "build-asan preloads ASan's runtime into fio, and valgrind cannot run a process ASan instruments (both "
    "replace malloc and reserve the same address space)"))

# a process's exit status when memcheck found an error in it
MEMCHECK_ERROR_EXIT = 97
# the lines of memcheck's reports that are errors
ERROR = re.compile(r"^==\d+== (Invalid (read|write|free)|.*uninitialised|Conditional jump|Syscall param|"
                   r"Mismatched free|Source and destination overlap|ERROR SUMMARY: [1-9])", re.M)
# errors in code fio runs that is not mdfio's, each entry saying whose
SUPPRESSIONS = SOURCE_ROOT / "tests" / "valgrind.supp"
# openat2 (mdfio-tree's every open beneath the copy) came in valgrind 3.21
OPENAT2 = (3, 21)


def valgrind_version():
    out = subprocess.run(["valgrind", "--version"], capture_output=True, text=True, check=True).stdout
    return tuple(int(n) for n in re.match(r"valgrind-(\d+)\.(\d+)", out).groups())


def memcheck(logs):
    """valgrind's command prefix: one log per process (fio forks a process
    per job), so that fio's stderr stays fio's."""
    return ["valgrind", "--tool=memcheck", "--trace-children=yes", f"--error-exitcode={MEMCHECK_ERROR_EXIT}",
            "--leak-check=no", "--vgdb=no", f"--suppressions={SUPPRESSIONS}", f"--log-file={logs}/memcheck.%p"]


def run_checked(text, work, env=None):
    """fio on text under memcheck in directory work: (its FioRun, memcheck's
    reports that hold an error)."""
    run = run_fio(text, work, env=env, prefix=memcheck(work), timeout=300)
    logs = sorted(work.glob("memcheck.*"))
    assert logs, f"valgrind wrote no log: {run.stderr}"
    return run, [log.read_text(errors="replace") for log in logs if ERROR.search(log.read_text(errors="replace"))]


# md-workbench's phases of each engine, the benchmark reading back what
# it wrote where the engine has the bytes to (verify_read=1)
MD_WORKBENCH = dict(numjobs=2, datasets=2, precreate_per_set=4, steps_per_set=3)
ENGINE_CASES = {
    "posix": dict(verify_read=1),
    "aio": dict(verify_read=1, iodepth=4),
    "uring-ring": dict(verify_read=1, iodepth=4, issue="ring"),
    "uring-syscall": dict(verify_read=1, iodepth=4, issue="syscall"),
    "null": dict(iodepth=4),
    "s3": dict(verify_read=1, iodepth=4),
}
CASES = [*ENGINE_CASES, "mdtest", "postmark", "postmark-uring", "tree-copy-find"]


def prepare(case, stack, work, request):
    """(jobtext, extra environment, the directory its run must leave
    empty) of a case, or the reason it cannot run here."""
    root = work / "root"
    root.mkdir()
    if case.startswith("uring") or case == "postmark-uring":
        if io_uring_missing():
            return f"needs io_uring: {io_uring_missing()}"
    if case == "s3":
        if not engine_path(S3).is_file():
            return "mdfio-s3 not built (meson builds it only where libcurl is)"
        try:
            srv = request.getfixturevalue("versitygw")
        except pytest.skip.Exception as e:
            return str(e)
        bucket = f"memcheck-{os.getpid()}"
        srv.make_bucket(bucket)
        return job(["precreate", "benchmark", "cleanup"], root, engine=S3, bucket=bucket, **MD_WORKBENCH,
                   **ENGINE_CASES[case]), srv.env(), root
    if case in ENGINE_CASES:
        fs = stack.enter_context(mounted_tmpfs())
        return job(["precreate", "benchmark", "cleanup"], fs, engine=case.split("-")[0], **MD_WORKBENCH,
                   **ENGINE_CASES[case]), None, fs
    if case == "mdtest":
        return job(MDTEST_ORDER, root, engine="mdtest", numjobs=2, items=4, branching_factor=2, depth=1,
                   write_bytes=5, read_bytes=5), None, root
    if case.startswith("postmark"):
        io = dict(pm_io="uring", iodepth=4) if case == "postmark-uring" else {}
        return postmark_job(root, pm_files=10, pm_transactions=30, **io), None, root
    src = make_source(work / "src")
    stack.callback(os.chmod, src / "ro", 0o755)
    # the copy's delete needs openat2: where valgrind has none, outside it
    stack.callback(run_fio, tree_job(root, [("delete", {})]), work / "delete", check=True)
    (work / "delete").mkdir()
    return tree_job(root, [("copy", {"tree_source": src}), ("find", {"drop_caches": 0}),
                           ("find", {"drop_caches": 0, "find_iname": "*a*:*e*"})]), None, None


@pytest.fixture(scope="module")
def memcheck_runs(tmp_path_factory, request):
    """{case: a future of run_checked's result, or why it cannot run}: the
    cases start at once, two at a time."""
    if not shutil.which("valgrind"):
        pytest.skip("valgrind not found (./setup installs it)")
    with contextlib.ExitStack() as stack:
        pool = stack.enter_context(concurrent.futures.ThreadPoolExecutor(2))
        runs = {}
        # the cases of the tests collected (-k), whose runs alone are started
        chosen = {item.callspec.params.get("case") for item in request.session.items
                  if item.module is request.module and hasattr(item, "callspec")}
        for case in [c for c in CASES if c in chosen]:
            work = tmp_path_factory.mktemp(case)
            prepared = prepare(case, stack, work, request)
            if isinstance(prepared, str):
                runs[case] = prepared
                continue
            text, env, root = prepared
            runs[case] = (pool.submit(run_checked, text, work, env), root)
        yield runs
        # every run has ended before the tmpfs are unmounted
        for r in runs.values():
            if not isinstance(r, str):
                concurrent.futures.wait([r[0]])


@pytest.mark.parametrize("case", CASES)
def test_memcheck_finds_no_error(case, memcheck_runs):
    if isinstance(memcheck_runs[case], str):
        pytest.skip(memcheck_runs[case])
    future, root = memcheck_runs[case]
    run, reports = future.result()
    assert not reports, f"memcheck's reports of {case}:\n" + "\n".join(reports)
    assert run.rc == 0, f"rc={run.rc}\n{run.stderr}"
    if root is not None:
        assert os.listdir(root) == []


@pytest.mark.skipif(valgrind_version() < OPENAT2 if shutil.which("valgrind") else False,
                    reason="valgrind before 3.21 has no openat2, with which mdfio-tree opens each name of its copy")
def test_memcheck_finds_no_error_in_tree_read_rewrite_delete(tmp_path):
    src = make_source(tmp_path / "src")
    dst = tmp_path / "dst"
    dst.mkdir()
    try:
        run_fio(tree_job(dst, [("copy", {"tree_source": src})]), tmp_path, check=True)
        run, reports = run_checked(tree_job(dst, [("read", {"numjobs": 2}), ("rewrite", {"rewrite_size": 100}),
                                                  ("delete", {})]), tmp_path)
    finally:
        os.chmod(src / "ro", 0o755)
    assert not reports, "memcheck's reports:\n" + "\n".join(reports)
    assert run.rc == 0, f"rc={run.rc}\n{run.stderr}"
    assert os.listdir(dst) == []
