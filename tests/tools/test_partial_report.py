"""mdfio-report and mdfio-plot on runs that did not complete: real runs of
precreate, 3 benchmark repeats and cleanup in which one host (its fio
server and every process of it) or one mpirun rank's fio is killed in the
middle of benchmark repeat 2. The report gives every phase that every rank
completed exactly as the report of those phases alone does, marks repeat 2
with the ranks and host at fault, names repeat 3 and the cleanup as not
run and exits 1, in every format, and so does mdfio-plot with its figures;
files of different runs and a rank given twice are still refused (exit 2)."""
import csv
import io
import json
import os
import re
import socket
import subprocess
import time

import pytest

import mdfio.fio
from conftest import MPIRUN, MPI_ENV, SANITIZER_REPORT, SOURCE_ROOT, client_env, engine_path, fio_env, need_mpirun
from mdfio.fiojson import DocumentStream, read_documents
from mdfio.hosts import fio_servers, need_unshare

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
PLOT = SOURCE_ROOT / "tools" / "mdfio-plot"
R = 3
PHASES = ["precreate"] + ["benchmark"] * R + ["cleanup"]
SECTIONS = [mdfio.fio.jobname(phase, i) for i, phase in enumerate(PHASES)]
COMPLETED, BROKEN = SECTIONS[:2], SECTIONS[2]
D, P, I = 3, 1000, 1000
# repeat 2, the one killed in, runs for seconds on any machine, asleep
# most of them: a few steps, each operation followed by a wait of 10^4
# times its time (md-workbench -t): from 1 us on that is 10 ms or more, a
# sleep (the engine spins only below), in which the engine answers fio's
# report requests. Seen here: 3 s a step (the operations after a sleep
# take 13-170 us). The kill comes after fio's reports of repeat 1's end
# have gone out, and before any rank has ended repeat 2.
SLOW = {"steps_per_set": 3, "waiting_factor": 10000}
HEAD = {"precreate": "write", "benchmark": "read", "cleanup": "trim"}
# fio's --status-interval (s): each rank's last report counts
INTERVAL = 1
TIMEOUT = 300
# a phase's line, a mark, a process line (every text format)
PHASE_LINE = re.compile(r"(precreate|benchmark|cleanup)( err)?[ \t]|\d+(@\S+)?: ")
TEXT_FORMATS = ([], ["-q"], ["--print-detailed-stats"], ["--process-reports"], ["-q", "--print-detailed-stats"],
                ["--format", "md-workbench-2020", "--process-reports"], ["--format", "md-real-io-2017"],
                ["--format", "md-real-io-2016", "--process-reports"])


def report(*args):
    return subprocess.run([str(REPORT), *map(str, args)], capture_output=True, text=True, timeout=60)


def jobtext(root, logs, clones, **opts):
    """The run: one stonewalled section per phase (fio's reports of a
    group not started wait for nothing), repeat 2 slow (SLOW), latency
    logs for mdfio-plot."""
    text = mdfio.fio.jobfile(PHASES, root, engine_path(), numjobs=clones, datasets=D, precreate_per_set=P,
                             steps_per_set=I, bs=1000, join_timeout=5, latency_log=logs / "lat", latency_all=1,
                             **opts)
    head = f"[{BROKEN}]\nphase=benchmark\n"
    assert head in text
    return text.replace(head, head + "".join(f"{k}={v}\n" for k, v in SLOW.items()))


def in_repeat_2(status, ranks):
    """Whether every rank is in benchmark repeat 2, by the namespace's
    status file: benchmarking from position I (repeat 1 began at 0)."""
    text = status.read_text() if status.exists() else ""
    return len(re.findall(rf"^rank \d+ benchmarking {I} ", text, re.M)) == ranks


def last_reports(path):
    """{(jobname, rank): job} of each rank's last report in a fio JSON
    file (a client's lists every report of each job)."""
    doc = read_documents(path.read_text(), str(path))[-1]
    jobs = doc["jobs"] if "jobs" in doc else [j for j in doc["client_stats"] if j["jobname"] != "All clients"]
    last = {}
    for j in jobs:
        last[(j["jobname"], int(re.search(r"rank=(\d+)", j["desc"])[1]))] = j
    return last


def ended(job, section):
    return job[HEAD[section.rsplit("-", 1)[0]]]["slat_ns"]["N"] == 1


