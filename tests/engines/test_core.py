"""The shared core, through every engine, against real fio on real file
systems and (mdfio-s3) a real S3 server: phases, FIFO, status, safety,
errors and options. A test sees and changes its namespace through
store_view(): files under the root, or keys of the test's bucket."""
import errno
import http.client
import http.server
import json
import os
import re
import subprocess
import threading
import urllib.parse

import pytest

import mdfio.fio
from conftest import (SANITIZER_REPORT, but_killed_updates, edit_status, engine_opts, engine_path,
                      expected, fio_client, fio_env, job, kill_fio_when, not_on_s3, old_status, run_fio, store_view)

D, P, I = 3, 8, 3


def phase_counts(j):
    """(headline ios, per-op N) of one job's JSON."""
    return {
        "read_ios": j["read"]["total_ios"], "write_ios": j["write"]["total_ios"],
        "trim_ios": j["trim"]["total_ios"], "stat_ios": j["sync"]["total_ios"],
        "create": j["write"]["clat_ns"]["N"], "read": j["read"]["clat_ns"]["N"],
        "delete": j["trim"]["clat_ns"]["N"], "stat": j["sync"]["lat_ns"]["N"],
    }


def async_only(engine, iodepth):
    if engine == "posix" and iodepth > 1:
        pytest.skip("mdfio-posix is synchronous: fio caps its iodepth at 1")


def in_flight(engine):
    """Options that keep an engine's units in flight: mdfio-uring through
    the ring (its default; named here, as issue=auto would make calls that
    do not wait, all of them on tmpfs, system calls, which end before the
    next unit starts)."""
    return {"issue": "ring"} if engine == "uring" else {}


