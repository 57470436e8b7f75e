"""mdfio-s3 when the store answers with an error: faults injected by a proxy
(tools/mdfio/s3proxy.py) in front of versitygw. Each failed request is an
error of its operation, counted in fio's JSON and named with its key, its
HTTP status and the server's Code in the rank's line; retries= sends
again what a retry may cure, and counts it; a bad endpoint or unknown
credentials are refused at job start.
Every faulted run is followed by a cleanup without the fault, which leaves
the bucket as it was."""
import os
import re
import socket

import pytest

import mdfio.s3proxy as s3proxy
from conftest import after_cleanup, run_fio
from test_s3 import BUCKET, FOREIGN, S3, STORE_LOST, errors, s3_job, serving

# small enough for a test, big enough for every fault to land mid-phase
OPTS = dict(datasets=2, precreate_per_set=10, steps_per_set=10, bs=64)
OBJECT = r"/file-\d+$"
VANISHED = "f/0_1/file-3"


@pytest.fixture
def s3():
    with serving() as srv:
        yield srv


def via(srv, proxy):
    return dict(srv.env(), AWS_ENDPOINT_URL_S3=proxy.endpoint)


def stat_errors(run):
    return sum(j["sync"]["total_ios"] - j["sync"]["lat_ns"]["N"] for j in run.jobs())


def drops(run, slot):
    return sum(j[slot]["drop_ios"] for j in run.jobs())


def s3_key(record):
    """The s3:// name of a recorded request's object (path-style URL)."""
    return "s3:/" + record.path


# (id, the rule, the operation, fio's JSON slot counting its errors, what
# the rank's line says after the key, whether the run stops at it, the
# retries= of the run: a 4xx is never retried)
FAULTS = [
    ("403-get", s3proxy.Rule(method="GET", key=OBJECT, every=3, status=403, code="AccessDenied"),
     "read", "read", "Permission denied (HTTP 403 AccessDenied)", False, 2),
    # a key deleted behind mdfio's back: the server's own 404, which the
    # proxy only records
    ("404-head", None, "stat", "sync", "No such file or directory (HTTP 404)", False, 2),
    ("500-delete", s3proxy.Rule(method="DELETE", key=OBJECT, every=4, status=500, code="InternalError"),
     "delete", "trim", "Input/output error (HTTP 500 InternalError)", False, 0),
    ("503-put", s3proxy.Rule(method="PUT", key=OBJECT, nth=3, status=503, code="SlowDown"),
     "create", "write", "Resource temporarily unavailable (HTTP 503 SlowDown)", True, 0),
    ("dropped-get", s3proxy.Rule(method="GET", key=OBJECT, nth=2, cut="midway"),
     "read", "read", None, True, 0),
]


@pytest.mark.parametrize("rule,op,slot,says,stops,retries", [f[1:] for f in FAULTS], ids=[f[0] for f in FAULTS])
def test_a_faulted_request_is_an_error_of_its_operation(s3, tmpfs, tmp_path, rule, op, slot, says, stops, retries):
    """A benchmark through the proxy, which faults some of one operation's
    requests: each is counted as that operation's error in fio's JSON, the
    rank's line names the first one's key, status and Code (a HEAD's answer
    has no body, so no Code), fio exits non-zero; a create error or a cut
    connection stops the run (md-workbench's rule; a store that does not
    answer), the others are counted and the run goes on. Then a cleanup
    without the proxy removes the namespace and leaves the foreign key."""
    root = tmpfs / "root"
    root.mkdir()
    opts = dict(OPTS, prefix="f")
    run_fio(s3_job(["precreate"], root, **opts), tmp_path, env=s3.env(), check=True)
    if rule is None:
        s3.delete(BUCKET, VANISHED)
    with s3proxy.proxy(s3.port, [rule] if rule else []) as proxy:
        run = run_fio(s3_job(["benchmark"], root, retries=retries, **opts), tmp_path, env=via(s3, proxy),
                      check=False)
        faulted = proxy.faulted() or [r for r in proxy.records if r.outcome == "404"]
    assert run.rc != 0, run.stderr
    # every fault landed, one stopping the run at it
    assert len(faulted) == 1 if rule is None or rule.nth or stops else len(faulted) > 1, faulted
    lines = run.mdfio_lines()
    assert not any("retried" in line for line in lines), run.stderr
    counted = stat_errors(run) if slot == "sync" else drops(run, slot)
    assert counted == len(faulted), (counted, faulted, run.stderr)
    first = s3_key(faulted[0])
    if says is None:        # a cut connection: no status, curl's words
        lost = [line for line in lines if STORE_LOST.fullmatch(line.replace("/f/", "/"))]
        assert len(lost) == 1 and f"the {op} of {first}: " in lost[0], run.stderr
    elif stops:
        assert any(line.startswith(f"mdfio: rank 0 benchmark: cannot create {first}: {says}; the run stops here")
                   for line in lines), run.stderr
    else:
        n = len(faulted)
        want = f"mdfio: rank 0 benchmark: {n} {op} error{'s' if n > 1 else ''} (first: {first}: {says})"
        assert want in lines, run.stderr
    if stops:
        assert sum("the namespace is marked as interrupted" in line for line in lines) == 1, run.stderr
    if op == "delete":
        # the objects whose delete failed lie below the FIFO, where a
        # cleanup that follows it does not look: it fails on their
        # datasets, naming them, and leaves the namespace to a recovery
        run = run_fio(s3_job(["cleanup"], root, **opts), tmp_path, env=s3.env(), check=False)
        assert sum("Directory not empty" in line for line in run.mdfio_lines()) >= 1, run.stderr
    run_fio(s3_job(["cleanup"], root, **opts), tmp_path, env=s3.env(), check=True)
    assert s3.keys(BUCKET) == [FOREIGN]
    assert after_cleanup(root) == []