def began(job):
    """Whether a rank's report shows its phase begun: an operation done
    (fio counts a unit in total_ios only when its io_u, of up to 16 units
    with mdfio-posix, completes)."""
    return any(job[slot][kind]["N"] for slot, kind in (("read", "clat_ns"), ("write", "clat_ns"),
                                                       ("trim", "clat_ns"), ("sync", "lat_ns")))


def only(path, sections, out):
    """The JSON of path with only the jobs of sections: the report of the
    phases every rank completed, as of a run that had only those."""
    doc = read_documents(path.read_text(), str(path))[-1]
    key = "jobs" if "jobs" in doc else "client_stats"
    doc[key] = [j for j in doc[key] if j["jobname"] in sections]
    out.write_text(json.dumps(doc))
    return out


def uts_processes(pid):
    """The processes in the UTS namespace of pid: one "host"."""
    def uts(p):
        try:
            return os.stat(f"/proc/{p}/ns/uts").st_ino
        except OSError:
            return None
    ns = uts(pid)
    return [p for p in os.listdir("/proc") if p.isdigit() and uts(p) == ns]


def state(pid):
    """A process's state letter; None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


@pytest.fixture(scope="module")
def host_killed(tmp_path_factory):
    """2 hosts x 2 ranks: host2's fio server and every process of it killed
    in benchmark repeat 2, more than two of fio's reports after every rank
    began it. (client JSON, its logs' prefix, the raw last reports)."""
    if need_unshare():
        pytest.skip(need_unshare())
    base = tmp_path_factory.mktemp("host")
    root, logs = base / "root", base / "logs"
    root.mkdir()
    logs.mkdir()
    out = base / "run.json"
    with fio_servers(2, base, env=fio_env()) as servers:
        hosts = base / "hosts.list"
        hosts.write_text("".join(f"ip:{s.address},{s.port}\n" for s in servers))
        job = base / "run.fio"
        job.write_text(jobtext(root, logs, 2, hosts="host1,host2"))
        client = subprocess.Popen(["fio", f"--client={hosts}", "--output-format=json+", f"--output={out}",
                                   f"--status-interval={INTERVAL}", str(job)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=client_env())
        try:
            deadline = time.monotonic() + TIMEOUT
            while not in_repeat_2(root / "mdfio.status", 4):
                assert time.monotonic() < deadline and client.poll() is None, "repeat 2 did not start"
                time.sleep(0.005)
            time.sleep(2.5 * INTERVAL)
            # host2's ranks still in it, so that the kill breaks it there
            assert len(re.findall(rf"^rank [23] benchmarking {I} ", (root / "mdfio.status").read_text(), re.M)) == 2, \
                "host2 ended repeat 2 within 2.5 s: make it longer (SLOW)"
            victims = uts_processes(servers[1].proc.pid)
            servers[1].kill()
            # the fault is the host's: none of its processes is left (a
            # zombie is dead)
            assert len(victims) > 1 and not [p for p in victims if state(p) not in (None, "Z")], victims
            assert client.wait(timeout=TIMEOUT) != 0
        finally:
            if client.poll() is None:
                mdfio.fio.kill_tree(client.pid)
                client.wait()
    last = last_reports(out)
    # what the test needs of fio: host2's reports of the phases it ended
    # before repeat 2 reached the client (the machine was fast enough)
    assert all(ended(last[(s, r)], s) for s in COMPLETED for r in (2, 3)), "host2's last reports came too early"
    return out, logs / "lat", last


@pytest.fixture(scope="module")
def rank_killed(tmp_path_factory):
    """mpirun -np 3 fio: rank 2's fio and its job processes killed in
    benchmark repeat 2, once its own file's last report shows repeat 1
    ended and repeat 2 begun. (the 3 files, the logs' prefix, the fio pid)."""
    need_mpirun()
    base = tmp_path_factory.mktemp("mpi")
    root, logs = base / "root", base / "logs"
    root.mkdir()
    logs.mkdir()
    job = base / "run.fio"
    job.write_text(jobtext(root, logs, 1))
    files = [base / f"run.{r}.json" for r in range(3)]
    # not exec: a fio killed leaves its sh to end the rank, and mpirun
    # does not stop the others (a node gone, not a job aborted). Without
    # PMIx: Open MPI aborts the job when a PMIx client ends without
    # PMIx_Finalize, as when an MPI rank dies (docs/hosts.md)
    proc = subprocess.Popen([*MPIRUN, "--bind-to", "none", "-np", "3", "sh", "-c",
                             f'unset PMIX_NAMESPACE; fio --output-format=json+ --status-interval={INTERVAL} '
                             f'--output="{base}/run.$OMPI_COMM_WORLD_RANK.json" "{job}"; exit 0'],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=fio_env(MPI_ENV),
                            start_new_session=True)
    stream, seen = DocumentStream(str(files[2])), 0
    try:
        deadline = time.monotonic() + TIMEOUT
        while True:
            assert time.monotonic() < deadline and proc.poll() is None, "rank 2 did not report repeat 2"
            docs = []
            if files[2].exists():
                # what fio has added since (a report may come in pieces)
                with open(files[2], "rb") as f:
                    f.seek(seen)
                    data = f.read()
                seen += len(data)
                docs = stream.feed(data.decode("ascii", errors="replace"))
            if docs:
                jobs = {j["jobname"]: j for j in docs[-1]["jobs"]}
                if ended(jobs[COMPLETED[-1]], COMPLETED[-1]) and began(jobs[BROKEN]) and not ended(jobs[BROKEN], BROKEN):
                    break
            time.sleep(0.05)
        fio = rank_fio(proc.pid, 2)
        mdfio.fio.kill_tree(fio)
        _, err = proc.communicate(timeout=TIMEOUT)
        assert proc.returncode == 0 and not SANITIZER_REPORT.search(err), err
    finally:
        if proc.poll() is None:
            mdfio.fio.kill_tree(proc.pid)
            proc.wait()
    return files, logs / "lat", fio


def rank_fio(mpirun, rank):
    """The pid of the fio that mpirun started as rank (its parent is the
    rank's sh; its job processes are fio's children)."""
    table = mdfio.fio.processes()
    for pid in mdfio.fio.descendants(mpirun, table):
        name, _, parent = table[pid]
        if name != "fio" or table.get(parent, ("",))[0] != "sh":
            continue
        with open(f"/proc/{pid}/environ", "rb") as f:
            if f"OMPI_COMM_WORLD_RANK={rank}".encode() in f.read().split(b"\0"):
                return pid
    raise AssertionError(f"no fio of rank {rank} under mpirun {mpirun}")


# --- what every format says --------------------------------------------------

def body(text):
    """The phase lines, marks and process lines of a text report."""
    return [line for line in text.splitlines() if PHASE_LINE.match(line)]


def check_report(paths, tmp_path, marks, nodemap):
    """The report of a broken run: the completed phases' lines those of a
    report of the completed phases alone, then the marks, in every format;
    exit 1, and the phases named on stderr."""
    complete = [only(p, COMPLETED, tmp_path / f"complete-{i}.json") for i, p in enumerate(paths)]
    summary = (f"mdfio-report: {', '.join(map(str, paths))}: not every rank completed every phase (the report "
               f"marks them): {BROKEN} (incomplete), {SECTIONS[3]} (not run), {SECTIONS[4]} (not run)\n")
    for fmt in TEXT_FORMATS:
        proc, alone = report(*fmt, *paths), report(*fmt, *complete)
        assert (proc.returncode, proc.stderr) == (1, summary), (fmt, proc.stderr)
        assert alone.returncode == 0, alone.stderr
        assert body(proc.stdout) == body(alone.stdout) + marks, (fmt, proc.stdout)
        lines = proc.stdout.splitlines()
        if fmt[:2] != ["--format", "md-real-io-2017"] and fmt[:2] != ["--format", "md-real-io-2016"]:
            # the planned run: its repeats, every phase, the ranks' hosts
            assert lines[0].startswith("Args: md-workbench ") and f' "-R" "{R}" ' in lines[0], lines[0]
            assert " \"-1\"" not in lines[0] and " \"-3\"" not in lines[0], lines[0]
        if fmt == []:
            assert lines[1] == f"Nodemap: {nodemap}" and lines[-1].startswith("Total runtime: "), lines
            assert lines[2].startswith(f"MD-Workbench total objects: {D * (I * R + P) * len(nodemap)} "), lines[2]
    # records: those of the completed phases exactly, then one per mark
    # with the status a parser tests, its reason, and no figure
    got = json.loads(report("--json", "--process-reports", *paths).stdout)
    want = json.loads(report("--json", "--process-reports", *complete).stdout)
    recs = got["records"]
    assert recs[:len(want["records"])] == want["records"]
    assert {r["status"] for r in want["records"]} == {"complete"} and {r["reason"] for r in want["records"]} == {None}
    tail = recs[len(want["records"]):]
    assert [(r["phase"], r["repeat"], r["process"], r["status"]) for r in tail] == [
        ("benchmark", 2, "all", "incomplete"), ("benchmark", 3, "all", "not run"), ("cleanup", 0, "all", "not run")]
    for r, line in zip(tail, marks):
        assert line.endswith(f"): {r['reason']}") and r["ranks"] == len(nodemap), (r, line)
        known = ("phase", "repeat", "process", "ranks", "waiting_factor", "status", "reason")
        assert all(v is None for k, v in r.items() if k not in known), r
    assert got["parameters"]["iterations"] == R and got["total_objects"] == D * (I * R + P) * len(nodemap)
    rows = list(csv.reader(io.StringIO(report("--csv", "--process-reports", *paths).stdout)))
    assert rows[0][-2:] == ["status", "reason"] and len(rows) == len(recs) + 1
    for row, rec in zip(rows[1:], recs):
        assert row[-2:] == [rec["status"], rec["reason"] or ""] and row[0] == rec["phase"]
        assert (row[5] == "") == (rec["t_max_s"] is None)
    return recs


def check_plot(paths, prefix, tmp_path):
    """mdfio-plot draws the completed phases, as it draws them alone, says
    which it did not on stderr, and exits 1."""
    broken, alone = tmp_path / "broken", tmp_path / "alone"
    broken.mkdir()
    alone.mkdir()
    complete = [only(p, COMPLETED, tmp_path / f"plot-complete-{i}.json") for i, p in enumerate(paths)]
    proc = subprocess.run([str(PLOT), *map(str, paths), "--logs", str(prefix), "--out", str(broken)],
                          capture_output=True, text=True, timeout=TIMEOUT)
    ok = subprocess.run([str(PLOT), *map(str, complete), "--logs", str(prefix), "--out", str(alone)],
                        capture_output=True, text=True, timeout=TIMEOUT)
    assert ok.returncode == 0, ok.stderr
    assert proc.returncode == 1 and proc.stderr == (
        f"mdfio-plot: {', '.join(map(str, paths))}: not every rank completed every phase (the report marks "
        f"them): {BROKEN} (incomplete), {SECTIONS[3]} (not run), {SECTIONS[4]} (not run); not drawn\n"), proc.stderr
    made = [os.path.basename(p) for p in proc.stdout.split()]
    assert made == [os.path.basename(p) for p in ok.stdout.split()] == [
        f"{ph}-{kind}.png" for ph in ("precreate", "benchmark-1") for kind in ("timeline", "boxplot", "histogram", "windows")
    ] + ["repeats-rate.png"]
    for dat in sorted(alone.glob("*.dat")):
        assert (broken / dat.name).read_text() == dat.read_text(), dat.name
    # the repeats figure spans the run's repeats and says which did not complete
    gp = (broken / "repeats-rate.gp").read_text()
    assert f"set xrange [0.5:{R + 0.5}]" in gp and "; repeat 2 incomplete, 3 not run" in gp, gp
    scaling = subprocess.run([str(PLOT), "--scaling", "run=" + ",".join(map(str, paths)), "--out", str(broken)],
                             capture_output=True, text=True, timeout=TIMEOUT)
    assert scaling.returncode == 1 and scaling.stdout.split() == [str(broken / "scaling.png")], scaling.stderr
    assert scaling.stderr.startswith(f"mdfio-plot: --scaling run={','.join(map(str, paths))}: not every rank "
                                     "completed every phase")


# --- a host killed -------------------------------------------------------------

def test_a_host_killed_in_repeat_2(host_killed, tmp_path):
    path, prefix, last = host_killed
    error = {last[(s, r)]["error"] for s in SECTIONS[3:] for r in (0, 1)}
    assert len(error) == 1 and error != {0}, error
    error = error.pop()
    later = (f"ranks 0-1 (host host1) ended with fio error {error} before their first unit; ranks 2-3 (host host2) "
             "had not begun it at their fio's last report")
    marks = [f"benchmark incomplete (repeat 2, job {BROKEN}): ranks 2-3 (host host2) were still in it at their "
             "fio's last report (that fio died, was stopped, or still runs)",
             f"benchmark not run (repeat 3, job {SECTIONS[3]}): {later}",
             f"cleanup not run (job {SECTIONS[4]}): {later}"]
    recs = check_report([path], tmp_path, marks, "1100")
    # the completed phases over all 4 ranks of both hosts, T the slowest's
    for rec in (r for r in recs if r["process"] == "all" and r["status"] == "complete"):
        section = SECTIONS[0] if rec["phase"] == "precreate" else SECTIONS[rec["repeat"]]
        times = [last[(section, r)][HEAD[rec["phase"]]]["slat_ns"]["max"] / 1e9 for r in range(4)]
        assert rec["ranks"] == 4 and rec["t_max_s"] == max(times) and rec["t_min_s"] == min(times)
    check_plot([path], prefix, tmp_path)


def test_a_host_that_never_reported(host_killed, tmp_path):
    """A fio client without --status-interval gets a server's results
    when its jobs end: of a host that died none, so no phase has every
    rank (here: its jobs taken out of the same run's client JSON)."""
    path, _, last = host_killed
    doc = read_documents(path.read_text(), str(path))[-1]
    doc["client_stats"] = [j for j in doc["client_stats"] if "host=host2" not in j.get("desc", "")]
    gone = tmp_path / "gone.json"
    gone.write_text(json.dumps(doc))
    proc = report(gone)
    missing = ("2 of 4 ranks missing: ranks 2-3 (host host2): host host2 did not report them (it died, or its fio "
               "JSON is not among the files)")
    error = last[(SECTIONS[4], 0)]["error"]
    assert proc.returncode == 1 and proc.stdout.splitlines()[1] == "Nodemap: 1100", proc.stderr
    assert body(proc.stdout) == [
        f"precreate incomplete (job {SECTIONS[0]}): {missing}",
        f"benchmark incomplete (repeat 1, job {SECTIONS[1]}): {missing}",
        f"benchmark incomplete (repeat 2, job {SECTIONS[2]}): {missing}",
        f"benchmark not run (repeat 3, job {SECTIONS[3]}): ranks 0-1 (host host1) ended with fio error {error} "
        f"before their first unit; {missing}",
        f"cleanup not run (job {SECTIONS[4]}): ranks 0-1 (host host1) ended with fio error {error} before their "
        f"first unit; {missing}"]


def test_the_refusals_stay(host_killed, rank_killed, tmp_path):
    """Input that is no one run is still refused, in one line: a rank
    twice, files of different runs."""
    files = rank_killed[0]
    copy = tmp_path / "copy.json"
    copy.write_text(files[0].read_text())
    proc = report(*files, copy)
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert "rank 0 of 3 twice" in proc.stderr
    proc = report(*files[:2], host_killed[0])
    assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("mdfio-report: files of different runs: ")
    for edit in ("twice", "other run"):
        doc = read_documents(host_killed[0].read_text(), str(host_killed[0]))[-1]
        for j in doc["client_stats"]:
            if j["jobname"] != COMPLETED[0]:
                continue
            if edit == "twice" and "rank=2 " in j["desc"]:
                # host2's rank 2 reported as rank 0, which host1 has
                j["desc"] = j["desc"].replace("rank=2 ", "rank=0 ")
            elif edit == "other run" and "rank=1 " in j["desc"]:
                j["job options"]["steps_per_set"] = str(I + 1)
        path = tmp_path / "edited.json"
        path.write_text(json.dumps(doc))
        proc = report(path)
        assert proc.returncode == 2 and proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
        assert ("rank 0 of 4 twice" if edit == "twice" else "ran it with steps_per_set=") in proc.stderr


# --- an mpirun rank killed ---------------------------------------------------------

def test_an_mpirun_rank_killed_in_repeat_2(rank_killed, tmp_path):
    files, prefix, _ = rank_killed
    last = {}
    for path in files:
        last.update(last_reports(path))
    host = socket.gethostname()
    assert {j["desc"].split("host=")[1].split(";")[0] for j in last.values()} == {host}
    error = {last[(s, r)]["error"] for s in SECTIONS[3:] for r in (0, 1)}
    assert len(error) == 1 and error != {0}, error
    later = (f"ranks 0-1 (host {host}) ended with fio error {error.pop()} before their first unit; rank 2 "
             f"(host {host}) had not begun it at its fio's last report")
    marks = [f"benchmark incomplete (repeat 2, job {BROKEN}): rank 2 (host {host}) was still in it at its fio's "
             "last report (that fio died, was stopped, or still runs)",
             f"benchmark not run (repeat 3, job {SECTIONS[3]}): {later}",
             f"cleanup not run (job {SECTIONS[4]}): {later}"]
    check_report(files, tmp_path, marks, "111")
    check_plot(files, prefix, tmp_path)
