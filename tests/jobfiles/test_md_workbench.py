"""jobfiles/md-workbench.fio run as users run it: plain fio, parameters from
the environment."""
import os
import re
import subprocess

import sys

from conftest import SOURCE_ROOT, engine_opts, engine_path, fio_env, run_fio, store_view
from mdfio.jobfile import ADAPTIVE_WAITING_FACTORS, global_section, with_repeats

JOBFILE = SOURCE_ROOT / "jobfiles" / "md-workbench.fio"


def jobtext(engine="posix"):
    # the shipped jobfile names ./build's engine; run the build under test
    # (and another engine the way the README says: replacing its name,
    # with mdfio-s3's bucket= added)
    text = JOBFILE.read_text()
    line = "ioengine=external:./build/engines/mdfio-posix.so"
    assert line in text
    return text.replace(line, "\n".join([f"ioengine=external:{engine_path(engine)}",
                                         *(f"{k}={v}" for k, v in engine_opts(engine).items())]))


def headline(run):
    return [(j["jobname"], j["write"]["total_ios"], j["read"]["total_ios"], j["trim"]["total_ios"])
            for j in run.jobs()]


def test_parameters_from_the_environment(tmpfs, tmp_path):
    env = dict(MDW_N="2", MDW_D="2", MDW_P="10", MDW_I="4", MDW_S="100", MDW_O="1",
               MDW_R="2", MDW_ROOT=str(tmpfs), MDW_VERIFY="1")
    run = run_fio(jobtext(), tmp_path, env=env, check=True)
    rows = headline(run)
    assert rows[:2] == [("precreate", 20, 0, 0)] * 2
    assert rows[2:6] == [("benchmark-1", 0, 8, 0)] * 2 + [("benchmark-2", 0, 8, 0)] * 2
    assert rows[6:-2] == [("benchmark-3", 0, 0, 0)] * 2, "a repeat beyond MDW_R must do nothing"
    assert all(j["desc"].endswith("; benchmark 3: not run (repeats=2)") for j in run.jobs("benchmark-3"))
    assert rows[-2:] == [("cleanup", 0, 0, 20)] * 2
    assert all(j["read"]["io_bytes"] == 800 for j in run.jobs("benchmark-1"))
    assert os.listdir(tmpfs) == []


def test_async_engines_with_iodepth_from_the_command_line(tmpfs, tmp_path, engine):
    env = dict(MDW_N="2", MDW_D="3", MDW_P="20", MDW_I="20", MDW_R="2", MDW_ROOT=str(tmpfs), MDW_VERIFY="1")
    run = run_fio(jobtext(engine), tmp_path, env=env, args=["--iodepth=8"], check=True)
    rows = headline(run)
    assert rows[:6] == [("precreate", 60, 0, 0)] * 2 + [("benchmark-1", 0, 60, 0)] * 2 + \
        [("benchmark-2", 0, 60, 0)] * 2
    assert rows[-2:] == [("cleanup", 0, 0, 60)] * 2
    assert store_view(tmpfs, engine).entries() == []


def test_defaults_are_md_workbench_defaults(tmpfs, tmp_path):
    run = run_fio(jobtext(), tmp_path, env=dict(MDW_ROOT=str(tmpfs)), check=True)
    rows = headline(run)
    assert rows[0] == ("precreate", 10 * 3000, 0, 0)
    assert rows[1:4] == [(f"benchmark-{k}", 0, 10 * 1000, 0) for k in (1, 2, 3)]
    assert rows[-1] == ("cleanup", 0, 0, 30000)
    pre = run.jobs("precreate")[0]
    assert pre["write"]["io_bytes"] == 30000 * 3901
    assert os.listdir(tmpfs) == []


def test_parse_only_accepts_the_jobfile(tmp_path):
    path = tmp_path / "md-workbench.fio"
    path.write_text(jobtext())
    proc = subprocess.run(["fio", "--parse-only", str(path)], capture_output=True, text=True, env=fio_env())
    assert proc.returncode == 0, proc.stderr


def test_more_repeats_than_the_jobfile_has_sections_are_refused(tmpfs, tmp_path):
    """MDW_R above the jobfile's benchmark sections once ran the sections
    there were and exited 0: now every job refuses, with one line, before
    anything is made."""
    env = dict(MDW_D="2", MDW_P="10", MDW_I="4", MDW_R="10", MDW_ROOT=str(tmpfs))
    run = run_fio(jobtext(), tmp_path, env=env, check=False)
    assert run.rc != 0
    assert run.mdfio_lines() == [
        f"mdfio: repeats=10: this jobfile has no benchmark section with repeat=4 for directory={tmpfs}; "
        "add sections up to repeat=10 (tools/mdfio-jobfile -R 10 writes them) or lower repeats"], run.stderr
    assert all(j[d]["total_ios"] == 0 for j in run.jobs() for d in ("read", "write", "trim"))
    assert os.listdir(tmpfs) == []


GENERATOR = SOURCE_ROOT / "tools" / "mdfio-jobfile"
REPORT = SOURCE_ROOT / "tools" / "mdfio-report"


def generated(*args, env=None):
    proc = subprocess.run([sys.executable, str(GENERATOR), *args], capture_output=True, text=True,
                          env=fio_env(env))
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def test_the_shipped_jobfile_is_one_fio_group_the_generator_writes():
    text = JOBFILE.read_text()
    assert "stonewall" not in text.splitlines()
    body = text[text.index("[global]"):]
    assert body == with_repeats(global_section(text), 3, repeats_option="${MDW_R}|3")


