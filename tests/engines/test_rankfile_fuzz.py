"""A mutation fuzz of the rank file as a crash or a user leaves it between
phases. The rank file of a real run killed mid-phase gets seeded mutations
(bytes flipped, the file cut, lines dropped, header and rank fields set to
extremes, garbage appended, the file emptied or made huge) and is put into
a root of its own beside a real namespace, before a real cleanup or
benchmark of two ranks. Each root either runs its phase as if the file
were mdfio's own, or is refused with one line naming its rank file and
left exactly as it was; no run hangs, and no file mdfio did not make is
touched. The seed is fixed; the roots run in batches, one fio per batch."""
import os
import random
import re
import shutil

from conftest import bind_status, engine_path, job, kill_fio_when, run_fio

SEED = 20261126
CASES = 240
BATCH = 12             # roots, one section each, per fio run
RANKS = 2
OPTS = dict(datasets=2, precreate_per_set=4, steps_per_set=2, bs=100, join_timeout=3)
MUTATIONS = ("flip", "flip_header", "cut", "drop", "header_field", "rank_field", "append", "empty", "huge")
# header fields set to values in or out of what mdfio writes there, each
# with whether the file is still mdfio's (the run goes on) or refused
EXTREMES = {
    "total": [("0", 0), ("1", 1), ("3", 1), ("1048576", 1), ("1048577", 0), ("18446744073709551615", 0),
              ("-1", 0), ("x", 0)],
    "released": [("18446744073709551615", 0), ("4611686018427387904", 1), ("4611686018427387905", 0), ("-1", 0),
                 ("", 0), ("1e3", 0)],
    "failed": [("18446744073709551615", 0), ("4611686018427387905", 0), ("7", 1)],
    "max": [("18446744073709551616", 0), ("99999999999999999999999", 0), ("0", 1)],
    "id": [("0", 0), ("zzzzzzzzzzzzzzzz", 0), ("0123456789abcdef0", 0), ("../../etc/passw", 0),
           ("0123456789abcdef", 1)],
    "root-goes": [("1", 1), ("2", 0), ("-1", 0)],
}
RANK_EXTREMES = {
    "arrived": ["18446744073709551615", "4611686018427387905", "0"],
    "value": ["18446744073709551615", "-5"],
    "host": ["x" * 200, "", "a\x01b"],
    "pid": ["0", "-1", "2147483648"],
    "fio": ["0", "99999999999"],
    "phase": ["", "benchmark-0-go" * 20],
}


def killed_rank_file(tmp_path):
    """The rank file a 2-rank precreate leaves when fio is killed in it."""
    root = tmp_path / "killed"
    root.mkdir()
    kill_fio_when(job(["precreate"], root, numjobs=RANKS, datasets=2, precreate_per_set=200000, bs=64),
                  tmp_path, lambda: sum(1 for _ in root.glob("0_0/file-*")) > 100)
    text = (root / "mdfio.ranks").read_bytes()
    assert text.startswith(b"mdfio-ranks 1 id ") and b"\nrank 1 " in text, text
    shutil.rmtree(root)
    return text


def set_field(record, key, value):
    """record with the value of "key <value>" replaced."""
    return re.sub(rb"(^| )" + re.escape(key.encode()) + rb" \S*", lambda m: m[1] + f"{key} {value}".encode(),
                  record, count=1)


def mutate(rng, data, kind):
    """(data after one mutation of kind, whether mdfio must still take the
    file as its own: True, False, or None when the mutation may hit
    anything). data is None for the huge file (made by truncate)."""
    lines = data.split(b"\n")
    if kind in ("flip", "flip_header"):
        out = bytearray(data)
        end = data.index(b"\n") if kind == "flip_header" else len(data)
        for _ in range(rng.randint(1, 3 if kind == "flip" else 1)):
            out[rng.randrange(end)] ^= rng.randint(1, 255)
        return bytes(out), None
    if kind == "cut":
        return data[:rng.randrange(len(data))], None
    if kind == "drop":
        del lines[rng.randrange(len(lines) - 1)]
        return b"\n".join(lines), None
    if kind == "header_field":
        key = rng.choice(sorted(EXTREMES))
        value, ok = rng.choice(EXTREMES[key])
        lines[0] = set_field(lines[0], key, value)
        return b"\n".join(lines), bool(ok)
    if kind == "rank_field":
        i = rng.choice([i for i, line in enumerate(lines) if line.startswith(b"rank ")])
        key = rng.choice(sorted(RANK_EXTREMES))
        lines[i] = set_field(lines[i], key, rng.choice(RANK_EXTREMES[key]))
        return b"\n".join(lines), True
    if kind == "append":
        return data + bytes(rng.randrange(256) for _ in range(rng.randint(1, 4000))), True
    if kind == "empty":
        return b"", True
    return None, True


