"""What fio shows of mdfio's jobs (engines/core/progress.c): its progress line
counts as running only the ranks of the phase that runs, and shows the
others as waiting (C); each job's description names its phase and repeat
and says what fio's closing lines of it count."""
import re

import mdfio.fio
from conftest import engine_path, run_fio

N, D, P, I = 2, 10, 1000, 1000
PHASES = ["precreate", "benchmark", "benchmark", "cleanup"]
# fio's progress line: "Jobs: 2 (f=2): [_(2),R(2),C(4)][66.7%]..."
JOBS = re.compile(r"Jobs: (\d+) \(f=\d+\)(?:: \[([^\]]*)\])?")
RUNNING = set("WRD")        # precreate (write), benchmark (read), cleanup (trim)
COUNTED = RUNNING | {"f"}   # fio counts a finishing job (f) as running too


def states(run_str):
    """fio's condensed run string ("_(2),R(2),C(4)", or "RRCC") as one
    letter per job."""
    out = ""
    for m in re.finditer(r"([A-Za-z_/])(?:\((\d+)\))?,?", run_str):
        out += m.group(1) * int(m.group(2) or 1)
    return out


def progress_lines(tmpfs, tmp_path):
    text = mdfio.fio.jobfile(PHASES, tmpfs, engine_path(), numjobs=N, stonewall=False, datasets=D,
                             precreate_per_set=P, steps_per_set=I, repeats=2,
                             # fio shows the run string from its third second
                             startdelay=3)
    text = text.replace("phase=benchmark\n", "phase=benchmark\nrepeat=1\n", 1)
    text = text.replace("[benchmark-2]\nphase=benchmark\n", "[benchmark-2]\nphase=benchmark\nrepeat=2\n")
    run = run_fio(text, tmp_path, args=["--eta=always", "--eta-interval=250ms", "--eta-newline=250ms"],
                  check=True)
    lines = [JOBS.search(s) for s in re.split(r"[\r\n]", run.stdout)]
    return run, [(int(m.group(1)), states(m.group(2) or "")) for m in lines if m]


def test_the_progress_line_counts_the_ranks_of_the_running_phase(tmpfs, tmp_path):
    run, lines = progress_lines(tmpfs, tmp_path)
    shown = [(n, s) for n, s in lines if s]
    assert shown, run.stdout
    for n, s in shown:
        assert len(s) == N * len(PHASES), (n, s)
        counted = [i for i, c in enumerate(s) if c in COUNTED]
        running = {i // N for i in counted if s[i] in RUNNING}
        # every job that fio counts as running is a rank of the phase
        # that runs: one section, one phase letter, at most N ranks;
        # or a rank of the phase before it still finishing (f): a phase
        # starts once the earlier ranks have ended their last units, while
        # fio's threads of them may still be tearing down
        assert n == len(counted) and len(running) <= 1, (n, s)
        assert len({s[i] for i in counted} & RUNNING) <= 1, (n, s)
        last = max(running) if running else max((i // N for i in counted), default=None)
        assert all(i // N in (last, last - 1) and (i // N == last or s[i] == "f") for i in counted), (n, s)
        # a later section waits, shown as created (C), never as running
        k = (last + 1) * N if counted else len(s)
        assert set(s[k:]) <= {"C"}, (n, s)
    assert any("C" in s for _, s in shown), shown


def test_each_job_names_its_phase_repeat_and_numbers(tmpfs, tmp_path):
    run, _ = progress_lines(tmpfs, tmp_path)
    expect = {
        "precreate-0": "precreate: fio's write line counts creates",
        "benchmark-1": "benchmark 1 of 2: fio's read line counts steps (stat, read, delete, create)",
        "benchmark-2": "benchmark 2 of 2: fio's read line counts steps (stat, read, delete, create)",
        "cleanup-3": "cleanup: fio's trim line counts deletes",
    }
    for name, summary in expect.items():
        descs = sorted(j["desc"] for j in run.jobs(name))
        assert len(descs) == N, descs
        for rank, desc in enumerate(descs):
            assert re.fullmatch(rf"mdfio rank={rank} ranks={N} host=\S+; {re.escape(summary)}; "
                                r"md-workbench's numbers: mdfio-report on fio's JSON of the run", desc), desc
