"""mdfio.versitygw, the S3 server of mdfio-s3's tests: it starts on a free
loopback port with a fresh directory and random keys, answers signed
requests only (a wrong secret is refused, so the engine's tests of
credentials mean something), and is gone with its directory on every exit
path."""
import dataclasses
import os

import pytest

from conftest import SOURCE_ROOT
import mdfio.versitygw as vgw


@pytest.fixture(autouse=True)
def built():
    why = vgw.need_versitygw(SOURCE_ROOT)
    if why:
        pytest.skip(why)


def test_serves_its_directory_to_signed_requests_only():
    with vgw.server(SOURCE_ROOT) as srv:
        srv.make_bucket("bkt")
        srv.put("bkt", "d/k", b"abc")
        assert srv.keys("bkt") == ["d/k"]
        assert (srv.directory / "bkt" / "d" / "k").read_bytes() == b"abc"
        wrong = dataclasses.replace(srv, secret_key=srv.secret_key + "x")
        status, body = wrong.request("GET", "/bkt")
        assert status == 403 and b"<Code>SignatureDoesNotMatch</Code>" in body
        # the keys reach the server in its environment, not its command line
        cmdline = open(f"/proc/{srv.process.pid}/cmdline", "rb").read()
        assert srv.secret_key.encode() not in cmdline


def test_killed_and_removed_on_every_exit_path():
    with pytest.raises(KeyError):
        with vgw.server(SOURCE_ROOT) as srv:
            pid, work = srv.process.pid, srv.directory.parent
            raise KeyError("the test fails inside")
    assert srv.process.returncode is not None and not os.path.exists(f"/proc/{pid}")
    assert not work.exists()


def test_gives_up_when_it_does_not_answer_in_time():
    with pytest.raises(RuntimeError, match="did not answer"):
        with vgw.server(SOURCE_ROOT, timeout=0):
            pass
