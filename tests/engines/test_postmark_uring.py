"""mdfio-postmark's uring path (pm_io=uring, docs/postmark.md): at iodepth
1, 4 and 16 the files made, their names, sizes and contents at each
phase's end, and the JSON's counts of each kind of operation, are the sync
path's and lib/postmark's sequence's; operations are truly in flight
together; an operation never starts before its file's previous one has
ended (else a read finds another size, or no file); pm_buffering=true with
it is refused in one line. strace cannot see io_uring's operations, so the
namespace at the phases' ends and the JSON's counts stand for them."""
import hashlib
import sys

import pytest

from conftest import SOURCE_ROOT, run_fio
from test_postmark import job
from test_postmark_sequence import sequence

sys.path.insert(0, str(SOURCE_ROOT / "tools"))
from mdfio import fiojson  # noqa: E402

PHASES = ("pool", "transactions", "delete")
# more transactions than files: a file's operations come close together
# in the sequence, so that many wait for their file's previous one
PARAMS = dict(number=30, transactions=400, subdirectories=3, size_low=100, size_high=3000,
              read_block=700, write_block=300, buffered=0, seed=1234)
OPTIONS = dict(pm_files=30, pm_transactions=400)


def namespace(root):
    """{path below root: (size, digest of content)} of postmark's files."""
    return {str(p.relative_to(root)): (p.stat().st_size, hashlib.sha256(p.read_bytes()).hexdigest())
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != ".mdfio-postmark"}


def expected_sizes(ops):
    """{name: size} after each phase of the sequence's operations."""
    sizes, after = {}, {}
    for phase, kind, name, nbytes, *_ in ops:
        if kind == "create":
            sizes[name] = int(nbytes)
        elif kind == "append":
            sizes[name] += int(nbytes)
        elif kind == "delete":
            del sizes[name]
        after[phase] = dict(sizes)
    return [after.get(p, {}) for p in ("pool", "transactions", "deletion")]


def run_phases(root, tmp_path, **opts):
    """Each phase in a fio run of its own: [(namespace, counts, errors,
    iodepth levels)] at each phase's end."""
    root.mkdir()
    ends = []
    for phase in PHASES:
        run = run_fio(job(root, (phase,), **OPTIONS, **opts), tmp_path, check=True, timeout=120)
        p, = fiojson.postmark_phases(run.json, phase)
        levels = {k: v for k, v in run.jobs()[0]["iodepth_level"].items() if v}
        ends.append((namespace(root), {op: p.latency[op].n for op in fiojson.POSTMARK_OPS},
                     sum(p.errors.values()), levels))
    return ends


@pytest.fixture(scope="module")
def sync_ends(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sync")
    return run_phases(tmp / "root", tmp, pm_io="sync")


@pytest.mark.parametrize("iodepth", [1, 4, 16])
def test_same_files_and_counts_as_sync(tmp_path, sync_ends, iodepth):
    ops, _, _, _ = sequence(**PARAMS)
    want_sizes = expected_sizes(ops)
    ends = run_phases(tmp_path / "root", tmp_path, pm_io="uring", iodepth=iodepth)
    for phase, (ns, counts, errors, _), (sync_ns, sync_counts, _, _), sizes in zip(
            PHASES, ends, sync_ends, want_sizes):
        assert errors == 0, phase
        assert ns == sync_ns, phase
        assert {name: size for name, (size, _) in ns.items()} == sizes, phase
        assert counts == sync_counts, phase
        kinds = [kind for ph, kind, *_ in ops if ph == {"delete": "deletion"}.get(phase, phase)]
        assert counts == {op: kinds.count(op) for op in fiojson.POSTMARK_OPS}, phase
    assert ends[-1][0] == {} and not any((tmp_path / "root").iterdir())


def test_in_flight_together_in_file_order(tmp_path):
    """At iodepth 16 fio saw 16 operations in flight (the pool's creates
    wait for nothing); and many operations of the transactions follow their
    file's previous one closely, which a read started too early would find
    of another size or gone: none failed, and the files are the sequence's."""
    ops, _, _, _ = sequence(**PARAMS)
    seq = {int(s): ph for ph, _, _, _, s, _ in ops}
    close = sum(1 for ph, kind, _, _, s, after in ops
                if ph == "transactions" and seq.get(int(after)) == ph and int(s) - int(after) < 16)
    assert close > 50, close     # this sequence does test the waiting
    ends = run_phases(tmp_path / "root", tmp_path, pm_io="uring", iodepth=16)
    assert ends[0][3].get("16", 0) > 0, ends[0][3]
    assert all(errors == 0 for _, _, errors, _ in ends)
    assert [{name: size for name, (size, _) in ns.items()} for ns, *_ in ends] == expected_sizes(ops)


@pytest.mark.parametrize("opts, why", [
    (dict(pm_io="uring", pm_buffering="true"), "pm_io=uring: expected pm_buffering=false"),
    (dict(pm_io="ring"), "pm_io=ring: expected sync or uring"),
])
def test_bad_combination_one_line(tmp_path, opts, why):
    root = tmp_path / "root"
    root.mkdir()
    run = run_fio(job(root, ("pool",), **opts), tmp_path, check=False, timeout=120)
    assert run.rc != 0
    lines = set(run.mdfio_lines())
    assert len(lines) == 1 and why in lines.pop(), run.stderr
    assert not any(root.iterdir())


def test_errors_counted_per_kind_as_sync(tmp_path):
    """A pool file cut short between the phases: every read of it in the
    transactions fails, counted as read errors with one line naming the
    first, the same with operations in flight as one at a time."""
    ops, _, _, _ = sequence(**PARAMS)
    pool = {name for ph, kind, name, *_ in ops if ph == "pool"}
    victim = next(name for ph, kind, name, *_ in ops if ph == "transactions" and kind == "read" and name in pool)
    reads = sum(1 for ph, kind, name, *_ in ops if ph == "transactions" and kind == "read" and name == victim)
    got = []
    for opts in (dict(pm_io="sync"), dict(pm_io="uring", iodepth=16)):
        root = tmp_path / opts["pm_io"]
        root.mkdir()
        run_fio(job(root, ("pool",), **OPTIONS, **opts), tmp_path, check=True, timeout=120)
        (root / victim).write_bytes(b"")
        run = run_fio(job(root, ("transactions",), **OPTIONS, **opts), tmp_path, check=False, timeout=120)
        assert run.rc != 0
        p, = fiojson.postmark_phases(run.json, "transactions")
        got.append((p.errors, [line for line in run.mdfio_lines() if "errors" in line]))
    errors, lines = got[0]
    assert errors == dict(errors, read=reads) and sum(errors.values()) == reads
    assert lines == [f"mdfio: postmark transactions: {reads} read errors (first: {tmp_path / 'sync'}/{victim}: "
                     "Input/output error)"]
    assert got[1] == (errors, [line.replace("/sync/", "/uring/") for line in lines])
