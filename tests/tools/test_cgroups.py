"""mdfio.cgroups.MemCgroup, bench/run's cache limit: a child memory cgroup
of this process's own with the limit, the commands its wrap() runs inside
it, and removed by close() once they have gone."""
import os
import subprocess
import time

import pytest

from conftest import need_root
from mdfio.cgroups import MemCgroup


@pytest.fixture
def cgroup():
    need_root("makes a memory cgroup")
    try:
        cg = MemCgroup(64 << 20, name="mdfio-test")
    except OSError as e:
        pytest.skip(str(e))
    yield cg
    cg.close(wait=5)


def test_commands_run_inside_it_under_its_limit(cgroup):
    assert cgroup.path.name == f"mdfio-test-{os.getpid()}"
    assert int((cgroup.path / "memory.limit_in_bytes").read_text()) == 64 << 20
    inside = subprocess.run([*cgroup.wrap(), "cat", "/proc/self/cgroup"], capture_output=True, text=True,
                            check=True).stdout
    [memory] = [line for line in inside.splitlines() if "memory" in line.split(":")[1].split(",")]
    assert memory.endswith(f"/{cgroup.path.name}"), inside
    assert cgroup.close() and not cgroup.path.exists()
    assert cgroup.close()


def test_close_waits_for_its_processes_and_says_when_one_stays(cgroup):
    proc = subprocess.Popen([*cgroup.wrap(), "sleep", "60"])
    try:
        # the shell has written its pid once the cgroup lists it
        deadline = time.monotonic() + 10
        while not (cgroup.path / "cgroup.procs").read_text().strip():
            assert proc.poll() is None and time.monotonic() < deadline, "the command is not in the cgroup"
            time.sleep(0.01)
        assert cgroup.close(wait=0.3) is False and cgroup.path.exists()
    finally:
        proc.kill()
        proc.wait()
    assert cgroup.close() and not cgroup.path.exists()
