"""bench/results/README.md indexes every result file once, and its commit
column is each file's `git log --format=%h -1 -- FILE`: a rebase that
rewrites the commit, or a rerun committed without its row, is caught here
rather than by a reader following a hash that names nothing."""
import re
import shutil
import subprocess

import pytest

from conftest import SOURCE_ROOT

RESULTS = SOURCE_ROOT / "bench" / "results"


def index_rows():
    """(files, commit) of each row of the index."""
    rows = []
    for line in (RESULTS / "README.md").read_text().splitlines():
        if line.startswith("| ["):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            rows.append((re.findall(r"\]\(([^)]+)\)", cells[0]), cells[-1]))
    return rows


def test_every_result_file_has_one_row_and_every_row_a_file():
    listed = [f for files, _ in index_rows() for f in files]
    assert len(listed) == len(set(listed)), [f for f in listed if listed.count(f) > 1]
    on_disk = {p.name for p in RESULTS.iterdir() if p.name != "README.md"}
    assert set(listed) == on_disk, (sorted(on_disk - set(listed)), sorted(set(listed) - on_disk))


def test_each_rows_commit_is_the_one_that_last_changed_its_files():
    if not (SOURCE_ROOT / ".git").exists() or not shutil.which("git"):
        pytest.skip("not a git checkout: the commits cannot be looked up")
    for files, commit in index_rows():
        for f in files:
            last = subprocess.run(["git", "-C", str(RESULTS), "log", "--format=%h", "-1", "--", f],
                                  capture_output=True, text=True, check=True).stdout.strip()
            if not last:
                pytest.skip(f"{f} has no commit in this checkout (a shallow clone)")
            assert last.startswith(commit) or commit.startswith(last), (f, commit, last)