RETRIED = re.compile(r"mdfio: rank 0 precreate: (\d+) requests? retried \((.*)\)")


def test_retries_cure_a_slowdown_and_are_counted(s3, tmpfs, tmp_path):
    """503 SlowDown on the first attempt of every 5th create: with
    retries=2 the precreate has no error and says how many requests it
    retried and why; with retries=0 (the default) each is a create error,
    counted (ignore_precreate_errors=1 keeps the run going)."""
    opts = dict(OPTS, iodepth=4)
    faulted = {}
    for retries in (2, 0):
        root = tmpfs / f"root-{retries}"
        root.mkdir()
        rule = s3proxy.Rule(method="PUT", key=OBJECT, every=5, once_per_path=True, status=503, code="SlowDown")
        extra = dict(retries=2) if retries else dict(ignore_precreate_errors=1)
        with s3proxy.proxy(s3.port, [rule]) as proxy:
            run = run_fio(s3_job(["precreate"], root, prefix=f"r{retries}", **opts, **extra), tmp_path,
                          env=via(s3, proxy), check=True if retries else None)
            faulted[retries] = proxy.faulted()
        n = len(faulted[retries])
        assert n == 2 * 10 // 5, faulted
        said = [m.groups() for m in map(RETRIED.fullmatch, run.mdfio_lines()) if m]
        if retries:
            assert errors(run) == 0
            assert said == [(str(n), f"503 SlowDown: {n}")], run.stderr
            assert len(s3.keys(BUCKET, "r2/")) == 2 * 10 + 2 + 1     # objects, markers, claim
        else:
            assert run.rc != 0 and said == [], run.stderr
            assert drops(run, "write") == n
            assert f"mdfio: rank 0 precreate: {n} create errors (first: {s3_key(faulted[0][0])}: " \
                   f"Resource temporarily unavailable (HTTP 503 SlowDown))" in run.mdfio_lines(), run.stderr
        run_fio(s3_job(["cleanup"], root, prefix=f"r{retries}", **opts), tmp_path, env=s3.env(), check=True)
    assert s3.keys(BUCKET) == [FOREIGN]


def test_a_retried_create_whose_first_attempt_landed_is_not_a_conflict(s3, tmpfs, tmp_path):
    """The server makes the 3rd object, then the connection is cut before
    its answer: with retries=1 the create is sent again, gets 412 (the key
    exists: our own first attempt), reads the key back, finds its own
    bytes, and counts no error; a benchmark with verify_read=1 reads every
    object back."""
    root = tmpfs / "root"
    root.mkdir()
    opts = dict(OPTS, prefix="c", retries=1, verify_read=1)
    rule = s3proxy.Rule(method="PUT", key=OBJECT, nth=3, cut="after")
    with s3proxy.proxy(s3.port, [rule]) as proxy:
        run = run_fio(s3_job(["precreate"], root, **opts), tmp_path, env=via(s3, proxy), check=True)
        records = list(proxy.records)
    cut = [r for r in records if r.faulted]
    assert [r.outcome for r in cut] == ["cut"]
    assert [r.outcome for r in records if r.path == cut[0].path and r.method == "PUT"] == ["cut", "412"]
    assert errors(run) == 0
    said = [m.groups() for m in map(RETRIED.fullmatch, run.mdfio_lines()) if m]
    assert len(said) == 1 and said[0][0] == "1", run.stderr
    run = run_fio(s3_job(["benchmark", "cleanup"], root, **opts), tmp_path, env=s3.env(), check=True)
    assert errors(run) == 0
    assert s3.keys(BUCKET) == [FOREIGN]


