"""mdfio-tree over several hosts: two fio servers, each in a UTS namespace
of its own on its own loopback address (mdfio.hosts), sharing one
directory as the hosts of a run share their file system; and the shipped
jobfile under mpirun, a fio per process. Rank 0 copies, searches and
deletes; the reads and the rewrite split the files over the ranks of both
hosts or processes. What the run does (the files read and rewritten, the
counts of every phase, the tree it leaves) is what one fio of the same
ranks does, and mdfio-report reads the client's JSON, or the processes',
as it reads that fio's."""
import json
import os
import re
import subprocess
import sys

import pytest

from conftest import (MPI_ENV, MPIRUN, SANITIZER_REPORT, SOURCE_ROOT, engine_path, fio_client, fio_env,
                      need_mpirun, run_fio)

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
DESC = re.compile(r"mdfio rank=(\d+) ranks=(\d+) host=(\S+); tree (\w+)")
TIMEOUT = 120       # s, any one fio or fio client
READERS = 2         # per host
VALUE = 1000        # bytes of the rewrite's value
# (phase, numjobs per host, options), in the study's order
STUDY = [("copy", 1, {}), ("find", 1, {"find_iname": "*a*:*e*"}), ("read", READERS, {}),
         ("rewrite", READERS, {"rewrite_size": VALUE}), ("read", READERS, {})]


def make_source(src):
    """Directories of files of several sizes, and a symlink."""
    for d in range(3):
        (src / f"dir{d}" / "sub").mkdir(parents=True)
        for f in range(7):
            (src / f"dir{d}" / f"file-{f}.txt").write_bytes(os.urandom(50 * (f + 1)))
        (src / f"dir{d}" / "sub" / "Makefile").write_bytes(b"all:\n")
    os.symlink("dir0/file-1.txt", src / "link")
    return src


def jobtext(root, src, sections, hosts=None, scale=1):
    """One stonewalled section per phase; numjobs scaled by scale (one fio
    standing in for the hosts)."""
    lines = ["[global]", f"ioengine=external:{engine_path('tree')}", f"directory={root}", "join_timeout=10"]
    lines += [f"hosts={','.join(hosts)}"] if hosts else []
    for i, (phase, per_host, opts) in enumerate(sections):
        lines += ["", f"[{phase}-{i}]", "stonewall", f"phase={phase}",
                  f"numjobs={per_host * scale if per_host > 1 else 1}"]
        lines += [f"tree_source={src}"] if phase == "copy" else []
        lines += [f"{k}={v}" for k, v in opts.items()]
    return "\n".join(lines) + "\n"


