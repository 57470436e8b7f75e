"""jobfiles/md-workbench.fio run as users run it: plain fio, parameters from
the environment."""
import os
import subprocess

from conftest import SOURCE_ROOT, engine_path, fio_env, run_fio

JOBFILE = SOURCE_ROOT / "jobfiles" / "md-workbench.fio"


def jobtext(engine="posix"):
    # the shipped jobfile names ./build's engine; run the build under test
    # (and another engine the way the README says: replacing its name)
    text = JOBFILE.read_text()
    line = "ioengine=external:./build/engines/mdfio-posix.so"
    assert line in text
    return text.replace(line, f"ioengine=external:{engine_path(engine)}")


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
    assert all(r[1:] == (0, 0, 0) for r in rows[6:-2]), "repeats beyond MDW_R must do nothing"
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
    assert os.listdir(tmpfs) == []


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
        f"mdfio: repeats=10: this jobfile has no benchmark section with repeat=10 for directory={tmpfs}; "
        "add sections up to repeat=10 (each after a stonewall) or lower repeats"], run.stderr
    assert all(j[d]["total_ios"] == 0 for j in run.jobs() for d in ("read", "write", "trim"))
    assert os.listdir(tmpfs) == []
