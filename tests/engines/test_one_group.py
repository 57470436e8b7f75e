"""A run's sections as one fio group (no stonewall): fio starts every
section's jobs at once, and the engine runs a root's sections in jobfile
order, each waiting for every clone of the previous one, then for the other
fio processes at the barrier. Ordered phases are proven by what they leave:
a benchmark that overlapped its precreate or another repeat would read
objects not made yet (verify_read=1 counts each as an error), and the FIFO
after R repeats is where R repeats in order put it."""
import contextlib
import os
import re
import signal
import time

import pytest

import mdfio.fio
from conftest import ENGINES, engine_path, expected, fio_env, namespace, run_fio
from test_run import client, gone, mpirun
from mdfio.fiojson import read_documents

D, P, I = 3, 12, 4


def one_group(phases, root, clones, **opts):
    text = mdfio.fio.jobfile(phases, root, engine_path(opts.pop("engine", "posix")), numjobs=clones,
                             stonewall=False, datasets=D, precreate_per_set=P, steps_per_set=I,
                             verify_read=1, join_timeout=5, **opts)
    assert "stonewall" not in text.splitlines()
    return text


def error_free(jobs):
    for j in jobs:
        assert j["error"] == 0 and all(j[d]["drop_ios"] == 0 for d in ("read", "write", "trim")), j


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("clones,thread", [(1, 0), (3, 0), (3, 1)])
def test_sections_of_one_group_run_in_order(tmpfs, tmp_path, engine, clones, thread):
    repeats = 4
    text = one_group(["precreate"] + ["benchmark"] * repeats, tmpfs, clones, engine=engine, thread=thread)
    run = run_fio(text, tmp_path, check=True)
    error_free(run.jobs())
    assert all(j["read"]["total_ios"] == D * I for k in range(1, repeats + 1)
               for j in run.jobs(mdfio.fio.jobname("benchmark", k)))
    # every repeat moved the FIFO by I, one after the other
    assert namespace(tmpfs) == expected(clones, D, repeats * I, P)
    run = run_fio(one_group(["cleanup"], tmpfs, clones, engine=engine), tmp_path, check=True)
    assert os.listdir(tmpfs) == []


def test_a_refused_phase_stops_the_later_sections_of_the_group(tmpfs, tmp_path):
    """A benchmark without a namespace refuses; the sections after it in the
    same group, started at the same time, do nothing either."""
    text = one_group(["benchmark", "benchmark", "cleanup"], tmpfs, 2)
    run = run_fio(text, tmp_path, check=False)
    assert run.rc != 0
    assert all(j[d]["total_ios"] == 0 for j in run.jobs() for d in ("read", "write", "trim"))
    assert os.listdir(tmpfs) == []


@pytest.mark.parametrize("nhosts,clones", [(2, 2), (3, 1)])
def test_one_group_over_fio_servers(servers, tmpfs, tmp_path, nhosts, clones):
    hosts = servers(nhosts)
    text = one_group(["precreate", "benchmark", "benchmark", "benchmark", "cleanup"], tmpfs, clones,
                     hosts=",".join(s.name for s in hosts), rank_offset=clones)
    run = client(hosts, text, tmp_path, check=True)
    error_free(run.jobs())
    assert len(run.jobs()) == 5 * nhosts * clones
    assert os.listdir(tmpfs) == []


def test_one_group_under_mpirun(tmpfs, tmp_path):
    np, clones = 2, 2
    text = one_group(["precreate", "benchmark", "benchmark", "benchmark"], tmpfs, clones, rank_offset=clones)
    _, outputs = mpirun(np, text, tmp_path, check=True)
    for path in outputs:
        doc = read_documents(path.read_text(), str(path))[-1]
        error_free(doc["jobs"])
        assert all(re.fullmatch(r"mdfio rank=\d+ ranks=4 host=\S+; .+", j["desc"]) for j in doc["jobs"])
    assert namespace(tmpfs) == expected(np * clones, D, 3 * I, P)


def test_a_section_that_starts_late_waits_for_a_clone_still_busy(tmpfs, tmp_path):
    """The benchmark's jobs start (startdelay) after the precreate's first
    clone has ended while its second is held in mid-phase: they must wait
    for it. fio unloads an ended job's engine from the job table all its
    processes share, so a benchmark that looked there for its previous
    section found none, ran beside the held clone and, refused its rank,
    left its other clone waiting at the barrier for ever."""
    delay, per_set = 5, 10000
    text = one_group(["precreate", "benchmark"], tmpfs, 2, bs=64)
    text = text.replace(f"precreate_per_set={P}", f"precreate_per_set={per_set}")
    text = text.replace("[benchmark-1]\n", f"[benchmark-1]\nstartdelay={delay}\n")
    seen = {}

    def watch(fio):
        seen.setdefault("fio_start", time.monotonic())
        if "held" not in seen:
            # a clone creates objects once past the barrier, and holds no
            # lock its sibling needs while it does
            try:
                with os.scandir(tmpfs / "1_0") as objects:
                    if next(objects, None) is None:
                        return
            except FileNotFoundError:
                return
            recs = dict(re.findall(r"^rank (\d) .* pid (\d+) ", (tmpfs / "mdfio.ranks").read_text(), re.M))
            seen["first"], seen["held"] = int(recs["0"]), int(recs["1"])
            os.kill(seen["held"], signal.SIGSTOP)
        elif "first_ended" not in seen:
            if gone(seen["first"]):
                seen["first_ended"] = time.monotonic() - seen["fio_start"]
                seen["status"] = (tmpfs / "mdfio.status").read_text()
        elif "released" not in seen and time.monotonic() - seen["fio_start"] > delay + 1:
            os.kill(seen["held"], signal.SIGCONT)
            seen["released"] = True

    try:
        run = mdfio.fio.run(tmp_path / "late.fio", text, env=fio_env(), watch=watch, timeout=60)
    finally:
        if "held" in seen and "released" not in seen:
            with contextlib.suppress(ProcessLookupError):
                os.kill(seen["held"], signal.SIGCONT)
    assert seen.get("first_ended", delay) < delay, "the first clone did not end before the benchmark started"
    assert re.search(r"^rank 0 ready ", seen["status"], re.M), seen["status"]
    assert not re.search(r"^rank 1 ready ", seen["status"], re.M), "the second clone was not held in mid-phase"
    assert run.rc == 0, run.stderr
    error_free(run.jobs())
    assert namespace(tmpfs) == expected(2, D, I, per_set)
