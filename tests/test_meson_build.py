"""meson.build: a fio tree that cannot be built against stops `meson setup`
with a message that says what to do."""
import json
import os
import shutil
import subprocess
from pathlib import Path

from conftest import ENGINE_DIR, SOURCE_ROOT


def setup(tmp_path, fio_src):
    return subprocess.run(["meson", "setup", str(tmp_path / "b"), f"-Dfio_src={fio_src}"],
                          cwd=SOURCE_ROOT, capture_output=True, text=True)


def test_missing_fio_tree(tmp_path):
    proc = setup(tmp_path, tmp_path / "nowhere")
    assert proc.returncode != 0
    assert f"fio source tree not found at {tmp_path / 'nowhere'}: run ./setup" in proc.stdout + proc.stderr


def test_unconfigured_fio_tree(tmp_path):
    tree = tmp_path / "fio"
    tree.mkdir()
    shutil.copy(SOURCE_ROOT / ".deps" / "fio" / "fio.h", tree / "fio.h")
    proc = setup(tmp_path, tree)
    assert proc.returncode != 0
    assert f"{tree} is not configured (no config-host.h): run ./configure there" in proc.stdout + proc.stderr


def test_every_test_file_is_a_meson_test():
    """Meson has no glob: a test file left out of tests/meson.build would
    silently never run. Each tests/**/test_*.py is the argument of exactly
    one meson test, each test_*.c the name of one."""
    build = ENGINE_DIR.parent
    proc = subprocess.run(["meson", "introspect", "--tests", str(build)],
                          capture_output=True, text=True, check=True)
    tests = json.loads(proc.stdout)
    tests_dir = SOURCE_ROOT / "tests"
    names = [t["name"] for t in tests]
    args = [Path(a).resolve() for t in tests for a in t["cmd"][1:] if a.endswith(".py")]
    for path in sorted(tests_dir.rglob("test_*.py")):
        assert args.count(path.resolve()) == 1, f"{path.relative_to(tests_dir)} is not one meson test in tests/meson.build"
        assert str(path.relative_to(tests_dir)) in names
    for path in sorted(tests_dir.rglob("test_*.c")):
        assert names.count(str(path.relative_to(tests_dir))) == 1, \
            f"{path.relative_to(tests_dir)} is not one meson test in tests/meson.build"


def test_installed_scripts_find_the_package(tmp_path):
    """meson install puts the package mdfio in Python's purelib directory
    and tells the scripts where it is relative to themselves, so that they
    run from any --prefix or --destdir."""
    dest = tmp_path / "dest"
    subprocess.run(["meson", "install", "-C", str(ENGINE_DIR.parent), "--no-rebuild", "--destdir", str(dest)],
                   check=True, capture_output=True)
    assert list(dest.rglob("mdfio/figures.py"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for name in ("mdfio-report", "mdfio-plot"):
        [script] = dest.rglob(f"bin/{name}")
        assert os.access(script, os.X_OK)
        proc = subprocess.run([str(script), "--help"], cwd=tmp_path, env=env, capture_output=True, text=True)
        assert proc.returncode == 0 and f"usage: {name}" in proc.stdout, proc.stderr
    proc = subprocess.run([str(script.with_name("mdfio-report")), "-"], input="{}", cwd=tmp_path, env=env,
                          capture_output=True, text=True)
    assert proc.returncode == 2 and proc.stderr.startswith("mdfio-report: <stdin>: "), proc.stderr
