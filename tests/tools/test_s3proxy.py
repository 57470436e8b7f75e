"""mdfio.s3proxy, the fault-injecting proxy of mdfio-s3's tests, in front of
a real versitygw: signed requests pass it untouched on kept-alive
connections; a rule answers the requests it picks (nth, every, once per
path) with a status and an S3 error body (none for a HEAD), delays them,
or cuts the connection before or after the server acted; every request
is recorded; and it is gone, connections and threads, on every exit
path."""
import dataclasses
import http.client
import threading
import time

import pytest

from conftest import SOURCE_ROOT
import mdfio.s3proxy as s3proxy
import mdfio.versitygw as vgw


@pytest.fixture
def srv():
    why = vgw.need_versitygw(SOURCE_ROOT)
    if why:
        pytest.skip(why)
    with vgw.server(SOURCE_ROOT) as s:
        s.make_bucket("bkt")
        yield s


def through(srv, proxy):
    """srv as a client reaches it through proxy (the signature covers the
    proxy's port, as a client of the proxy signs it)."""
    return dataclasses.replace(srv, port=proxy.port)


def test_forwards_signed_requests_and_faults_what_a_rule_picks(srv):
    rules = [s3proxy.Rule(method="PUT", key=r"/k\d$", every=2, status=503, code="SlowDown"),
             s3proxy.Rule(method="HEAD", nth=1, status=404, code="NoSuchKey"),
             s3proxy.Rule(method="GET", key=r"/k1$", nth=1, status=403, code="AccessDenied")]
    with s3proxy.proxy(srv.port, rules) as proxy:
        c = through(srv, proxy)
        answers = [c.request("PUT", f"/bkt/k{i}", body=b"x")[0] for i in range(4)]
        assert answers == [200, 503, 200, 503]
        status, body = c.request("PUT", "/bkt/k1", body=b"x")
        assert status == 200        # the 5th matching PUT
        assert c.request("HEAD", "/bkt/k0") == (404, b"")
        assert c.request("HEAD", "/bkt/k0")[0] == 200
        status, body = c.request("GET", "/bkt/k1")
        assert status == 403 and b"<Code>AccessDenied</Code>" in body
        assert c.request("GET", "/bkt/k1") == (200, b"x")
        records = [(r.method, r.path, r.outcome, r.faulted) for r in proxy.records]
    assert srv.keys("bkt") == ["k0", "k1", "k2"]
    assert records[:5] == [("PUT", "/bkt/k0", "200", False), ("PUT", "/bkt/k1", "503 SlowDown", True),
                           ("PUT", "/bkt/k2", "200", False), ("PUT", "/bkt/k3", "503 SlowDown", True),
                           ("PUT", "/bkt/k1", "200", False)]
    assert [r[2] for r in records[5:]] == ["404 NoSuchKey", "200", "403 AccessDenied", "200"]


def test_once_per_path_lets_a_retry_pass(srv):
    rule = s3proxy.Rule(method="PUT", every=1, once_per_path=True, status=500, code="InternalError")
    with s3proxy.proxy(srv.port, [rule]) as proxy:
        c = through(srv, proxy)
        assert [c.request("PUT", "/bkt/a", body=b"1")[0] for _ in range(2)] == [500, 200]
        assert c.request("PUT", "/bkt/b", body=b"1")[0] == 500


def test_keeps_connections_alive_and_cuts_them_as_told(srv):
    rules = [s3proxy.Rule(method="PUT", key="/cut-after$", cut="after"),
             s3proxy.Rule(method="GET", key="/cut-midway$", cut="midway"),
             s3proxy.Rule(method="GET", key="/slow$", delay=0.3)]
    with s3proxy.proxy(srv.port, rules) as proxy:
        c = through(srv, proxy)
        # the server made the key, the client got no answer
        with pytest.raises((http.client.HTTPException, OSError)):
            c.request("PUT", "/bkt/cut-after", body=b"landed")
        assert srv.keys("bkt") == ["cut-after"]
        with pytest.raises((http.client.HTTPException, OSError)):
            c.request("GET", "/bkt/cut-midway")
        t0 = time.monotonic()
        assert c.request("GET", "/bkt/slow")[0] == 404
        assert time.monotonic() - t0 >= 0.3
        # two requests on one connection: both answered on it
        conn = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
        for _ in range(2):
            conn.request("GET", "/")    # unsigned: the server's 403, forwarded
            resp = conn.getresponse()
            assert resp.status == 403 and b"<Code>" in resp.read() and not resp.will_close
        conn.close()
        outcomes = [r.outcome for r in proxy.records]
    assert outcomes == ["cut", "cut", "delayed 404", "403", "403"]


def test_closes_every_connection_and_thread_on_exit(srv):
    before = threading.active_count()
    with pytest.raises(KeyError):
        with s3proxy.proxy(srv.port) as proxy:
            idle = http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=10)
            idle.request("GET", "/")
            idle.getresponse().read()
            raise KeyError("the test fails inside")
    assert threading.active_count() == before
    with pytest.raises(OSError):
        http.client.HTTPConnection("127.0.0.1", proxy.port, timeout=2).request("GET", "/")
    idle.close()
