"""mdfio-postmark never touches a file it did not make (docs/postmark.md):
a foreign file that takes one of postmark's names before its create (put
there during the pool, and another during the transactions) fails that
create, and the sequence's later reads, appends and delete of it are not
performed, each counted as an error of its kind, in the same phase and in
the later ones, with the phases in one fio run or each in its own, with
pm_io=sync and pm_io=uring. The foreign files' bytes are intact at the end,
and every other count is the sequence's."""
import sys

import pytest

from conftest import SOURCE_ROOT, run_fio
from test_postmark import job
from test_postmark_sequence import sequence
from test_postmark_uring import OPTIONS, PARAMS

sys.path.insert(0, str(SOURCE_ROOT / "tools"))
from mdfio import fiojson  # noqa: E402

PHASES = ("pool", "transactions", "delete")
SEQ_PHASE = {"pool": "pool", "transactions": "transactions", "delete": "deletion"}


def victims(ops):
    """A pool file read and appended in the transactions, and a file the
    transactions create, read and append, and the deletion deletes."""
    later = {}
    for ph, kind, name, *_ in ops:
        if kind != "create":
            later.setdefault(name, set()).add((ph, kind))
    made = {ph: [name for p, kind, name, *_ in ops if p == ph and kind == "create"]
            for ph in ("pool", "transactions")}
    both = {("transactions", "read"), ("transactions", "append")}
    pool = next(n for n in made["pool"] if both <= later.get(n, set()))
    trans = next(n for n in made["transactions"] if both | {("deletion", "delete")} <= later.get(n, set()))
    return {"pool": pool, "transactions": trans}


def expected(ops, foreign):
    """{phase: ({kind: operations performed}, {kind: errors})}."""
    want = {}
    for ph in PHASES:
        done = {op: 0 for op in fiojson.POSTMARK_OPS}
        errors = dict(done)
        for p, kind, name, *_ in ops:
            if p == SEQ_PHASE[ph]:
                (errors if name in foreign else done)[kind] += 1
        want[ph] = (done, errors)
    return want


@pytest.mark.parametrize("runs", ["one fio run", "a fio run per phase"])
@pytest.mark.parametrize("io", [dict(pm_io="sync"), dict(pm_io="uring", iodepth=8)])
def test_foreign_file_never_touched(tmp_path, io, runs):
    ops, _, _, _ = sequence(**PARAMS)
    names = victims(ops)
    root = tmp_path / "root"
    root.mkdir()
    foreign = {name: f"foreign, put there during the {ph}\n".encode() for ph, name in names.items()}
    text = job(root, PHASES, **OPTIONS, **io)
    for ph, name in names.items():
        # fio runs a job's prerun after the engine's init: the pool has
        # claimed the empty root and made its subdirectories
        script = tmp_path / f"{ph}.sh"
        script.write_text(f"printf '%s' '{foreign[name].decode()}' > '{root / name}'\n")
        text = text.replace(f"phase={ph}\n", f"phase={ph}\nexec_prerun=sh {script}\n")
    if runs == "one fio run":
        got = fiojson.postmark_phases(run_fio(text, tmp_path, check=False, timeout=120).json, "run")
        run = None
    else:
        sections = text.split("\n\n")
        got = []
        for k in range(len(PHASES)):
            run = run_fio("\n\n".join([sections[0], sections[k + 1]]), tmp_path, timeout=120)
            assert run.rc != 0, PHASES[k]     # each phase met a foreign file
            got += fiojson.postmark_phases(run.json, PHASES[k])
    assert [p.phase for p in got] == list(PHASES)
    for ph, p, (done, errors) in zip(PHASES, got, expected(ops, set(names.values())).values()):
        assert {op: p.latency[op].n for op in fiojson.POSTMARK_OPS} == done, ph
        assert p.errors == errors, ph
    # the errors were counted because something of each kind was there
    assert expected(ops, set(names.values()))["transactions"][1]["read"] > 0
    for name, data in foreign.items():
        assert (root / name).read_bytes() == data, name
    left = sorted(str(p.relative_to(root)) for p in root.rglob("*"))
    dirs = sorted({name.split("/")[0] for name in names.values()})
    assert left == sorted(dirs + list(names.values())), left


def test_record_name_taken_is_not_written(tmp_path):
    """A foreign file at the record's own name is not appended to: the
    failed create is said in one line, that file keeps its bytes."""
    ops, _, _, _ = sequence(**PARAMS)
    name = victims(ops)["pool"]
    root = tmp_path / "root"
    root.mkdir()
    script = tmp_path / "pool.sh"
    script.write_text(f"printf other > '{root / '.mdfio-postmark.failed'}'; printf foreign > '{root / name}'\n")
    text = job(root, ("pool",), **OPTIONS).replace("phase=pool\n", f"phase=pool\nexec_prerun=sh {script}\n")
    run = run_fio(text, tmp_path, check=False, timeout=120)
    assert (root / ".mdfio-postmark.failed").read_bytes() == b"other"
    assert (root / name).read_bytes() == b"foreign"
    assert [line for line in run.mdfio_lines() if "cannot record" in line] == [
        f"mdfio: {root}/.mdfio-postmark.failed: cannot record that {name} is not mdfio's (File exists): "
        "a later phase may touch it"]
