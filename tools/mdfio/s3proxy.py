"""A fault-injecting HTTP proxy for the tests of mdfio-s3: it listens on a
free port of 127.0.0.1 in front of an S3 server on the loopback (versitygw,
versitygw.py) and forwards each request, keeping every client's connection
and its own connection to the server alive, as a client of S3 expects;
but a request that a Rule matches is answered by the proxy instead: an
HTTP status with an S3 error body, a delay before it is forwarded, or a cut
connection. Every request is recorded with what it got.

The requests are parsed, not piped, so that a rule can pick one: the
request line and headers, then a body of Content-Length bytes (libcurl
sends every body so; a chunked one is answered 501). The server's answer
is read whole and sent on with its length. The signature is not touched:
the Host header and every other go on as the client wrote them.

proxy() starts it and, on every exit path, closes the listener and every
connection and waits (bounded) for its threads."""
from __future__ import annotations

import contextlib
import http.client
import re
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

ADDRESS = "127.0.0.1"
IO_TIMEOUT = 60     # s a connection may sit idle, either side
JOIN_TIMEOUT = 10   # s for the threads to end once closed
MAX_HEADER = 64 << 10
MAX_BODY = 64 << 20

REASONS = {403: "Forbidden", 404: "Not Found", 409: "Conflict", 412: "Precondition Failed",
           500: "Internal Server Error", 501: "Not Implemented", 503: "Service Unavailable"}


@dataclass
class Rule:
    """Which requests to fault and how. A request matches when its method
    is method (None: any) and re.search(key, its path) finds something
    (None: any path; the path is the URL's, without the query). Of the
    matching requests, the nth (1-based) only, or every every-th (1: all),
    is faulted; with once_per_path, a path this rule has faulted passes
    from then on (a client's retry of it succeeds).

    The fault: status (with the S3 error code, and no body for a HEAD, as
    S3 answers), delay seconds before the request is forwarded, or cut:
    the connection is closed without forwarding the request, before any
    answer (cut="before", which libcurl resends by itself on a reused
    connection) or after the headers of an answer and part of its body
    (cut="midway", which it cannot resend; not for a HEAD, whose answer
    has no body); or the request is forwarded, the server acts on it, and
    its answer is cut so (cut="after"), or closed before any byte of it
    (cut="silent": on a reused connection, libcurl sends the request again
    by itself, and the server has already acted on the first copy)."""
    method: str | None = None
    key: str | None = None
    nth: int | None = None
    every: int = 1
    once_per_path: bool = False
    status: int | None = None
    code: str = ""
    delay: float = 0.0
    cut: str | None = None
    matched: int = 0
    faulted: set[str] = field(default_factory=set)

    def picks(self, method: str, path: str) -> bool:
        if self.method is not None and method != self.method:
            return False
        if self.key is not None and not re.search(self.key, path):
            return False
        if self.once_per_path and path in self.faulted:
            return False
        self.matched += 1
        hit = self.matched == self.nth if self.nth is not None else self.matched % self.every == 0
        if hit:
            self.faulted.add(path)
        return hit


@dataclass
class Record:
    method: str
    path: str
    outcome: str        # "200", "503 SlowDown" (faulted), "cut", "delayed 200" ...
    faulted: bool


def error_body(status: int, code: str, path: str) -> bytes:
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code>'
            f"<Message>injected by the test's proxy ({status})</Message><Resource>{path}</Resource>"
            "<RequestId>mdfio-s3proxy</RequestId></Error>").encode()


