"""The shipped jobfile under a real single-node Slurm cluster (slurmctld,
slurmd and munge of the session's own, conftest's slurm): srun's tasks as
the fio processes of one run, srun inside an sbatch script, and a plain fio
in an sbatch script, which is one fio and not rank 0 of the allocation's
tasks."""
import os
import re
import subprocess
import time

import pytest

from conftest import SANITIZER_REPORT, SOURCE_ROOT, engine_path, fio_env
from mdfio.fiojson import read_documents

JOBFILE = SOURCE_ROOT / "jobfiles" / "md-workbench.fio"
REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
SECTIONS = ["precreate", "benchmark-1", "benchmark-2", "benchmark-3", "cleanup"]
D, P, I = 3, 8, 3
CLONES = 2          # MDW_N: fio's clones per process
DESC = re.compile(r"mdfio rank=(\d+) ranks=(\d+) host=(\S+); .+")
TIMEOUT = 120       # s, any one srun or sbatch
# one fio per task; the sanitizers' runtime goes to fio alone, not to the
# Slurm commands in front of it
FIO = ('LD_PRELOAD="$MDFIO_TASK_PRELOAD" exec fio --eta=never --output-format=json '
       '--output="$OUT.$SLURM_PROCID.json" "$JOB"')
TASK = f'env > "$OUT.$SLURM_PROCID.env"; {FIO}'


def task_env(slurm, tmpfs, tmp_path, out, **mdw):
    """The environment of srun or sbatch, which hand it on to every task:
    the shipped jobfile's parameters, with verify_read and reads from
    another fio process (rank_offset = the clones of one)."""
    job = tmp_path / "md-workbench.fio"
    line = "ioengine=external:./build/engines/mdfio-posix.so"
    text = JOBFILE.read_text()
    assert line in text
    job.write_text(text.replace(line, f"ioengine=external:{engine_path()}"))
    params = dict(MDW_N=str(CLONES), MDW_D=str(D), MDW_P=str(P), MDW_I=str(I), MDW_O=str(CLONES),
                  MDW_VERIFY="1", MDW_ROOT=str(tmpfs))
    params.update(mdw)
    env = slurm.client_env(fio_env(params))
    env["MDFIO_TASK_PRELOAD"] = env.pop("LD_PRELOAD", "")
    env.update(OUT=str(out), JOB=str(job))
    return env


def slurm_run(cmd, env, cwd):
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd, timeout=TIMEOUT,
                          stdin=subprocess.DEVNULL)
    assert not SANITIZER_REPORT.search(proc.stdout + proc.stderr), proc.stdout + proc.stderr
    return proc


def sbatch(slurm, script, args, env, tmp_path):
    """sbatch on script, waiting for its end: its exit status and output
    (stdout and stderr of the batch script and its steps)."""
    path = tmp_path / "job.sh"
    path.write_text("#!/bin/sh\n" + script + "\n")
    log = tmp_path / "job.out"
    rc = slurm.batch(["--overcommit", f"--output={log}", *args, str(path)], env, tmp_path, TIMEOUT)
    output = log.read_text() if log.exists() else ""
    assert not SANITIZER_REPORT.search(output), output
    return rc, output


