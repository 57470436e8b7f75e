"""mdfio-report and mdfio-plot on one run over many hosts and fio processes:
real runs over 2 and 4 fio servers (each a "host" in a UTS namespace of its
own) and under mpirun -np 4, the merged figures recomputed here from the raw
JSON, the phases of incomplete input marked, and the refusals of mixed
input."""
import json
import math
import re
import subprocess
import time

import pytest

import mdfio.fio
from conftest import MPIRUN, MPI_ENV, SANITIZER_REPORT, SOURCE_ROOT, client_env, engine_path, fio_env, need_mpirun
from mdfio.fiojson import read_documents
from mdfio.hosts import fio_servers, need_unshare

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
PLOT = SOURCE_ROOT / "tools" / "mdfio-plot"
OPS = ("create", "stat", "read", "delete")
SLOT = {"create": ("write", "clat_ns"), "read": ("read", "clat_ns"),
        "delete": ("trim", "clat_ns"), "stat": ("sync", "lat_ns")}
HEAD = {"precreate": "write", "benchmark": "read", "cleanup": "trim"}
HEAD_OP = {"precreate": "create", "benchmark": "read", "cleanup": "delete"}
PHASES = ["precreate", "benchmark", "benchmark", "cleanup"]
D, P, I = 3, 30, 10
DESC = re.compile(r"mdfio rank=(\d+) ranks=(\d+) host=(\S+); .+")
TIMEOUT = 300


def phase_s(job, slot):
    """A process's phase time: the engine's exact one (slat_ns of the
    phase's slot, one sample), else fio's runtime."""
    exact = job[slot]["slat_ns"]
    return exact["max"] / 1e9 if exact["N"] == 1 else job[slot]["runtime"] / 1000

def report(*args):
    return subprocess.run([str(REPORT), *map(str, args)], capture_output=True, text=True)


def one_line_exit_2(proc):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert proc.stdout == "" and len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith("mdfio-report: ") and "Traceback" not in proc.stderr
    return proc.stderr.strip()


def jobtext(root, clones, offset, hosts=None, **opts):
    if hosts:
        opts["hosts"] = ",".join(hosts)
    return mdfio.fio.jobfile(PHASES, root, engine_path(), numjobs=clones, datasets=D, precreate_per_set=P,
                             steps_per_set=I, rank_offset=offset, verify_read=1, join_timeout=5, **opts)


def client_run(base, nhosts, clones, offset, args=(), **opts):
    """One run over nhosts fio servers: its client JSON (json+); args: more
    of the client's options."""
    if need_unshare():
        pytest.skip(need_unshare())
    root = base / "root"
    root.mkdir()
    # the servers load the engine under test: the sanitizers' runtime too
    with fio_servers(nhosts, base, env=fio_env()) as servers:
        hosts = base / "hosts.list"
        hosts.write_text("".join(f"ip:{s.address},{s.port}\n" for s in servers))
        run = mdfio.fio.run(base / "job.fio", jobtext(root, clones, offset, [s.name for s in servers], **opts),
                            output_format="json+", args=[f"--client={hosts}", *args], env=client_env(), timeout=TIMEOUT)
    assert run.rc == 0 and not SANITIZER_REPORT.search(run.stderr), run.stderr
    return base / "job.json"


@pytest.fixture(scope="module")
def two_hosts(tmp_path_factory):
    """2 hosts x 2 ranks, offset 2, with latency logs for mdfio-plot."""
    base = tmp_path_factory.mktemp("two")
    (base / "logs").mkdir()
    return client_run(base, 2, 2, 2, latency_log=base / "logs" / "lat", latency_all=1), base / "logs" / "lat"


@pytest.fixture(scope="module")
def four_hosts(tmp_path_factory):
    """4 hosts x 1 rank, offset 1: every read crosses hosts."""
    return client_run(tmp_path_factory.mktemp("four"), 4, 1, 1)


