"""bench/run on its tiny configuration: the harness runs and prints every
table. Speed is never asserted here; bench/run itself measures it."""
import os
import re
import subprocess

import pytest

from conftest import ENGINE_DIR, SOURCE_ROOT, io_uring_missing, need_root


@pytest.mark.skipif(bool(os.environ.get("MDFIO_PRELOAD")),
                    reason="benchmarks measure the normal build; a sanitized one means nothing")
def test_quick_bench_prints_every_table(request):
    need_root("bench/run mounts tmpfs and ext4")
    if io_uring_missing():
        pytest.skip(f"bench/run measures mdfio-uring: {io_uring_missing()}")
    # bench/run builds the patched fio too: the fixture builds it once, under
    # a lock, while other test files may want it; bench/run then reuses it
    request.getfixturevalue("nr_ios_fio")
    env = dict(os.environ, MDFIO_BUILD=str(ENGINE_DIR.parent))
    proc = subprocess.run([str(SOURCE_ROOT / "bench" / "run"), "--quick"], capture_output=True,
                          text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    pairs = out[out.index("### Engines against the bare loop"):]
    pairs = pairs[:pairs.index("\n### ")]
    assert len(re.findall(r"^\| (tmpfs|ext4) \| (mdfio-posix|mdfio-uring qd=1|mdfio-aio qd=1|loop \+ timer) \| "
                          r"[0-9.]+ \[[0-9.]+, [0-9.]+\]", pairs, re.M)) == 8, out
    # free page reporting: the machine's setting and held back, or why not
    ratio = r"[0-9.]+ \[[0-9.]+, [0-9.]+\]"     # median [min, max], of ratios or seconds
    assert (len(re.findall(rf"^\| \d+ \| {ratio} \| {ratio} \| {ratio} \| {ratio} \| \d+ \|$", out, re.M)) == 2
            or "nothing to measure" in out), out
    # the fio patch: three fio builds against the loop, then instructions
    patched = out[out.index("### mdfio-posix in a fio that counts several I/Os per io_u"):]
    patched = patched[:patched.index("\n### ")]
    assert len(re.findall(rf"^\| (Debian's fio 3\.33|fio 3\.33 built from its source|the same \+ io_u-nr-ios\.patch) "
                          rf"\| {ratio} \| {ratio} \| {ratio} \|$", patched, re.M)) == 3, out
    assert len(re.findall(r"^\| (bare loop|fio 3\.33 built from its source|the same \+ io_u-nr-ios\.patch) "
                          r"\| -?\d+ \| -?\d+ \|$", patched, re.M)) == 3, out
    assert "Reproduce: `bench/run --only fio-patch --pairs 2 --quick`" in patched, out
    out = out.replace(patched, "")
    # uring's features and the cost of a step (net of fio's start-up, which
    # at --quick's size, and GNU time's 10 ms resolution, can go negative)
    cost = r"-?[0-9.]+ \[-?[0-9.]+, -?[0-9.]+\]"
    assert len(re.findall(rf"^\| mdfio-(uring qd=(16|1) [a-z_=01]+|posix|aio qd=16 direct=1) \| .* \| "
                          rf"{cost} \| {cost} \|$", out, re.M)) == 7, out
    # handoffs to io-wq: a row per variant, or a line saying why there are none
    handoffs = re.findall(r"^\| qd=(1|16|16 linked=0) \| \d+\.\d\d \| \d+\.\d\d \| ([A-Z_]+ \d+\.\d\d(, )?)* \|$",
                          out, re.M)
    assert len(handoffs) == 3 or "io_uring tracepoints unavailable" in out, out
    # engines: one table per file system, a row of posix's objects/s and
    # uring and aio at --quick's depths as ratios to it
    assert len(re.findall(r"^\| (tmpfs|ext4|xfs) \| mdfio-posix \(objects/s\) \| \d+ \| \d+ \| \d+ \|$",
                          out, re.M)) == 3, out
    row = rf"^\| (tmpfs|ext4|xfs) \| mdfio-(uring|aio) qd=(1|4) \| {ratio} \| {ratio} \| {ratio} \|$"
    assert len(re.findall(row, out.replace(pairs, ""), re.M)) == 12, out
    assert len(re.findall(r"Reproduce: `bench/run --only engines --engine-fs (tmpfs|ext4|xfs) [^`]*--quick`",
                          out)) == 3, out
    assert len(re.findall(r"^\| tmpfs \| \d+ \| \d+ \| \d+ \| \d+ \| \d+ \| \d+ \| \d+ \| \d+ \|$", out, re.M)) == 2, out
    # --quick's instruction counts span a few dozen units, so fio's
    # timing-dependent clock calibration can even make them negative
    assert re.search(r"^\| bare loop \| -?\d+ \| -?\d+ \|$", out, re.M), out
    assert re.search(r"^\| mdfio-posix in fio \| -?\d+ \| -?\d+ \|$", out, re.M), out
    assert len(re.findall(r"^\| `[^`]+` \| -?\d+ \|$", out, re.M)) == 5, out
