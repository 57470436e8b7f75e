"""An S3 server of its own, for the tests of mdfio-s3: versitygw (Versity's
S3 gateway, Apache-2.0, one Go binary that ./setup builds once per machine
and links into .deps/) serving a fresh POSIX directory on 127.0.0.1, on a free port, with random
keys. Its posix backend keeps object <key> of bucket B as the file
<directory>/B/<key>.

server() starts it, waits (bounded) until it answers, and kills it and
removes its directory on every exit path; with tls=True it serves https
with a self-signed certificate for 127.0.0.1 and localhost (openssl), the
certificate being its own CA. Client requests a test makes
itself (a bucket, a foreign key, a listing) are signed here (AWS
Signature Version 4, stdlib only), independently of libcurl's signer,
which the engine uses."""
from __future__ import annotations

import contextlib
import datetime
import hashlib
import hmac
import os
import secrets
import shutil
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

VERSION = "1.8.0"
START_TIMEOUT = 30  # s until it answers
KILL_TIMEOUT = 10   # s for it to go once killed
REGION = "us-east-1"
ADDRESS = "127.0.0.1"
S3_NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"


def binary(source_root: str | os.PathLike[str]) -> Path:
    """Where ./setup builds versitygw."""
    return Path(source_root) / ".deps" / f"versitygw-{VERSION}" / "versitygw"


def need_versitygw(source_root: str | os.PathLike[str]) -> str | None:
    """Why versitygw cannot be started here, or None."""
    path = binary(source_root)
    if not os.access(path, os.X_OK):
        return f"{path} not built (./setup builds it with go)"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((ADDRESS, 0))
        return s.getsockname()[1]