def mpirun(base, np, clones=1, **opts):
    """mpirun -np np fio: one JSON per fio process."""
    need_mpirun()
    root = base / "root"
    root.mkdir()
    job = base / "mpi.fio"
    job.write_text(jobtext(root, clones, clones, **opts))
    env = fio_env(MPI_ENV)
    proc = subprocess.run([*MPIRUN, "--bind-to", "none", "-np", str(np), "sh", "-c",
                           f'exec fio --output-format=json+ --output="{base}/run.$OMPI_COMM_WORLD_RANK.json" "{job}"'],
                          capture_output=True, text=True, env=env, timeout=TIMEOUT)
    assert proc.returncode == 0 and not SANITIZER_REPORT.search(proc.stderr), proc.stdout + proc.stderr
    return [base / f"run.{r}.json" for r in range(np)]


@pytest.fixture(scope="module")
def mpi_files(tmp_path_factory):
    return mpirun(tmp_path_factory.mktemp("mpi"), 4)


# --- the figures recomputed from the raw JSON ------------------------------

def raw_jobs(paths):
    """Every rank's job of the files: (jobname, rank, ranks, host, job)."""
    out = []
    for path in paths:
        doc = read_documents(path.read_text(), str(path))[-1]
        jobs = doc["jobs"] if "jobs" in doc else [j for j in doc["client_stats"] if j["jobname"] != "All clients"]
        for j in jobs:
            m = DESC.fullmatch(j["desc"])
            out.append((j["jobname"], int(m[1]), int(m[2]), m[3], j))
    return out


def samples(lats):
    values = []
    for lat in lats:
        for v, c in lat.get("bins", {}).items():
            values += [int(v)] * c
    return sorted(values)


def expected(paths):
    """md-workbench's figures per section over all ranks, from the raw jobs."""
    sections = {}
    for name, rank, ranks, host, j in raw_jobs(paths):
        sections.setdefault(name, []).append((rank, ranks, host, j))
    out = []
    for name, jobs in sections.items():
        phase = name.rsplit("-", 1)[0]
        n = jobs[0][1]
        assert sorted(r for r, *_ in jobs) == list(range(n))
        times = [phase_s(j, HEAD[phase]) for *_, j in jobs]
        t, mean = max(times), sum(times) / len(times)
        rec = {"section": name, "phase": phase, "ranks": n, "t_max_s": t, "t_min_s": min(times), "t_mean_s": mean,
               "balance_pct": min(times) / t * 100,
               "t_stddev_s": math.sqrt(sum((x - mean) ** 2 for x in times) / (len(times) - 1)),
               "objects": sum(j[SLOT[HEAD_OP[phase]][0]][SLOT[HEAD_OP[phase]][1]]["N"] for *_, j in jobs),
               "processes": {r: (h, phase_s(j, HEAD[phase])) for r, _, h, j in jobs}}
        rec["obj_per_s"] = rec["objects"] / t
        for op in OPS:
            lats = [j[SLOT[op][0]][SLOT[op][1]] for *_, j in jobs]
            rec[f"{op}_count"] = sum(lat["N"] for lat in lats)
            s = samples(lats)
            if s:
                assert len(s) == rec[f"{op}_count"]
                k = len(s)
                # bucket values clamped into the exact [min, max]
                lo, hi = min(lat["min"] for lat in lats if lat["N"]), max(lat["max"] for lat in lats if lat["N"])
                median = s[k // 2] if k % 2 else (s[k // 2 - 1] + s[k // 2]) / 2
                rec[f"{op}_median_s"] = min(max(median, lo), hi) / 1e9
                rec[f"{op}_q99_s"] = min(max(s[round(0.99 * (k - 1) + 0.49)], lo), hi) / 1e9
                rec[f"{op}_max_s"] = hi / 1e9
        out.append(rec)
    return out


def cross_host_reads(paths, offset):
    """(k, n) of the reads of a benchmark step whose object another host made."""
    host = {rank: h for _, rank, _, h, _ in raw_jobs(paths)}
    n = len(host)
    k = sum(host[(r - offset * (d + 1)) % n] != host[r] for r in range(n) for d in range(D))
    return k, n * D


def check_merged(paths, offset):
    proc = report(*paths, "--json", "--process-reports")
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)
    records = got["records"]
    want = expected(paths)
    whole = [r for r in records if r["process"] == "all"]
    assert len(whole) == len(want) == len(PHASES)
    n = want[0]["ranks"]
    assert got["parameters"]["ranks"] == n and got["total_objects"] == D * (P + 2 * I) * n
    for g, w in zip(whole, want):
        assert g["phase"] == w["phase"] and g["ranks"] == n and g["host"] is None
        for k, v in w.items():
            if k not in ("section", "phase", "processes"):
                assert g[k] == pytest.approx(v, rel=1e-9), (w["section"], k)
        assert w["objects"] == D * (P if w["phase"] != "benchmark" else I) * n
        procs = [r for r in records if r["process"] != "all" and (r["phase"], r["repeat"]) == (g["phase"], g["repeat"])]
        assert [r["process"] for r in procs] == list(range(n))
        for r in procs:
            assert (r["host"], r["t_max_s"]) == w["processes"][r["process"]]
    k, total = cross_host_reads(paths, offset)
    assert got["parameters"]["reads-cross-hosts"] == ("all" if k == total else "none" if not k else
                                                      f"some ({k} of {total})")
    return got


