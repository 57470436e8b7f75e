"""PostMark's sequence of operations (engines/lib/postmark.c) against
Debian's postmark: for the same parameters and seed, the same files created,
read, appended and deleted, in the same order, under the same names (from
strace of postmark), the same counts and byte totals in its report; and the
same sequence on every run of the generator."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SOURCE_ROOT

sys.path.insert(0, str(SOURCE_ROOT / "tools"))
from mdfio import postmark as pm  # noqa: E402

SEQUENCE = Path(os.environ.get("MDFIO_TEST_LIB_DIR", SOURCE_ROOT / "build" / "tests")) / "postmark_sequence"

# (postmark's commands, the generator's parameters): the defaults, each
# command away from its default, a pool that runs out of files, a file
# table that fills up, appends that meet the high bound
CASES = {
    "defaults": ([], {}),
    "subdirectories, unbuffered": (
        ["set number 40", "set transactions 300", "set subdirectories 4", "set buffering false",
         "set read 100", "set write 700", "set seed 1234"],
        dict(number=40, transactions=300, subdirectories=4, buffered=0, read_block=100,
             write_block=700, seed=1234)),
    "appends to the bound": (
        ["set size 100 130", "set number 30", "set transactions 400", "set bias read 0", "set seed 7"],
        dict(size_low=100, size_high=130, number=30, transactions=400, bias_read=0, seed=7)),
    "fixed size, creates only": (
        ["set size 2000", "set number 6", "set transactions 200", "set bias create 10", "set bias read -1"],
        dict(size_low=2000, size_high=2000, number=6, transactions=200, bias_create=10, bias_read=-1)),
    "out of files": (
        ["set number 10", "set transactions 100", "set bias create 0", "set seed 99"],
        dict(number=10, transactions=100, bias_create=0, seed=99)),
    "one subdirectory, reads only": (
        ["set number 50", "set transactions 100", "set subdirectories 1", "set bias read 10",
         "set bias create -1"],
        dict(number=50, transactions=100, subdirectories=1, bias_read=10, bias_create=-1)),
}


def sequence(**params):
    out = subprocess.run([SEQUENCE, *(f"{k}={v}" for k, v in params.items())],
                         capture_output=True, text=True, check=True, timeout=60).stdout
    lines = out.splitlines()
    ops = [tuple(line.split()) for line in lines[:-2]]
    c = lines[-2].split()
    counts = {c[i]: int(c[i + 1]) for i in range(1, len(c), 2)}
    b = lines[-1].split()
    return ops, counts, float(b[2]), float(b[4])


def report_counts(text):
    """The counters of postmark's verbose report."""
    lines = [line.strip() for line in text[text.index("Files:"):text.index("Data:")].splitlines()]
    first = [int(line.split()[0]) for line in lines if line and line[0].isdigit()]
    alone = [int(line.split(":")[1].split()[0]) for line in lines if line.startswith("Deletion alone")]
    return dict(zip(("created", "read", "appended", "deleted"), first), deleted_alone=alone[0])


@pytest.mark.parametrize("case", CASES)
def test_postmark_makes_the_same_operations(case, postmark, tmp_path):
    commands, params = CASES[case]
    loc = tmp_path / "loc"
    loc.mkdir()
    stdout, made = postmark(commands, loc)
    ops, counts, bytes_read, bytes_written = sequence(**params)
    assert [(kind, name) for _, kind, name, *_ in ops] == made
    assert not any(loc.iterdir())
    if counts["out_of_files"]:
        assert pm.OUT_OF_FILES in stdout and "Time:" not in stdout
        return
    assert "out of files" not in stdout
    want = report_counts(stdout)
    assert {k: counts[k] for k in want} == want
    data = stdout[stdout.index("Data:"):].splitlines()
    assert data[1].split(" read ")[0].strip() == pm.scalef(bytes_read)
    assert data[2].split(" written ")[0].strip() == pm.scalef(bytes_written)


def test_phases_and_counts_follow_the_parameters():
    ops, counts, _, _ = sequence(number=25, transactions=80, subdirectories=3, seed=5)
    phases = [phase for phase, *_ in ops]
    pool = ops[:phases.index("transactions")]
    assert len(pool) == 25 and {kind for _, kind, *_ in pool} == {"create"}
    assert [op[2].split("/")[1] for op in pool] == [str(i) for i in range(1, 26)]
    deletion = [op for op in ops if op[0] == "deletion"]
    assert {kind for _, kind, *_ in deletion} == {"delete"} and len(deletion) == counts["deleted_alone"]
    made = [name for _, kind, name, *_ in ops if kind == "create"]
    gone = [name for _, kind, name, *_ in ops if kind == "delete"]
    assert len(made) == counts["created"] and sorted(made) == sorted(gone) and len(set(made)) == len(made)
    for _, kind, name, size, *_ in ops:
        assert name.split("/")[0] in ("s0", "s1", "s2")
        if kind == "create":
            assert 500 <= int(size) < 10000
    trans = [op for op in ops if op[0] == "transactions"]
    assert len(trans) <= 2 * 80
    assert counts["read"] + counts["appended"] == sum(op[1] in ("read", "append") for op in trans)


def test_each_operation_names_the_last_one_on_its_file():
    """What an engine with several operations in flight orders by: each
    operation's after is the seq of the one before it on the same file."""
    ops, _, _, _ = sequence(number=15, transactions=400, subdirectories=2, bias_read=3, seed=8)
    last = {}
    for i, (_, kind, name, _, seq, after) in enumerate(ops, 1):
        assert int(seq) == i and int(after) == last.get(name, 0)
        assert (kind == "create") == (name not in last)
        last[name] = i


def test_same_seed_same_sequence_other_seed_another():
    a = sequence(number=30, transactions=200, seed=11)
    assert sequence(number=30, transactions=200, seed=11) == a
    assert sequence(number=30, transactions=200, seed=12)[0] != a[0]


@pytest.mark.parametrize("arg, why", [
    ("size_low=0", "size: expected a low bound"), ("size_high=1", "size: expected a low bound"),
    ("number=0", "number: expected"), ("bias_read=11", "bias: expected"), ("seed=0", "seed: expected"),
])
def test_bad_parameters_one_line(arg, why):
    proc = subprocess.run([SEQUENCE, arg], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and why in proc.stderr