class Proxy:
    def __init__(self, upstream_port: int, rules: list[Rule] | None = None):
        self.upstream = upstream_port
        self.rules = list(rules or [])
        self.records: list[Record] = []
        self.lock = threading.Lock()
        self.sockets: set[socket.socket] = set()
        self.threads: list[threading.Thread] = []
        self.closed = False
        self.listener = socket.create_server((ADDRESS, 0))
        self.port = self.listener.getsockname()[1]
        self._spawn(self._accept)

    @property
    def endpoint(self) -> str:
        return f"http://{ADDRESS}:{self.port}"

    def faulted(self) -> list[Record]:
        with self.lock:
            return [r for r in self.records if r.faulted]

    def _spawn(self, target, *args) -> None:
        t = threading.Thread(target=target, args=args, daemon=True)
        with self.lock:
            self.threads.append(t)
        t.start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            with self.lock:
                if self.closed:
                    client.close()
                    return
                self.sockets.add(client)
            client.settimeout(IO_TIMEOUT)
            self._spawn(self._serve, client)

    def _rule(self, method: str, path: str) -> Rule | None:
        with self.lock:
            for rule in self.rules:
                if rule.picks(method, path):
                    return rule
        return None

    def _record(self, method: str, path: str, outcome: str, faulted: bool) -> None:
        with self.lock:
            self.records.append(Record(method, path, outcome, faulted))

    def _serve(self, client: socket.socket) -> None:
        upstream = http.client.HTTPConnection(ADDRESS, self.upstream, timeout=IO_TIMEOUT)
        reader = client.makefile("rb")
        try:
            while self._one(client, reader, upstream):
                pass
        except (OSError, http.client.HTTPException, ValueError):
            pass
        finally:
            with self.lock:
                self.sockets.discard(client)
                if upstream.sock is not None:
                    self.sockets.discard(upstream.sock)
            upstream.close()
            reader.close()
            with contextlib.suppress(OSError):
                client.close()

    def _one(self, client: socket.socket, reader, upstream: http.client.HTTPConnection) -> bool:
        """Serves one request; False once the connection is to end."""
        line = reader.readline(MAX_HEADER)
        if not line:
            return False
        method, target, _version = line.decode("latin-1").split(" ", 2)
        headers: list[tuple[str, str]] = []
        while True:
            h = reader.readline(MAX_HEADER)
            if h in (b"\r\n", b"\n", b""):
                break
            name, _, value = h.decode("latin-1").partition(":")
            headers.append((name.strip(), value.strip()))
        lower = {k.lower(): v for k, v in headers}
        if "chunked" in lower.get("transfer-encoding", "").lower():
            client.sendall(b"HTTP/1.1 501 Not Implemented\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return False
        length = int(lower.get("content-length", "0"))
        if length > MAX_BODY:
            raise ValueError("body too long")
        if lower.get("expect", "").lower() == "100-continue":
            client.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
        body = reader.read(length) if length else b""
        path = target.partition("?")[0]
        rule = self._rule(method, path)
        if rule and rule.cut in ("before", "midway"):
            return self._cut(client, rule, method, path)
        if rule and rule.status:
            payload = error_body(rule.status, rule.code, path)
            # recorded before it is answered: a client that has its answer
            # finds it in records
            self._record(method, path, f"{rule.status} {rule.code}", True)
            client.sendall(self._head(rule.status, [("Content-Type", "application/xml"),
                                                    ("x-amz-request-id", "mdfio-s3proxy")],
                                      len(payload)) + (b"" if method == "HEAD" else payload))
            return True
        if rule and rule.delay:
            time.sleep(rule.delay)
        if upstream.sock is None:
            upstream.connect()
            with self.lock:
                self.sockets.add(upstream.sock)
        upstream.putrequest(method, target, skip_host=True, skip_accept_encoding=True)
        for name, value in headers:
            if name.lower() != "expect":
                upstream.putheader(name, value)
        upstream.endheaders(body if length else None)
        resp = upstream.getresponse()
        payload = resp.read()
        if rule and rule.cut in ("after", "silent"):
            return self._cut(client, rule, method, path)
        kept = [(k, v) for k, v in resp.getheaders()
                if k.lower() not in ("content-length", "transfer-encoding", "connection")]
        # a HEAD's answer keeps the length of the object it describes
        size = int(resp.getheader("Content-Length") or 0) if method == "HEAD" else len(payload)
        self._record(method, path, ("delayed " if rule else "") + str(resp.status), bool(rule))
        client.sendall(self._head(resp.status, kept, size) + payload)
        if resp.will_close:
            with self.lock:
                self.sockets.discard(upstream.sock)
            upstream.close()
        return True

    def _cut(self, client: socket.socket, rule: Rule, method: str, path: str) -> bool:
        self._record(method, path, "cut", True)
        if rule.cut not in ("before", "silent"):
            # a body cut short: a client cannot take it for a whole answer
            client.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/xml\r\nContent-Length: 1000\r\n\r\n<?xml")
        return False

    @staticmethod
    def _head(status: int, headers: list[tuple[str, str]], length: int) -> bytes:
        lines = [f"HTTP/1.1 {status} {REASONS.get(status, 'OK' if status < 300 else 'Error')}"]
        lines += [f"{k}: {v}" for k, v in headers]
        lines.append(f"Content-Length: {length}")
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    def close(self) -> None:
        with self.lock:
            self.closed = True
            open_sockets = list(self.sockets)
            threads = list(self.threads)
        # a shutdown wakes the accept; a close alone does not
        with contextlib.suppress(OSError):
            self.listener.shutdown(socket.SHUT_RDWR)
        self.listener.close()
        for s in open_sockets:
            with contextlib.suppress(OSError):
                s.shutdown(socket.SHUT_RDWR)
        deadline = time.monotonic() + JOIN_TIMEOUT
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))


@contextlib.contextmanager
def proxy(upstream_port: int, rules: list[Rule] | None = None) -> Iterator[Proxy]:
    """A Proxy on 127.0.0.1 in front of upstream_port, closed on every exit
    path."""
    p = Proxy(upstream_port, rules)
    try:
        yield p
    finally:
        p.close()