def test_two_hosts_merged_figures(two_hosts):
    got = check_merged([two_hosts[0]], offset=2)
    assert got["parameters"]["hosts"] == 2
    # offset = ranks per host: dataset d crosses hosts unless d+1 is a multiple of 2
    assert got["parameters"]["reads-cross-hosts"] == "some (8 of 12)"


def test_four_hosts_merged_figures(four_hosts):
    got = check_merged([four_hosts], offset=1)
    assert got["parameters"]["hosts"] == 4 and got["parameters"]["reads-cross-hosts"] == "all"


def test_mpirun_files_merged_figures(mpi_files):
    got = check_merged(mpi_files, offset=1)
    # one machine: every rank on one host
    assert got["parameters"]["hosts"] == 1 and got["parameters"]["reads-cross-hosts"] == "none"
    text = report(*mpi_files, "--process-reports", "--format", "md-workbench-2020").stdout
    assert "reads-cross-hosts" not in text and "\tranks=4\n" in text
    assert re.search(r"^3: benchmark process max:", text, re.M), text
    assert report(*mpi_files).stdout.splitlines()[1] == "Nodemap: 1111"


def nodemap(paths):
    """md-workbench's Nodemap of the raw jobs: 1 for a rank on rank 0's host."""
    host = {rank: h for _, rank, _, h, _ in raw_jobs(paths)}
    return "Nodemap: " + "".join("1" if host[r] == host[0] else "0" for r in range(len(host)))


def test_nodemap_and_times_of_a_fio_client(two_hosts, four_hosts):
    """A digit per rank, 1 on rank 0's host; a fio client's JSON has no
    run time, so its start and total runtime are n/a, its end its
    timestamp."""
    for path, want in ((two_hosts[0], "Nodemap: 1100"), (four_hosts, "Nodemap: 1000")):
        assert nodemap([path]) == want
        lines = report(path).stdout.splitlines()
        doc = read_documents(path.read_text(), str(path))[-1]
        end = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(doc["timestamp"]))
        assert lines[1] == want and lines[2].endswith(" time: n/a"), lines[:3]
        assert lines[-1] == f"Total runtime: n/a time: {end}"


