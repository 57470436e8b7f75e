"""One mdfio-mdtest run over two hosts: fio servers, each in a UTS namespace
of its own on its own loopback address, their ranks numbered as
md-workbench's (hosts=, numjobs per host), under strace. The namespace its
create phases leave, each process's operations per phase and each rank's
counts equal those of one fio of all ranks; mdfio-report prints mdtest's
SUMMARY over every rank from the client's JSON. The same with
collective_creates=1 (mdtest -c), where rank 0 on the first host makes and
removes every rank's items and the ranks of both hosts meet inside the
file create phase."""
import contextlib
import json
import re
import shutil
import subprocess
import sys

import pytest

import mdfio.fio
import mdfio.hosts
from conftest import MDTEST_NUMBER as NUMBER, MDTEST_ORDER as ORDER, MDTEST_SLOT as SLOT, \
    MDTEST_TITLES as TITLES, SOURCE_ROOT, client_env, fio_client, fio_env, job, run_fio

FIXTURES = SOURCE_ROOT / "tests" / "fixtures" / "mdtest"
sys.path.insert(0, str(FIXTURES))
import trace  # noqa: E402

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
CREATES = ["tree_create", "dir_create", "file_create"]
REST = ["dir_stat", "dir_rename", "dir_remove", "file_stat", "file_read", "file_remove", "tree_remove"]
DESC = re.compile(r"mdfio rank=(\d+) ranks=(\d+) host=(\S+); .+")
# -n 6 -b 2 -z 1 -N 1 -w 3 -e 3: a shared tree of 3 directories, made by
# rank 0 alone; each rank stats, reads and removes the items of the next
# rank, which for ranks 1 and 3 is on the other host
OPTS = dict(items="6", branching_factor="2", depth="1", stride="1", write_bytes="3", read_bytes="3",
            join_timeout="30")
# -c: rank 0, on the first host, makes and removes every rank's items; in
# the file create every rank, on either host, waits for it at the phase's
# barrier and then opens its own files
COLLECTIVE = dict(items="6", branching_factor="2", depth="1", collective_creates="1", write_bytes="2",
                  read_bytes="2", join_timeout="30")
TIMEOUT = 120


def traced_fio(tmp_path, log):
    """A fio that a server runs under strace -ff (its log: log.<pid>)."""
    wrapper = tmp_path / "fio-traced"
    wrapper.write_text(f'#!/bin/sh\nexec strace -ff -y -qq -e trace={trace.SYSCALLS} -o "{log}" fio "$@"\n')
    wrapper.chmod(0o755)
    return str(wrapper)


def rank_counts(jobs):
    """{(phase, rank): (operations, failed, latency samples, phase time samples)}"""
    out = {}
    for j in jobs:
        s = j[SLOT[j["job options"]["phase"]]]
        rank = int(DESC.fullmatch(j["desc"])[1])
        out[(j["job options"]["phase"], rank)] = (s["total_ios"], s["drop_ios"], s["clat_ns"]["N"],
                                                  s["slat_ns"]["N"])
    return out


def need_unshare_and_strace():
    why = mdfio.hosts.need_unshare() or (None if shutil.which("strace") else "strace not found")
    if why:
        pytest.skip(why)


def one_fio(tmp_path, opts):
    """One fio of the four ranks, as test_mdtest.py runs a case: the tree
    its creates leave, each process's operations per phase, each rank's
    counts."""
    one, log = tmp_path / "one", tmp_path / "one-trace" / "t"
    one.mkdir()
    log.parent.mkdir()
    prefix = ["strace", "-ff", "-y", "-qq", "-e", f"trace={trace.SYSCALLS}", "-o", str(log)]
    created = run_fio(job(CREATES, one, engine="mdtest", numjobs=4, **opts), tmp_path, prefix=prefix, check=True)
    tree = trace.tree(one)
    rest = run_fio(job(REST, one, engine="mdtest", numjobs=4, **opts), tmp_path, prefix=prefix, check=True)
    return tree, trace.phases(log, str(one)), rank_counts(created.jobs() + rest.jobs())


