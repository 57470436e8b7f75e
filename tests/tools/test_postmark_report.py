"""mdfio.postmark.report against Debian's postmark: its report, line for
line, from the counts of the same run (engines/lib/postmark.c's) and whole
seconds that sum to postmark's own; and the rules of its layout (a zero
second counts as one, integer rates, float byte totals, the units)."""
import itertools
import os
import subprocess
from pathlib import Path

import pytest

from conftest import SOURCE_ROOT
from mdfio import postmark as pm

SEQUENCE = Path(os.environ.get("MDFIO_TEST_LIB_DIR", SOURCE_ROOT / "build" / "tests")) / "postmark_sequence"


def counted(**params):
    out = subprocess.run([SEQUENCE, *(f"{k}={v}" for k, v in params.items())],
                         capture_output=True, text=True, check=True, timeout=60).stdout.splitlines()
    c, b = out[-2].split(), out[-1].split()
    counts = {c[i]: int(c[i + 1]) for i in range(1, len(c), 2)}
    return counts, float(b[2]), float(b[4])


def run_of(params, counts, bytes_read, bytes_written, pool, trans, deletion):
    return pm.Run(number=params.get("number", 500), transactions=params.get("transactions", 500),
                  created=counts["created"], read=counts["read"], appended=counts["appended"],
                  deleted=counts["deleted"], deleted_alone=counts["deleted_alone"],
                  bytes_read=bytes_read, bytes_written=bytes_written, start=1000, t_start=1000 + pool,
                  t_end=1000 + pool + trans, end=1000 + pool + trans + deletion,
                  out_of_files=bool(counts["out_of_files"]))


@pytest.mark.parametrize("commands, params", [
    ([], {}),
    (["set size 5000 300000", "set number 100", "set transactions 1000", "set seed 3"],
     dict(size_low=5000, size_high=300000, number=100, transactions=1000, seed=3)),
    (["set size 10 40", "set number 20", "set transactions 60", "set bias read 2"],
     dict(size_low=10, size_high=40, number=20, transactions=60, bias_read=2)),
])
def test_postmarks_report_line_for_line(commands, params, postmark, tmp_path):
    loc = tmp_path / "loc"
    loc.mkdir()
    stdout, _ = postmark(commands, loc)
    theirs = stdout[stdout.index("Time:"):]
    total = int(theirs.split("\n")[1].split()[0])
    counts, bytes_read, bytes_written = counted(**params)
    # postmark prints its total but not how its seconds fell: one split of
    # them gives its report exactly
    splits = [s for s in itertools.product(range(total + 1), repeat=3) if sum(s) in (total, 0)]
    ours = {pm.report(run_of(params, counts, bytes_read, bytes_written, *s)) for s in splits}
    assert theirs in ours


def test_layout_and_rounding():
    r = pm.Run(number=1000, transactions=5000, created=3500, read=2400, appended=2550, deleted=3500,
               deleted_alone=1010, bytes_read=12_000_000.0, bytes_written=512.0,
               start=100, t_start=100, t_end=107, end=110)
    assert pm.report(r) == (
        "Time:\n\t10 seconds total\n\t7 seconds of transactions (714 per second)\n\nFiles:\n"
        "\t3500 created (350 per second)\n\t\tCreation alone: 1000 files (1000 per second)\n"
        "\t\tMixed with transactions: 2500 files (357 per second)\n\t2400 read (342 per second)\n"
        "\t2550 appended (364 per second)\n\t3500 deleted (350 per second)\n"
        "\t\tDeletion alone: 1010 files (336 per second)\n"
        "\t\tMixed with transactions: 2490 files (355 per second)\n\nData:\n"
        "\t11.44 megabytes read (1.14 megabytes per second)\n"
        "\t0.50 kilobytes written (0.05 kilobytes per second)\n")
    assert pm.scalef(0.0) == "0.000000 bytes"
    assert pm.scalef(1048576.0) == "1024.00 kilobytes"
    assert pm.f32(16777217.0) == 16777216.0
    r.out_of_files = True
    assert pm.report(r) == pm.OUT_OF_FILES
