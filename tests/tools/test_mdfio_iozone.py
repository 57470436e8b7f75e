"""tools/mdfio-iozone (root: tmpfs and an ext4 loop device): a small grid
run end to end, its IOzone table recomputed here from the kept fio JSON,
the page cache dropped before each test as the loop device's reads show,
--direct and --fsync in the jobfiles and the timings, the figures drawn;
the kept JSON reported and drawn again by mdfio-report and mdfio-plot;
bad input, and a damaged kept file, refused in one line."""
import json
import os
import re
import subprocess
from pathlib import Path

import pytest

from conftest import SOURCE_ROOT, mounted_tmpfs, need_root
import mdfio.plot  # noqa: E402 (conftest puts the package on the path)
import mdfio.report  # noqa: E402

TOOL = SOURCE_ROOT / "tools" / "mdfio-iozone"
REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
PLOT = SOURCE_ROOT / "tools" / "mdfio-plot"
TITLES = {"write": "Writer report", "rewrite": "Re-writer report", "read": "Reader report",
          "reread": "Re-Reader report", "randread": "Random read report", "randwrite": "Random write report"}
PASSES = list(TITLES)


def iozone(*args, user=None):
    prefix = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] if user is not None else []
    return subprocess.run([*prefix, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=300)


def by_hand(out):
    """{(pass, file KB, record KB): KB/s} from every kept JSON file of a
    sweep, as IOzone computes a rate: whole bytes per second over the I/O
    time, shifted down to KB; the time the sum of fio's I/O latencies, or
    with end_fsync fio's runtime (ms)."""
    rates = {}
    for path in out.glob("*.json"):
        doc = json.loads(path.read_text())
        glob = doc["global options"]
        for j in doc["jobs"]:
            test = j["jobname"].removeprefix("iozone-")
            slot = j["read" if test.endswith("read") else "write"]
            assert j["error"] == 0 and slot["io_bytes"] == int(glob["size"][:-1]) * 1024, (path, j)
            if j["job options"].get("end_fsync") == "1":
                seconds = slot["runtime"] / 1000
            else:
                seconds = slot["lat_ns"]["mean"] * slot["lat_ns"]["N"] / 1e9
            key = (test, int(glob["size"][:-1]), int(glob["bs"][:-1]))
            rates[key] = int(slot["io_bytes"] / seconds) >> 10
    return rates


def parse_table(text):
    """{(pass, file KB, record KB): KB/s} of IOzone's -R tables in text,
    and the record sizes each table's head line names."""
    found, heads = {}, {}
    title_of = {v: k for k, v in TITLES.items()}
    blocks = text.split("Excel output is below:\n", 1)[1].strip("\n").split("\n\n")
    for block in blocks:
        title, head, *rows = block.split("\n")
        test = title_of[title.strip('"')]
        assert head.startswith("      "), block
        heads[test] = [int(r) for r in re.findall(r'  "([0-9]+)"', head)]
        for row in rows:
            m = re.fullmatch(r'"([0-9]+)"  ((?: [0-9]+ )+)', row)
            assert m, row
            for record, value in zip(heads[test], m.group(2).split()):
                found[(test, int(m.group(1)), record)] = int(value)
    return found, heads


def test_sweep_on_tmpfs(tmpfs, tmp_path):
    """A grid of 2 file sizes by 2 record sizes: every test's table equals
    the rates recomputed from the kept JSON, a record larger than the file
    is skipped, both figures of every pass are drawn, and the test file is
    gone afterwards."""
    out = tmp_path / "out"
    proc = iozone("-n", 8, "-g", 16, "-y", 8, "-q", 16, "--directory", tmpfs, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"mdfio-iozone: fio psync on {tmpfs}, buffered, page cache dropped before "
                                  "each test\n"), proc.stdout
    table, heads = parse_table(proc.stdout)
    assert list(heads) == PASSES and all(h == [8, 16] for h in heads.values()), heads
    # 8 KB files: records of 8 KB only; 16 KB files: 8 and 16
    assert sorted({k[1:] for k in table}) == [(8, 8), (16, 8), (16, 16)], table
    assert table == by_hand(out)
    assert all(v > 0 for v in table.values()), table
    assert not (tmpfs / "mdfio-iozone.tmp").exists()
    figures(out)
    # the kept JSON gives the same report through mdfio-report, and the
    # same figures through mdfio-plot
    kept = sorted(out.glob("*.json"))
    assert len(kept) == 3 * 3, kept
    again = subprocess.run([str(REPORT), *kept], capture_output=True, text=True, timeout=120)
    assert (again.returncode, again.stdout, again.stderr) == (0, proc.stdout, ""), again
    # (the files of test 0 only: fewer figures to wait for)
    drawn = subprocess.run([str(PLOT), *out.glob("*-write.json"), "--out", tmp_path / "figures"],
                           capture_output=True, text=True, timeout=120)
    assert drawn.returncode == 0, drawn.stderr
    assert sorted(p.name for p in (tmp_path / "figures").glob("*.png")) == [
        "rewrite-curves.png", "rewrite-surface.png", "write-curves.png", "write-surface.png"]
    for name in ("write.dat", "rewrite-record-8k.dat", "rewrite-curves.gp"):
        assert (out / name).read_text() == (tmp_path / "figures" / name).read_text().replace(
            str(tmp_path / "figures"), str(out))
    # the history keeps the sweep (tests/tools/test_workload_history.py
    # checks its rows), the report printed as without --record
    kept_run = subprocess.run([str(REPORT), "--record", tmp_path / "h.db", *kept], capture_output=True, text=True)
    assert (kept_run.returncode, kept_run.stderr) == (0, f"mdfio-report: recorded run 1 in {tmp_path / 'h.db'}\n")
    assert kept_run.stdout == subprocess.run([str(REPORT), *kept], capture_output=True, text=True).stdout
    csv = subprocess.run([str(REPORT), "--csv", *kept], capture_output=True, text=True)
    assert (csv.returncode, csv.stderr) == (2, "mdfio-report: --format csv: an IOzone sweep (mdfio-iozone) is "
                                               "reported as IOzone's table, or --json\n"), csv
    first = out / "16k-16k-write.json"
    twice = subprocess.run([str(REPORT), first, first], capture_output=True, text=True)
    assert (twice.returncode, twice.stderr) == (2, f"mdfio-report: {first}: given twice\n"), twice
    # files of two sweeps are not one table
    other = tmp_path / "other.json"
    other.write_text(first.read_text())
    mixed = subprocess.run([str(REPORT), first, other], capture_output=True, text=True)
    assert (mixed.returncode, mixed.stderr) == (2, f"mdfio-report: files of different sweeps: write of a 16 KB file "
                                                   f"in 16 KB records in {first} and {other}\n"), mixed


def figures(out):
    """Both figures of every pass are in out, as PNG and SVG."""
    for p in PASSES:
        for kind in ("surface", "curves"):
            png = out / f"{p}-{kind}.png"
            assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n", png
            assert (out / f"{p}-{kind}.svg").stat().st_size > 1000


def loop_sectors_read(mnt):
    """Sectors read from the loop device mounted at mnt so far."""
    with open("/proc/self/mounts") as f:
        dev = next(line.split()[0] for line in f if line.split()[1] == str(mnt))
    return int(Path(f"/sys/block/{os.path.basename(dev)}/stat").read_text().split()[2])


def test_on_ext4(loopfs, tmp_path):
    """On ext4, the read test after the write test reads the file from the
    loop device when the cache was dropped between them, and from the
    page cache, reading next to nothing from the device, when it was not
    (--no-drop-caches). --direct gives fio direct=1; --fsync ends each
    write pass with fio's end_fsync, and its rate is then timed by fio's
    runtime, which holds the fsync."""
    need_root("drops the page cache")
    mnt = loopfs("ext4", "64M")
    size_kb = 4096
    reads = {}
    for drop in (True, False):
        out = tmp_path / f"out-{drop}"
        before = loop_sectors_read(mnt)
        proc = iozone("-n", size_kb, "-g", size_kb, "-y", 1024, "-q", 1024, "-i", 0, "-i", 1, "--directory", mnt,
                      "--out", out, "--json", *(() if drop else ("--no-drop-caches",)))
        assert proc.returncode == 0, proc.stderr
        reads[drop] = loop_sectors_read(mnt) - before
        doc = json.loads(proc.stdout)
        assert doc["cache_dropped"] == drop
        assert [c["test"] for c in doc["cells"]] == ["write", "rewrite", "read", "reread"], doc
        assert {(c["test"], c["file_kb"], c["record_kb"]): c["kb_per_s"] for c in doc["cells"]} == by_hand(out)
    file_sectors = size_kb * 2
    assert reads[True] >= file_sectors, reads
    assert reads[False] < file_sectors // 4, reads

    out = tmp_path / "out-direct"
    proc = iozone("-n", 256, "-g", 256, "-y", 64, "-q", 64, "-i", 0, "-i", 2, "--directory", mnt, "--out", out,
                  "--direct", "--fsync", "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    timed = {c["test"]: c["timed_by"] for c in doc["cells"]}
    assert timed == {"write": "fio runtime (ms), end fsync included",
                     "rewrite": "fio runtime (ms), end fsync included",
                     "randread": "sum of I/O latencies (lat_ns)",
                     "randwrite": "fio runtime (ms), end fsync included"}, timed
    assert {(c["test"], c["file_kb"], c["record_kb"]): c["kb_per_s"] for c in doc["cells"]} == by_hand(out)
    for job in out.glob("*.fio"):
        text = job.read_text()
        assert "\ndirect=1\n" in text, text
        writes = text.count("\nrw=write\n") + text.count("\nrw=randwrite\n")
        assert text.count("\nend_fsync=1\n") == writes, text


@pytest.mark.parametrize("args, line", [
    (["-n", "100"], "mdfio-iozone: argument -n: expected a power of 2 in KB (64, 512k, 16m, 1g), not '100' "
                    "(see mdfio-iozone --help)"),
    (["-y", "2"], "mdfio-iozone: -y 2: expected a record size of at least 4 KB, as IOzone's"),
    (["-q", "32m"], "mdfio-iozone: -q 32768: expected a record size of at most 16384 KB, as IOzone's"),
    (["-n", "256", "-g", "128"], "mdfio-iozone: -n 256 is above -g 128: expected -n <= -g"),
    (["-n", "2", "-g", "64"], "mdfio-iozone: -n 2: below the smallest record size (-y 4): expected -n >= -y, "
                              "so that every file of the grid holds a record"),
    (["-i", "1"], "mdfio-iozone: -i: expected test 0 (write) among the tests: the others read and write its "
                  "file, as in IOzone"),
    (["-i", "3"], "mdfio-iozone: argument -i: invalid choice: 3 (choose from 0, 1, 2) (see mdfio-iozone --help)"),
    (["--directory", "/nonexistent"], "mdfio-iozone: --directory /nonexistent: cannot use it: No such file or "
                                      "directory"),
    (["--directory", "/dev/null"], "mdfio-iozone: --directory /dev/null: not a directory"),
])
def test_bad_input(args, line, tmp_path):
    proc = iozone(*args, "--out", tmp_path / "out")
    assert (proc.returncode, proc.stderr, proc.stdout) == (2, line + "\n", ""), proc
    assert not (tmp_path / "out").exists()


def test_a_file_not_its_own_is_kept(tmp_path):
    """A file of the test file's name in --directory is not the tool's: it
    is refused, and left as it was."""
    theirs = tmp_path / "mdfio-iozone.tmp"
    theirs.write_text("theirs")
    proc = iozone("-n", 64, "-g", 64, "--directory", tmp_path, "--out", tmp_path / "out", "--no-drop-caches")
    assert (proc.returncode, proc.stderr) == (2, f"mdfio-iozone: --directory {tmp_path}: mdfio-iozone.tmp is "
                                                 "there already; not the tool's to overwrite: remove it, or give "
                                                 "another directory\n"), proc
    assert theirs.read_text() == "theirs"


def test_out_not_empty(tmp_path):
    """--out that holds anything is refused, and left as it was: the
    sweep's file names could be another's."""
    out = tmp_path / "out"
    out.mkdir()
    (out / "write.dat").write_text("theirs")
    proc = iozone("-n", 64, "-g", 64, "--directory", tmp_path, "--out", out, "--no-drop-caches")
    assert (proc.returncode, proc.stderr) == (2, f"mdfio-iozone: --out {out}: not empty: expected a new or empty "
                                                 "directory for the sweep's files\n"), proc
    assert [p.name for p in out.iterdir()] == ["write.dat"] and (out / "write.dat").read_text() == "theirs"
    assert not (tmp_path / "mdfio-iozone.tmp").exists()


def test_a_pass_short_of_its_file(tmp_path):
    """A file system too small for the file: fio writes what fits and
    exits 0; the sweep stops there, exit status 1, naming the kept JSON."""
    with mounted_tmpfs("size=32k") as small:
        proc = iozone("-n", 64, "-g", 64, "-y", 64, "-q", 64, "--directory", small, "--out", tmp_path / "out",
                      "--no-drop-caches")
        assert not (small / "mdfio-iozone.tmp").exists()
    json_file = tmp_path / "out" / "64k-64k-write.json"
    assert (proc.returncode, proc.stdout) == (1, ""), proc
    assert re.fullmatch(f"mdfio-iozone: {json_file}: job iozone-write: moved [0-9]+ of the file's 65536 bytes, "
                        r"fio error [0-9]+: the pass did not complete \(a full file system\?\)\n", proc.stderr), proc


def test_no_right_to_drop_caches(tmp_path):
    """As a user who cannot drop the page cache, the sweep is refused in
    one line rather than run without the drop it says it makes."""
    need_root("runs the tool as another user")
    # refused before anything is written: neither in /tmp nor in --out,
    # which that user may not even reach
    proc = iozone("-n", 64, "-g", 64, "--directory", "/tmp", "--out", tmp_path / "out", user=65534)
    assert (proc.returncode, proc.stdout) == (2, ""), proc
    assert proc.stderr == ("mdfio-iozone: --drop-caches: cannot write /proc/sys/vm/drop_caches (run as root, "
                           "or give --no-drop-caches to measure with what the cache holds)\n"), proc.stderr
    assert not (tmp_path / "out").exists()


def damaged(doc, how):
    """A copy of a sweep's fio document with one thing broken."""
    doc = json.loads(json.dumps(doc))
    j = doc["jobs"][0]
    if how == "no lat_ns":
        del j["write"]["lat_ns"]
    elif how == "negative bytes":
        j["write"]["io_bytes"] = -1
    elif how == "mean a string":
        j["write"]["lat_ns"]["mean"] = "fast"
    elif how == "no size":
        del doc["global options"]["size"]
    elif how == "unknown pass":
        j["jobname"] = "iozone-backward"
    elif how == "direct not a boolean":
        doc["global options"]["direct"] = "maybe"
    elif how == "short":
        j["write"]["io_bytes"] //= 2
    return doc


@pytest.mark.parametrize("how, said", [
    ("no lat_ns", "job 0: write: no 'lat_ns'"),
    ("negative bytes", "job 0: write: 'io_bytes' is -1, expected a non-negative integer"),
    ("mean a string", "job 0: write: lat_ns: 'mean' is 'fast', expected a non-negative number"),
    ("no size", "job iozone-write: size='', expected a size in bytes above 0"),
    ("unknown pass", "job iozone-backward: expected one of iozone-write, iozone-rewrite, iozone-read, "
                     "iozone-reread, iozone-randread, iozone-randwrite"),
    ("direct not a boolean", "job iozone-write: direct='maybe', expected 0 or 1"),
    ("short", "job iozone-write: moved 4096 of the file's 8192 bytes, fio error 0: the pass did not complete "
              "(a full file system?)"),
])
def test_damaged_sweep_json(how, said, tmp_path, capsys):
    """A kept file of a sweep that fio did not write so is refused by
    mdfio-report and mdfio-plot in one line naming it and what is wrong."""
    doc = {"fio version": "fio-3.33", "timestamp": 1, "global options": {
               "ioengine": "psync", "filename": "/mnt/mdfio-iozone.tmp", "size": "8k", "bs": "4k",
               "invalidate": "0", "fallocate": "none", "direct": "0"},
           "jobs": [{"jobname": f"iozone-{p}", "groupid": i, "error": 0, "desc": "", "job options": {"rw": "write"},
                     **{slot: {"io_bytes": 8192 if slot == "write" else 0, "runtime": 1,
                               "lat_ns": {"min": 1, "max": 9, "mean": 500.0, "N": 2}} for slot in ("read", "write")},
                     "trim": {}, "sync": {}}
                    for i, p in enumerate(("write", "rewrite"))]}
    path = tmp_path / "8k-4k-write.json"
    path.write_text(json.dumps(doc))
    assert mdfio.report.main([str(path)]) == 0
    # 8192 bytes in 2 I/Os of 500 ns: 8192e9 bytes/s, >> 10
    assert '"8"   8000000 \n' in capsys.readouterr().out
    path.write_text(json.dumps(damaged(doc, how)))
    for name, main, args in (("mdfio-report", mdfio.report.main, []),
                             ("mdfio-plot", mdfio.plot.main, ["--out", str(tmp_path / "figures")])):
        rc = main([str(path), *args])
        out, err = capsys.readouterr()
        assert (rc, out) == (2, ""), (name, out, err)
        assert err.startswith(f"{name}: {path}: ") and err.count("\n") == 1, err
        assert said in err, err