def report(*paths):
    """mdfio-report's phases of a run, without what timing makes differ:
    each phase's counts, bytes and errors, and each operation's count."""
    proc = subprocess.run([sys.executable, str(REPORT), "--json", *map(str, paths)], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [(p["section"], p["names"], p["bytes"], p["matched"], p["errors"], p["status"],
             [(o["name"], o["count"], o["errors"]) for o in p["ops"]])
            for p in json.loads(proc.stdout)["phases"]]


def files_of(tree):
    return {os.path.relpath(os.path.join(d, f), tree): os.path.join(d, f)
            for d, _, fs in os.walk(tree) for f in fs if not os.path.islink(os.path.join(d, f))}


def test_ranks_over_two_hosts_do_what_one_fio_does(servers, tmp_path):
    src = make_source(tmp_path / "src")
    files = files_of(src)
    one, over = tmp_path / "one", tmp_path / "over"
    for d in (one, over):
        d.mkdir()
        (d / "notes.txt").write_text("the user's\n")
    one_run = tmp_path / "one-fio"
    one_run.mkdir()
    run_fio(jobtext(one, src, STUDY, scale=2), one_run, check=True, timeout=TIMEOUT)

    hosts = servers(2)
    names = [h.name for h in hosts]
    run = fio_client(hosts, jobtext(over, src, STUDY, hosts=names), tmp_path, check=True, timeout=TIMEOUT)
    for i, (phase, per_host, _) in enumerate(STUDY):
        ranks = 2 * per_host
        seen = {}
        for j in run.jobs(f"{phase}-{i}"):
            m = DESC.fullmatch(j["desc"])
            assert m and int(m[2]) == ranks and m[4] == phase and j["error"] == 0, j["desc"]
            seen[int(m[1])] = (m[3], j)
        # host i takes ranks i*numjobs onwards
        assert {r: h for r, (h, _) in seen.items()} == {r: names[r // per_host] for r in range(ranks)}
        if phase == "read":
            # every rank of both hosts read its share, and together all
            reads = [j["read"]["total_ios"] for _, j in seen.values()]
            assert all(reads) and sum(reads) == len(files), reads
            assert sum(j["read"]["io_bytes"] for _, j in seen.values()) == \
                (sum(os.path.getsize(p) for p in files.values()) if i == 2 else VALUE * len(files))
        if ranks > 1 and phase in ("copy", "find"):
            # rank 0 alone works; the other host's rank only meets it
            assert seen[1][1]["write" if phase == "copy" else "read"]["total_ios"] == 0

    # the tree each run made is the source's, each file holding the value
    for d in (one, over):
        assert sorted(p.name for p in d.iterdir()) == ["mdfio.tree", "notes.txt", "tree"]
        assert sorted(files_of(d / "tree")) == sorted(files)
        assert {open(p, "rb").read() for p in files_of(d / "tree").values()} == \
            {open(p, "rb").read() for p in files_of(one / "tree").values()}
        assert os.readlink(d / "tree" / "link") == "dir0/file-1.txt"
    assert report(tmp_path / "client-0.json") == report(one_run / "job-0.json")

    # the text report over the client's JSON: a line per phase, all ranks
    proc = subprocess.run([sys.executable, str(REPORT), str(tmp_path / "client-0.json")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    lines = {line.split()[0]: line.split() for line in proc.stdout.splitlines() if line.split()}
    assert [lines[f"{p}-{i}"][1] for i, (p, per_host, _) in enumerate(STUDY)] == \
        [str(2 * per_host) for _, per_host, _ in STUDY]

    delete = [("delete", 1, {})]
    run_fio(jobtext(one, src, delete), one_run, check=True, timeout=TIMEOUT)
    fio_client(hosts, jobtext(over, src, delete, hosts=names), tmp_path, check=True, timeout=TIMEOUT)
    for d in (one, over):
        assert sorted(p.name for p in d.iterdir()) == ["notes.txt"]
    assert report(tmp_path / "client-1.json") == report(one_run / "job-1.json")


JOBFILE = SOURCE_ROOT / "jobfiles" / "tree-study.fio"
NP = 2              # fio processes under mpirun
MPI_READERS = 12    # readers per process, in place of the jobfile's 100
MPI_FILES = 18      # more than one process's readers, fewer than all


def shipped(readers, rewriters=1):
    """jobfiles/tree-study.fio naming the build's engine, with readers in
    each read section and rewriters in the rewrite."""
    text = JOBFILE.read_text()
    for old, new in (("ioengine=external:./build/engines/mdfio-tree.so",
                      f"ioengine=external:{engine_path('tree')}"),
                     ("numjobs=100", f"numjobs={readers}"),
                     ("phase=rewrite\n", f"phase=rewrite\nnumjobs={rewriters}\n")):
        assert old in text
        text = text.replace(old, new)
    return text


@pytest.mark.parametrize("launcher", ["mpirun", "srun"])
def test_the_shipped_jobfile_under_a_launcher_does_what_one_fio_does(request, tmp_path, launcher):
    """mpirun -np 2 fio (srun -n 2 fio) on jobfiles/tree-study.fio: the fio
    of process p runs ranks p*numjobs onwards (OMPI_COMM_WORLD_RANK,
    SLURM_PROCID), the reads and the rewrite split the files over the
    ranks of both, ranks past the files take part with no share, and the
    tree, its contents and mdfio-report over both processes' JSON are one
    fio's of the same ranks."""
    if launcher == "mpirun":
        need_mpirun()
    else:
        slurm = request.getfixturevalue("slurm")
    src = tmp_path / "src"
    for d in range(3):
        (src / f"dir{d}").mkdir(parents=True)
        for f in range(MPI_FILES // 3):
            (src / f"dir{d}" / f"file-{f}.txt").write_bytes(os.urandom(30 * (f + 1)))
    files = files_of(src)
    one, over = tmp_path / "one", tmp_path / "over"
    # every section but the delete, which the trees are compared before
    kept = [f"--section={s}" for s in ("copy", "find-cold", "find-warm", "read-cold", "read-warm", "rewrite")]
    for d in (one, over):
        d.mkdir()
        (d / "notes.txt").write_text("the user's\n")
    one_run = tmp_path / "one-fio"
    one_run.mkdir()
    env = {"TREE_SOURCE": str(src), "TREE_DROP_CACHES": "0"}
    run_fio(shipped(NP * MPI_READERS, NP), one_run, env={**env, "TREE_ROOT": str(one)}, check=True,
            args=["--output-format=json+", *kept], timeout=TIMEOUT)

    jobfile = tmp_path / "tree-study.fio"
    jobfile.write_text(shipped(MPI_READERS))

    def launch(out, *args):
        """fio under the launcher, one per process, each its own JSON; the
        sanitizers' runtime (build-asan) goes to fio alone."""
        task_env = fio_env({**MPI_ENV, **env, "TREE_ROOT": str(over)})
        task_env["MDFIO_TASK_PRELOAD"] = task_env.pop("LD_PRELOAD", "")
        if launcher == "mpirun":
            cmd, rank = [*MPIRUN, "--bind-to", "none", "-np", str(NP)], "OMPI_COMM_WORLD_RANK"
        else:
            cmd, rank = ["srun", "-n", str(NP), "--overcommit", "--mpi=none"], "SLURM_PROCID"
            task_env = slurm.client_env(task_env)
        fio = (f'LD_PRELOAD="$MDFIO_TASK_PRELOAD" exec fio --output-format=json+ '
               f'--output="{out}.${rank}.json" {" ".join(args)} "{jobfile}"')
        proc = subprocess.run([*cmd, "sh", "-c", fio], capture_output=True, text=True, timeout=TIMEOUT,
                              env=task_env, cwd=tmp_path, stdin=subprocess.DEVNULL)
        assert not SANITIZER_REPORT.search(proc.stdout + proc.stderr), proc.stderr
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return [tmp_path / f"{out}.{p}.json" for p in range(NP)]

    outputs = launch(tmp_path / "study", *kept)
    by = {}
    for p, path in enumerate(outputs):
        for j in mdfio_jobs(path):
            m = DESC.fullmatch(j["desc"])
            assert m and j["error"] == 0, j["desc"]
            per_process = MPI_READERS if m[4] == "read" else 1
            # process p runs ranks p*numjobs onwards
            assert int(m[2]) == NP * per_process and \
                p * per_process <= int(m[1]) < (p + 1) * per_process, (path, j["desc"])
            by.setdefault(j["jobname"], {})[int(m[1])] = j
    assert {s: len(r) for s, r in by.items()} == {"copy": NP, "find-cold": NP, "find-warm": NP,
                                                  "read-cold": NP * MPI_READERS,
                                                  "read-warm": NP * MPI_READERS, "rewrite": NP}
    for section in ("read-cold", "read-warm", "rewrite"):
        slot = "write" if section == "rewrite" else "read"
        units = [by[section][r][slot]["total_ios"] for r in sorted(by[section])]
        ranks = len(units)
        # file k to rank k mod N: both processes work, and of the reads
        # the ranks past the files have no share
        assert units == [len(range(r, MPI_FILES, ranks)) for r in range(ranks)], (section, units)
        assert sum(units[:ranks // NP]) and sum(units[ranks // NP:]) and sum(units) == len(files)
        assert section == "rewrite" or 0 in units
        assert all(j[slot]["slat_ns"]["N"] == 1 for j in by[section].values())
    for section, slot in (("copy", "write"), ("find-cold", "read"), ("find-warm", "read")):
        assert by[section][1][slot]["total_ios"] == 0 and by[section][0][slot]["total_ios"] > 0

    for d in (one, over):
        assert sorted(p.name for p in d.iterdir()) == ["mdfio.tree", "notes.txt", "tree"]
        assert sorted(files_of(d / "tree")) == sorted(files)
    contents = {r: open(p, "rb").read() for r, p in files_of(one / "tree").items()}
    assert {r: open(p, "rb").read() for r, p in files_of(over / "tree").items()} == contents
    assert len(set(contents.values())) == 1 and len(contents.popitem()[1]) == 6144
    assert report(*outputs) == report(one_run / "job-0.json")

    run_fio(shipped(NP * MPI_READERS, NP), one_run, env={**env, "TREE_ROOT": str(one)}, check=True,
            args=["--output-format=json+", "--section=delete"], timeout=TIMEOUT)
    outputs = launch(tmp_path / "delete", "--section=delete")
    for d in (one, over):
        assert sorted(p.name for p in d.iterdir()) == ["notes.txt"]
    assert report(*outputs) == report(one_run / "job-1.json")


def mdfio_jobs(path):
    """The jobs of a fio JSON output (its last document)."""
    text = path.read_text()
    return json.loads(text[text.index("{"):])["jobs"]