def test_md_workbench_text_of_two_hosts(two_hosts):
    path = two_hosts[0]
    proc = report(path, "--process-reports", "--format", "md-workbench-2020")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    head = [line for line in lines if line.startswith("\t")]
    assert "\tranks=4" in head and head[-1] == "\treads-cross-hosts=some (8 of 12)", head
    hosts = {r: h for _, r, _, h, _ in raw_jobs([path])}
    labelled = [line.split(":", 1)[0] for line in lines if re.match(r"\d+@", line)]
    assert labelled == [f"{r}@{hosts[r]}" for r in range(4)] * len(PHASES)
    for fmt in ("md-real-io-2017", "md-real-io-2016"):
        out = report(path, "--format", fmt, "--process-reports").stdout
        assert [line.split(":", 1)[0] for line in out.splitlines() if re.match(r"\d+@", line)] == labelled
    rows = report(path, "--csv", "--process-reports").stdout.splitlines()
    assert rows[0].split(",")[:5] == ["phase", "repeat", "process", "host", "ranks"]
    assert [row.split(",")[3] for row in rows[1:6]] == ["", "host1", "host1", "host2", "host2"]


def test_a_clients_interim_reports(tmp_path):
    """fio's client writes its JSON once, at its end, with every
    --status-interval report of every job in client_stats, the final one
    last: each rank's last report counts, as the last document of a fio's
    own output does."""
    path = client_run(tmp_path, 2, 1, 1, args=["--status-interval=1"], startdelay=3)
    doc = read_documents(path.read_text(), str(path))[-1]
    jobs = [j for j in doc["client_stats"] if j["jobname"] != "All clients"]
    last = {}
    for j in jobs:
        last[(j["hostname"], j["jobname"], j["desc"])] = j
    # startdelay holds the run back 3 s from fio's start (fio counts it from
    # there, not from a section's turn), over which fio reports twice
    assert len(jobs) > len(last) == 2 * len(PHASES)
    final = tmp_path / "final.json"
    final.write_text(json.dumps({**doc, "client_stats": list(last.values())}))
    proc = report(path)
    assert proc.returncode == 0 and proc.stdout == report(final).stdout, proc.stderr
    check_merged([final], offset=1)


# --- incomplete and mixed input ----------------------------------------------

def set_global(doc, **opts):
    """Sets [global] options in a document: one object, or from a fio 3.34+
    client one per server."""
    g = doc["global options"]
    for o in g if isinstance(g, list) else [g]:
        o.update(opts)


def edited(path, tmp_path, name, edit):
    doc = read_documents(path.read_text(), str(path))[-1]
    edit(doc)
    out = tmp_path / name
    out.write_text(json.dumps(doc))
    return out


def marked(run, path, section, mark):
    """The report of path, the run's JSON edited so that not every rank
    completed section: every other line as in the run's report, the mark
    in the section's place, the section named on stderr, exit 1."""
    whole = report(run).stdout.splitlines()
    proc = report(path)
    assert proc.returncode == 1, proc.stderr
    # Args, Nodemap and the header, then a line per section in jobfile
    # order (jobfile() names them <phase>-<position>)
    at = 3 + int(section.rsplit("-", 1)[1])
    assert proc.stdout.splitlines() == whole[:at] + [mark] + whole[at + 1:], proc.stdout
    assert proc.stderr == (f"mdfio-report: {path}: not every rank completed every phase (the report marks "
                           f"them): {section} (incomplete)\n")


def test_a_hosts_jobs_missing_from_a_section(two_hosts, tmp_path):
    """A host's ranks missing from one section (its fio's JSON of it
    lost): that repeat is marked, every other phase reported."""
    def drop(doc):
        doc["client_stats"] = [j for j in doc["client_stats"]
                               if not (j["jobname"] == "benchmark-2" and "host=host2" in j.get("desc", ""))]
    marked(two_hosts[0], edited(two_hosts[0], tmp_path, "drop.json", drop), "benchmark-2",
           "benchmark incomplete (repeat 2, job benchmark-2): 2 of 4 ranks missing: ranks 2-3 (host host2): host "
           "host2 did not report them (it died, or its fio JSON is not among the files)")


