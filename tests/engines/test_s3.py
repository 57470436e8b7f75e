"""mdfio-s3 (engines/backends/s3.c) against an S3 server of its own
(versitygw, tools/mdfio/versitygw.py): datasets are key prefixes in one
bucket, objects keys under them; directory= holds only the run's
coordination, and credentials come from the environment alone."""
import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time

import pytest

import mdfio.fio
import mdfio.versitygw as vgw
from conftest import (ENGINE_DIR, SANITIZER_REPORT, SOURCE_ROOT, after_cleanup, but_killed_updates, fio_env, job,
                      kill_fio_when, run_fio)

S3 = mdfio.fio.engine_path(ENGINE_DIR, "s3")
REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
COORDINATION = ["mdfio.ranks", "mdfio.status"]
BUCKET = "mdfio-test"
# a key of someone else's in the bucket, beside the namespace
FOREIGN = "notes/keep-me"
# the key that claims a namespace (under its prefix) for its directory=
CLAIM = ".mdfio-namespace"
# a rank's line when a request found no server
STORE_LOST = re.compile(r"mdfio: rank 0 benchmark: the store did not answer the (create|stat|read|delete) of "
                        r"s3://mdfio-test/0_[01]/file-\d+: [^;]+; the run stops here \(every later request would "
                        r"wait as long\)")


@contextlib.contextmanager
def serving(**server_opts):
    """A versitygw of the test's own (vgw.server's options) with BUCKET,
    holding FOREIGN."""
    if not S3.is_file():
        pytest.skip(f"{S3} not built (meson builds it only where libcurl is: ./setup installs libcurl4-openssl-dev)")
    why = vgw.need_versitygw(SOURCE_ROOT)
    if why:
        pytest.skip(why)
    with vgw.server(SOURCE_ROOT, **server_opts) as srv:
        srv.make_bucket(BUCKET)
        srv.put(BUCKET, FOREIGN, b"precious")
        yield srv


@pytest.fixture
def s3():
    with serving() as srv:
        yield srv


def s3_job(phases, root, bucket=BUCKET, **opts):
    return mdfio.fio.jobfile(phases, root, S3, bucket=bucket, **opts)


def keys(prefix, ranks, datasets, lo, hi):
    """The bucket's keys of a namespace: each dataset's marker and its
    objects file-lo .. file-(hi-1)."""
    out = []
    for r in range(ranks):
        for d in range(datasets):
            out += [f"{prefix}{r}_{d}/"] + [f"{prefix}{r}_{d}/file-{i}" for i in range(lo, hi)]
    return sorted(out)


def counts(path):
    """mdfio-report's figures that count, per phase and repeat."""
    proc = subprocess.run([str(REPORT), "--json", str(path)], capture_output=True, text=True, check=True)
    fields = ("objects", "dsets", "errors", "create_count", "stat_count", "read_count", "delete_count")
    return [(r["phase"], r["repeat"], *(r[f] for f in fields))
            for r in json.loads(proc.stdout)["records"] if r["process"] == "all"]


def errors(run):
    return sum(j[d]["drop_ios"] for j in run.jobs() for d in ("read", "write", "trim"))


def test_phases_count_what_mdfio_posix_counts(s3, tmpfs, tmp_path):
    """precreate, two benchmark repeats and cleanup with verify_read=1, one
    fio each, under prefix=: no error, the keys are the namespace's (and
    the foreign key), directory= holds only mdfio's status and rank files,
    mdfio-report counts what it counts for mdfio-posix with the same
    parameters, and the cleanup leaves only the foreign key."""
    R, D, P, I = 2, 3, 12, 5
    opts = dict(numjobs=R, datasets=D, precreate_per_set=P, steps_per_set=I, bs=200, verify_read=1)
    root, posix_root = tmpfs / "root", tmpfs / "posix"
    root.mkdir()
    posix_root.mkdir()
    env = s3.env()
    reports = []
    for phases, lo, hi in ((["precreate"], 0, P), (["benchmark", "benchmark"], 2 * I, P + 2 * I), (["cleanup"], 0, 0)):
        work = tmp_path / phases[0]
        work.mkdir()
        run = run_fio(s3_job(phases, root, prefix="run/a", **opts), work, env=env, check=True)
        assert errors(run) == 0
        expect = keys("run/a/", R, D, lo, hi) + [f"run/a/{CLAIM}"] if hi else []
        assert s3.keys(BUCKET) == sorted(expect + [FOREIGN])
        reports += counts(work / "job-0.json")
        if hi:
            assert sorted(os.listdir(root)) == COORDINATION
    assert after_cleanup(root) == []
    posix = tmp_path / "posix"
    posix.mkdir()
    run_fio(job(["precreate", "benchmark", "benchmark", "cleanup"], posix_root, **opts), posix, check=True)
    assert reports == counts(posix / "job-0.json")
    # R * D * P objects and R * D datasets made and removed; R * D * I steps
    assert [r[:4] for r in reports] == [("precreate", 0, 72, 6), ("benchmark", 1, 30, None),
                                        ("benchmark", 2, 30, None), ("cleanup", 0, 72, 6)]


