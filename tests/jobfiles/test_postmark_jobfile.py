"""jobfiles/postmark.fio run as users run it: postmark's parameters from
PM_* variables, and PM_IO and PM_IODEPTH choosing the issue path and the
operations in flight (docs/postmark.md); a bad PM_IODEPTH in one line;
PM_HOSTS and PM_JOIN_TIMEOUT reach the engine's hosts= and join_timeout=."""
import socket
import sys

from conftest import SOURCE_ROOT, engine_path, run_fio

sys.path.insert(0, str(SOURCE_ROOT / "tools"))
from mdfio import fiojson  # noqa: E402

JOBFILE = SOURCE_ROOT / "jobfiles" / "postmark.fio"
SMALL = {"PM_FILES": "40", "PM_TRANSACTIONS": "300", "PM_SUBDIRS": "3", "PM_SIZE_HIGH": "3000"}


def jobtext():
    text = JOBFILE.read_text()
    line = "ioengine=external:./build/engines/mdfio-postmark.so"
    assert line in text
    return text.replace(line, f"ioengine=external:{engine_path('postmark')}")


def run(tmp_path, name, check=True, **env):
    root = tmp_path / name
    root.mkdir()
    result = run_fio(jobtext(), tmp_path, env={**SMALL, "PM_ROOT": str(root), **env}, check=check, timeout=120)
    return root, result


def depths(result, phase):
    job, = result.jobs(phase)
    return {k: v for k, v in job["iodepth_level"].items() if v}


def test_sync_by_default_uring_by_pm_io(tmp_path):
    root, sync = run(tmp_path, "sync")
    assert not any(root.iterdir())
    assert all(depths(sync, ph) == {"1": 100.0} for ph in ("pool", "transactions", "delete"))
    root, uring = run(tmp_path, "uring", PM_IO="uring", PM_IODEPTH="8", PM_BUFFERING="false")
    assert not any(root.iterdir())
    assert "8" in depths(uring, "pool"), depths(uring, "pool")
    counts = [[{op: p.latency[op].n for op in fiojson.POSTMARK_OPS} for p in fiojson.postmark_phases(r.json, n)]
              for r, n in ((sync, "sync"), (uring, "uring"))]
    assert counts[0] == counts[1] and counts[0][0]["create"] == 40
    assert not any(sum(p.errors.values()) for r in (sync, uring) for p in fiojson.postmark_phases(r.json, "run"))


def test_bad_iodepth_one_line(tmp_path):
    root, bad = run(tmp_path, "bad", check=False, PM_IODEPTH="many")
    assert bad.rc != 0
    lines = set(bad.mdfio_lines())
    assert len(lines) == 1 and "pm_iodepth=many|1: expected an integer from 1 to 65536" in lines.pop(), bad.stderr
    assert not any(root.iterdir())


def test_pm_hosts_and_pm_join_timeout_reach_the_engine(tmp_path):
    """Unset, they run this host alone (test above); set, the engine reads
    them: a list without this host, and a bad timeout with this host
    listed, each its one line, nothing made."""
    root, bad = run(tmp_path, "other", check=False, PM_HOSTS="other-host.invalid")
    lines = set(bad.mdfio_lines())
    assert bad.rc != 0 and len(lines) == 1, bad.stderr
    assert f"hosts=other-host.invalid: this host ({socket.gethostname()}) is not listed" in lines.pop()
    assert not any(root.iterdir())
    root, bad = run(tmp_path, "timeout", check=False, PM_HOSTS=socket.gethostname(), PM_JOIN_TIMEOUT="0")
    lines = set(bad.mdfio_lines())
    assert bad.rc != 0 and len(lines) == 1 and "join_timeout=0|60" in lines.pop(), bad.stderr
    assert not any(root.iterdir())
