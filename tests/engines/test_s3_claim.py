"""mdfio-s3's claim of a namespace and what it relies on
(engines/lib/s3claim.c), against versitygw (tools/mdfio/versitygw.py),
some of it through a relay that plays a server which breaks S3's rules:
only what mdfio made holds the claim, the claim names its holder and is
read back, a server that ignores If-None-Match: * is refused, and a
bucket made outside us-east-1 names its region."""
import contextlib
import re
import socket
import threading

from conftest import after_cleanup, run_fio
from test_s3 import BUCKET, CLAIM, FOREIGN, s3_job, serving


class Relay:
    """A TCP relay on a free loopback port in front of the server. edit
    rewrites each piece the client sends; answering(request), if given,
    runs when the answer to a request (the piece that began it) comes back,
    before the client sees it. Every piece sent is kept in sent."""

    def __init__(self, port, edit=None, answering=None):
        self.target, self.edit, self.answering = port, edit, answering
        self.sent = []
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self.target))
            asked = []
            threading.Thread(target=self.pipe, args=(client, server, asked, True), daemon=True).start()
            threading.Thread(target=self.pipe, args=(server, client, asked, False), daemon=True).start()

    def pipe(self, src, dst, asked, asking):
        try:
            while data := src.recv(65536):
                if asking:
                    data = self.edit(data) if self.edit else data
                    self.sent.append(data)
                    if re.match(rb"[A-Z]+ /", data):
                        asked.append(data)
                elif asked and self.answering:
                    self.answering(asked.pop())
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (src, dst):
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

    def close(self):
        self.listener.close()


@contextlib.contextmanager
def relay(srv, **kw):
    r = Relay(srv.port, **kw)
    try:
        yield r
    finally:
        r.close()


def without_if_none_match(srv):
    """An edit for Relay: a request's head without If-None-Match, signed
    again for what is left (libcurl signs every header it is given)."""
    def edit(data):
        head, blank, body = data.partition(b"\r\n\r\n")
        if not blank or not re.match(rb"[A-Z]+ /", head) or b"\r\nif-none-match:" not in head.lower():
            return data
        first, *lines = head.decode().split("\r\n")
        fields = [(k, v.strip()) for k, v in (line.split(":", 1) for line in lines) if k.lower() != "if-none-match"]
        value = {k.lower(): v for k, v in fields}
        names = re.search(r"SignedHeaders=([^,]+)", value["authorization"]).group(1).split(";")
        method, target, _ = first.split(" ")
        path, _, query = target.partition("?")
        auth = srv.authorization(method, path, query, {n: value[n] for n in names if n != "if-none-match"})
        fields = [(k, auth if k.lower() == "authorization" else v) for k, v in fields]
        return "\r\n".join([first] + [f"{k}: {v}" for k, v in fields]).encode() + blank + body
    return edit


def refusal(run):
    assert run.rc != 0, run.stderr
    return run.mdfio_lines()[0]


def test_a_key_named_like_a_dataset_never_holds_the_claim(tmpfs, tmp_path):
    """Someone's keys 7_9/x and 5_1/x beside a namespace without a prefix:
    neither is a dataset of it (7_9 is past datasets=, 5_1 holds no
    marker), so the cleanup that removes the namespace's last dataset
    deletes the claim, and a run from another directory= may then use the
    bucket; the planted keys stay."""
    theirs = ["5_1/x", "7_9/x"]
    opts = dict(datasets=2, precreate_per_set=3)
    with serving() as s3:
        for key in theirs:
            s3.put(BUCKET, key, b"theirs")
        env = s3.env()
        first, second = tmpfs / "first", tmpfs / "second"
        first.mkdir()
        second.mkdir()
        run_fio(s3_job(["precreate"], first, **opts), tmp_path, env=env, check=True)
        assert CLAIM in s3.keys(BUCKET)
        run_fio(s3_job(["cleanup"], first, **opts), tmp_path, env=env, check=True)
        assert s3.keys(BUCKET) == sorted([FOREIGN] + theirs)
        run_fio(s3_job(["precreate", "cleanup"], second, **opts), tmp_path, env=env, check=True)
        assert s3.keys(BUCKET) == sorted([FOREIGN] + theirs)
        assert after_cleanup(first) == [] and after_cleanup(second) == []


def test_the_claim_names_its_holder(tmpfs, tmp_path):
    """The claim holds the run's run_id, host and directory=; a precreate
    from another directory= is refused by a line that names all three."""
    opts = dict(datasets=1, precreate_per_set=2, prefix="named")
    with serving() as s3:
        env = s3.env()
        first, second = tmpfs / "first", tmpfs / "second"
        first.mkdir()
        second.mkdir()
        run_fio(s3_job(["precreate"], first, run_id="alpha", **opts), tmp_path, env=env, check=True)
        host = socket.gethostname()
        status, text = s3.request("GET", f"/{BUCKET}/named/{CLAIM}")
        assert status == 200 and text.decode() == \
            f"mdfio-s3 namespace\nrun=alpha\nhost={host}\ndirectory={first}\n"
        before = s3.keys(BUCKET)
        run = run_fio(s3_job(["precreate"], second, run_id="beta", **opts), tmp_path, env=env, check=False)
        assert refusal(run) == \
            f"mdfio: s3://{BUCKET}/named: the namespace is claimed by run alpha on host {host}, coordinated in " \
            f"directory={first}, not this run's directory={second} (key named/{CLAIM} of bucket {BUCKET}); " \
            "refusing (nothing was touched)"
        assert s3.keys(BUCKET) == before
        run_fio(s3_job(["cleanup"], first, **opts), tmp_path, env=env, check=True)
        assert s3.keys(BUCKET) == [FOREIGN]


