"""meson install lays out a working system: a fresh build installed into a
fresh prefix, then the installed jobfile run by plain fio with the installed
engines, and the installed mdfio-report on its JSON, from a directory that is
not the repository."""
import os
import re
import subprocess

import pytest

from conftest import SOURCE_ROOT, fio_env

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
    for f in [f"{engine_dir}/mdfio-{e}.so" for e in ("posix", "uring", "aio")] + \
             ["bin/mdfio-report", "bin/mdfio-plot", "share/mdfio/md-workbench.fio", "share/doc/mdfio/README.md"]:
        assert f in files, files
    for tool in ("mdfio-report", "mdfio-plot"):
        assert os.access(prefix / "bin" / tool, os.X_OK)
    # what only the build tree and the tests need stays there
    assert not [f for f in files if re.search(r"hide_opcode|bare-loop|/test_|fio-nr-ios", f)], files
    jobfile = (prefix / "share" / "mdfio" / "md-workbench.fio").read_text()
    assert f"\nioengine=external:{prefix / engine_dir}/mdfio-posix.so\n" in jobfile
    assert "./build" not in jobfile


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