def test_wrong_secret_is_one_line_and_never_printed(s3, tmpfs, tmp_path):
    """A secret the server does not know: fio fails with one line that
    names the endpoint and the server's status and Code, nothing is made,
    and neither secret appears anywhere in fio's output or JSON."""
    root = tmpfs / "root"
    root.mkdir()
    wrong = "WrongSecret" + s3.secret_key[::-1]
    env = dict(s3.env(), AWS_SECRET_ACCESS_KEY=wrong)
    run = run_fio(s3_job(["precreate"], root, datasets=1, precreate_per_set=2), tmp_path, env=env, check=False)
    assert run.rc != 0
    lines = [line for line in run.mdfio_lines() if s3.endpoint in line]
    assert len(lines) == 1, run.stderr
    assert "HTTP 403 SignatureDoesNotMatch" in lines[0] and "credentials: the environment" in lines[0], lines
    json_out = tmp_path / "job-0.json"
    output = run.stdout + run.stderr + (json_out.read_text(errors="replace") if json_out.exists() else "")
    for secret in (wrong, s3.secret_key):
        assert secret not in output
    assert s3.keys(BUCKET) == [FOREIGN]
    assert after_cleanup(root) == []


def test_an_endpoint_holding_a_password_is_refused_without_repeating_it(s3, tmpfs, tmp_path):
    """user:password@ in the endpoint (here from AWS_ENDPOINT_URL_S3, as a
    pipeline's environment may hold it): refused before any request, in a
    line that does not repeat it."""
    root = tmpfs / "root"
    root.mkdir()
    secret = "Pw" + s3.secret_key[::-1]
    env = dict(s3.env(), AWS_ENDPOINT_URL_S3=s3.endpoint.replace("://", f"://{s3.access_key}:{secret}@"))
    run = run_fio(s3_job(["precreate"], root, datasets=1, precreate_per_set=2), tmp_path, env=env, check=False)
    assert run.rc != 0
    assert "mdfio: endpoint: holds a user name or password (user:password@HOST): not taken; the keys come " \
           "from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY or a profile" in run.mdfio_lines(), run.stderr
    json_out = tmp_path / "job-0.json"
    output = run.stdout + run.stderr + (json_out.read_text(errors="replace") if json_out.exists() else "")
    assert secret not in output
    assert s3.keys(BUCKET) == [FOREIGN]


