"""mdfio-s3 over several hosts and processes, as the POSIX engines run
(test_run.py): fio servers, each in a UTS namespace of its own on its own
loopback address, and one fio per rank under mpirun, all against one
versitygw on 127.0.0.1. The coordination directory is shared as every
host of a run must share it: on one machine, the same path."""
import json
import re
import subprocess

import mdfio.fio
from conftest import (MPIRUN, MPI_ENV, SANITIZER_REPORT, SOURCE_ROOT, expected, fio_client, fio_env, job,
                      need_mpirun, run_fio, store_view)
from mdfio.fiojson import read_documents

D, P, I = 3, 8, 3
TIMEOUT = 300       # s, any one fio client or mpirun
REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
DESC = re.compile(r"mdfio rank=(\d+) ranks=(\d+) host=(\S+); .+")


def s3_job(phases, root, engine, clones, **opts):
    return job(phases, root, engine=engine, numjobs=clones, datasets=D, precreate_per_set=P, steps_per_set=I,
               verify_read=1, join_timeout=5, **opts)


def counts(*paths):
    """mdfio-report's figures that count, per phase and repeat, of one
    run's fio outputs."""
    proc = subprocess.run([str(REPORT), "--json", *map(str, paths)], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    fields = ("objects", "dsets", "errors", "create_count", "stat_count", "read_count", "delete_count")
    return [(r["phase"], r["repeat"], *(r[f] for f in fields))
            for r in json.loads(proc.stdout)["records"] if r["process"] == "all"]


def posix_counts(tmpfs, tmp_path, phases, ranks, **opts):
    """counts() of the same phases run by one fio of mdfio-posix with
    ranks ranks: what the run over hosts must count."""
    root, work = tmpfs / "posix", tmp_path / "posix"
    root.mkdir()
    work.mkdir()
    run_fio(job(phases, root, numjobs=ranks, datasets=D, precreate_per_set=P, steps_per_set=I, verify_read=1,
                **opts), work, check=True)
    return counts(work / "job-0.json")


def test_one_s3_run_over_two_hosts(servers, s3_engine, tmpfs, tmp_path):
    """Two hosts of two ranks each, rank_offset=2 so that most reads are
    of objects the other host wrote (verify_read proves whose): the bucket
    holds the namespace one fio would make, each rank ran once on its
    host, mdfio-report counts over the client's JSON what one fio of
    mdfio-posix counts, and a cleanup per host empties bucket and
    directory."""
    root = tmpfs / "root"
    root.mkdir()
    ns = store_view(root, s3_engine)
    hosts = servers(2)      # after s3_engine: their fio gets the store's endpoint and keys
    names = ",".join(s.name for s in hosts)
    phases = ["precreate", "benchmark", "benchmark"]
    run = fio_client(hosts, s3_job(phases, root, s3_engine, 2, rank_offset=2, hosts=names), tmp_path,
                     check=True, timeout=TIMEOUT)
    assert ns.namespace() == expected(4, D, 2 * I, P)
    assert ns.entries() == sorted(["mdfio.ranks", "mdfio.status", *ns.claim] +
                                  [f"{r}_{d}{o}" for r in range(4) for d in range(D)
                                   for o in ["", *(f"/file-{i}" for i in range(2 * I, 2 * I + P))]])
    for pos, phase in enumerate(phases):
        seen = {}
        for j in run.jobs(mdfio.fio.jobname(phase, pos)):
            m = DESC.fullmatch(j["desc"])
            assert m and int(m[2]) == 4 and j["error"] == 0 and j["total_err"] == 0, j["desc"]
            seen[int(m[1])] = m[3]
            if phase == "benchmark":
                assert (j["read"]["total_ios"], j["read"]["clat_ns"]["N"], j["read"]["drop_ios"]) == (D * I, D * I, 0)
        assert seen == {r: hosts[r // 2].name for r in range(4)}, seen
    assert counts(tmp_path / "client-0.json") == posix_counts(tmpfs, tmp_path, phases, 4, rank_offset=2)
    run = fio_client(hosts, s3_job(["cleanup"], root, s3_engine, 2, hosts=names), tmp_path, per_host=True,
                     check=True, timeout=TIMEOUT)
    assert sum(j["trim"]["total_ios"] for j in run.jobs()) == 4 * D * P
    assert ns.entries() == []


def test_one_s3_run_under_mpirun(s3_engine, tmpfs, tmp_path):
    """Two fio processes of two ranks each under Open MPI's mpirun: each
    process runs the ranks its OMPI_COMM_WORLD_RANK says, the bucket
    holds what one fio would make, mdfio-report over the processes'
    outputs counts what one fio of mdfio-posix counts, and a second
    mpirun's cleanup empties bucket and directory."""
    need_mpirun()
    root = tmpfs / "root"
    root.mkdir()
    ns = store_view(root, s3_engine)
    outputs = []
    for phases in (["precreate", "benchmark"], ["cleanup"]):
        jobpath = tmp_path / f"{phases[0]}.fio"
        jobpath.write_text(s3_job(phases, root, s3_engine, 2, rank_offset=1))
        out = jobpath.with_suffix("")
        proc = subprocess.run([*MPIRUN, "--bind-to", "none", "-np", "2", "sh", "-c",
                               f'exec fio --output-format=json --output="{out}.$OMPI_COMM_WORLD_RANK.json" '
                               f'"{jobpath}"'], capture_output=True, text=True, env=fio_env(MPI_ENV),
                              timeout=TIMEOUT)
        assert proc.returncode == 0 and not SANITIZER_REPORT.search(proc.stdout + proc.stderr), proc.stderr
        outputs.append([out.with_suffix(f".{p}.json") for p in (0, 1)])
        for p, path in enumerate(outputs[-1]):
            for j in read_documents(path.read_text(), str(path))[-1]["jobs"]:
                m = DESC.fullmatch(j["desc"])
                assert m and int(m[2]) == 4 and j["error"] == 0, j["desc"]
                assert 2 * p <= int(m[1]) < 2 * p + 2, (path, j["desc"])
        if phases[0] == "precreate":
            assert ns.namespace() == expected(4, D, I, P)
    assert ns.entries() == []
    assert counts(*outputs[0]) == posix_counts(tmpfs, tmp_path, ["precreate", "benchmark"], 4, rank_offset=1)
