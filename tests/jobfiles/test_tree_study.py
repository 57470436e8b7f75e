"""jobfiles/tree-study.fio run as users run it: plain fio on the default
tree, the one ./setup installs (Perl's modules, /usr/share/perl), with the
study's 100 readers, then mdfio-report on its JSON."""
import os
import subprocess
import sys

import pytest

from conftest import SOURCE_ROOT, engine_path, run_fio

JOBFILE = SOURCE_ROOT / "jobfiles" / "tree-study.fio"
DEFAULT_TREE = "/usr/share/perl"


def jobtext():
    text = JOBFILE.read_text()
    line = "ioengine=external:./build/engines/mdfio-tree.so"
    assert line in text
    return text.replace(line, f"ioengine=external:{engine_path('tree')}")


def count(*args):
    out = subprocess.run(["find", *args, "-print0"], capture_output=True, check=True).stdout
    return out.count(b"\0")


def test_the_study_on_the_default_tree(tmp_path):
    if not os.path.isdir(DEFAULT_TREE):
        pytest.fail(f"{DEFAULT_TREE} is missing: ./setup installs it (Debian's perl)")
    root = tmp_path / "fs"
    root.mkdir()
    env = {"TREE_ROOT": str(root), "TREE_DROP_CACHES": "1" if os.geteuid() == 0 else "0"}
    run = run_fio(jobtext(), tmp_path, env=env, args=["--output-format=json+"], check=True, timeout=300)
    names = count(DEFAULT_TREE, "-mindepth", "1")
    files = count(DEFAULT_TREE, "-type", "f")
    by = {}
    for j in run.jobs():
        by.setdefault(j["jobname"], []).append(j)
    assert list(by) == ["copy", "find-cold", "find-warm", "read-cold", "read-warm", "rewrite", "delete"]
    assert [len(v) for v in by.values()] == [1, 1, 1, 100, 100, 1, 1]
    assert by["copy"][0]["write"]["total_ios"] == names + 1
    assert by["find-cold"][0]["read"]["short_ios"] == names
    assert by["find-cold"][0]["write"]["short_ios"] == count(DEFAULT_TREE, "-mindepth", "1", "-iname", "*a*")
    assert sum(j["read"]["total_ios"] for j in by["read-cold"]) == files
    assert sum(j["write"]["io_bytes"] for j in by["rewrite"]) == 6144 * files
    assert os.listdir(root) == []
    report = subprocess.run([sys.executable, str(SOURCE_ROOT / "tools" / "mdfio-report"),
                             str(tmp_path / "job-0.json")], capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    rows = [line.split() for line in report.stdout.splitlines() if line and not line.startswith(" ")]
    assert [r[0] for r in rows[1:]] == list(by)
    assert [int(r[3]) for r in rows[1:]] == [names + 1, names, 10 * names, files, files, files, names + 1]