def test_cleanup_after_a_killed_benchmark_deletes_only_mdfio_keys(s3, tmpfs, tmp_path):
    """A benchmark killed with SIGKILL midway, then keys mdfio never makes
    planted in its dataset, which holds more keys than a listing's page.
    The cleanup, which cannot trust the status, lists the dataset and
    deletes every object of the window the status allows (counting
    every page), leaves the planted keys and the dataset's marker (as a
    directory holding a foreign file stays), names them and fails; once
    they are gone a second cleanup removes the rest. The foreign key
    outside the namespace is never touched."""
    root = tmpfs / "root"
    root.mkdir()
    # more keys per dataset than a listing's page (1000)
    p = 1050
    opts = dict(datasets=1, precreate_per_set=p, steps_per_set=p, bs=64, prefix="k")
    env = s3.env()
    run_fio(s3_job(["precreate"], root, iodepth=8, **opts), tmp_path, env=env, check=True)
    data = s3.directory / BUCKET / "k"     # versitygw keeps key k/0_0/file-1 as this file
    created = lambda: sum(1 for f in data.glob("0_*/file-*") if int(f.name[5:]) >= p)
    kill_fio_when(s3_job(["benchmark"], root, **opts), tmp_path, lambda: created() > 20, env=env)
    assert created() > 20
    objects = len(list(data.glob("0_*/file-*")))
    assert " benchmarking 0 " in (root / "mdfio.status").read_text()
    assert but_killed_updates(sorted(os.listdir(root))) == COORDINATION
    planted = ["k/0_0/notes.txt", "k/0_0/file-1.bak"]
    for key in planted:
        s3.put(BUCKET, key, b"not mdfio's")
    run = run_fio(s3_job(["cleanup"], root, **opts), tmp_path, env=env, check=False)
    assert run.rc != 0
    assert s3.keys(BUCKET) == sorted(["k/0_0/", f"k/{CLAIM}", FOREIGN] + planted)
    lines = run.mdfio_lines()
    # every page of each dataset's listing counted
    assert any(f"removing the {objects} objects found in its datasets" in line for line in lines), run.stderr
    assert sum("rank 0 cleanup: left 2 entries in its datasets (first: s3://mdfio-test/k/0_0/" in line
               for line in lines) == 1, run.stderr
    assert sum("cannot remove dataset s3://mdfio-test/k/0_0" in line and "Directory not empty" in line
               for line in lines) == 1, run.stderr
    for key in planted:
        s3.delete(BUCKET, key)
    run_fio(s3_job(["cleanup"], root, **opts), tmp_path, env=env, check=True)
    assert s3.keys(BUCKET) == [FOREIGN]
    assert after_cleanup(root) == []


def test_a_create_never_replaces_a_key_it_did_not_make(s3, tmpfs, tmp_path):
    """Rank 1 writes to rank 0's dataset 0; its first create there finds a
    key someone else put: If-None-Match makes it EEXIST, as O_EXCL does on
    POSIX, so the key keeps its content, the run stops there, and no
    cleanup or recovery deletes it."""
    root = tmpfs / "root"
    root.mkdir()
    opts = dict(numjobs=2, datasets=2, precreate_per_set=4, steps_per_set=3, bs=100, prefix="c")
    env = s3.env()
    run_fio(s3_job(["precreate"], root, **opts), tmp_path, env=env, check=True)
    s3.put(BUCKET, "c/0_0/file-4", b"USER")
    run = run_fio(s3_job(["benchmark", "cleanup"], root, **opts), tmp_path, env=env, check=False)
    assert run.rc != 0
    assert any("rank 1 benchmark: cannot create s3://mdfio-test/c/0_0/file-4: File exists" in line
               for line in run.mdfio_lines()), run.stderr
    assert "\ntaken 0 0 4\n" in (root / "mdfio.status").read_text(), run.stderr
    user = s3.directory / BUCKET / "c" / "0_0" / "file-4"    # versitygw keeps the key as this file
    assert user.read_bytes() == b"USER"
    run = run_fio(s3_job(["cleanup"], root, **opts), tmp_path, env=env, check=False)
    assert run.rc != 0 and user.read_bytes() == b"USER", run.stderr
    assert "c/0_0/file-4" in s3.keys(BUCKET)