@pytest.mark.parametrize("what", ["object", "marker"])
def test_a_create_libcurl_sent_again_is_not_a_conflict(s3, tmpfs, tmp_path, what):
    """The server makes an object (or a dataset's marker), then the
    connection closes before any byte of the answer: libcurl sends the PUT
    again by itself on a new connection, without retries=, and the server
    answers 412 (the key exists: our own first copy). mdfio reads the key
    back, finds what it wrote, and counts no error: no create error, no
    refused precreate."""
    root = tmpfs / "root"
    root.mkdir()
    opts = dict(OPTS, prefix="h", verify_read=1)
    key = OBJECT if what == "object" else r"/\d+_\d+/$"
    rule = s3proxy.Rule(method="PUT", key=key, nth=2, cut="silent")
    with s3proxy.proxy(s3.port, [rule]) as proxy:
        run = run_fio(s3_job(["precreate"], root, **opts), tmp_path, env=via(s3, proxy), check=None)
        records = list(proxy.records)
    cut = [r for r in records if r.faulted]
    assert [r.outcome for r in cut] == ["cut"]
    assert [r.outcome for r in records if r.path == cut[0].path and r.method == "PUT"] == ["cut", "412"]
    assert run.rc == 0 and errors(run) == 0, run.stderr
    assert not [line for line in run.mdfio_lines() if RETRIED.fullmatch(line)], run.stderr
    run = run_fio(s3_job(["benchmark", "cleanup"], root, **opts), tmp_path, env=s3.env(), check=True)
    assert errors(run) == 0
    assert s3.keys(BUCKET) == [FOREIGN]


def closed_port():
    """A port of 127.0.0.1 nothing listens on (bound, never listening)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    return s


@pytest.mark.parametrize("kind", ["closed-port", "unresolvable"])
def test_a_bad_endpoint_is_refused_at_job_start(tmpfs, tmp_path, kind):
    """An endpoint nothing answers on (a closed port of the loopback) or
    whose host does not resolve (fio in a network namespace of its own, so
    no name server is asked): one line naming the endpoint and curl's
    reason, fio exits non-zero, and directory= is left empty."""
    if not S3.is_file():
        pytest.skip(f"{S3} not built")
    root = tmpfs / "root"
    root.mkdir()
    env = {"AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "us-east-1"}
    with closed_port() as s:
        if kind == "closed-port":
            endpoint, prefix, why = f"http://127.0.0.1:{s.getsockname()[1]}", (), "Couldn't connect to server"
        else:
            endpoint, prefix, why = "http://mdfio-no-such-host.invalid:9000", ("unshare", "-n"), \
                "Couldn't resolve host name"
        run = run_fio(s3_job(["precreate"], root, datasets=1, precreate_per_set=2),
                      tmp_path, env=dict(env, AWS_ENDPOINT_URL_S3=endpoint), prefix=prefix, check=False)
    assert run.rc != 0
    assert run.mdfio_lines() == [f"mdfio: endpoint {endpoint}, bucket {BUCKET}: {why} "
                                 "(credentials: the environment, region us-east-1)"], run.stderr
    assert os.listdir(root) == []


def test_an_unknown_access_key_is_refused_at_job_start(s3, tmpfs, tmp_path):
    """Credentials the server does not know (the key id): one line with the
    server's status and Code, nothing made in the bucket or directory=."""
    root = tmpfs / "root"
    root.mkdir()
    env = dict(s3.env(), AWS_ACCESS_KEY_ID="AKIDNOTKNOWNHERE")
    run = run_fio(s3_job(["precreate"], root, datasets=1, precreate_per_set=2), tmp_path, env=env, check=False)
    assert run.rc != 0
    # versitygw answers 404 XAdminUserNotFound where AWS answers 403
    # InvalidAccessKeyId: the server's words, whichever
    [line] = run.mdfio_lines()
    assert re.fullmatch(f"mdfio: endpoint {re.escape(s3.endpoint)}, bucket {BUCKET}: HTTP 4\\d\\d [A-Za-z]+ "
                        r"\(credentials: the environment, region us-east-1\)", line), run.stderr
    assert s3.keys(BUCKET) == [FOREIGN] and os.listdir(root) == []
