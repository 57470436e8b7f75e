"""meson install lays out a working system: a fresh build installed into a
fresh prefix, then the installed jobfile run by plain fio with the installed
engines, and the installed mdfio-report on its JSON, from a directory that is
not the repository."""
import os
import re
import shutil
import subprocess
import sys
import tomllib

import pytest

from conftest import SOURCE_ROOT, engine_path, fio_env

FIO_SRC = os.environ.get("MDFIO_FIO_SRC", str(SOURCE_ROOT / ".deps" / "fio"))


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    if os.environ.get("MDFIO_PRELOAD"):
        pytest.skip("the install is a build of its own, not the sanitized one under test")
    tmp = tmp_path_factory.mktemp("install")
    build, prefix = tmp / "build", tmp / "prefix"
    for cmd in (["meson", "setup", str(build), f"--prefix={prefix}", f"-Dfio_src={FIO_SRC}"],
                ["meson", "install", "-C", str(build)]):
        proc = subprocess.run(cmd, cwd=SOURCE_ROOT, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return prefix


def installed(prefix):
    return sorted(str(p.relative_to(prefix)) for p in prefix.rglob("*") if not p.is_dir())


def test_layout(prefix):
    files = installed(prefix)
    libdir = [f for f in files if f.endswith("/mdfio/mdfio-posix.so")]
    assert len(libdir) == 1 and libdir[0].startswith("lib"), files
    engine_dir = libdir[0].rsplit("/", 1)[0]
    for f in [f"{engine_dir}/mdfio-{e}.so" for e in ("posix", "uring", "aio", "tree", "mdtest", "postmark")] + \
             ["share/mdfio/mdtest.fio", "bin/mdfio-report", "bin/mdfio-plot", "bin/mdfio-jobfile", "bin/mdfio-compare", "bin/mdfio-study", "bin/mdfio-iozone",
              "share/mdfio/md-workbench.fio", "share/mdfio/md-workbench-under-load.fio", "share/mdfio/tree-study.fio",
              "share/mdfio/studies/nightly.toml",
              "share/mdfio/studies/mdrealio-2016.toml", "share/mdfio/studies/mdrealio-2016-fixed-count.toml",
              "share/mdfio/studies/mdrealio-2016-here.toml",
              "share/doc/mdfio/README.md", "share/man/man7/mdfio.7"]:
        assert f in files, files
    tools = sorted(f.split("/", 1)[1] for f in files if f.startswith("bin/"))
    assert tools == ["mdfio-compare", "mdfio-iozone", "mdfio-jobfile", "mdfio-plot", "mdfio-report", "mdfio-study"], tools
    for tool in tools:
        assert os.access(prefix / "bin" / tool, os.X_OK)
        # every tool has its man page
        assert f"share/man/man1/{tool}.1" in files, files
    # what only the build tree and the tests need stays there
    assert not [f for f in files if re.search(r"hide_opcode|bare-loop|/test_|fio-nr-ios", f)], files
    for name in ("md-workbench.fio", "md-workbench-under-load.fio"):
        jobfile = (prefix / "share" / "mdfio" / name).read_text()
        assert f"\nioengine=external:{prefix / engine_dir}/mdfio-posix.so\n" in jobfile
        assert "./build" not in jobfile and f" {prefix / 'share' / 'mdfio' / name}\n" in jobfile
    for name, engine in (("tree-study.fio", "tree"), ("postmark.fio", "postmark")):
        jobfile = (prefix / "share" / "mdfio" / name).read_text()
        assert f"\nioengine=external:{prefix / engine_dir}/mdfio-{engine}.so\n" in jobfile
        assert "./build" not in jobfile and f" {prefix / 'share' / 'mdfio' / name}\n" in jobfile
    jobfile = (prefix / "share" / "mdfio" / "mdtest.fio").read_text()
    assert f"\nioengine=external:{prefix / engine_dir}/mdfio-mdtest.so\n" in jobfile and "./build" not in jobfile
    # mdfio-report imports mdfio.postmark for a run of mdfio-postmark
    assert [f for f in files if f.endswith("/mdfio/postmark.py")], files


def test_installed_jobfile_tool_writes_the_installed_jobfile(prefix, tmp_path):
    """The installed mdfio-jobfile takes the installed jobfile's [global],
    which names the installed engine, from a directory that is not the
    repository."""
    env = {**os.environ, "PATH": f"{prefix / 'bin'}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(["mdfio-jobfile", "-R", "5"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    shipped = (prefix / "share" / "mdfio" / "md-workbench.fio").read_text()
    engine = re.search(r"^ioengine=.*$", shipped, re.M).group(0)
    assert re.search(rf"^{re.escape(engine)}$", proc.stdout, re.M) and proc.stdout.count("phase=benchmark") == 5


def test_installed_study_tool_finds_the_installed_studies_and_engines(prefix, tmp_path):
    """The installed mdfio-study lists the installed nightly preset from a
    directory that is not the repository, and runs the engines the
    installed jobfile names (its default --engine-dir)."""
    env = {**os.environ, "PATH": f"{prefix / 'bin'}:{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(["mdfio-study", "list", str(prefix / "share" / "mdfio" / "studies" / "nightly.toml")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "4 points x 1 repeats = 4 runs", proc.stderr
    [package] = prefix.rglob("mdfio/study.py")
    engine_dir = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]); "
                                 "import mdfio.study; print(mdfio.study.engine_dir_default())",
                                 str(package.parent.parent)], cwd=tmp_path, env=env, capture_output=True,
                                text=True, timeout=60)
    [posix] = [f for f in installed(prefix) if f.endswith("/mdfio/mdfio-posix.so")]
    assert engine_dir.stdout.strip() == str(prefix / posix).rsplit("/", 1)[0], engine_dir.stdout + engine_dir.stderr