def test_more_repeats_than_shipped_in_exactly_as_many_sections(tmpfs, tmp_path):
    """mdfio-jobfile -R 12: twelve benchmark sections, no idle one, every
    repeat in order (the FIFO ends 12 I further), read by fio from a pipe."""
    text = generated("-R", "12").replace("ioengine=external:./build/engines/mdfio-posix.so",
                                         f"ioengine=external:{engine_path()}")
    env = dict(MDW_N="2", MDW_D="2", MDW_P="10", MDW_I="3", MDW_ROOT=str(tmpfs), MDW_VERIFY="1")
    out = tmp_path / "r12.json"
    proc = subprocess.run(["fio", "--output-format=json", f"--output={out}", "-"], input=text, text=True,
                          capture_output=True, env=fio_env(env))
    assert proc.returncode == 0, proc.stderr
    import json
    jobs = json.loads(out.read_text())["jobs"]
    names = [j["jobname"] for j in jobs][::2]
    assert names == ["precreate"] + [f"benchmark-{k}" for k in range(1, 13)] + ["cleanup"]
    assert all(j["error"] == 0 and j["read"]["drop_ios"] == 0 for j in jobs)
    assert all(j["read"]["total_ios"] == 6 for j in jobs if j["jobname"].startswith("benchmark-"))
    assert os.listdir(tmpfs) == []


def test_the_generator_takes_r_from_the_environment_and_refuses_a_bad_one():
    assert generated(env=dict(MDW_R="5")).count("phase=benchmark") == 5
    assert generated().count("phase=benchmark") == 3
    proc = subprocess.run([sys.executable, str(GENERATOR), "-R", "0"], capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "-R" in proc.stderr, proc.stderr
    proc = subprocess.run([sys.executable, str(GENERATOR)], capture_output=True, text=True,
                          env=fio_env(dict(MDW_R="x")))
    assert proc.returncode == 2 and proc.stderr.startswith("mdfio-jobfile: MDW_R='x': expected"), proc.stderr


def test_the_generator_writes_no_more_sections_than_one_fio_runs():
    """fio 3.33 and 3.41 run at most 4088 jobs (REAL_MAX_JOBS in segments of
    8, one left unused): -R writes up to that many sections and refuses
    more in one line, at once (-R 10^9 used to take all memory)."""
    assert generated("-R", "4086").count("\n[") == 4088   # sections after [global]
    assert generated("-T", "-R", "510").count("\n[") == 8 * 510 + 2
    for args, most in ((["-R", "4087"], 4086), (["-R", "1000000000"], 4086), (["-T", "-R", "511"], 510)):
        proc = subprocess.run([sys.executable, str(GENERATOR), *args], capture_output=True, text=True, timeout=60)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert f"more than the 4088 jobs one fio runs; at most {most} repeats" in proc.stderr, proc.stderr


def test_the_adaptive_waiting_shape_runs_as_md_workbench_t(tmpfs, tmp_path):
    """-T: md-workbench's eight runs per repeat, each with its waiting factor
    and the repeat's number, run by fio: every run moves the FIFO on, and
    the report gives md-workbench's -T, its iterations and a line per run."""
    text = generated("-R", "2", "-T")
    sections = re.findall(r"^\[(.*)\]\n((?:[^\[\n].*\n)*)", text, re.M)
    bench = [(name, body) for name, body in sections if "phase=benchmark" in body]
    assert len(bench) == 16
    for n, (name, body) in enumerate(bench):
        k, f = n // 8 + 1, ADAPTIVE_WAITING_FACTORS[n % 8]
        assert f"repeat={k}\n" in body and f"waiting_factor={f}\n" in body, (name, body)
        assert "adaptive_waiting=1\n" in body, (name, body)
    assert "repeats=2\n" in text and "stonewall" not in text.splitlines()
    text = text.replace("ioengine=external:./build/engines/mdfio-posix.so", f"ioengine=external:{engine_path()}")
    # 16 runs of I=1 step each from a FIFO of P=20: every one reads what exists
    env = dict(MDW_N="2", MDW_D="2", MDW_P="20", MDW_I="1", MDW_S="64", MDW_ROOT=str(tmpfs), MDW_VERIFY="1")
    out = tmp_path / "t.json"
    proc = subprocess.run(["fio", "--output-format=json", f"--output={out}", "-"], input=text, text=True,
                          capture_output=True, env=fio_env(env))
    assert proc.returncode == 0, proc.stderr
    import json
    jobs = json.loads(out.read_text())["jobs"]
    assert all(j["error"] == 0 and j["read"]["drop_ios"] == 0 for j in jobs)
    assert sum(j["read"]["total_ios"] for j in jobs) == 16 * 2 * 2
    assert os.listdir(tmpfs) == []
    report = subprocess.run([sys.executable, str(REPORT), str(out)], capture_output=True, text=True)
    assert report.returncode == 0, report.stderr
    lines = report.stdout.splitlines()
    assert '"-R" "2"' in lines[0] and '"-T"' in lines[0], lines[0]
    runs = [line for line in lines if line.startswith("benchmark ")]
    assert len(runs) == 16
    assert ["waiting_factor:" in line for line in runs] == [n % 8 != 0 for n in range(16)]
    # md-workbench's total objects: D * (I * R + P) * N, R counting iterations
    assert f"total objects: {2 * (1 * 2 + 20) * 2} " in report.stdout
