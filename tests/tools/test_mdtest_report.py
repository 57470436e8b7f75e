"""tools/mdfio-report on real runs of mdfio-mdtest: mdtest's SUMMARY table,
laid out as IOR's mdtest lays it out (its output recorded in
tests/fixtures/mdtest/phases), with figures recomputed here from fio's
JSON as mdtest computes them; the latency lines; bad input."""
import json
import math
import re
import subprocess

from conftest import MDTEST_NUMBER as NUMBER, MDTEST_ORDER as ORDER, MDTEST_SLOT as SLOT, \
    MDTEST_TITLES as TITLES, SOURCE_ROOT, job, run_fio

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
FIXTURES = SOURCE_ROOT / "tests" / "fixtures" / "mdtest"
FIELD = re.compile(r" *-?[0-9]+\.[0-9]{3}")


def report(path):
    return subprocess.run([str(REPORT), str(path)], capture_output=True, text=True, timeout=120)


def run_iterations(tmp_path, iterations, phases=ORDER, **opts):
    """One fio run of the phases (every one) for each iteration, its JSON's
    path."""
    root = tmp_path / "out"
    root.mkdir()
    text = job([], root, engine="mdtest", numjobs=2, items="12", branching_factor="2", depth="1",
               write_bytes="4", read_bytes="4", **opts)
    for it in range(iterations):
        for phase in phases:
            text += f"\n[{phase}-{it}]\nphase={phase}\niteration={it}\nstonewall\n"
    out = tmp_path / "out.json"
    run_fio(text, tmp_path, args=["--output-format=json+", f"--output={out}"], check=True)
    return out


def expected_rate(jobs, phase):
    """mdtest's rate of one phase: least items/time over the ranks times
    the ranks; a tree's, rank 0's directories over the longest time."""
    slot = SLOT[phase]
    rank = {int(j["desc"].split("rank=")[1].split()[0]): j for j in jobs}
    times = {r: j[slot]["slat_ns"]["max"] / 1e9 for r, j in rank.items() if j[slot]["slat_ns"]["N"]}
    if phase.startswith("tree"):
        return rank[0][slot]["total_ios"] / max(times.values())
    return min(rank[r][slot]["total_ios"] / t for r, t in times.items()) * len(rank)


def test_the_summary_is_mdtests_table_with_its_figures(tmp_path):
    out = run_iterations(tmp_path, 2)
    proc = report(out)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    doc = json.loads(out.read_text())
    # the table's layout is mdtest's: its own output, numbers aside
    mdtest = (FIXTURES / "phases" / "shared-b2-z2.out").read_text().splitlines()
    start = next(i for i, line in enumerate(mdtest) if line.startswith("SUMMARY rate"))
    want = [FIELD.sub("#", line) for line in mdtest[start:start + 13]]
    got = [FIELD.sub("#", line) for line in lines[:13]]
    assert got[0] == want[0].replace("(of 1 iterations)", "(of 2 iterations)")
    assert got[1:] == want[1:]
    # each figure in a field of mdtest's width (%14.3f)
    assert [len(line) for line in lines[1:13]] == [len(line) for line in mdtest[start + 1:start + 13]]
    for line in lines[3:13]:
        title = line[3:].split("  ")[0]
        values = NUMBER.findall(line)
        phase = next(p for p, t in TITLES.items() if t == title)
        rates = [expected_rate([j for j in doc["jobs"] if j["jobname"] == f"{phase}-{it}"], phase)
                 for it in range(2)]
        mean = sum(rates) / 2
        sd = math.sqrt(sum((mean - r) ** 2 for r in rates))
        assert values == [f"{x:.3f}" for x in (max(rates), min(rates), mean, sd)], title
    # then every phase's latencies: N over ranks and iterations
    n = {line[3:].split("  ")[0]: int(line[21:].split()[0]) for line in lines[16:]
         if line.startswith("   ") and line[3:].split("  ")[0] in TITLES.values()}
    assert n["File creation"] == 2 * 2 * 12 and n["Tree creation"] == 2 * 3


def test_without_a_rename_section_its_row_is_zero(tmp_path):
    """as mdtest prints it without -U"""
    out = run_iterations(tmp_path, 1, phases=[p for p in ORDER if p != "dir_rename"])
    proc = report(out)
    assert proc.returncode == 0, proc.stderr
    rows = {line[3:].split("  ")[0]: NUMBER.findall(line) for line in proc.stdout.splitlines()[3:13]}
    assert rows["Directory rename"] == ["0.000"] * 4
    assert rows["Directory stat"] != ["0.000"] * 4
    assert "Directory rename" not in proc.stdout.split("Per-operation latency")[1]


def test_files_only_prints_mdtests_file_rows(tmp_path):
    root = tmp_path / "out"
    root.mkdir()
    phases = [p for p in ORDER if not p.startswith("dir_")]
    out = tmp_path / "out.json"
    run_fio(job(phases, root, engine="mdtest", numjobs=2, items="6"), tmp_path,
            args=[f"--output={out}", "--output-format=json"], check=True)
    proc = report(out)
    assert proc.returncode == 0, proc.stderr
    titles = [line[3:].split("  ")[0] for line in proc.stdout.splitlines()[3:9]]
    assert titles == ["File creation", "File stat", "File read", "File removal", "Tree creation", "Tree removal"]
    assert "(percentiles need fio's --output-format=json+)" in proc.stdout


def test_other_formats_are_refused_in_one_line(tmp_path):
    out = run_iterations(tmp_path, 1)
    proc = subprocess.run([str(REPORT), "--csv", str(out)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [
        f"mdfio-report: {out}: an mdfio-mdtest run: its report is mdtest's table alone "
        "(no --format, --json, --csv, --follow or --html)"]