def test_one_of_a_hosts_jobs_missing_from_a_section(two_hosts, tmp_path):
    """One of host2's two processes missing from a section (its host
    killed while its fio sent a report): that rank is missing, not the
    whole run refused; more processes than numjobs are refused."""
    def drop(doc):
        doc["client_stats"] = [j for j in doc["client_stats"]
                               if not (j["jobname"] == "benchmark-2" and "rank=3 " in j.get("desc", ""))]
    marked(two_hosts[0], edited(two_hosts[0], tmp_path, "drop.json", drop), "benchmark-2",
           "benchmark incomplete (repeat 2, job benchmark-2): 1 of 4 ranks missing: ranks 3 (host host2): host "
           "host2 did not report them (it died, or its fio JSON is not among the files)")

    def moved(doc):
        jobs = [j for j in doc["client_stats"] if j["jobname"] == "benchmark-2"]
        server = next(j for j in jobs if "rank=2 " in j["desc"])
        for j in jobs:
            if "rank=1 " in j["desc"]:
                j["hostname"], j["port"] = server["hostname"], server["port"]
    proc = report(edited(two_hosts[0], tmp_path, "moved.json", moved))
    assert proc.returncode == 2 and "reported 3 processes, more than its 2 (numjobs): not one run" in proc.stderr, \
        proc.stderr


def test_failed_ranks_name_their_host(two_hosts, tmp_path):
    """Ranks that ended their phase with a fio error its figures do not
    account for (no failed operation): the phase did not complete on
    them; fio's EIO for counted errors is the engine's, and its phase
    completed (test_mdfio_report.py)."""
    def fail(doc):
        for j in doc["client_stats"]:
            if j["jobname"] == "benchmark-1" and "host=host2" in j.get("desc", ""):
                j["error"] = 5
    marked(two_hosts[0], edited(two_hosts[0], tmp_path, "fail.json", fail), "benchmark-1",
           "benchmark incomplete (repeat 1, job benchmark-1): ranks 2-3 (host host2) ended with fio error 5")


def test_fios_own_late_error_leaves_the_phase_whole(two_hosts, tmp_path):
    """fio's EDEADLK ("stuck grabbing stat_sem"), which it gives a job
    whose I/O has ended when its stats lock stays taken (its status thread,
    --status-interval), skips only fio's runtime: the phase is reported,
    the ranks named on stderr, exit 1."""
    def late(doc):
        for j in doc["client_stats"]:
            if j["jobname"] == "benchmark-1" and "host=host2" in j.get("desc", ""):
                j["error"] = 35
    path = edited(two_hosts[0], tmp_path, "late.json", late)
    proc = report(path)
    assert (proc.returncode, proc.stdout) == (1, report(two_hosts[0]).stdout), proc.stderr
    assert proc.stderr == f"mdfio-report: {path}: job benchmark-1: ranks 2-3 (host host2) ended with fio error 35\n"


