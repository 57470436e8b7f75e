"""tools/mdfio-plot on real runs: the data behind every figure against the
logs and the report, gnuplot's PNGs decoded, and bad input."""
import json
import math
import os
import shutil
import struct
import subprocess
import zlib
from pathlib import Path

import pytest

from conftest import SOURCE_ROOT, job, need_root, run_fio

PLOT = SOURCE_ROOT / "tools" / "mdfio-plot"
REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
OPS = ("create", "stat", "read", "delete")


def png_size(path):
    """Decodes a PNG far enough to know it is whole: chunk CRCs, and the
    inflated image data matching width x height."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        assert zlib.crc32(kind + body) == struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])[0]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", body[:10])
            channels = {2: 3, 6: 4, 0: 1, 4: 2, 3: 1}[color]
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw = zlib.decompress(idat)
    assert depth == 8 and len(raw) == height * (1 + width * channels)
    return width, height


def plot(*args):
    return subprocess.run([str(PLOT), *map(str, args)], capture_output=True, text=True)


@pytest.fixture(scope="module")
def logged_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("plotrun")
    root, logs = base / "root", base / "logs"
    root.mkdir()
    logs.mkdir()
    run_fio(job(["precreate", "benchmark", "benchmark", "cleanup"], root, numjobs=2, datasets=2,
                precreate_per_set=40, steps_per_set=20, bs=300, latency_log=logs / "lat", latency_all=1),
            base, args=["--output-format=json+"], check=True)
    return sorted(base.glob("job-*.json"))[-1], logs / "lat"


def log_rows(path):
    return [tuple(map(float, l.split(","))) for l in path.read_text().splitlines()[1:]]


def test_figures_and_their_data(logged_run, tmp_path):
    run_json, prefix = logged_run
    proc = plot(run_json, "--logs", prefix, "--out", tmp_path)
    assert proc.returncode == 0, proc.stderr
    pngs = proc.stdout.split()
    names = ["precreate", "benchmark-1", "benchmark-2", "cleanup"]
    assert [p.rsplit("/", 1)[1] for p in pngs] == \
        [f"{n}-{k}.png" for n in names for k in ("timeline", "boxplot", "histogram", "windows")] + ["repeats-rate.png"]
    for p in pngs:
        assert png_size(tmp_path / p.rsplit("/", 1)[1]) == (1200, 800)
        svg = (tmp_path / p.rsplit("/", 1)[1]).with_suffix(".svg").read_text()
        assert 'width="1200"' in svg and 'height="800"' in svg

    records = json.loads(subprocess.run([str(REPORT), "--json", str(run_json)], capture_output=True,
                                        text=True).stdout)["records"]
    files = {"precreate": (0, {"create": "precreate"}), "benchmark-1": (0, {o: o for o in OPS}),
             "benchmark-2": (1, {o: o for o in OPS}), "cleanup": (2, {"delete": "cleanup"})}
    for name, rec in zip(names, records):
        it, ops = files[name]
        box = {l.split()[1]: list(map(float, l.split()[2:])) for l in
               (tmp_path / f"{name}-boxplot.dat").read_text().splitlines()[1:]}
        for op, logname in ops.items():
            rows = log_rows(prefix.parent / f"lat-0.00-{it}-{logname}-all.csv")
            # timeline: every logged operation, nothing thinned at this size
            tl = [tuple(map(float, l.split())) for l in
                  (tmp_path / f"{name}-timeline-{op}.dat").read_text().splitlines()[1:]]
            assert tl == rows   # both printed with 9 decimals: exact
            # histogram: every operation in the bin that holds its latency
            hist = [l.split() for l in (tmp_path / f"{name}-histogram-{op}.dat").read_text().splitlines()[1:]]
            assert sum(int(h[2]) for h in hist) == len(rows)
            for h in hist:
                lo, hi, count = float(h[0]), float(h[1]), int(h[2])
                inside = sum(1 for _, d in rows if lo * (1 - 1e-6) <= d < hi * (1 + 1e-6))
                assert inside >= count
            # boxplot: the report's figures
            want = [rec[f"{op}_{k}"] for k in ("min_s", "q1_s", "median_s", "q3_s", "max_s", "q90_s", "q99_s",
                                               "count")]
            assert box[op] == pytest.approx(want, rel=1e-6)
    rates = [tuple(map(float, l.split())) for l in (tmp_path / "repeats-rate.dat").read_text().splitlines()[1:]]
    bench = [r for r in records if r["phase"] == "benchmark"]
    assert [(int(r[0]), r[1]) for r in rates] == [(b["repeat"], pytest.approx(b["obj_per_s"])) for b in bench]


def ns_rows(path):
    """(start, latency) of a log's rows in integer nanoseconds, from the
    decimal text itself."""
    return [tuple(int(x.replace(".", "")) for x in line.split(","))
            for line in path.read_text().splitlines()[1:]]


def test_window_quantiles_are_exact_over_every_rank(logged_run, tmp_path):
    """Each window's p50/p90/p99/max are the nearest-rank quantiles of the
    operations that started in it, computed here from each rank's own log
    (not the merged one the tool reads); the completions per window are
    counted from start + latency; the default window is the phase's T / 50
    rounded up to 1, 2 or 5 times a power of ten."""
    run_json, prefix = logged_run
    window_ns = 2_000_000
    proc = plot(run_json, "--logs", prefix, "--out", tmp_path, "--window", "0.002")
    assert proc.returncode == 0, proc.stderr
    records = json.loads(subprocess.run([str(REPORT), "--json", str(run_json)], capture_output=True,
                                        text=True).stdout)["records"]
    files = {"precreate": (0, {"create": "precreate"}), "benchmark-1": (0, {o: o for o in OPS}),
             "benchmark-2": (1, {o: o for o in OPS}), "cleanup": (2, {"delete": "cleanup"})}
    for (name, (it, ops)), rec in zip(files.items(), records):
        rows = {op: [r for rank in (0, 1) for r in ns_rows(prefix.parent / f"lat-0.00-{it}-{log}-rank{rank}.csv")]
                for op, log in ops.items()}
        end = max(s + d for rs in rows.values() for s, d in rs)
        count = -(-end // window_ns)
        for op, rs in rows.items():
            assert len(rs) == rec[f"{op}_count"]
            got = [l.split() for l in (tmp_path / f"{name}-windows-{op}.dat").read_text().splitlines()[1:]]
            assert len(got) == count, (name, op)
            for k, line in enumerate(got):
                assert line[:2] == [f"{k * window_ns / 1e9:.9f}", f"{min((k + 1) * window_ns, end) / 1e9:.9f}"]
                lat = sorted(d for s, d in rs if k * window_ns <= s < (k + 1) * window_ns)
                assert int(line[2]) == len(lat), (name, op, k)
                want = [f"{lat[math.ceil(p * len(lat) / 100) - 1] / 1e9:.9f}" if lat else "?"
                        for p in (50, 90, 99, 100)]
                assert line[3:7] == want, (name, op, k)
                done = sum(1 for s, d in rs if k * window_ns <= s + d < (k + 1) * window_ns or
                           (k == count - 1 and s + d >= (k + 1) * window_ns))
                assert int(line[7]) == done, (name, op, k)
                span = (min((k + 1) * window_ns, end) - k * window_ns) / 1e9
                assert float(line[8]) == pytest.approx(done / span, rel=1e-6)
            assert sum(int(l[2]) for l in got) == sum(int(l[7]) for l in got) == len(rs)
        assert png_size(tmp_path / f"{name}-windows.png") == (1200, 800)
    # the default window, from each phase's T
    out = tmp_path / "default"
    assert plot(run_json, "--logs", prefix, "--out", out).returncode == 0
    for name, rec in zip(files, records):
        raw = rec["t_max_s"] / 50
        step = min(m * 10 ** e for e in range(-3, 3) for m in (1, 2, 5) if m * 10 ** e >= max(raw, 1e-3) * (1 - 1e-9))
        lines = (out / f"{name}-windows-{next(iter(files[name][1]))}.dat").read_text().splitlines()[1:]
        assert all(float(l.split()[0]) == pytest.approx(k * step) for k, l in enumerate(lines)), name
        assert f"each {step:g} s window" in (out / f"{name}-windows.gp").read_text(), name
    proc = plot(run_json, "--out", out, "--window", "1")
    assert proc.returncode == 2 and "--window: only with RUN.json --logs PREFIX" in proc.stderr


def test_large_timelines_are_thinned_without_losing_outliers(logged_run, tmp_path):
    run_json, prefix = logged_run
    assert plot(run_json, "--logs", prefix, "--out", tmp_path, "--max-points", 10).returncode == 0
    rows = log_rows(prefix.parent / "lat-0.00-0-read-all.csv")
    kept = [tuple(map(float, l.split())) for l in
            (tmp_path / "benchmark-1-timeline-read.dat").read_text().splitlines()[1:]]
    durations = sorted(d for _, d in rows)
    q99 = durations[round(0.99 * (len(rows) - 1) + 0.49)]
    k = math.ceil(len(rows) / 10)
    assert kept == [r for i, r in enumerate(rows) if i % k == 0 or r[1] >= q99]
    assert len(kept) < len(rows) and max(kept, key=lambda r: r[1]) == max(rows, key=lambda r: r[1])
    assert "thinned" in (tmp_path / "benchmark-1-timeline.gp").read_text()


def test_scaling_figure(tmp_path, tmpfs):
    runs = []
    for label in ("a", "b"):
        for n in (1, 2):
            root = tmpfs / f"{label}{n}"
            root.mkdir()
            run_fio(job(["precreate", "benchmark", "cleanup"], root, numjobs=n, datasets=2, precreate_per_set=30,
                        steps_per_set=10, bs=100), tmp_path, args=["--output-format=json+"], check=True)
            runs.append((label, n, sorted(tmp_path.glob("job-*.json"), key=lambda p: p.stat().st_mtime)[-1]))
    out = tmp_path / "fig"
    out.mkdir()
    proc = plot("--out", out, "--scaling", *[f"{l}={p}" for l, _, p in runs])
    assert proc.returncode == 0, proc.stderr
    assert png_size(out / "scaling.png") == (1200, 800)
    for label, n, path in runs:
        rec = {r["phase"]: r for r in json.loads(subprocess.run(
            [str(REPORT), "--json", str(path)], capture_output=True, text=True).stdout)["records"]}
        for phase in ("precreate", "benchmark", "cleanup"):
            data = dict(tuple(map(float, l.split())) for l in
                        (out / f"scaling-{phase}-{label}.dat").read_text().splitlines()[1:])
            assert data[n] == pytest.approx(rec[phase]["obj_per_s"])


def test_a_run_in_which_every_unit_fails(tmp_path):
    """Every object removed after precreate: the benchmark repeats and the
    cleanup do nothing, at a rate of 0 over their real time. There is no
    latency to draw; the repeats are drawn at 0, and the scaling figure's
    log scale leaves the zeros out, saying so."""
    root, logs = tmp_path / "root", tmp_path / "logs"
    root.mkdir()
    logs.mkdir()
    opts = dict(numjobs=2, datasets=2, precreate_per_set=5, steps_per_set=3, bs=100)
    run_fio(job(["precreate"], root, **opts), tmp_path, check=True)
    for obj in root.glob("*_*/file-*"):
        obj.unlink()
    run_fio(job(["benchmark", "benchmark", "cleanup"], root, latency_log=logs / "lat", latency_all=1, **opts), tmp_path,
            args=["--output-format=json+"], check=False)
    run_json = sorted(tmp_path.glob("job-*.json"))[-1]
    out = tmp_path / "out"
    out.mkdir()
    proc = plot(run_json, "--logs", logs / "lat", "--out", out)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.split() == [str(out / "repeats-rate.png")]
    rows = (out / "repeats-rate.dat").read_text().splitlines()[1:]
    # a rate of 0, over the phase's real time
    assert [r.split()[:3] for r in rows] == [["1", "0.000000", "0.000000"], ["2", "0.000000", "0.000000"]], rows
    assert all(float(r.split()[3]) > 0 for r in rows), rows
    assert png_size(out / "repeats-rate.png") == (1200, 800)
    # the scaling figure: only the run with a rate above 0 is on the log scale
    root2 = tmp_path / "root2"
    root2.mkdir()
    run_fio(job(["precreate", "benchmark", "cleanup"], root2, **opts), tmp_path, args=["--output-format=json+"],
            check=True)
    good = sorted(tmp_path.glob("job-*.json"))[-1]
    proc = plot("--out", out, "--scaling", f"failed={run_json}", f"ok={good}")
    assert proc.returncode == 0, proc.stderr
    gp = (out / "scaling.gp").read_text()
    assert "set title 'benchmark (1 at 0 obj/s, not on the log scale)'" in gp
    assert not (out / "scaling-benchmark-failed.dat").exists()
    proc = plot("--out", out, "--scaling", f"failed={run_json}")
    assert proc.returncode == 2 and "no phase of any of the runs has a rate above 0" in proc.stderr


def test_gnuplot_and_the_output_directory(logged_run, tmp_path):
    """What stands around the input: gnuplot missing or failing, an output
    directory that cannot be written, quotes in a label. One line each."""
    run_json, prefix = logged_run

    def one_line(proc, start):
        assert proc.returncode == 2 and proc.stdout == "", proc.stderr
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"mdfio-plot: {start}"), proc.stderr

    out = tmp_path / "out"
    out.mkdir()
    # a PATH with python3 and no gnuplot; then a gnuplot that fails
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(shutil.which("python3"))
    env = {**os.environ, "PATH": str(bin_dir)}
    proc = subprocess.run([str(PLOT), str(run_json), "--logs", str(prefix), "--out", str(out)], capture_output=True,
                          text=True, env=env)
    one_line(proc, "gnuplot: not found")
    (bin_dir / "gnuplot").write_text("#!/bin/sh\necho 'line 3: unknown terminal type' >&2\nexit 1\n")
    (bin_dir / "gnuplot").chmod(0o755)
    proc = subprocess.run([str(PLOT), str(run_json), "--logs", str(prefix), "--out", str(out)], capture_output=True,
                          text=True, env=env)
    one_line(proc, f"{out}/precreate-timeline.gp: gnuplot failed on it: line 3: unknown terminal type")
    # a read-only file system
    need_root("mounts a read-only tmpfs")
    ro = tmp_path / "ro"
    ro.mkdir()
    mount = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)], capture_output=True,
                           text=True)
    if mount.returncode:
        pytest.skip(f"cannot mount a tmpfs: {mount.stderr.strip()}")
    try:
        one_line(plot(run_json, "--logs", prefix, "--out", ro), f"--out {ro}: not writable")
    finally:
        subprocess.run(["umount", str(ro)], check=True)
    # a label with a quote, which gnuplot's strings double
    proc = plot("--out", out, "--scaling", f"it's={run_json}")
    assert proc.returncode == 0, proc.stderr
    assert "title 'it''s'" in (out / "scaling.gp").read_text()
    # labels whose file names would be the same get a file each
    proc = plot("--out", out, "--scaling", f"a b={run_json}", f"a_b={run_json}")
    assert proc.returncode == 0, proc.stderr
    gp = (out / "scaling.gp").read_text()
    assert f"'{out}/scaling-benchmark-a_b.dat' using 1:2 with linespoints pt 7 lw 2 title 'a b'" in gp
    assert f"'{out}/scaling-benchmark-a_b-1.dat' using 1:2 with linespoints pt 7 lw 2 title 'a_b'" in gp


def test_bad_input(logged_run, tmp_path):
    run_json, prefix = logged_run

    def one_line(proc, needle):
        assert proc.returncode == 2 and proc.stdout == ""
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("mdfio-plot: ") and needle in lines[0], proc.stderr
        assert "Traceback" not in proc.stderr

    out = tmp_path / "out"
    out.mkdir()
    empty = tmp_path / "nologs"
    empty.mkdir()
    one_line(plot(run_json, "--logs", empty / "lat", "--out", out), "no latency logs there")
    # logs of another run: same layout, other counts
    other = tmp_path / "other"
    other.mkdir()
    for p in prefix.parent.glob("lat-*-all.csv"):
        lines = p.read_text().splitlines()
        (other / p.name).write_text("\n".join(lines[:-1]) + "\n")
    one_line(plot(run_json, "--logs", other / "lat", "--out", out), "the logs are from another run")
    # an empty log
    for p in other.glob("*"):
        p.write_text((prefix.parent / p.name).read_text())
    (other / "lat-0.00-0-precreate-all.csv").write_text("")
    one_line(plot(run_json, "--logs", other / "lat", "--out", out), "not a latency log")
    # a log at fault is named, not the run's JSON
    bad = other / "lat-0.00-0-precreate-all.csv"
    lines = (prefix.parent / bad.name).read_text().splitlines(keepends=True)
    bad.write_text("".join(lines[:2] + ["x,y\n"] + lines[2:]))
    proc = plot(run_json, "--logs", other / "lat", "--out", out)
    one_line(proc, f"{bad}:3: ")
    assert proc.stderr.startswith(f"mdfio-plot: {bad}:3: ")
    # what the engine never writes: each named with its line
    good = (prefix.parent / bad.name).read_bytes()
    head, first, rest = good.split(b"\n", 2)
    last = good.count(b"\n")     # its last line, cut short
    for body, needle in ((head + b"\n" + first + b"\n" + b"nan,0.1\n" + rest, ":3: not a row"),
                         (head + b"\n" + first.replace(b",", b",-") + b"\n" + rest, ":2: not a row"),
                         (head + b"\n" + b"1," + b"9" * 400 + b"\n" + rest, ":2: not a row"),
                         (head + b"\n" + b"\xff\xfe\x00junk\n" + rest, ":2: not a row"),
                         (good[:-5], f":{last}: cut off in its last row"),
                         (b"\x89PNG\r\n", ": does not begin with the line 'time,runtime'")):
        bad.write_bytes(body)
        one_line(plot(run_json, "--logs", other / "lat", "--out", out), f"{bad}{needle}")
    bad.unlink()
    bad.mkdir()
    one_line(plot(run_json, "--logs", other / "lat", "--out", out), f"{bad}: is a directory")
    bad.rmdir()
    bad.write_bytes(good)
    # an --out that cannot be made: under a file, and a file itself
    one_line(plot(run_json, "--logs", prefix, "--out", bad / "figures"),
             f"--out {bad / 'figures'}: cannot create it: Not a directory")
    one_line(plot(run_json, "--logs", prefix, "--out", bad), f"--out {bad}: is not a directory")
    one_line(plot("--scaling", "nolabel", "--out", out), "expected LABEL=RUN.json")
    # options: one line naming the option, not argparse's usage and message
    for value in ("0", "-5", "x", "1e9", ""):
        one_line(plot(run_json, "--logs", prefix, "--out", out, "--max-points", value),
                 f"argument --max-points: expected a positive integer, not {value!r}")
    one_line(plot(run_json, "--bogus"), "unrecognized arguments: --bogus")
    one_line(plot(run_json, "--logs", prefix, "--out", out, "--scaling", f"a={run_json}"), "not both")


def test_out_is_made_and_the_json_alone_draws_its_figures(logged_run, tmp_path):
    """--out DIR that does not exist is made (its parents too), as a user
    expects. Without --logs the figures of fio's JSON alone are drawn (a
    boxplot per phase and repeat, repeats-rate), the same as with the
    logs, and one line on stderr names those skipped for lack of logs."""
    run_json, prefix = logged_run
    out = tmp_path / "new" / "figures"
    proc = plot(run_json, "--out", out)
    assert proc.returncode == 0, proc.stderr
    names = ["precreate", "benchmark-1", "benchmark-2", "cleanup"]
    assert proc.stdout.split() == [str(out / f"{n}-boxplot.png") for n in names] + [str(out / "repeats-rate.png")]
    assert proc.stderr == ("mdfio-plot: no --logs: skipped the timeline, histogram and windows figures of precreate, "
                           "benchmark-1, benchmark-2, cleanup (they need the latency logs: run fio with "
                           "latency_log=PREFIX latency_all=1, then give --logs PREFIX)\n")
    for p in proc.stdout.split():
        assert png_size(Path(p)) == (1200, 800)
    full = tmp_path / "full"
    assert plot(run_json, "--logs", prefix, "--out", full).returncode == 0
    for name in [f"{n}-boxplot" for n in names] + ["repeats-rate"]:
        assert (out / f"{name}.dat").read_text() == (full / f"{name}.dat").read_text(), name
    assert not list(out.glob("*-timeline*")) and not list(out.glob("*-histogram*"))
    assert not list(out.glob("*-windows*"))
    # bad input is refused before the directory is made
    never = tmp_path / "never"
    proc = plot(tmp_path / "absent.json", "--out", never)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert not never.exists()