def sections(cases):
    lines = ["[global]", f"ioengine=external:{engine_path()}",
             f"numjobs={RANKS}", *(f"{k}={v}" for k, v in OPTS.items())]
    for root, phase, *_ in cases:
        lines += ["", f"[{phase}-{root.name}]", f"directory={root}", f"phase={phase}"]
    return "\n".join(lines) + "\n"


def snapshot(root):
    """{relative path: bytes} of every file under root."""
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_no_mutated_rank_file_hangs_a_run_or_touches_a_file(tmpfs, tmp_path):
    rng = random.Random(SEED)
    original = killed_rank_file(tmp_path)
    template = tmpfs / "template"
    template.mkdir()
    run_fio(job(["precreate"], template, numjobs=RANKS, **OPTS), tmp_path, check=True)
    assert (template / "mdfio.ranks").exists()
    seen = {(k, p): 0 for k in MUTATIONS for p in ("cleanup", "benchmark")}
    outcome = {"ran": 0, "refused": 0}
    for first in range(0, CASES, BATCH):
        cases = []
        for n in range(first, min(first + BATCH, CASES)):
            kind, phase = MUTATIONS[n % len(MUTATIONS)], ("cleanup", "benchmark")[n // len(MUTATIONS) % 2]
            root = tmpfs / f"case-{n}"
            shutil.copytree(template, root)
            bind_status(root)
            (root / "notes.txt").write_text("USER\n")
            data, ours = mutate(rng, original, kind)
            if data is None:
                with open(root / "mdfio.ranks", "r+b") as f:
                    f.write(original)
                    f.truncate(1 << 30)
            else:
                (root / "mdfio.ranks").write_bytes(data)
            seen[kind, phase] += 1
            cases.append((root, phase, kind, data, ours, snapshot(root) if data is not None else None))
        run = run_fio(sections(cases), tmp_path, check=False, timeout=300)
        lines = run.mdfio_lines()
        refused = False
        for root, phase, kind, data, ours, before in cases:
            ctx = f"case {root.name} ({kind}, {phase}): {(data or b'(huge)')[:400]!r}\n{run.stderr}"
            assert (root / "notes.txt").read_text() == "USER\n", ctx
            mine = [l for l in lines if f"{root}/" in l or f"{root}:" in l]
            jobs = [j for j in run.jobs() if j["jobname"] == f"{phase}-{root.name}"]
            assert len(jobs) == RANKS, ctx
            assert ours is None or ours == (not mine), ctx
            if mine:
                # refused: one line naming the rank file, the root as it was
                refused = True
                outcome["refused"] += 1
                assert len(mine) == 1 and "mdfio.ranks" in mine[0], ctx
                # fio reaps a job whose setup failed without running it
                # (its error stays 0: mdfio-report marks the phase not run)
                assert all(j[d]["total_ios"] == 0 for j in jobs for d in ("read", "write", "trim")), ctx
                if before is not None:
                    assert snapshot(root) == before, ctx
                else:
                    assert os.path.getsize(root / "mdfio.ranks") == 1 << 30, ctx
            else:
                outcome["ran"] += 1
                assert all(j["error"] == 0 for j in jobs), ctx
                if phase == "cleanup":
                    assert sorted(os.listdir(root)) == ["notes.txt"], ctx
                else:
                    assert (root / "mdfio.ranks").read_bytes().startswith(b"mdfio-ranks 1 id "), ctx
                    assert sorted(p.name for p in root.glob("*_*")) == ["0_0", "0_1", "1_0", "1_1"], ctx
            shutil.rmtree(root)
        assert (run.rc != 0) == refused, run.stderr
    print(outcome, seen)
    assert all(seen.values()), seen
    assert outcome["ran"] and outcome["refused"], outcome