def test_duplicate_missing_and_mixed_files(mpi_files, four_hosts, tmp_path):
    copy = tmp_path / "copy.json"
    copy.write_text(mpi_files[0].read_text())
    line = one_line_exit_2(report(*mpi_files, copy))
    assert re.search(rf"rank 0 of 4 twice, from host \S+ \({mpi_files[0]}\) and host \S+ \({copy}\): "
                     "files of different runs, or one file given twice", line), line
    # a file left out: its rank is missing from every phase, and the host
    # of a rank no file names is not known
    proc = report(*mpi_files[:3])
    assert proc.returncode == 1 and proc.stdout.splitlines()[1] == "Nodemap: 111?", proc.stdout + proc.stderr
    missing = "1 of 4 ranks missing: ranks 3 (host unknown): their fio's JSON is not among the files"
    assert [line for line in proc.stdout.splitlines() if missing in line] == [
        "precreate incomplete (job precreate-0): " + missing, "benchmark incomplete (repeat 1, job benchmark-1): "
        + missing, "benchmark incomplete (repeat 2, job benchmark-2): " + missing, "cleanup incomplete (job "
        "cleanup-3): " + missing], proc.stdout
    assert "given twice" in one_line_exit_2(report(mpi_files[0], mpi_files[0]))
    # same ranks and jobs, another run's parameters
    other = edited(four_hosts, tmp_path, "other.json",
                   lambda doc: set_global(doc, steps_per_set="11"))
    line = one_line_exit_2(report(*mpi_files[:3], other))
    assert "files of different runs: job precreate-0 has steps_per_set=10 in" in line and str(other) in line


def test_files_of_runs_with_another_number_of_ranks(mpi_files, tmp_path):
    def shrink(doc):
        for j in doc["jobs"]:
            j["desc"] = j["desc"].replace("ranks=4", "ranks=2")
    other = edited(mpi_files[1], tmp_path, "two.json", shrink)
    line = one_line_exit_2(report(mpi_files[0], other))
    assert line.startswith("mdfio-report: files of different runs: ") and "one of 4" in line and "one of 2" in line
    assert str(mpi_files[0]) in line and str(other) in line


