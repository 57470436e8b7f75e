"""A mutation fuzz of mdfio-report and mdfio-plot. Real fio JSON and latency
logs are changed by seeded mutations (keys deleted, types changed, negative,
NaN, infinite and huge numbers, wrong nesting, truncation, garbage lines,
empty files, binary junk) and run through the tools, mostly in-process
(main()), a few as the commands. Each run either gives a consistent result
(--json is JSON without NaN or Infinity, --csv and the text formats hold no
inf or nan, counts and quantiles are in order) or exits 2 with one line on
stderr naming the file (or option) at fault: never a traceback, never a
hang. The seed is fixed and the size fits CI (well under a minute of CPU)."""
import contextlib
import csv
import io
import json
import math
import random
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import SOURCE_ROOT, job, run_fio
import mdfio.plot  # noqa: E402 (conftest puts the package on the path)
import mdfio.report  # noqa: E402

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
PLOT = SOURCE_ROOT / "tools" / "mdfio-plot"
SEED = 20261122
DOCUMENTS = 240        # mutated JSON documents, each in 4 formats
LOG_CASES = 120        # runs of mdfio-plot on mutated latency logs
PLOT_JSON_CASES = 40   # runs of mdfio-plot on mutated JSON
COMMANDS = 6           # of each tool's cases, also run as the command
FORMATS = ([], ["--json"], ["--csv"], ["--format", "md-real-io-2017"])
LATENCY = ("min_s", "q1_s", "median_s", "q3_s", "q90_s", "q99_s", "max_s")


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Real runs: json+ with latency logs over 2 ranks and 2 benchmark
    repeats, and plain json (quantiles from fio's percentile list)."""
    base = tmp_path_factory.mktemp("fuzz")
    root, logs = base / "root", base / "logs"
    root.mkdir()
    logs.mkdir()
    opts = dict(numjobs=2, datasets=2, precreate_per_set=8, steps_per_set=4, bs=300)
    run_fio(job(["precreate", "benchmark", "benchmark", "cleanup"], root, latency_log=logs / "lat", latency_all=1, **opts), base,
            args=["--output-format=json+"], check=True)
    plus = sorted(base.glob("job-*.json"))[-1]
    run_fio(job(["precreate", "benchmark", "cleanup"], root, percentile_list="25:50:75:90:99",
                **{**opts, "numjobs": 1}), base, check=True)
    plain = sorted(base.glob("job-*.json"))[-1]
    # errors: rank 1 reads rank 0's dataset, whose objects are gone
    other = base / "other"
    other.mkdir()
    run_fio(job(["precreate"], other, **{**opts, "datasets": 1}), base, check=True)
    for obj in other.glob("0_0/file-*"):
        obj.unlink()
    run_fio(job(["benchmark", "cleanup"], other, **{**opts, "datasets": 1}), base, args=["--output-format=json+"],
            check=False)
    errors = sorted(base.glob("job-*.json"))[-1]
    return {"plus": plus, "plain": plain, "errors": errors, "logs": logs}


# --- mutations ---------------------------------------------------------------

NUMBERS = [0, -1, -2**63, 2**63, 2**64, 10**30, 1e308, -0.5, 1.5, math.nan, math.inf, -math.inf]
OTHERS = [None, "", "x", "-1", "nan", "1e3", "3|", "|", "99999999999999999999", "4294967295", "1048577", "a\nb",
          [], {}, [1], True, False]
ROWS = [b"", b"x", b"1,2,3", b"1", b",", b"nan,nan", b"inf,1", b"1,-inf", b"-1,-1", b"1e400,1", b"0x10,1",
        b"1,2\x00", b"\xff\xfe", b"time,runtime", b" 1 , 2 ", b"1;2", b"1," + b"9" * 400, b"0.1,0.2\r"]


def shapes(doc):
    """{shape: [paths]}: every place in doc, its list indices and histogram
    buckets made '#', so that a mutation picks kinds of places evenly
    (the buckets would otherwise be most of them)."""
    out = {}

    def walk(node, path):
        if isinstance(node, dict):
            items = node.items()
        elif isinstance(node, list):
            items = enumerate(node)
        else:
            return
        for k, v in items:
            p = path + (k,)
            shape = tuple("#" if isinstance(x, int) or x.isdigit() else x for x in p)
            out.setdefault(shape, []).append(p)
            walk(v, p)
    walk(doc, ())
    return out


def mutate_doc(rng, doc, places):
    """A mutated copy of doc, as the text of a file."""
    m = json.loads(json.dumps(doc))
    for _ in range(rng.randint(1, 3)):
        shape = rng.choice(sorted(places, key=str))
        paths = places[shape] if rng.random() < 0.3 else [rng.choice(places[shape])]
        kind = rng.random()
        value = rng.choice(NUMBERS + OTHERS)
        for path in paths:
            node = m
            try:
                for k in path[:-1]:
                    node = node[k]
                old = node[path[-1]]
            except (KeyError, IndexError, TypeError):
                continue       # an earlier mutation moved it
            if kind < 0.25 and isinstance(node, dict):
                del node[path[-1]]
            elif kind < 0.35:
                node[path[-1]] = [old]                              # one level too deep
            elif kind < 0.42 and isinstance(old, dict):
                node[path[-1]] = list(old.values())                 # an object as a list
            elif kind < 0.47 and isinstance(old, dict) and isinstance(node, dict):
                node.update(old)                                    # one level too shallow
            elif kind < 0.6 and type(old) in (int, float):
                node[path[-1]] = rng.choice([-old, old * 10 ** rng.randint(1, 25), old + 1, old - 1, float(old),
                                             0, math.nan])
            else:
                node[path[-1]] = value
    text = json.dumps(m, indent=rng.choice([None, 1]))     # NaN and Infinity as Python writes them
    kind = rng.random()
    if kind < 0.08:
        text = text[:rng.randrange(len(text))]
    elif kind < 0.12:
        i = rng.randrange(len(text))
        text = text[:i] + rng.choice(["\x00", "\xff", "}", "{", "\n{\n", "NaN", "-", "1e999"]) + text[i:]
    elif kind < 0.14:
        text = json.dumps(doc) + "\n" + text                # --status-interval: the last counts
    elif kind < 0.16:
        text = rng.choice(["", "\n", "{}", "[]", "null", "fio-3.33\n"])
    return text


def mutate_logs(rng, src, dst):
    """A copy of the merged logs, one or two of them mutated (a third of
    the mutations keep the logs consistent); the mutated paths."""
    dst.mkdir()
    for p in src.glob("*-all.csv"):
        shutil.copy(p, dst / p.name)
    files = sorted(dst.glob("*-all.csv"))
    changed = []
    for _ in range(1 if rng.random() < 0.75 else 2):
        f = rng.choice(files)
        if not f.is_file():
            continue
        changed.append(f)
        data = f.read_bytes()
        lines = data.split(b"\n")
        rows = range(1, len(lines) - 1)    # the last is the '' after the last end of line
        kind = rng.random()
        if kind < 0.08:
            data = data[:rng.randrange(len(data) + 1)]
        elif kind < 0.13:
            data = b""
        elif kind < 0.18:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
        elif kind < 0.38:
            lines[rng.randrange(len(lines))] = rng.choice(ROWS)
            data = b"\n".join(lines)
        elif kind < 0.48:
            lines.insert(rng.randrange(len(lines)), rng.choice(ROWS + [lines[-2]]))
            data = b"\n".join(lines)
        elif kind < 0.55:
            f.unlink()
            continue
        elif kind < 0.6:
            f.unlink()
            f.mkdir()
            continue
        elif kind < 0.65:
            data = data.replace(b"\n", b"\r\n")
        elif kind < 0.85 and rows:
            # other latencies, still rows: a consistent log
            for i in rng.sample(rows, min(len(rows), rng.randint(1, 5))):
                lines[i] = b"%d.%09d,%d.%09d" % (rng.randrange(100), rng.randrange(10**9), rng.randrange(3),
                                                 rng.randrange(10**9))
            data = b"\n".join(lines)
        elif kind < 0.92 and rows:
            # the rows in another order
            body = [lines[i] for i in rows]
            rng.shuffle(body)
            data = b"\n".join([lines[0], *body, b""])
        else:
            # a log of an iteration the run does not have, beside the others
            (dst / re.sub(r"-0\.00-[0-9]+-", "-0.00-99-", f.name)).write_bytes(data)
        f.write_bytes(data)
    return changed


# --- running and judging -----------------------------------------------------

def call(main, argv):
    """(exit status, stdout, stderr) of a tool's main() in this process; an
    exception other than SystemExit (a traceback) fails the test."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code
    return rc, out.getvalue(), err.getvalue()


def no_constant(name):
    raise ValueError(f"{name} in --json")


NOT_FINITE = re.compile(r"(?<![\w.])-?(inf|nan)(?![\w.])", re.I)


def check_report(rc, out, err, fmt, names, why):
    """A consistent report, or one line naming one of names."""
    assert "Traceback" not in err, why
    if rc == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("mdfio-report: "), (why, err)
        assert any(str(n) in lines[0] for n in names), (why, err)
        assert out == "", why
        return
    assert rc in (0, 1), (why, rc, err)
    assert all(line.startswith("mdfio-report: ") for line in err.splitlines()), (why, err)
    if fmt == ["--json"]:
        doc = json.loads(out, parse_constant=no_constant)
        for rec in doc["records"]:
            if rec["status"] != "complete":
                # a phase not every rank completed: a reason, no figure
                assert rec["status"] in ("incomplete", "not run") and rec["reason"], (why, rec)
                assert rec["t_max_s"] is rec["objects"] is rec["read_count"] is None and rc == 1, (why, rec)
                continue
            assert rec["reason"] is None, (why, rec)
            for op in ("create", "stat", "read", "delete"):
                assert rec[f"{op}_count"] >= 0 and rec[f"{op}_errors"] >= 0, (why, rec)
                lat = [rec[f"{op}_{k}"] for k in LATENCY if rec[f"{op}_{k}"] is not None]
                assert lat == sorted(lat) and all(x >= 0 for x in lat), (why, op, lat)
            assert all(rec[k] is None or rec[k] >= 0 for k in ("t_max_s", "iops", "obj_per_s", "tp_mib_per_s"))
    elif fmt == ["--csv"]:
        rows = list(csv.reader(io.StringIO(out)))
        assert rows[0][:3] == ["phase", "repeat", "process"], why
        assert not [c for row in rows[1:] for c in row if NOT_FINITE.fullmatch(c)], (why, out)
    else:
        # figures follow ':', ' ', '(' or ','; names and the header are text
        for line in out.splitlines():
            if line.startswith(("\t", "MD-", "Total runtime")) or not line:
                continue
            body = re.sub(r"^\d+(@\S+)?: ", "", line)
            assert not re.search(r"[:( ,]-?(inf|nan)\b", body, re.I), (why, line)


def check_plot(rc, out, err, names, why):
    assert "Traceback" not in err, why
    if rc == 2:
        lines = err.splitlines()
        assert len(lines) == 1 and lines[0].startswith("mdfio-plot: "), (why, err)
        assert any(str(n) in lines[0] for n in names), (why, names, err)
        assert out == "", why
        return
    # 1: a phase not every rank completed is not drawn, and said so
    assert (rc, err) == (0, "") or rc == 1 and err and all(
        line.startswith("mdfio-plot: ") and line.endswith("; not drawn") for line in err.splitlines()), (why, rc, err)
    assert all(line.endswith(".png") for line in out.splitlines()), (why, out)


class Gnuplot:
    """subprocess for mdfio.plot: instead of gnuplot, checks the script and
    the data files it draws: every number finite."""
    CompletedProcess = subprocess.CompletedProcess

    @staticmethod
    def run(cmd, **kwargs):
        assert cmd[0] == "gnuplot", cmd
        script = Path(cmd[1]).read_text()
        for dat in re.findall(r"'([^']+\.dat)'", script):
            text = Path(dat).read_text()
            assert not NOT_FINITE.search(text), (dat, text[:300])
        return subprocess.CompletedProcess(cmd, 0, "", "")


@pytest.fixture
def no_gnuplot(monkeypatch):
    monkeypatch.setattr(mdfio.plot, "subprocess", Gnuplot)


# --- the fuzz ----------------------------------------------------------------

def test_mutated_json_through_every_format(runs, tmp_path):
    rng = random.Random(SEED)
    docs = {k: json.loads(runs[k].read_text()[runs[k].read_text().index("{"):]) for k in ("plus", "plain", "errors")}
    places = {k: shapes(d) for k, d in docs.items()}
    outcomes = {0: 0, 1: 0, 2: 0}
    commands = []
    for n in range(DOCUMENTS):
        kind = ("plus", "plain", "plus", "errors")[n % 4]
        path = tmp_path / f"m{n}.json"
        path.write_text(mutate_doc(rng, docs[kind], places[kind]))
        for fmt in FORMATS:
            argv = [*fmt, "--process-reports", str(path)]
            rc, out, err = call(mdfio.report.main, argv)
            check_report(rc, out, err, fmt, [path], argv)
            outcomes[rc] += 1
        if len(commands) < COMMANDS and (rc == 2) == (len(commands) % 2 == 0):
            commands.append((path, rc, out, err))
    # the mutations give both refusals and reports
    print("mdfio-report exit statuses:", outcomes)
    assert outcomes[2] > DOCUMENTS and outcomes[0] > DOCUMENTS / 4 and outcomes[1] > DOCUMENTS / 8, outcomes
    # the same through the command: its exit status and streams
    for path, rc, out, err in commands:
        proc = subprocess.run([str(REPORT), "--format", "md-real-io-2017", "--process-reports", str(path)],
                              capture_output=True, text=True, timeout=60)
        assert (proc.returncode, proc.stdout, proc.stderr) == (rc, out, err)


def test_mutated_logs_and_json_through_the_figures(runs, tmp_path, no_gnuplot):
    rng = random.Random(SEED + 1)
    prefix = runs["logs"] / "lat"
    out = tmp_path / "out"
    out.mkdir()
    good = runs["plus"]
    outcomes = {0: 0, 2: 0}
    commands = []
    for n in range(LOG_CASES):
        logs = tmp_path / f"logs{n}"
        changed = mutate_logs(rng, prefix.parent, logs)
        argv = [str(good), "--logs", str(logs / "lat"), "--out", str(out)]
        if rng.random() < 0.15:
            argv += ["--max-points", str(rng.choice([0, -1, "x", "", 1, 3, 10**6]))]
        rc, stdout, err = call(mdfio.plot.main, argv)
        check_plot(rc, stdout, err, [*changed, "--logs", "--max-points"], argv)
        outcomes[rc] += 1
        if len(commands) < COMMANDS // 2 and rc == 2:
            commands.append((argv, rc, err))
    print("mdfio-plot exit statuses:", outcomes)
    assert outcomes[0] and outcomes[2] > LOG_CASES / 2, outcomes
    doc = json.loads(good.read_text())
    places = shapes(doc)
    for n in range(PLOT_JSON_CASES):
        path = tmp_path / f"p{n}.json"
        path.write_text(mutate_doc(rng, doc, places))
        if n % 4:
            argv = [str(path), "--logs", str(prefix), "--out", str(out)]
        else:
            argv = ["--out", str(out), "--scaling", f"a={good}", f"b={path}"]
        rc, stdout, err = call(mdfio.plot.main, argv)
        # a mutated run's operations differ from its logs': the logs are named
        check_plot(rc, stdout, err, [path, prefix.parent, "--scaling"], argv)
        if len(commands) < COMMANDS and rc == 2 and len(commands) >= COMMANDS // 2:
            commands.append((argv, rc, err))
    # the command, with the real gnuplot
    for argv, rc, err in commands:
        proc = subprocess.run([str(PLOT), *argv], capture_output=True, text=True, timeout=120)
        assert (proc.returncode, proc.stdout, proc.stderr) == (rc, "", err)
    proc = subprocess.run([str(PLOT), str(good), "--logs", str(prefix), "--out", str(out)], capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0 and proc.stderr == "" and len(proc.stdout.split()) == 17, proc.stderr