def test_a_second_run_on_a_live_namespace_is_refused(s3, tmpfs, tmp_path):
    """A namespace made from one directory=, claimed for it by the key
    <prefix>.mdfio-namespace: a precreate on the same bucket and prefix
    from another directory= is refused by the claim with one line, so is a
    cleanup from there, and neither touches the keys or the first run's
    coordination; the namespace's own cleanup still works, and deletes
    the claim with the last dataset."""
    first, second = tmpfs / "first", tmpfs / "second"
    first.mkdir()
    second.mkdir()
    opts = dict(numjobs=2, datasets=2, precreate_per_set=5, prefix="live")
    env = s3.env()
    run_fio(s3_job(["precreate"], first, **opts), tmp_path, env=env, check=True)
    before, status = s3.keys(BUCKET), (first / "mdfio.status").read_text()
    run = run_fio(s3_job(["precreate"], second, **opts), tmp_path, env=env, check=False)
    assert run.rc != 0
    assert run.mdfio_lines()[0] == \
        f"mdfio: s3://mdfio-test/live: the namespace is claimed by run (unnamed) on host {socket.gethostname()}, " \
        f"coordinated in directory={first}, not this run's directory={second} (key live/{CLAIM} of bucket " \
        "mdfio-test); refusing (nothing was touched)"
    assert f"\ndirectory={first}\n".encode() in s3.request("GET", f"/{BUCKET}/live/{CLAIM}")[1]
    # nor can a cleanup from there remove what it has no status of
    assert run_fio(s3_job(["cleanup"], second, **opts), tmp_path, env=env, check=False).rc != 0
    assert s3.keys(BUCKET) == before and (first / "mdfio.status").read_text() == status
    assert after_cleanup(second) == []
    run_fio(s3_job(["cleanup"], first, **opts), tmp_path, env=env, check=True)
    assert s3.keys(BUCKET) == [FOREIGN]


class CountingProxy:
    """A TCP proxy on a free loopback port in front of the server: it
    counts the connections it accepts and the most requests in flight at
    once (a connection whose client has sent and not yet been answered),
    and holds each answer back DELAY s, so that requests issued together
    overlap there."""
    DELAY = 0.01

    def __init__(self, port):
        self.target = port
        self.lock = threading.Lock()
        self.connections = self.in_flight = self.most_in_flight = 0
        self.hosts = set()      # the Host headers of the requests
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            with self.lock:
                self.connections += 1
            waiting = [False]
            threading.Thread(target=self.pipe, args=(client, server, waiting, True), daemon=True).start()
            threading.Thread(target=self.pipe, args=(server, client, waiting, False), daemon=True).start()

    def pipe(self, src, dst, waiting, asking):
        try:
            while data := src.recv(65536):
                if asking and not waiting[0]:
                    waiting[0] = True
                    host = data.partition(b"\r\nHost: ")[2].partition(b"\r\n")[0]
                    self.hosts.add(host.decode(errors="replace"))
                    with self.lock:
                        self.in_flight += 1
                        self.most_in_flight = max(self.most_in_flight, self.in_flight)
                elif not asking and waiting[0]:
                    time.sleep(self.DELAY)
                    waiting[0] = False
                    with self.lock:
                        self.in_flight -= 1
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self):
        self.listener.close()


def test_iodepth_keeps_requests_in_flight_on_reused_connections(s3, tmpfs, tmp_path):
    """iodepth=8: every phase counts what iodepth=1 counts (mdfio-report),
    with verify_read=1 and no error; through a proxy that holds each
    answer back, up to 8 requests of the one rank are in flight at once,
    on a handful of connections reused for hundreds of requests."""
    opts = dict(datasets=2, precreate_per_set=24, steps_per_set=12, bs=300, verify_read=1)
    phases = ["precreate", "benchmark", "cleanup"]
    proxy = CountingProxy(s3.port)
    try:
        reports = {}
        for depth in (1, 8):
            root = tmpfs / f"root-{depth}"
            root.mkdir()
            work = tmp_path / f"depth-{depth}"
            work.mkdir()
            env = dict(s3.env(), AWS_ENDPOINT_URL_S3=f"http://127.0.0.1:{proxy.port}")
            before = proxy.connections
            proxy.most_in_flight = 0
            run = run_fio(s3_job(phases, root, prefix=f"d{depth}", iodepth=depth, **opts), work, env=env,
                          check=True)
            assert errors(run) == 0
            reports[depth] = counts(work / "job-0.json")
            assert s3.keys(BUCKET) == [FOREIGN]
        # what the one rank did at iodepth=8, its store's requests
        # (probes, markers, listings) and the job-start check included
        connections = proxy.connections - before
    finally:
        proxy.close()
    assert reports[8] == reports[1]
    assert proxy.most_in_flight == 8
    # a connection per unit and per phase's store, not one per request
    # (its 48 creates, 24 steps of 4 requests, 48 deletes)
    assert connections <= 3 * (8 + 1), connections