def test_a_claim_replaced_after_its_put_is_refused(tmpfs, tmp_path):
    """The claim's PUT is answered 200, but before the run reads it back
    another run's claim has replaced it (as on a server that let that
    run's conditional PUT through): the run is refused, naming the other
    holder, and makes no dataset; the other claim stays."""
    other = b"mdfio-s3 namespace\nrun=beta\nhost=elsewhere\ndirectory=/elsewhere\n"
    key = f"back/{CLAIM}"
    with serving() as s3:
        def replace_claim(request):
            if request.startswith(f"PUT /{BUCKET}/{key} ".encode()):
                s3.put(BUCKET, key, other)

        with relay(s3, answering=replace_claim) as r:
            root = tmpfs / "root"
            root.mkdir()
            env = dict(s3.env(), AWS_ENDPOINT_URL_S3=r.endpoint)
            run = run_fio(s3_job(["precreate"], root, datasets=1, precreate_per_set=2, prefix="back"), tmp_path,
                          env=env, check=False)
        assert refusal(run) == \
            f"mdfio: s3://{BUCKET}/back: the namespace is claimed by run beta on host elsewhere, coordinated in " \
            f"directory=/elsewhere, not this run's directory={root} (key {key} of bucket {BUCKET}); " \
            "refusing (nothing was touched)"
        assert s3.keys(BUCKET) == sorted([FOREIGN, key])
        assert s3.request("GET", f"/{BUCKET}/{key}") == (200, other)


def test_a_server_that_ignores_if_none_match_is_refused(tmpfs, tmp_path):
    """A relay that strips If-None-Match from every request plays a server
    that ignores it: the precreate is refused by one line naming the
    endpoint before it claims or makes anything, the key of the check is
    deleted, and the foreign key keeps its content. Straight to the
    server, the same job runs; a read-only benchmark, which makes no key,
    runs through the relay too."""
    opts = dict(datasets=1, precreate_per_set=2, prefix="inm")
    with serving() as s3:
        root = tmpfs / "root"
        root.mkdir()
        with relay(s3, edit=without_if_none_match(s3)) as r:
            env = dict(s3.env(), AWS_ENDPOINT_URL_S3=r.endpoint)
            run = run_fio(s3_job(["precreate"], root, **opts), tmp_path, env=env, check=False)
        assert any(re.match(rb"PUT /\S+/inm/\.mdfio-check-", piece) for piece in r.sent)
        assert not any(re.search(rb"(?i)if-none-match", piece.partition(b"\r\n\r\n")[0]) for piece in r.sent)
        assert refusal(run) == \
            f"mdfio: endpoint {r.endpoint} does not honour If-None-Match: * (a conditional PUT replaced a key " \
            "that exists): mdfio-s3 would overwrite keys it did not make; refusing (nothing was touched)"
        assert s3.keys(BUCKET) == [FOREIGN]
        assert s3.request("GET", f"/{BUCKET}/{FOREIGN}") == (200, b"precious")
        assert after_cleanup(root) == []
        # a read-only benchmark makes no key, and is not checked
        run_fio(s3_job(["precreate"], root, **opts), tmp_path, env=s3.env(), check=True)
        with relay(s3, edit=without_if_none_match(s3)) as r:
            env = dict(s3.env(), AWS_ENDPOINT_URL_S3=r.endpoint)
            run_fio(s3_job(["benchmark"], root, read_only=1, steps_per_set=2, **opts), tmp_path, env=env,
                    check=True)
            assert not any(re.match(rb"PUT ", piece) for piece in r.sent)
        run_fio(s3_job(["cleanup"], root, **opts), tmp_path, env=s3.env(), check=True)
        assert s3.keys(BUCKET) == [FOREIGN]


def test_a_bucket_outside_us_east_1_names_its_region(tmpfs, tmp_path):
    """bucket_per_dataset=1 against a server in eu-west-1 (versitygw
    refuses a CreateBucketConfiguration that does not name its region):
    each CreateBucket carries the LocationConstraint, and the cycle
    works."""
    R, D = 2, 2
    opts = dict(numjobs=R, datasets=D, precreate_per_set=3, steps_per_set=2, bucket_per_dataset=1)
    with serving(region="eu-west-1") as s3:
        root = tmpfs / "root"
        root.mkdir()
        with relay(s3) as r:
            env = dict(s3.env(), AWS_ENDPOINT_URL_S3=r.endpoint)
            assert env["AWS_REGION"] == "eu-west-1"
            run_fio(s3_job(["precreate"], root, **opts), tmp_path, env=env, check=True)
            sent = b"".join(r.sent)
            assert s3.buckets() == sorted([BUCKET] + [f"{BUCKET}-{k}-{d}" for k in range(R) for d in range(D)])
            assert sent.count(b"<LocationConstraint>eu-west-1</LocationConstraint>") == R * D, sent[-2000:]
            run_fio(s3_job(["benchmark", "cleanup"], root, **opts), tmp_path, env=env, check=True)
        assert s3.buckets() == [BUCKET] and s3.keys(BUCKET) == [FOREIGN]
