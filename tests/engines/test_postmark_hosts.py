"""mdfio-postmark over several hosts (hosts=): two fio servers, each in a
UTS namespace of its own on its own loopback address (mdfio.hosts),
sharing one directory. Each host runs its own PostMark in <directory>/h<index>
with seed pm_seed + index: its files and counts are those of one fio run
with that seed; the phases start together at the rank file's barrier, and
mdfio-report prints each host's report and their aggregate."""
import os
import re
import subprocess
import sys

from conftest import SOURCE_ROOT, engine_path, fio_client, run_fio

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
TIMEOUT = 120       # s, any one fio or fio client
SEED = 77
OPTIONS = dict(pm_files=30, pm_transactions=200, pm_subdirectories=2, pm_size_low=100, pm_size_high=2000,
               pm_buffering="false")
SLOTS = ("read", "write", "sync", "trim")


def job(root, phases, seed=SEED, hosts=None):
    lines = ["[global]", f"ioengine=external:{engine_path('postmark')}", f"directory={root}", f"pm_seed={seed}"]
    lines += [f"hosts={','.join(hosts)}", "join_timeout=10"] if hosts else []
    lines += [f"{k}={v}" for k, v in OPTIONS.items()]
    for phase in phases:
        lines += ["", f"[{phase}]", "stonewall", f"phase={phase}"]
    return "\n".join(lines) + "\n"


def contents(root):
    """Every file below root (the engine's mark too) and what it holds."""
    return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
            for d, _, fs in os.walk(root) for f in fs}


def counts(jobs):
    """Each phase's operations per slot, and its errors."""
    return {j["jobname"]: ([j[s]["total_ios"] for s in SLOTS], j["error"]) for j in jobs}


def test_each_host_runs_postmark_with_its_seed(servers, tmp_path):
    hosts = servers(2)
    names = [h.name for h in hosts]
    over = tmp_path / "over"
    over.mkdir()
    (over / "notes.txt").write_text("the user's\n")
    run = fio_client(hosts, job(over, ("pool", "transactions"), hosts=names), tmp_path, check=True,
                     timeout=TIMEOUT)
    assert sorted(p.name for p in over.iterdir()) == ["h0", "h1", "notes.txt"]

    for i, host in enumerate(hosts):
        one = tmp_path / f"one-{i}"
        (one / "root").mkdir(parents=True)
        alone = run_fio(job(one / "root", ("pool", "transactions"), seed=SEED + i), one, check=True,
                        timeout=TIMEOUT)
        assert contents(over / f"h{i}") == contents(one / "root")
        mine = [j for j in run.jobs() if j["hostname"] == host.address]
        assert counts(mine) == counts(alone.jobs())
        # the description's whole-run counts are those of the host's seed
        assert sorted(j["desc"] for j in mine) == sorted(j["desc"] for j in alone.jobs())

    proc = subprocess.run([sys.executable, str(REPORT), str(tmp_path / "client-0.json")], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    # each host's report, then the aggregate: the sums of the hosts'
    # counts and rates, each phase's time the slowest host's
    parts = proc.stdout.split("\n\n")
    heads = [p.splitlines()[0] for p in parts if p.startswith(("Host ", "All "))]
    assert heads == [f"Host {h.address}:" for h in hosts] + ["All 2 hosts (mdfio):"], proc.stdout
    per_host = [p for p in proc.stdout.split("Host ")[1:]]
    created = [int(re.search(r"\t(\d+) created \(", p)[1]) for p in per_host]
    tx_rates = [float(re.search(r"([\d.]+) transactions per second, ", p)[1]) for p in per_host]
    pools = [float(re.search(r"pool ([\d.]+),", p)[1]) for p in per_host]
    aggregate = parts[-1]
    assert f"400 transactions, {sum(created)} created," in aggregate
    rate = float(re.search(r"([\d.]+) transactions per second, ", aggregate)[1])
    assert abs(rate - sum(tx_rates)) <= 0.011, aggregate
    assert float(re.search(r"pool ([\d.]+),", aggregate)[1]) == max(pools)

    run = fio_client(hosts, job(over, ("delete",), hosts=names), tmp_path, check=True, timeout=TIMEOUT)
    assert sorted(p.name for p in over.iterdir()) == ["notes.txt"]


def test_bad_hosts_is_one_line(tmp_path):
    root = tmp_path / "root"
    root.mkdir()
    run = run_fio(job(root, ("pool",), hosts=["no-such-host-a", "no-such-host-b"]), tmp_path, check=False,
                  timeout=TIMEOUT)
    assert len(run.mdfio_lines()) == 1 and "hosts=" in run.mdfio_lines()[0], run.stderr
    assert not any(root.iterdir())


def test_a_host_that_cannot_start_stops_both(servers, tmp_path):
    """Host 1's h1 is not empty: its pool refuses to start, host 0's stops
    at the barrier with host 1's reason and takes back what it prepared."""
    hosts = servers(2)
    over = tmp_path / "over"
    (over / "h1").mkdir(parents=True)
    (over / "h1" / "theirs").write_text("kept\n")
    run = fio_client(hosts, job(over, ("pool",), hosts=[h.name for h in hosts]), tmp_path, check=False,
                     timeout=TIMEOUT)
    assert [j["error"] != 0 for j in run.jobs()] == [True, True]
    # each host's line reaches the client, prefixed by fio with its name
    lines = [line for line in run.messages.splitlines() if "mdfio:" in line]
    assert len(lines) == 2 and all("h1: not empty (it holds theirs)" in line for line in lines), run.messages
    assert sorted(line.split()[0] for line in lines) == sorted(f"<{h.name}>" for h in hosts), lines
    assert sorted(p.name for p in over.iterdir()) == ["h1"]
    assert [p.name for p in (over / "h1").iterdir()] == ["theirs"]
    assert (over / "h1" / "theirs").read_text() == "kept\n"


def test_a_refusal_on_a_server_reaches_the_client(servers, tmp_path):
    """A job the engine refuses on a fio server says why at the client, as
    fio's own messages do: the line is not left on the server's stderr."""
    (host,) = servers(1)
    text = job(tmp_path, ("pool",)).replace("pm_files=30", "pm_files=abc")
    run = fio_client([host], text, tmp_path, check=False, timeout=TIMEOUT)
    assert "mdfio: pm_files=abc: expected" in run.messages, run.messages