def environment(path):
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def check_run(outputs, processes):
    """Every fio's JSON: the fio of task p ran ranks p*CLONES onwards of
    processes*CLONES in every section, without an error, and every
    benchmark step read (and verified) an object of another rank."""
    n = processes * CLONES
    seen = {name: [] for name in SECTIONS}
    for p, path in enumerate(outputs):
        doc = read_documents(path.read_text(), str(path))[-1]
        for j in doc["jobs"]:
            m = DESC.fullmatch(j["desc"])
            assert m and int(m[2]) == n, j["desc"]
            assert p * CLONES <= int(m[1]) < (p + 1) * CLONES, (path, j["desc"])
            assert (j["error"], j["total_err"]) == (0, 0), j
            if j["jobname"] in ("benchmark-1", "benchmark-2", "benchmark-3"):
                assert j["read"]["total_ios"] == D * I, j["read"]
            seen[j["jobname"]].append(int(m[1]))
    assert {name: sorted(r) for name, r in seen.items()} == {name: list(range(n)) for name in SECTIONS}
    report = subprocess.run([str(REPORT), *map(str, outputs)], capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    assert re.search(r"^Nodemap: 1{%d}$" % n, report.stdout, re.M), report.stdout


@pytest.mark.parametrize("mpi", ["none", "pmi2", "pmix"])
def test_srun_runs_the_shipped_jobfile_one_fio_per_task(slurm, tmpfs, tmp_path, mpi):
    """srun -n 4: four fio processes of 2 clones each, one run of 8 ranks
    from SLURM_PROCID and the step's size; under srun's PMI-2 plugin the
    same from PMI_RANK and PMI_SIZE; under its PMIx plugin the barrier
    waits in PMIx_Fence (test_run.py counts what it spares the file)."""
    out = tmp_path / "run"
    env = task_env(slurm, tmpfs, tmp_path, out)
    proc = slurm_run(["srun", "-n", "4", "--overcommit", f"--mpi={mpi}", "sh", "-c", TASK], env, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for p in range(4):
        task = environment(out.with_suffix(f".{p}.env"))
        assert (task["SLURM_PROCID"], task["SLURM_STEP_NUM_TASKS"]) == (str(p), "4")
        assert (task.get("PMI_RANK"), task.get("PMI_SIZE")) == ((str(p), "4") if mpi == "pmi2" else (None, None))
        assert task.get("PMIX_RANK") == (str(p) if mpi == "pmix" else None)
    check_run([out.with_suffix(f".{p}.json") for p in range(4)], 4)
    assert os.listdir(tmpfs) == []


def test_srun_in_an_sbatch_script(slurm, tmpfs, tmp_path):
    """srun in an sbatch -n 4 script starts the four fio processes of the
    run in the allocation."""
    out = tmp_path / "run"
    env = task_env(slurm, tmpfs, tmp_path, out)
    rc, output = sbatch(slurm, f"srun sh -c '{TASK}'", ["-n", "4"], env, tmp_path)
    assert rc == 0, output
    check_run([out.with_suffix(f".{p}.json") for p in range(4)], 4)
    assert os.listdir(tmpfs) == []


def test_srun_keeping_the_allocations_task_count(slurm, tmpfs, tmp_path):
    """srun -E -n 2 in an allocation of 4 tasks keeps SLURM_NTASKS=4 in
    its tasks: the run is the step's 2 fio processes, none waiting for
    ranks that no process starts."""
    out = tmp_path / "run"
    env = task_env(slurm, tmpfs, tmp_path, out)
    rc, output = sbatch(slurm, f"srun -E -n 2 sh -c '{TASK}'", ["-n", "4"], env, tmp_path)
    assert rc == 0, output
    for p in range(2):
        task = environment(out.with_suffix(f".{p}.env"))
        assert (task["SLURM_PROCID"], task["SLURM_NTASKS"], task["SLURM_STEP_NUM_TASKS"]) == (str(p), "4", "2")
    check_run([out.with_suffix(f".{p}.json") for p in range(2)], 2)
    assert os.listdir(tmpfs) == []


def test_a_plain_fio_in_an_sbatch_script_is_one_fio(slurm, tmpfs, tmp_path):
    """A batch script has SLURM_PROCID=0 and the allocation's SLURM_NTASKS
    (4) but is one process, no task of srun: its fio runs its own 2 ranks
    at once. It used to take rank 0 of 4, wait join_timeout (30 s) for
    ranks no process would start and exit 5."""
    out = tmp_path / "run"
    env = task_env(slurm, tmpfs, tmp_path, out)
    start = time.monotonic()
    rc, output = sbatch(slurm, f'env > "$OUT.batch.env"; {FIO}', ["-n", "4"], env, tmp_path)
    took = time.monotonic() - start
    batch = environment(out.with_suffix(".batch.env"))
    assert (batch["SLURM_PROCID"], batch["SLURM_NTASKS"]) == ("0", "4"), batch
    assert "SLURM_STEP_NUM_TASKS" not in batch and "SLURM_STEP_ID" not in batch, batch
    assert rc == 0, output
    assert "did not join" not in output, output
    check_run([out.with_suffix(".0.json")], 1)
    assert os.listdir(tmpfs) == []
    assert took < 30, f"the batch job took {took:.0f} s: was fio waiting for ranks?"