def cycle(srv, root, tmp_path, env, **opts):
    """precreate, benchmark and cleanup with verify_read=1: no error, the
    namespace's keys after the precreate, only FOREIGN after the cleanup."""
    opts = dict(datasets=2, precreate_per_set=6, steps_per_set=3, bs=100, verify_read=1, **opts)
    run_fio(s3_job(["precreate"], root, **opts), tmp_path, env=env, check=True)
    assert srv.keys(BUCKET) == sorted(keys("", 1, 2, 0, 6) + [CLAIM, FOREIGN])
    run = run_fio(s3_job(["benchmark", "cleanup"], root, **opts), tmp_path, env=env, check=True)
    assert errors(run) == 0
    assert srv.keys(BUCKET) == [FOREIGN]
    assert after_cleanup(root) == []


def test_virtual_host_addressing(tmpfs, tmp_path):
    """addressing=virtual: every request, the job-start check's and the
    store's too, names the bucket in its Host (mdfio-test.localhost,
    which libcurl resolves to the loopback itself), and the cycle works."""
    with serving(extra_args=("--virtual-domain", "localhost")) as srv:
        proxy = CountingProxy(srv.port)
        try:
            env = dict(srv.env(), AWS_ENDPOINT_URL_S3=f"http://localhost:{proxy.port}")
            cycle(srv, tmpfs, tmp_path, env, addressing="virtual")
        finally:
            proxy.close()
        assert proxy.hosts == {f"{BUCKET}.localhost:{proxy.port}"}


def test_https_verifies_the_server_against_ca_bundle(tmpfs, tmp_path):
    """An https endpoint with a self-signed certificate: without its CA
    the job-start check fails in one line naming the endpoint (nothing
    made); with ca_bundle= (or AWS_CA_BUNDLE) the cycle works."""
    with serving(tls=True) as srv:
        root = tmpfs / "root"
        root.mkdir()
        env = srv.env()
        assert env["AWS_ENDPOINT_URL_S3"].startswith("https://")
        run = run_fio(s3_job(["precreate"], root, datasets=1, precreate_per_set=2), tmp_path, env=env, check=False)
        assert run.rc != 0
        lines = [line for line in run.mdfio_lines() if srv.endpoint in line]
        assert len(lines) == 1 and "SSL peer certificate" in lines[0], run.stderr
        assert srv.keys(BUCKET) == [FOREIGN]
        cycle(srv, root, tmp_path, env, ca_bundle=srv.ca)
        cycle(srv, root, tmp_path, dict(env, AWS_CA_BUNDLE=str(srv.ca)))


def test_bucket_per_dataset(s3, tmpfs, tmp_path):
    """bucket_per_dataset=1: each dataset a bucket mdfio-test-<rank>-<d>
    holding its marker and objects file-<i>; the cycle counts what the
    prefix mode counts, with no error, and the cleanup removes the
    buckets. A bucket of a dataset's name that mdfio did not make (no
    marker) refuses a precreate and is left as it was."""
    R, D, P, I = 2, 2, 6, 3
    opts = dict(numjobs=R, datasets=D, precreate_per_set=P, steps_per_set=I, bs=100, verify_read=1,
                bucket_per_dataset=1)
    root = tmpfs / "root"
    root.mkdir()
    env = s3.env()
    run = run_fio(s3_job(["precreate"], root, **opts), tmp_path, env=env, check=True)
    dsets = [f"{BUCKET}-{r}-{d}" for r in range(R) for d in range(D)]
    assert s3.buckets() == sorted([BUCKET] + dsets)
    for b in dsets:
        assert s3.keys(b) == sorted([".mdfio-dataset"] + [f"file-{i}" for i in range(P)])
    run = run_fio(s3_job(["benchmark", "cleanup"], root, **opts), tmp_path, env=env, check=True)
    assert errors(run) == 0
    assert s3.buckets() == [BUCKET] and s3.keys(BUCKET) == [FOREIGN]
    assert after_cleanup(root) == []
    assert [r[:4] for r in counts(tmp_path / "job-1.json")] == [("benchmark", 1, R * D * I, None),
                                                                  ("cleanup", 0, R * D * P, R * D)]
    s3.make_bucket(f"{BUCKET}-1-1")
    s3.put(f"{BUCKET}-1-1", "theirs", b"x")
    run = run_fio(s3_job(["precreate"], root, **opts), tmp_path, env=env, check=False)
    assert run.rc != 0
    assert run.mdfio_lines()[0] == \
        f"mdfio: s3://{BUCKET}/1_1 already exists: refusing to precreate over it (nothing was touched)"
    assert s3.buckets() == [BUCKET, f"{BUCKET}-1-1"] and s3.keys(f"{BUCKET}-1-1") == ["theirs"]


