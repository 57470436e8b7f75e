"""The Debian package: packaging/check-deb builds it with dpkg-buildpackage
from a clean copy of the tree (~40 s), checks its files and its exact
dependency on the installed fio, and runs the packaged jobfile with the
packaged engines and mdfio-report, unpacked, without installing it."""
import os
import shutil
import subprocess

import pytest

from conftest import SOURCE_ROOT, io_uring_missing


def test_check_deb(tmp_path):
    if os.environ.get("MDFIO_PRELOAD"):
        pytest.skip("the package is a build of its own, not the sanitized one under test")
    for tool in ("dpkg-buildpackage", "dh"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (./setup installs dpkg-dev and debhelper)")
    env = dict(os.environ, TMPDIR=str(tmp_path))
    if io_uring_missing():
        env["MDFIO_CHECK_DEB_ENGINES"] = "posix aio"
    proc = subprocess.run([str(SOURCE_ROOT / "packaging" / "check-deb")], env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[-1] == "check-deb: ok", proc.stdout
    print(proc.stdout)