def test_a_host_killed_mid_benchmark(tmp_path):
    """A real client run of a benchmark alone whose second host dies in
    it (its fio server and every job of it): the report marks the
    benchmark, naming that host's ranks as missing (without
    --status-interval a fio client gets a server's results only when its
    jobs end)."""
    if need_unshare():
        pytest.skip(need_unshare())
    root = tmp_path / "root"
    root.mkdir()
    big = dict(datasets=D, precreate_per_set=4000, steps_per_set=4000, join_timeout=5, hosts="host1,host2")
    with fio_servers(2, tmp_path, env=fio_env()) as servers:
        hosts = tmp_path / "hosts.list"
        hosts.write_text("".join(f"ip:{s.address},{s.port}\n" for s in servers))
        pre = mdfio.fio.run(tmp_path / "pre.fio", mdfio.fio.jobfile(["precreate"], root, engine_path(), numjobs=2,
                                                                     **big),
                            args=[f"--client={hosts}"], env=client_env(), timeout=TIMEOUT)
        assert pre.rc == 0, pre.stderr
        job = tmp_path / "dies.fio"
        job.write_text(mdfio.fio.jobfile(["benchmark"], root, engine_path(), numjobs=2, **big))
        out = tmp_path / "dies.json"
        proc = subprocess.Popen(["fio", f"--client={hosts}", "--output-format=json+", f"--output={out}", str(job)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=client_env())
        try:
            status = root / "mdfio.status"
            deadline = time.monotonic() + 60
            while status.read_text().count("benchmarking") < 4:
                assert time.monotonic() < deadline and proc.poll() is None, "the benchmark did not start"
                time.sleep(0.005)
            servers[1].kill()
            assert proc.wait(timeout=TIMEOUT) != 0
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    proc = report(out)
    assert proc.returncode == 1 and proc.stdout.splitlines()[3] == (
        "benchmark incomplete (repeat 1, job benchmark-0): 2 of 4 ranks missing: ranks 2-3 (host host2): host "
        "host2 did not report them (it died, or its fio JSON is not among the files)"), proc.stdout
    assert proc.stderr == (f"mdfio-report: {out}: not every rank completed every phase (the report marks them): "
                           "benchmark-0 (incomplete)\n")


def test_a_clients_errors_reach_the_terminal_as_they_happen(tmp_path):
    """fio --client ... | mdfio-report --follow -: an engine's error on a
    server is on the terminal (stderr) while the run goes on, not only in
    fio's output at its end (a fio client writes its JSON, and with
    --output every message, only when it ends). Here every rank refuses
    the precreate at once (a directory that is not mdfio's where a dataset
    goes), and the later sections start 6 s after fio: the error comes
    while fio still runs."""
    if need_unshare():
        pytest.skip(need_unshare())
    root = tmp_path / "root"
    (root / "0_0").mkdir(parents=True)
    text = jobtext(root, 1, 1).replace("phase=benchmark\n", "phase=benchmark\nstartdelay=6\n")
    text = text.replace("phase=cleanup\n", "phase=cleanup\nstartdelay=6\n")
    job = tmp_path / "job.fio"
    with fio_servers(2, tmp_path, env=fio_env()) as servers:
        job.write_text(text.replace("[global]\n", f"[global]\nhosts={','.join(s.name for s in servers)}\n"))
        hosts = tmp_path / "hosts.list"
        hosts.write_text("".join(f"ip:{s.address},{s.port}\n" for s in servers))
        fio = subprocess.Popen(["fio", f"--client={hosts}", "--output-format=json+", str(job)],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=client_env())
        follow = subprocess.Popen([str(REPORT), "--follow", "-"], stdin=fio.stdout, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        fio.stdout.close()
        try:
            said = [(line, fio.poll() is None) for line in follow.stderr]
            assert follow.wait(TIMEOUT) == 1 and fio.wait(TIMEOUT) != 0
        finally:
            for p in (fio, follow):
                if p.poll() is None:
                    p.kill()
                    p.wait()
    refusal = f"mdfio: {root}/0_0 already exists: refusing to precreate over it (nothing was touched)"
    live = [line for line, running in said if running]
    assert any(re.fullmatch(rf"<host[12]> {re.escape(refusal)}\n", line) for line in live), said
    assert said[-1][0].startswith("mdfio-report: <stdin>: not every rank completed every phase"), said


# --- mdfio-plot ----------------------------------------------------------------

def test_plot_of_two_hosts(two_hosts, tmp_path):
    path, prefix = two_hosts
    proc = subprocess.run([str(PLOT), str(path), "--logs", str(prefix), "--out", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    pngs = proc.stdout.split()
    # per phase a timeline, a boxplot, a histogram and the windows; the repeats
    assert len(pngs) == 4 * len(PHASES) + 1
    for p in pngs:
        data = open(p, "rb").read()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10000
    want = expected([path])
    # the boxplot: quantiles merged over all ranks of both hosts
    box = {line.split()[1]: list(map(float, line.split()[2:])) for line in
           (tmp_path / "benchmark-1-boxplot.dat").read_text().splitlines()[1:]}
    bench = want[1]
    for op in OPS:
        assert box[op][2] == pytest.approx(bench[f"{op}_median_s"], rel=1e-6)
        assert box[op][4] == pytest.approx(bench[f"{op}_max_s"], rel=1e-6)
        assert box[op][7] == bench[f"{op}_count"] == D * I * 4
    # the timeline: every operation of every rank of both hosts
    rows = (tmp_path / "benchmark-1-timeline-read.dat").read_text().splitlines()[1:]
    assert len(rows) == D * I * 4
    assert "(4 ranks on 2 hosts)" in (tmp_path / "benchmark-1-boxplot.gp").read_text()


def test_plot_of_mpirun_files(mpi_files, tmp_path):
    proc = subprocess.run([str(PLOT), "--scaling", "mpi=" + ",".join(map(str, mpi_files)), "--out", str(tmp_path)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    rates = (tmp_path / "scaling-benchmark-mpi.dat").read_text().splitlines()[1:]
    want = [r for r in expected(mpi_files) if r["phase"] == "benchmark"]
    assert len(rates) == 1 and int(rates[0].split()[0]) == 4
    assert float(rates[0].split()[1]) == pytest.approx(sum(r["obj_per_s"] for r in want) / len(want), rel=1e-5)