def test_a_server_gone_mid_benchmark_stops_the_run_without_a_hang(s3, tmpfs, tmp_path):
    """The server killed while a benchmark runs: the next requests fail at
    once (connection refused), the rank stops at its first failed create
    (md-workbench's rule) with the namespace marked interrupted, or counts
    the failed stat of every later step, and fio exits non-zero; one line
    describes the first failed request in curl's words."""
    root = tmpfs / "root"
    root.mkdir()
    p = 300
    opts = dict(datasets=2, precreate_per_set=p, steps_per_set=p, bs=64)
    env = s3.env()
    run_fio(s3_job(["precreate"], root, **opts), tmp_path, env=env, check=True)
    data = s3.directory / BUCKET

    def kill_server_midway(_pid):
        if s3.process.poll() is None and sum(1 for f in data.glob("0_*/file-*") if int(f.name[5:]) >= p) > 10:
            s3.process.kill()

    jobfile = tmp_path / "gone.fio"
    run = mdfio.fio.run(jobfile, s3_job(["benchmark"], root, **opts), env=fio_env(env),
                        watch=kill_server_midway, timeout=120)
    assert not SANITIZER_REPORT.search(run.stderr), run.stderr
    assert s3.process.poll() is not None and run.rc != 0
    # whatever the request, a store that does not answer stops the rank
    # and the run at once: the next steps would fail the same way. The
    # line says it in curl's words too: "Couldn't connect to server", or
    # for a request the kill cut, "Failure when receiving data from the
    # peer"
    lines = run.mdfio_lines()
    lost = [line for line in lines if STORE_LOST.fullmatch(line)]
    assert len(lost) == 1 and re.search(r": Connection (refused|reset by peer) \([A-Z][^:()]+\); the run", lost[0]) \
        and "HTTP" not in lost[0], run.stderr
    assert sum("the namespace is marked as interrupted" in line for line in lines) == 1, run.stderr


def test_a_stopped_server_costs_one_stall_timeout(s3, tmpfs, tmp_path):
    """The server stopped (SIGSTOP) mid-benchmark: the requests in flight
    wait stall_timeout=, fail, and the run stops there, once, instead of
    waiting that long at every later step; once the server is back a
    cleanup recovers the namespace."""
    root = tmpfs / "root"
    root.mkdir()
    p = 300
    opts = dict(datasets=2, precreate_per_set=p, steps_per_set=p, bs=64, stall_timeout=2)
    env = s3.env()
    run_fio(s3_job(["precreate"], root, **opts), tmp_path, env=env, check=True)
    data = s3.directory / BUCKET
    stopped = []

    def stop_server_midway(_pid):
        if not stopped and sum(1 for f in data.glob("0_*/file-*") if int(f.name[5:]) >= p) > 10:
            s3.process.send_signal(signal.SIGSTOP)
            stopped.append(time.monotonic())

    try:
        run = mdfio.fio.run(tmp_path / "stopped.fio", s3_job(["benchmark"], root, **opts), env=fio_env(env),
                            watch=stop_server_midway, timeout=120)
        ended = time.monotonic()
    finally:
        s3.process.send_signal(signal.SIGCONT)
    assert stopped and run.rc != 0, run.stderr
    # 2 s of stall, not 2 s for each of the 600 steps left
    assert ended - stopped[0] < 60, (ended - stopped[0], run.stderr)
    lost = [line for line in run.mdfio_lines() if STORE_LOST.fullmatch(line)]
    assert len(lost) == 1 and "Connection timed out" in lost[0], run.stderr
    run_fio(s3_job(["cleanup"], root, **opts), tmp_path, env=env, check=True)
    assert s3.keys(BUCKET) == [FOREIGN]
