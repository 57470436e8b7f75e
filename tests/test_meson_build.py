"""meson.build: a fio tree that cannot be built against stops `meson setup`
with a message that says what to do."""
import shutil
import subprocess

from conftest import SOURCE_ROOT


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