def _sign(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


@dataclass
class Server:
    process: subprocess.Popen[bytes]
    directory: Path     # the backing directory: bucket B is directory/B
    port: int
    access_key: str
    secret_key: str
    host: str = ADDRESS
    ca: Path | None = None      # https: the certificate that verifies it
    region: str = REGION        # what it serves and checks signatures for

    @property
    def endpoint(self) -> str:
        return f"{'https' if self.ca else 'http'}://{self.host}:{self.port}"

    def env(self) -> dict[str, str]:
        """The environment a client of this server takes its credentials,
        region and endpoint from."""
        return {"AWS_ACCESS_KEY_ID": self.access_key, "AWS_SECRET_ACCESS_KEY": self.secret_key,
                "AWS_REGION": self.region, "AWS_ENDPOINT_URL_S3": self.endpoint}

    def authorization(self, method: str, quoted_path: str, canonical_query: str, signed: dict[str, str]) -> str:
        """The Authorization header (AWS Signature Version 4) of a request
        whose signed headers are signed (lowercase names; x-amz-date and
        x-amz-content-sha256 among them), its path and query as sent."""
        amz_date, payload = signed["x-amz-date"], signed["x-amz-content-sha256"]
        day = amz_date[:8]
        names = sorted(signed)
        canonical = "\n".join([method, quoted_path, canonical_query, *(f"{n}:{signed[n].strip()}" for n in names),
                               "", ";".join(names), payload])
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = "\n".join(["AWS4-HMAC-SHA256", amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
        key = _sign(_sign(_sign(_sign(("AWS4" + self.secret_key).encode(), day), self.region), "s3"), "aws4_request")
        signature = hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()
        return (f"AWS4-HMAC-SHA256 Credential={self.access_key}/{scope}, "
                f"SignedHeaders={';'.join(names)}, Signature={signature}")

    def request(self, method: str, path: str, query: dict[str, str] | None = None,
                body: bytes = b"", headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        """One signed path-style request; (status, body)."""
        now = datetime.datetime.now(datetime.timezone.utc)
        amz_date = now.strftime("%Y%m%dT%H%M%SZ")
        quoted = urllib.parse.quote(path, safe="/-_.~")
        canonical_query = "&".join(f"{urllib.parse.quote(k, safe='-_.~')}={urllib.parse.quote(v, safe='-_.~')}"
                                   for k, v in sorted((query or {}).items()))
        payload = hashlib.sha256(body).hexdigest()
        hdrs = {"host": f"{self.host}:{self.port}", "x-amz-date": amz_date, "x-amz-content-sha256": payload}
        hdrs.update({k.lower(): v for k, v in (headers or {}).items()})
        hdrs["authorization"] = self.authorization(method, quoted, canonical_query, hdrs)
        url = f"{self.endpoint}{quoted}" + (f"?{canonical_query}" if canonical_query else "")
        req = urllib.request.Request(url, data=body if method in ("PUT", "POST") else None, method=method,
                                     headers={k: v for k, v in hdrs.items() if k != "host"})
        handlers: list[urllib.request.BaseHandler] = [urllib.request.ProxyHandler({})]
        if self.ca:
            handlers.append(urllib.request.HTTPSHandler(context=ssl.create_default_context(cafile=str(self.ca))))
        opener = urllib.request.build_opener(*handlers)
        try:
            with opener.open(req, timeout=START_TIMEOUT) as resp:
                return resp.status, resp.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def make_bucket(self, bucket: str) -> None:
        status, body = self.request("PUT", f"/{bucket}")
        assert status == 200, (status, body[:200])

    def put(self, bucket: str, key: str, data: bytes) -> None:
        status, body = self.request("PUT", f"/{bucket}/{key}", body=data)
        assert status == 200, (status, body[:200])

    def delete(self, bucket: str, key: str) -> None:
        status, body = self.request("DELETE", f"/{bucket}/{key}")
        assert status == 204, (status, body[:200])

    def keys(self, bucket: str, prefix: str = "") -> list[str]:
        """Every key of bucket under prefix (ListObjectsV2, all pages)."""
        out: list[str] = []
        token = None
        while True:
            query = {"list-type": "2", "prefix": prefix}
            if token:
                query["continuation-token"] = token
            status, body = self.request("GET", f"/{bucket}", query)
            assert status == 200, (status, body[:200])
            root = ET.fromstring(body)
            out += [k.text or "" for k in root.iter(f"{S3_NS}Key")]
            if root.findtext(f"{S3_NS}IsTruncated") != "true":
                return sorted(out)
            token = root.findtext(f"{S3_NS}NextContinuationToken")

    def buckets(self) -> list[str]:
        """The names of every bucket (ListBuckets)."""
        status, body = self.request("GET", "/")
        assert status == 200, (status, body[:200])
        return sorted(n.text or "" for n in ET.fromstring(body).iter(f"{S3_NS}Name"))

    def answers(self) -> bool:
        """Whether it answers an S3 request (a listing of its buckets)."""
        try:
            return self.request("GET", "/")[0] == 200
        except OSError:
            return False


@contextlib.contextmanager
def server(source_root: str | os.PathLike[str], timeout: float = START_TIMEOUT,
           extra_args: tuple[str, ...] = (), tls: bool = False, region: str = REGION,
           parent: str | os.PathLike[str] | None = None) -> Iterator[Server]:
    """A versitygw of its own on a free port of 127.0.0.1, serving a fresh
    directory under parent (default /tmp), with random keys (given in its
    environment, never on its command line), in region (which a
    CreateBucket's LocationConstraint must name, unless us-east-1); killed,
    and its directory removed, on every exit path."""
    why = need_versitygw(source_root)
    if why:
        raise RuntimeError(why)
    work = Path(tempfile.mkdtemp(prefix="mdfio-vgw-", dir=parent))
    proc = None
    try:
        backing = work / "data"
        backing.mkdir()
        access, secret = "AK" + secrets.token_hex(8).upper(), secrets.token_urlsafe(30)
        env = dict(os.environ, ROOT_ACCESS_KEY=access, ROOT_SECRET_KEY=secret)
        port = _free_port()
        ca = None
        if tls:
            ca, key = work / "cert.pem", work / "key.pem"
            subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                            "-subj", "/CN=localhost", "-addext", "subjectAltName=IP:127.0.0.1,DNS:localhost",
                            "-keyout", str(key), "-out", str(ca)], check=True, capture_output=True, timeout=timeout)
            extra_args = ("--cert", str(ca), "--key", str(key), *extra_args)
        log = open(work / "versitygw.log", "wb")
        with log:
            # --keep-alive: as S3 services do; versitygw closes every
            # connection after one request by default
            proc = subprocess.Popen([str(binary(source_root)), "--port", f"{ADDRESS}:{port}", "--keep-alive",
                                     "--region", region, *extra_args,
                                     "posix", str(backing)],
                                    env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        srv = Server(proc, backing, port, access, secret, ca=ca, region=region)
        deadline = time.monotonic() + timeout
        while not srv.answers():
            if proc.poll() is not None:
                raise RuntimeError(f"versitygw exited with {proc.returncode} before it answered: "
                                   + (work / "versitygw.log").read_text(errors="replace")[-500:])
            if time.monotonic() > deadline:
                raise RuntimeError(f"versitygw did not answer on {srv.endpoint} within {timeout} s")
            time.sleep(0.05)
        yield srv
    finally:
        if proc is not None and proc.poll() is None:
            proc.kill()
            proc.wait(timeout=KILL_TIMEOUT)
        shutil.rmtree(work, ignore_errors=True)