def two_hosts(hosts, tmp_path, root, opts):
    """The same ranks over the two hosts, two each: the tree the creates
    leave, and the ranks' jobs (the clients' JSON is client-<n>.json)."""
    names = ",".join(s.name for s in hosts)
    fio_client(hosts, job(CREATES, root, engine="mdtest", numjobs=2, hosts=names, **opts), tmp_path,
               check=True, timeout=TIMEOUT)
    tree = trace.tree(root)
    fio_client(hosts, job(REST, root, engine="mdtest", numjobs=2, hosts=names, **opts), tmp_path,
               check=True, timeout=TIMEOUT)
    assert list(root.iterdir()) == []
    jobs = [j for n in (0, 1) for j in client_jobs(tmp_path / f"client-{n}.json")]
    for j in jobs:
        m = DESC.fullmatch(j["desc"])
        assert int(m[2]) == 4 and m[3] == hosts[int(m[1]) // 2].name and j["error"] == 0, j["desc"]
    return tree, jobs


@contextlib.contextmanager
def traced_servers(tmp_path):
    """Two fio servers whose every process strace follows into one log:
    (the servers, the run's empty root, the log's path prefix)."""
    root, log = tmp_path / "hosts", tmp_path / "hosts-trace" / "t"
    root.mkdir()
    log.parent.mkdir()
    with mdfio.hosts.fio_servers(2, tmp_path, fio=traced_fio(tmp_path, log), env=fio_env()) as hosts:
        yield hosts, root, log


def test_one_mdtest_run_over_two_hosts(tmp_path):
    need_unshare_and_strace()
    one_tree, one_ops, one_counts = one_fio(tmp_path, OPTS)
    with traced_servers(tmp_path) as (hosts, root, log):
        names = ",".join(s.name for s in hosts)
        tree, jobs = two_hosts(hosts, tmp_path, root, OPTS)
        assert tree == one_tree
        assert trace.phases(log, str(root)) == one_ops
        assert rank_counts(jobs) == one_counts

        # all phases in one run, as mdtest runs them: mdtest's SUMMARY over
        # every rank from the client's JSON alone
        listing = tmp_path / "hosts.list"
        listing.write_text("".join(f"ip:{s.address},{s.port}\n" for s in hosts))
        run = mdfio.fio.run(tmp_path / "whole.fio", job(ORDER, root, engine="mdtest", numjobs=2, hosts=names, **OPTS),
                            output_format="json+", args=[f"--client={listing}"], env=client_env(), timeout=TIMEOUT)
        assert run.rc == 0, run.stderr
    assert list(root.iterdir()) == []
    proc = subprocess.run([str(REPORT), str(tmp_path / "whole.json")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "SUMMARY rate (in ops/sec): (of 1 iterations)"
    jobs = client_jobs(tmp_path / "whole.json")
    assert len(jobs) == 4 * len(ORDER)
    for line in lines[3:13]:
        title = line[3:].split("  ")[0]
        values = NUMBER.findall(line)
        phase = next(p for p, t in TITLES.items() if t == title)
        rate = expected_rate([j for j in jobs if j["job options"]["phase"] == phase], phase)
        assert values == [f"{rate:.3f}"] * 3 + ["0.000"], title
    n = {line[3:].split("  ")[0]: line[21:].split() for line in lines[lines.index("") + 3:]
         if line.startswith("   ")}
    # 6 items per rank in each item phase; rank 0's tree of 3 directories;
    # json+: every percentile
    assert {t: int(v[0]) for t, v in n.items()} == {t: 3 if t.startswith("Tree") else 24 for t in TITLES.values()}
    assert all("-" not in v for v in n.values()), proc.stdout


def client_jobs(path):
    """The ranks' jobs of a fio client's JSON (after the servers' messages)."""
    text = path.read_text()
    doc = json.loads(text[text.find("\n{") + 1:] if not text.startswith("{") else text)
    return [j for j in doc["client_stats"] if j["jobname"] != "All clients"]


def expected_rate(jobs, phase):
    """mdtest's rate of one phase (as test_mdtest_report.py recomputes it):
    least items/time over the ranks times the ranks; a tree's, rank 0's
    directories over the longest time."""
    slot = SLOT[phase]
    rank = {int(DESC.fullmatch(j["desc"])[1]): j for j in jobs}
    times = {r: j[slot]["slat_ns"]["max"] / 1e9 for r, j in rank.items() if j[slot]["slat_ns"]["N"]}
    if phase.startswith("tree"):
        return rank[0][slot]["total_ios"] / max(times.values())
    return min(rank[r][slot]["total_ios"] / t for r, t in times.items()) * len(rank)


def test_collective_creates_over_two_hosts(tmp_path):
    need_unshare_and_strace()
    one_tree, one_ops, one_counts = one_fio(tmp_path, COLLECTIVE)
    with traced_servers(tmp_path) as (hosts, root, log):
        tree, jobs = two_hosts(hosts, tmp_path, root, COLLECTIVE)
        ops = trace.phases(log, str(root))
    assert tree == one_tree
    assert ops == one_ops
    counts = rank_counts(jobs)
    assert counts == one_counts
    # rank 0 made and removed all 4 ranks' 6 directories and 6 files, one
    # process of the first host; every rank opened its own 6 files
    for phase in ("dir_create", "dir_remove", "file_remove"):
        assert [n for n, *_ in (counts[(phase, r)] for r in range(4))] == [24, 0, 0, 0], phase
        assert len(ops[phase]) == 1 and {p.split("/")[-1].split(".")[2] for _, p in ops[phase][0]} == \
            {"0", "1", "2", "3"}, phase
    assert [counts[("file_create", r)][0] for r in range(4)] == [30, 6, 6, 6]
    made = [op for lst in ops["file_create"] for op in lst if op[0] == "create"]
    assert len(made) == 24 and made == [op for op in max(ops["file_create"], key=len) if op[0] == "create"]
    assert sorted(len(lst) for lst in ops["file_create"]) == [6, 6, 6, 30]
    # mdfio-report: mdtest's SUMMARY of each run from its client's JSON, the
    # rows of the phases it ran not 0
    for n, ran in ((0, CREATES), (1, REST)):
        proc = subprocess.run([str(REPORT), str(tmp_path / f"client-{n}.json")], capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == 0, proc.stderr
        lines = proc.stdout.splitlines()
        assert lines[0] == "SUMMARY rate (in ops/sec): (of 1 iterations)"
        rows = {line[3:].split("  ")[0]: NUMBER.findall(line) for line in lines[3:13]}
        assert list(rows) == list(TITLES.values())[:8] + ["Tree creation", "Tree removal"], proc.stdout
        assert {t for t, v in rows.items() if len(v) == 4 and v[0] != "0.000"} == {TITLES[p] for p in ran}, \
            proc.stdout


def test_a_refusal_on_a_server_reaches_the_client(servers, tmp_path):
    """A job the engine refuses on a fio server says why at the client, as
    fio's own messages do: the line is not left on the server's stderr."""
    (host,) = servers(1)
    root = tmp_path / "root"
    root.mkdir()
    run = fio_client([host], job(["file_create"], root, engine="mdtest", items="abc"), tmp_path, check=False,
                     timeout=TIMEOUT)
    assert "mdfio: items=abc: expected" in run.messages, run.messages