def test_installed_jobfile_and_report_from_elsewhere(prefix, tmp_path):
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    env = fio_env(dict(MDW_N="2", MDW_D="3", MDW_P="10", MDW_I="4", MDW_R="2", MDW_ROOT=str(root),
                       PATH=f"{prefix / 'bin'}:{os.environ['PATH']}"))
    env.pop("PYTHONPATH", None)
    proc = subprocess.run(["fio", "--output-format=json", "--output=run.json",
                           str(prefix / "share" / "mdfio" / "md-workbench.fio")],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(root) == [], "cleanup leaves nothing"
    proc = subprocess.run(["mdfio-report", "run.json"], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    # 60 precreated + 2 benchmark repeats of 24
    assert re.search(r"^MD-Workbench total objects: 108 ", out, re.M), out
    # the engine the installed jobfile loads: in the option lines of the 2020 format
    options = subprocess.run(["mdfio-report", "--format", "md-workbench-2020", "run.json"], cwd=cwd, env=env,
                             capture_output=True, text=True, timeout=60).stdout
    assert f"\tinterface=external:{prefix}/" in options, options
    phases = re.findall(r"^(precreate|benchmark|cleanup) process .*$", out, re.M)
    assert phases == ["precreate", "benchmark", "benchmark", "cleanup"], out
    lines = [l for l in out.splitlines() if re.match(r"(precreate|benchmark|cleanup) process", l)]
    # 2 ranks x 3 datasets x 10 objects precreated and removed; each benchmark
    # step of a rank works on its 3 datasets: 2 ranks x 4 steps x 3
    assert "dsets: 6 objects:60 " in lines[0], out
    assert all(" objects:24 " in l for l in lines[1:3]), out
    assert "objects:60 dsets: 6 " in lines[3], out
    assert all("(0 errs)" in l for l in lines), out


def test_pip_install_in_a_fresh_venv(tmp_path):
    """pip install . in a fresh venv, as a user does it (pip fetches its
    build backend, setuptools, from PyPI), gives the package and the six
    commands, which work from elsewhere on a real run's JSON; its version
    is meson's."""
    meta = tomllib.loads((SOURCE_ROOT / "pyproject.toml").read_text())
    meson_version = re.search(r"version : '([^']+)'", (SOURCE_ROOT / "meson.build").read_text())[1]
    assert meta["project"]["version"] == meson_version
    # a copy: pip's build writes its egg-info beside the sources
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(SOURCE_ROOT / name, src / name)
    shutil.copytree(SOURCE_ROOT / "tools", src / "tools", ignore=shutil.ignore_patterns("__pycache__"))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    proc = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", str(src)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    version = subprocess.run([str(venv / "bin" / "python"), "-c", "import mdfio; print(mdfio.VERSION)"],
                             cwd=cwd, env=env, capture_output=True, text=True)
    assert version.stdout.strip() == f"mdfio-{meson_version}", version.stdout + version.stderr
    # the shipped jobfile comes with meson's install, not pip's
    jobfile = subprocess.run([str(venv / "bin" / "mdfio-jobfile"), "-R", "1", "--from",
                              str(SOURCE_ROOT / "jobfiles" / "md-workbench.fio")], cwd=cwd, env=env,
                             capture_output=True, text=True)
    assert jobfile.returncode == 0 and "phase=benchmark" in jobfile.stdout, jobfile.stderr
    root = tmp_path / "root"
    root.mkdir()
    job = cwd / "job.fio"
    job.write_text("\n".join(["[global]", f"ioengine=external:{engine_path()}", f"directory={root}",
                               "datasets=2", "precreate_per_set=10", "steps_per_set=4", "numjobs=2", "bs=3901",
                               *(f"[{p}]\nphase={p}\nstonewall" for p in ("precreate", "benchmark", "cleanup"))])
                   + "\n")
    run = subprocess.run(["fio", "--output-format=json", "--output=run.json", str(job)], cwd=cwd, env=fio_env(),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    report = subprocess.run([str(venv / "bin" / "mdfio-report"), "run.json"], cwd=cwd, env=env,
                            capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    assert re.search(r"^MD-Workbench total objects: 56 ", report.stdout, re.M), report.stdout
    plot = subprocess.run([str(venv / "bin" / "mdfio-plot"), "--help"], cwd=cwd, env=env, capture_output=True,
                          text=True)
    assert plot.returncode == 0 and "usage: mdfio-plot" in plot.stdout, plot.stderr
    study = subprocess.run([str(venv / "bin" / "mdfio-study"), "--help"], cwd=cwd, env=env, capture_output=True,
                           text=True)
    assert study.returncode == 0 and "usage: mdfio-study" in study.stdout, study.stderr
    iozone = subprocess.run([str(venv / "bin" / "mdfio-iozone"), "--help"], cwd=cwd, env=env, capture_output=True,
                            text=True)
    assert iozone.returncode == 0 and "usage: mdfio-iozone" in iozone.stdout, iozone.stderr
    # the report records the run, and the comparison reads it
    recorded = subprocess.run([str(venv / "bin" / "mdfio-report"), "--record", "h.db", "run.json"], cwd=cwd,
                              env=env, capture_output=True, text=True, timeout=60)
    assert recorded.returncode == 0 and "recorded run 1" in recorded.stderr, recorded.stderr
    compared = subprocess.run([str(venv / "bin" / "mdfio-compare"), "h.db"], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=60)
    assert compared.returncode == 0 and "too little history (0 runs, needs 5)" in compared.stdout, compared.stderr