@pytest.mark.parametrize("numjobs,offset", [(1, 1), (2, 1), (2, 2), (3, 1), (3, 2), (4, 1), (4, 3)])
def test_fifo_invariant_across_invocations(tmpfs, tmp_path, numjobs, offset, engine):
    start = 5 if numjobs == 3 else 0
    opts = dict(numjobs=numjobs, datasets=D, precreate_per_set=P, steps_per_set=I,
                rank_offset=offset, start_index=start, verify_read=1)
    ns = store_view(tmpfs, engine)
    run = run_fio(job(["precreate"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    assert ns.namespace() == expected(numjobs, D, start, P)
    for j in run.jobs():
        c = phase_counts(j)
        assert (c["write_ios"], c["create"], j["write"]["io_bytes"]) == (D * P, D * P, D * P * 3901)

    for it in (1, 2):
        run = run_fio(job(["benchmark"], tmpfs, **opts, engine=engine), tmp_path, check=True)
        assert ns.namespace() == expected(numjobs, D, start + it * I, P)
        for j in run.jobs():
            c = phase_counts(j)
            assert c == {"read_ios": D * I, "write_ios": 0, "trim_ios": 0, "stat_ios": D * I,
                         "create": D * I, "read": D * I, "delete": D * I, "stat": D * I}
            assert j["read"]["io_bytes"] == D * I * 3901
            assert all(j[k]["drop_ios"] == 0 for k in ("read", "write", "trim"))

    run = run_fio(job(["cleanup"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    assert ns.entries() == []
    for j in run.jobs():
        assert (j["trim"]["total_ios"], j["trim"]["clat_ns"]["N"]) == (D * P, D * P)


def test_all_phases_in_one_jobfile(tmpfs, tmp_path, engine):
    run = run_fio(job(["precreate", "benchmark", "benchmark", "cleanup"], tmpfs, numjobs=3,
                      datasets=2, precreate_per_set=10, steps_per_set=10, verify_read=1, engine=engine),
                  tmp_path, check=True)
    assert [j["jobname"] for j in run.jobs()] == ["precreate-0"] * 3 + ["benchmark-1"] * 3 + \
        ["benchmark-2"] * 3 + ["cleanup-3"] * 3
    assert store_view(tmpfs, engine).entries() == []


def test_read_only_keeps_namespace_and_position(tmpfs, tmp_path, engine):
    opts = dict(numjobs=2, datasets=D, precreate_per_set=P, steps_per_set=I, verify_read=1)
    ns = store_view(tmpfs, engine)
    run_fio(job(["precreate"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    before = ns.namespace()
    run = run_fio(job(["benchmark"], tmpfs, read_only=1, **opts, engine=engine), tmp_path, check=True)
    assert ns.namespace() == before
    for j in run.jobs():
        c = phase_counts(j)
        assert (c["read_ios"], c["read"], c["stat"], c["create"], c["delete"]) == (D * I, D * I, D * I, 0, 0)
    run_fio(job(["benchmark"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    assert ns.namespace() == expected(2, D, I, P)
    run_fio(job(["cleanup"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    assert ns.entries() == []


def test_foreign_files_survive_every_phase(tmpfs, tmp_path, engine):
    """Files (keys) beside the datasets, one under another prefix named
    like an object, one named like a dataset of a rank the run does not
    have, and a file beside the status: every phase leaves them."""
    ns = store_view(tmpfs, engine)
    ns.put("notes.txt", b"keep me")
    ns.put("other/file-1", b"not an object")
    (tmpfs / "mdfio.status.bak").write_text("mine")
    ns.put("2_0", b"a rank that does not exist in this run")
    before = ns.snapshot()
    opts = dict(numjobs=2, datasets=D, precreate_per_set=P, steps_per_set=I)
    for phase in ("precreate", "benchmark", "cleanup"):
        run_fio(job([phase], tmpfs, **opts, engine=engine), tmp_path, check=True)
        now = ns.snapshot()
        assert {k: v for k, v in now.items() if k in before} == before
    assert ns.snapshot() == before


def test_preexisting_object_name_is_refused_before_anything_is_touched(tmpfs, tmp_path, engine):
    ns = store_view(tmpfs, engine)
    ns.put("1_2/file-0", b"precious")
    before = ns.snapshot()
    run = run_fio(job(["precreate"], tmpfs, numjobs=2, datasets=D, precreate_per_set=P, engine=engine), tmp_path, check=False)
    assert run.rc != 0
    assert any(f"{ns.name('1_2')} already exists" in l for l in run.mdfio_lines()), run.stderr
    assert ns.snapshot() == before


def test_a_dataset_left_with_a_foreign_file_is_an_error_everywhere(tmpfs, tmp_path, engine):
    """A foreign file in a dataset: cleanup removes every object, leaves the
    file and its dataset, and says so in every place a user reads errors:
    exit code, one line, total_err/first_error, drop_ios and the datasets
    left undone (short_ios, which md-workbench's dsets count needs)."""
    opts = dict(numjobs=2, datasets=D, precreate_per_set=P, steps_per_set=I)
    ns = store_view(tmpfs, engine)
    run = run_fio(job(["precreate"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    assert [j["write"]["short_ios"] for j in run.jobs()] == [0, 0]
    ns.put("1_2/notes.txt", b"mine")
    run = run_fio(job(["cleanup"], tmpfs, **opts, engine=engine), tmp_path, check=False)
    assert run.rc != 0
    assert any(f"cannot remove dataset {ns.name('1_2')}: Directory not empty" in l for l in run.mdfio_lines()), \
        run.stderr
    by_rank = {int(j["desc"].split("rank=")[1].split()[0]): j for j in run.jobs()}
    ok, bad = by_rank[0], by_rank[1]
    assert (ok["total_err"], ok["trim"]["drop_ios"], ok["trim"]["short_ios"]) == (0, 0, 0)
    assert (bad["total_err"], bad["first_error"]) == (1, errno.ENOTEMPTY)
    assert (bad["trim"]["drop_ios"], bad["trim"]["short_ios"]) == (1, 1)
    assert bad["trim"]["clat_ns"]["N"] == D * P
    left = ns.snapshot()
    assert set(left) == {"1_2", "1_2/notes.txt", "mdfio.status", "mdfio.ranks", *ns.claim}
    assert left["1_2/notes.txt"] == b"mine"
    # once the user has moved the file away, a cleanup ends the namespace
    ns.remove("1_2/notes.txt")
    run_fio(job(["cleanup"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    assert ns.entries() == []


def test_foreign_status_file_is_refused_and_kept(tmpfs, tmp_path, engine):
    (tmpfs / "mdfio.status").write_text("pos: 3000\n")
    for phase in ("precreate", "benchmark", "cleanup"):
        run = run_fio(job([phase], tmpfs, datasets=D, precreate_per_set=P, steps_per_set=I, engine=engine),
                      tmp_path, check=False)
        assert run.rc != 0
        assert any("not an mdfio status file" in l for l in run.mdfio_lines()), run.stderr
    assert store_view(tmpfs, engine).snapshot() == {"mdfio.status": b"pos: 3000\n"}


def test_benchmark_or_cleanup_without_precreate(tmpfs, tmp_path, engine):
    for phase in ("benchmark", "cleanup"):
        run = run_fio(job([phase], tmpfs, engine=engine), tmp_path, check=False)
        assert run.rc != 0
        lines = run.mdfio_lines()
        assert len(lines) == 1 and "run phase=precreate first" in lines[0], run.stderr
    assert store_view(tmpfs, engine).entries() == []


def test_cleanup_removes_status_updates_killed_ranks_left(tmpfs, tmp_path):
    """Updates that ranks killed mid-write left beside the status go with
    it: those whose first lines name this root and the file itself. A
    copy of one, an empty one and a planted one stay, named."""
    opts = dict(numjobs=2, datasets=2, precreate_per_set=10)
    run_fio(job(["precreate"], tmpfs, **opts), tmp_path, check=True)
    root_ino = os.stat(tmpfs).st_ino

    def update(name, text=None):
        path = tmpfs / name
        path.touch()
        if text is not None:
            path.write_text(text.format(root=root_ino, self=path.stat().st_ino))
        return path

    status = (tmpfs / "mdfio.status").read_text()
    cut = update("mdfio.status.n1.4242.0.tmp", "mdfio-status 4\nidentity root-inode {root} file-inode {self}\nranks 2\n")
    whole = update("mdfio.status.n2.4243.0.tmp", status.replace(f"file-inode {os.stat(tmpfs / 'mdfio.status').st_ino}",
                                                                 "file-inode {self}", 1))
    copy = update("mdfio.status.n1.4244.0.tmp", status)
    empty = update("mdfio.status.n1.4245.0.tmp")
    planted = update("mdfio.status.user.tmp", "USER\n")
    run = run_fio(job(["cleanup"], tmpfs, **opts), tmp_path, check=True)
    assert not cut.exists() and not whole.exists()
    assert sorted(os.listdir(tmpfs)) == sorted(p.name for p in (copy, empty, planted))
    assert planted.read_text() == "USER\n" and copy.read_text() == status
    notes = [l for l in run.mdfio_lines() if "looks like a status update left by a killed rank" in l]
    assert len(notes) == 1 and notes[0].endswith("(and more) looks like a status update left by a killed rank, "
                                                 "but nothing proves it mdfio's: it stays"), run.stderr


def recover_with_foreign_files(tmpfs, tmp_path, engine, opts, extra=()):
    """Cleanup of an interrupted namespace with files (keys) mdfio did not
    make in 0_0: an object name far past any window, a plain name, extra
    ones, and, where there are symlinks, a symlink under an object name
    inside the window (to a victim outside). They survive and are named,
    all mdfio made is gone, the run fails; without them, a second cleanup
    removes the rest."""
    ns = store_view(tmpfs, engine)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    foreign = ["file-999999", "notes.txt", *extra]
    for name in foreign:
        ns.put(f"0_0/{name}", b"foreign")
    if engine != "s3":      # a key is never a symlink
        (tmpfs / "0_0" / "file-199999").symlink_to(victim)
        foreign.append("file-199999")
    foreign.sort()
    run = run_fio(job(["cleanup"], tmpfs, **opts, engine=engine), tmp_path, check=False)
    assert run.rc != 0
    assert but_killed_updates(ns.entries()) == sorted(["0_0"] + [f"0_0/{n}" for n in foreign] +
                                                      ["mdfio.ranks", "mdfio.status", *ns.claim])
    lines = run.mdfio_lines()
    assert sum(f"rank 0 cleanup: left {len(foreign)} entries in its datasets (first: {ns.name('0_0')}/" in l
               for l in lines) == 1, run.stderr
    assert sum(f"cannot remove dataset {ns.name('0_0')}: Directory not empty" in l for l in lines) == 1, run.stderr
    assert victim.read_text() == "precious"
    for name in foreign:
        ns.remove(f"0_0/{name}")
    run_fio(job(["cleanup"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    assert ns.left() == []


def objects(ns):
    return sum(len(v) for v in ns.namespace().values())


def test_crashed_precreate_is_detected_and_cleanup_recovers(tmpfs, tmp_path, engine):
    opts = dict(numjobs=2, datasets=2, precreate_per_set=200000, bs=64)
    ns = store_view(tmpfs, engine)
    kill_fio_when(job(["precreate"], tmpfs, **opts, engine=engine), tmp_path, lambda: objects(ns) > 1000)
    left = objects(ns)
    assert 1000 < left < 800000
    run = run_fio(job(["benchmark"], tmpfs, steps_per_set=10, **opts, engine=engine), tmp_path, check=False)
    assert run.rc != 0
    assert any("interrupted while precreating" in l and "run phase=cleanup" in l for l in run.mdfio_lines()), run.stderr
    run = run_fio(job(["cleanup"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    assert ns.left() == []
    assert sum(j["trim"]["total_ios"] for j in run.jobs()) == left


def test_recovery_after_a_crashed_precreate_leaves_foreign_files(tmpfs, tmp_path, engine):
    opts = dict(numjobs=2, datasets=2, precreate_per_set=200000, bs=64)
    ns = store_view(tmpfs, engine)
    kill_fio_when(job(["precreate"], tmpfs, **opts, engine=engine), tmp_path, lambda: objects(ns) > 1000)
    recover_with_foreign_files(tmpfs, tmp_path, engine, opts)


def test_recovery_after_a_crashed_benchmark_leaves_foreign_files(tmpfs, tmp_path, engine):
    """A benchmark at 0 with I = P killed midway has deleted some of
    0 .. P-1 and created some of P .. 2P-1: recovery removes exactly those,
    and leaves file-2P, one past them."""
    # a benchmark long enough to be killed in its middle (a store's
    # requests take longer than a file system's calls)
    p = 500 if engine == "s3" else 20000
    opts = dict(numjobs=2, datasets=2, precreate_per_set=p, steps_per_set=p, bs=64)
    ns = store_view(tmpfs, engine)
    run_fio(job(["precreate"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    kill_fio_when(job(["benchmark"], tmpfs, **opts, engine=engine), tmp_path,
                  lambda: sum(i >= p for i in ns.namespace()["0_0"]) > 100)
    got = ns.namespace()
    assert any(i >= p for i in got["0_0"]) and any(i < p for i in got["0_0"]), got["0_0"][:5]
    assert f" benchmarking 0 {p} " in (tmpfs / "mdfio.status").read_text()
    recover_with_foreign_files(tmpfs, tmp_path, engine, opts, extra=[f"file-{2 * p}"])


@pytest.mark.parametrize("version,deleted,kept", [
    (4, ["file-10"], ["file-11", "file-16", "file-8", "file-9"]),
    (2, ["file-10"], ["file-11", "file-16", "file-8", "file-9"]),
    # no steps in the file: I taken as P = 8, so objects up to 15
    (1, ["file-10", "file-11"], ["file-16", "file-8", "file-9"]),
])
def test_recovery_deletes_regular_objects_in_the_window_only(tmpfs, tmp_path, version, deleted, kept):
    """Rank 0 interrupted in a benchmark at 0 with I = 3 (P = 8): objects can
    be 0 .. 10. A symlink and a directory under object names stay."""
    opts = dict(datasets=1, precreate_per_set=8, steps_per_set=3)
    run_fio(job(["precreate"], tmpfs, **opts), tmp_path, check=True)
    text = edit_status(tmpfs, lambda t: t.replace(" ready 0 0 ", " benchmarking 0 3 "))
    if version < 4:     # an older mdfio's status: read as before
        (tmpfs / "mdfio.status").write_text(old_status(text, version))
    ds = tmpfs / "0_0"
    victim = tmp_path / "victim"
    victim.write_text("precious")
    for name in ("file-10", "file-11", "file-16"):
        (ds / name).write_text("made here")
    (ds / "file-9").symlink_to(victim)
    (ds / "file-8").mkdir()
    run = run_fio(job(["cleanup"], tmpfs, **opts), tmp_path, check=False)
    assert run.rc != 0
    left = sorted(os.listdir(ds))
    assert all(n not in left for n in deleted) and all(n in left for n in kept), left
    assert not [n for n in left if n not in ("file-8", "file-9", "file-11", "file-16")], left
    lines = run.mdfio_lines()
    hi = 15 if version == 1 else 10
    assert any(f"rank 0 cleanup: left {len(left)} entries" in l and f"0 <= i <= {hi}" in l for l in lines), run.stderr
    assert victim.read_text() == "precious"
    assert sum("predates mdfio-status 2" in l and "up to index 15" in l for l in lines) == (version == 1), \
        run.stderr


@not_on_s3("a bucket has no modes: test_errors_a_store_refuses_are_counted is its test")
@pytest.mark.parametrize("iodepth", [1, 16])
def test_errors_in_read_only_directories_are_counted(tmpfs, tmp_path, engine, iodepth):
    """Rank 0's datasets made read-only after precreate: deletes from and
    creates into them fail with EACCES (fio runs as nobody: root would pass).
    ignore_precreate_errors=1 counts the failed creates and goes on."""
    as_nobody = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
    work = tmpfs / "jobs"          # a foreign directory the engine must leave alone
    work.mkdir()
    os.chmod(tmpfs, 0o755)
    os.chown(tmpfs, 65534, 65534)
    os.chown(work, 65534, 65534)
    n, offset = 2, 1
    opts = dict(numjobs=n, datasets=D, precreate_per_set=P, steps_per_set=I, rank_offset=offset,
                iodepth=iodepth, ignore_precreate_errors=1, **in_flight(engine))
    run_fio(job(["precreate"], tmpfs, **opts, engine=engine), work, prefix=as_nobody, check=True)
    for d in range(D):
        os.chmod(tmpfs / f"0_{d}", 0o555)
    run = run_fio(job(["benchmark"], tmpfs, **opts, engine=engine), work, prefix=as_nobody, check=False)
    assert run.rc != 0
    assert all(j["error"] != 0 for j in run.jobs())
    by_rank = {}
    lines = run.mdfio_lines()
    for r in range(n):
        deletes = sum(I for d in range(D) if (r - offset * (d + 1)) % n == 0)
        creates = sum(I for d in range(D) if (r + offset * (d + 1)) % n == 0)
        if deletes:
            assert any(f"rank {r} benchmark: {deletes} delete error" in l and "Permission denied" in l
                       for l in lines), run.stderr
        if creates:
            assert any(f"rank {r} benchmark: {creates} create error" in l for l in lines), run.stderr
        by_rank[r] = (deletes, creates)
    total = [sum(j[k]["drop_ios"] for j in run.jobs()) for k in ("trim", "write", "read")]
    assert total == [sum(v[0] for v in by_rank.values()), sum(v[1] for v in by_rank.values()), 0]
    assert sum(j["read"]["clat_ns"]["N"] for j in run.jobs()) == n * D * I
    assert sum(j["sync"]["lat_ns"]["N"] for j in run.jobs()) == n * D * I
    # the position moved although rank 0's objects stayed: the trusting
    # cleanup reports what it cannot find, a second one recovers the rest
    for d in range(D):
        os.chmod(tmpfs / f"0_{d}", 0o775)
    run = run_fio(job(["cleanup"], tmpfs, **opts, engine=engine), work, prefix=as_nobody, check=False)
    assert run.rc != 0 and any("delete error" in l for l in run.mdfio_lines()), run.stderr
    run = run_fio(job(["cleanup"], tmpfs, **opts, engine=engine), work, prefix=as_nobody, check=True)
    assert sorted(os.listdir(tmpfs)) == ["jobs"]


class RefusingProxy:
    """An S3 proxy on a free port of 127.0.0.1 in front of server: it
    answers 403 AccessDenied, as a bucket policy denying writes does, to
    each PUT and DELETE whose path refused(path) holds, and passes every
    other request on as it came (its signature names the proxy's host)."""
    DENIED = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>AccessDenied</Code>'
              b'<Message>Access Denied</Message></Error>')

    def __init__(self, server, refused):
        proxy = self
        self.refused, self.denied = refused, 0

        class Relay(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"     # keep-alive, as the engine's connections are
            upstream = None

            def log_message(self, *args):
                pass

            def answer(self, status, reason, headers, body):
                self.send_response_only(status, reason)
                for k, v in headers:
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def relay(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.command in ("PUT", "DELETE") and refused(urllib.parse.urlsplit(self.path).path):
                    proxy.denied += 1
                    return self.answer(403, "Forbidden", [("Content-Type", "application/xml"),
                                                          ("Content-Length", str(len(proxy.DENIED)))], proxy.DENIED)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("expect", "connection")}
                for attempt in (0, 1):      # the server may have closed an idle connection
                    if self.upstream is None:
                        self.upstream = http.client.HTTPConnection(server.host, server.port, timeout=60)
                    try:
                        self.upstream.request(self.command, self.path, body=body or None, headers=headers)
                        resp = self.upstream.getresponse()
                        data = resp.read()
                        break
                    except (http.client.RemoteDisconnected, ConnectionError):
                        self.upstream.close()
                        self.upstream = None
                        if attempt:
                            raise
                # a HEAD's Content-Length is the object's: passed on as it is
                keep = [(k, v) for k, v in resp.getheaders()
                        if k.lower() not in ("transfer-encoding", "connection") and
                        (self.command == "HEAD" or k.lower() != "content-length")]
                if self.command != "HEAD":
                    keep.append(("Content-Length", str(len(data))))
                self.answer(resp.status, resp.reason, keep, data)

            do_GET = do_PUT = do_HEAD = do_DELETE = do_POST = relay

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Relay)
        self.httpd.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("iodepth", [1, 16])
def test_errors_a_store_refuses_are_counted(tmpfs, tmp_path, s3_engine, iodepth):
    """mdfio-s3's read-only datasets: a proxy answers 403 to every create
    and delete of an object of rank 0's datasets after the precreate, as
    a bucket policy denying them would. Both fail with EACCES, counted per
    rank as for read-only directories, and ignore_precreate_errors=1 goes
    on past the failed creates; once writes pass again, the trusting
    cleanup leaves the objects behind the moved position and a second one
    recovers them."""
    ns = store_view(tmpfs, s3_engine)
    n, offset = 2, 1
    opts = dict(numjobs=n, datasets=D, precreate_per_set=P, steps_per_set=I, rank_offset=offset,
                iodepth=iodepth, ignore_precreate_errors=1)
    run_fio(job(["precreate"], tmpfs, **opts, engine=s3_engine), tmp_path, check=True)
    refusing = [True]
    proxy = RefusingProxy(s3_engine.server,
                          lambda path: refusing[0] and re.fullmatch(rf"/{s3_engine.bucket}/0_\d+/file-\d+", path))
    try:
        env = {"AWS_ENDPOINT_URL_S3": proxy.endpoint}
        run = run_fio(job(["benchmark"], tmpfs, **opts, engine=s3_engine), tmp_path, env=env, check=False)
        assert run.rc != 0
        assert all(j["error"] != 0 for j in run.jobs())
        by_rank = {}
        lines = run.mdfio_lines()
        for r in range(n):
            deletes = sum(I for d in range(D) if (r - offset * (d + 1)) % n == 0)
            creates = sum(I for d in range(D) if (r + offset * (d + 1)) % n == 0)
            if deletes:
                assert any(f"rank {r} benchmark: {deletes} delete error" in l and "Permission denied" in l
                           for l in lines), run.stderr
            if creates:
                assert any(f"rank {r} benchmark: {creates} create error" in l and "Permission denied" in l
                           for l in lines), run.stderr
            by_rank[r] = (deletes, creates)
        total = [sum(j[k]["drop_ios"] for j in run.jobs()) for k in ("trim", "write", "read")]
        assert total == [sum(v[0] for v in by_rank.values()), sum(v[1] for v in by_rank.values()), 0]
        assert proxy.denied == sum(total)
        assert sum(j["read"]["clat_ns"]["N"] for j in run.jobs()) == n * D * I
        assert sum(j["sync"]["lat_ns"]["N"] for j in run.jobs()) == n * D * I
        # rank 0's datasets kept what the deletes could not remove, and
        # miss what the creates could not make
        got = ns.namespace()
        for d in range(D):
            assert got[f"0_{d}"] == list(range(P)), got
        refusing[0] = False
        # the trusting cleanup deletes the window of the moved position;
        # S3's DELETE of a missing key succeeds, so what it cannot find is
        # no error here, and what it did not expect stays in each dataset
        run = run_fio(job(["cleanup"], tmpfs, **opts, engine=s3_engine), tmp_path, env=env, check=False)
        assert run.rc != 0 and sum(f"cannot remove dataset {ns.name(f'0_{d}')}: Directory not empty" in l
                                   for d in range(D) for l in run.mdfio_lines()) == D, run.stderr
        assert ns.namespace() == {f"0_{d}": list(range(I)) for d in range(D)}
        run_fio(job(["cleanup"], tmpfs, **opts, engine=s3_engine), tmp_path, env=env, check=True)
    finally:
        proxy.close()
    assert ns.entries() == []


@not_on_s3("ENOSPC is a full file system's; a store has no such limit to reach")
@pytest.mark.parametrize("iodepth", [1, 16])
def test_a_full_file_system_counts_enospc(loopfs, tmp_path, engine, iodepth):
    root = loopfs("ext4", "8M")
    opts = dict(numjobs=2, datasets=2, precreate_per_set=600, bs=8192, iodepth=iodepth,
                ignore_precreate_errors=1, **in_flight(engine))
    run = run_fio(job(["precreate"], root, **opts, engine=engine), tmp_path, check=False)
    assert run.rc != 0
    errors = sum(j["write"]["drop_ios"] for j in run.jobs())
    created = sum(j["write"]["clat_ns"]["N"] for j in run.jobs())
    assert errors > 0 and created + errors == 2 * 2 * 600
    assert sum(j["write"]["io_bytes"] for j in run.jobs()) == created * 8192
    assert any("create error" in l and "No space left on device" in l for l in run.mdfio_lines()), run.stderr
    # a rank whose end the status has no room to record says so, and the
    # cleanup recovers: it deletes what it finds, short objects included
    if "precreating" in (root / "mdfio.status").read_text():
        assert any(l.startswith(f"mdfio: cannot update {root}/mdfio.status: No space left on device")
                   for l in run.mdfio_lines()), run.stderr
        run = run_fio(job(["cleanup"], root, **opts, engine=engine), tmp_path, check=True)
        assert sum(j["trim"]["clat_ns"]["N"] for j in run.jobs()) >= created
        assert sorted(os.listdir(root)) == ["lost+found"]
        return
    # objects whose open failed are delete errors of the cleanup; those
    # whose write failed exist (short, as with md-workbench) and are deleted
    run = run_fio(job(["cleanup"], root, **opts, engine=engine), tmp_path, check=False)
    missing = sum(j["trim"]["drop_ios"] for j in run.jobs())
    deleted = sum(j["trim"]["clat_ns"]["N"] for j in run.jobs())
    assert 0 <= missing <= errors and deleted + missing == 2 * 2 * 600
    assert (run.rc != 0) == (missing > 0)
    assert all("delete error" in l and "No such file" in l for l in run.mdfio_lines()), run.stderr
    assert sorted(os.listdir(root)) == ["lost+found"]


@pytest.mark.parametrize("extra,needle", [
    ({"phase": None}, "phase= is required"),
    ({"phase": "bench"}, "phase=bench: expected precreate, benchmark or cleanup"),
    ({"datasets": "abc"}, "datasets=abc: expected an integer"),
    ({"datasets": "0"}, "datasets=0: expected an integer from 1"),
    ({"precreate_per_set": "-5"}, "precreate_per_set=-5: expected an integer"),
    ({"rw": "write"}, "phase=benchmark reports its count as rw=read; remove the rw= option"),
    ({"size": "1m"}, "size must not be set"),
    ({"runtime": "5"}, "runtime must not be set"),
    ({"steps_per_set": "20", "precreate_per_set": "10"}, "steps_per_set=20 exceeds precreate_per_set=10"),
    ({"root": "/nonexistent/mdfio"}, "directory=/nonexistent/mdfio: not an existing directory"),
    ({"ranks": "${MDW_UNSET}|x"}, "ranks=|x: expected an integer"),
    # a value before its default longer than the parser's buffer was cut
    # short, and taken: 0 here
    ({"rank_offset": "0" * 300 + "5|1"}, "rank_offset=" + "0" * 300 + "5|1: expected an integer"),
    # fio's own parser printed "min value out of range" for these and ran on
    # with the default, and took 1.5 for 1
    ({"repeat": "-1"}, "repeat=-1: expected an integer from 1 to 1000000"),
    ({"repeat": "1.5"}, "repeat=1.5: expected an integer from 1 to 1000000"),
    ({"join_timeout": "-1"}, "join_timeout=-1: expected an integer from 1 to 86400"),
    ({"join_timeout": "1.5"}, "join_timeout=1.5: expected an integer from 1 to 86400"),
    ({"latency_log": "/tmp/" + "x" * 5000}, "latency_log: longer than the 4095 characters it can hold"),
    # 2^24 * 2^40 * 3901 bytes: more than fio's 64-bit size, which it
    # used to take wrapped, asking for size= and leaving a rank file
    ({"datasets": str(2 ** 24), "precreate_per_set": str(2 ** 40), "steps_per_set": str(2 ** 40)},
     f"datasets={2 ** 24} times steps_per_set={2 ** 40} objects"),
    ({"phase": "precreate", "datasets": str(2 ** 24), "precreate_per_set": str(2 ** 40)},
     f"datasets={2 ** 24} times precreate_per_set={2 ** 40} objects of bs=3901 bytes is more than fio counts "
     "in a job's 64-bit size"),
])
def test_bad_option_gives_one_clear_line(tmpfs, tmp_path, extra, needle, engine):
    lines = ["[j]", f"ioengine=external:{engine_path(engine)}", f"directory={tmpfs}", "bs=3901"]
    opts = {"phase": "benchmark", **engine_opts(engine), **extra}
    lines += [f"{k}={v}" for k, v in opts.items() if v is not None]
    run = run_fio("\n".join(lines) + "\n", tmp_path, check=False)
    assert run.rc != 0
    ours = run.mdfio_lines()
    assert len(ours) == 1 and needle in ours[0], run.stderr
    assert store_view(tmpfs, engine).entries() == []


def built_for_another_fio(tmp_path, engine):
    """(a copy of engine's shared object that names another fio release as
    the one it was built for, that release, the running fio's)."""
    running = subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip()
    fake = "fio-0." + "9" * (len(running) - 6)
    blob = engine_path(engine).read_bytes()
    assert blob.count(running.encode() + b"\0") >= 1
    patched = tmp_path / f"mdfio-{engine}-other.so"
    patched.write_bytes(blob.replace(running.encode() + b"\0", fake.encode() + b"\0"))
    return patched, fake, running


def test_version_mismatch_is_refused(tmp_path, tmpfs, engine):
    patched, fake, running = built_for_another_fio(tmp_path, engine)
    text = f"[j]\nioengine=external:{patched}\ndirectory={tmpfs}\nphase=precreate\n" + "".join(
        f"{k}={v}\n" for k, v in engine_opts(engine).items())
    run = run_fio(text, tmp_path, check=False)
    assert run.rc != 0
    ours = run.mdfio_lines()
    assert len(ours) == 1 and f"built for {fake} but this fio is {running}" in ours[0], run.stderr
    assert store_view(tmpfs, engine).entries() == []


def test_version_mismatch_on_a_server_reaches_the_client(tmp_path, tmpfs, servers):
    """A host whose fio is another release than the engine's says why at
    the client, not only that the engine is not loadable."""
    (host,) = servers(1)
    patched, fake, running = built_for_another_fio(tmp_path, "posix")
    run = fio_client([host], f"[j]\nioengine=external:{patched}\ndirectory={tmpfs}\nphase=precreate\n", tmp_path,
                     timeout=60)
    assert f"mdfio: mdfio-posix was built for {fake} but this fio is {running}" in run.messages, run.messages
    assert list(tmpfs.iterdir()) == []


def test_enghelp_lists_every_option(engine):
    out = subprocess.run(["fio", f"--enghelp={engine_path(engine)}"], capture_output=True, text=True,
                         env=fio_env()).stdout
    for opt in ("phase", "datasets", "precreate_per_set", "steps_per_set", "rank_offset",
                "start_index", "read_only", "verify_read", "repeat", "repeats", "run_info_file",
                "ignore_precreate_errors"):
        assert re.search(rf"^{opt}\s+: \S", out, re.M), out


def test_enghelp_shows_repeat_with_its_range():
    """The engine parses repeat itself (fio's integer options take -1 and
    1.5), so its help names the range."""
    out = subprocess.run(["fio", f"--enghelp={engine_path()},repeat"], capture_output=True, text=True,
                         env=fio_env()).stdout
    assert "1 to 1000000" in out, out


def test_verify_read_catches_a_foreign_object(tmpfs, tmp_path, engine):
    opts = dict(numjobs=2, datasets=2, precreate_per_set=P, steps_per_set=I, verify_read=1)
    ns = store_view(tmpfs, engine)
    run_fio(job(["precreate"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    data = bytearray(ns.read("1_0/file-1"))
    data[100] ^= 0xFF
    ns.put("1_0/file-1", bytes(data))
    run = run_fio(job(["benchmark"], tmpfs, **opts, engine=engine), tmp_path, check=False)
    assert run.rc != 0
    assert sum(j["read"]["drop_ios"] for j in run.jobs()) == 1
    assert any("1 read error" in l and ns.name("1_0/file-1") in l for l in run.mdfio_lines()), run.stderr
    run_fio(job(["cleanup"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    assert ns.entries() == []


@pytest.mark.parametrize("iodepth", [1, 2, 16, 128])
def test_steps_in_flight_at_the_dependency_edge(tmpfs, tmp_path, engine, iodepth):
    """steps_per_set == precreate_per_set: a run reads every object of the
    FIFO and creates all of the next, with up to iodepth steps in flight;
    every object read must be whole and the one expected."""
    async_only(engine, iodepth)
    n, d, p = 3, 3, 40
    opts = dict(numjobs=n, datasets=d, precreate_per_set=p, steps_per_set=p, rank_offset=2,
                verify_read=1, iodepth=iodepth, **in_flight(engine))
    ns = store_view(tmpfs, engine)
    run_fio(job(["precreate"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    deepest = 1
    for it in (1, 2, 3):
        run = run_fio(job(["benchmark"], tmpfs, **opts, engine=engine), tmp_path, check=True)
        assert ns.namespace() == expected(n, d, it * p, p)
        for j in run.jobs():
            c = phase_counts(j)
            assert (c["read"], c["stat"], c["delete"], c["create"]) == (d * p,) * 4
            assert all(j[k]["drop_ios"] == 0 for k in ("read", "write", "trim"))
            levels = {int(k.lstrip(">=")): v for k, v in j["iodepth_level"].items() if v}
            deepest = max(deepest, max(levels))
    # fio's own account of how deep the queue really was
    assert deepest >= min(iodepth, 16), deepest
    run_fio(job(["cleanup"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    assert ns.entries() == []


def test_one_past_the_edge_is_refused_at_any_iodepth(tmpfs, tmp_path, engine):
    opts = dict(datasets=2, precreate_per_set=8, iodepth=128)
    ns = store_view(tmpfs, engine)
    run_fio(job(["precreate"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    before = ns.snapshot()
    run = run_fio(job(["benchmark"], tmpfs, steps_per_set=9, **opts, engine=engine), tmp_path, check=False)
    assert run.rc != 0
    lines = run.mdfio_lines()
    assert len(lines) == 1 and "steps_per_set=9 exceeds precreate_per_set=8" in lines[0], run.stderr
    assert ns.snapshot() == before


@pytest.mark.parametrize("iodepth", [1, 16])
def test_failed_steps_in_flight_keep_the_fifo(tmpfs, tmp_path, engine, iodepth):
    """A missing object (stat fails: the step stops) and a corrupt one (the
    read fails verification: the step goes on) among steps in flight: the
    errors are counted exactly, and the FIFO moves on around the gap."""
    async_only(engine, iodepth)
    n, d, p = 2, 2, 8
    opts = dict(numjobs=n, datasets=d, precreate_per_set=p, steps_per_set=p, verify_read=1,
                iodepth=iodepth, **in_flight(engine))
    ns = store_view(tmpfs, engine)
    run_fio(job(["precreate"], tmpfs, **opts, engine=engine), tmp_path, check=True)
    ns.remove("1_0/file-3")                       # read by rank 0 (offset 1)
    victim = "0_1/file-5"                         # read by rank 0: (0 - 2) mod 2
    data = bytearray(ns.read(victim))
    data[2000] ^= 0xFF
    ns.put(victim, bytes(data))
    run = run_fio(job(["benchmark"], tmpfs, **opts, engine=engine), tmp_path, check=False)
    assert run.rc != 0
    stat_errors = sum(j["sync"]["total_ios"] - j["sync"]["lat_ns"]["N"] for j in run.jobs())
    assert stat_errors == 1
    assert sum(j["read"]["drop_ios"] for j in run.jobs()) == 1      # the bad read
    assert sum(j["read"]["clat_ns"]["N"] for j in run.jobs()) == n * d * p - 2
    assert sum(j["trim"]["clat_ns"]["N"] for j in run.jobs()) == n * d * p - 1
    assert sum(j["write"]["clat_ns"]["N"] for j in run.jobs()) == n * d * p - 1
    lines = run.mdfio_lines()
    assert any("rank 0 benchmark: 1 stat error" in l and ns.name("1_0/file-3") in l for l in lines), run.stderr
    assert any("rank 0 benchmark: 1 read error" in l and ns.name("0_1/file-5") in l for l in lines), run.stderr
    # the step that found nothing created nothing: one gap, where expected
    want = expected(n, d, p, p)
    want["1_0"].remove(p + 3)
    assert ns.namespace() == want
    run = run_fio(job(["benchmark"], tmpfs, **opts, engine=engine), tmp_path, check=False)
    assert run.rc != 0
    assert sum(j["sync"]["total_ios"] - j["sync"]["lat_ns"]["N"] for j in run.jobs()) == 1
    want = expected(n, d, 2 * p, p)
    want["1_0"].remove(2 * p + 3)
    assert ns.namespace() == want
    # the gap is the cleanup's one delete error; S3 answers a DELETE of a
    # missing key 204, so on s3 there is none
    missing = 0 if engine == "s3" else 1
    run = run_fio(job(["cleanup"], tmpfs, **opts, engine=engine), tmp_path, check=not missing)
    assert sum(j["trim"]["drop_ios"] for j in run.jobs()) == missing
    assert ns.entries() == []


def test_notices_go_to_stderr_never_into_the_json_on_stdout(tmpfs, tmp_path):
    """A recovery's notices, with fio's JSON written to stdout: stdout is
    JSON and nothing else, and every notice is on stderr."""
    opts = dict(datasets=1, precreate_per_set=8, steps_per_set=3)
    run_fio(job(["precreate"], tmpfs, **opts), tmp_path, check=True)
    edit_status(tmpfs, lambda t: t.replace(" ready 0 0 ", " benchmarking 0 3 "))
    jobfile = tmp_path / "cleanup.fio"
    jobfile.write_text(job(["cleanup"], tmpfs, **opts))
    proc = subprocess.run(["fio", "--output-format=json", str(jobfile)], capture_output=True, text=True,
                          env=fio_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["jobs"][0]["trim"]["clat_ns"]["N"] == 8
    assert "the status of" in proc.stderr and "cannot be trusted" in proc.stderr, proc.stderr
    assert os.listdir(tmpfs) == []


ESCAPED = {"\t": "\\t", "\n": "\\n", "\x1b": "\\x1b"}


@pytest.mark.parametrize("char", ESCAPED)
@pytest.mark.parametrize("option", ["directory", "description"])
def test_a_control_character_where_fio_writes_it_into_its_json_is_refused(tmpfs, tmp_path, option, char):
    """fio writes a root or a description unescaped into its JSON, so a
    run with a TAB, a newline or an escape there completed and its output
    was not JSON: refused before anything is made, in one line that shows
    the character escaped (a newline used to break the line in two)."""
    root = tmpfs / f"r{char}x" if option == "directory" else tmpfs
    root.mkdir(exist_ok=True)
    value = str(root) if option == "directory" else f"d{char}x"
    text = "\n".join(["[j]", f"ioengine=external:{engine_path()}", "directory=${MDFIO_T_ROOT}", "bs=3901",
                      "datasets=1", "precreate_per_set=2", "phase=precreate"] +
                     (["description=${MDFIO_T_DESC}"] if option == "description" else [])) + "\n"
    # fio writes its JSON all the same, with the character unescaped
    run = mdfio.fio.run(tmp_path / "job.fio", text, output_format="normal", timeout=120,
                        env=fio_env({"MDFIO_T_ROOT": str(root), "MDFIO_T_DESC": value}))
    assert not SANITIZER_REPORT.search(run.stderr), run.stderr
    assert run.rc != 0
    ours = [l for l in run.stderr.splitlines() if "control character" in l]
    assert len(ours) == 1 and ours[0].startswith(f"mdfio: {option}={value.replace(char, ESCAPED[char])}: "), \
        run.stderr
    assert os.listdir(root) == []
