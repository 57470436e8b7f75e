"""A mutation fuzz of the status file against the cleanup, which deletes
what the status says mdfio made. A real status (of an interrupted
benchmark, so that the cleanup recovers by reading the datasets) gets
seeded mutations: bytes flipped, lines cut or dropped, positions and steps
widened, the whole namespace copied to another root. Each is run through a
real cleanup, beside files mdfio did not make put into the datasets under
object names a widened window would take. No file mdfio did not make is
ever deleted, and every refusal is one line naming the status, with a
non-zero exit. The seed is fixed; the roots are cleaned up in batches, one
fio per batch, so the size fits CI."""
import random
import re
import shutil

from conftest import edit_status, engine_path, job, run_fio

SEED = 20261126
CASES = 300
BATCH = 15             # roots, one cleanup section each, per fio run
OPTS = dict(datasets=2, precreate_per_set=4, steps_per_set=2, bs=100)
# files mdfio did not make, under object names a widened window reaches
USER = ("0_0/file-6", "0_0/file-999", "0_1/file-7", "0_1/notes.txt")
MUTATIONS = ("flip", "flip", "cut", "drop", "widen", "widen", "copy")


def make_namespace(root, tmp_path):
    """A real namespace of one rank, interrupted in a benchmark at 0 with
    I = 2 (objects 0 .. 5 may exist); returns its status."""
    root.mkdir()
    run_fio(job(["precreate"], root, **OPTS), tmp_path, check=True)
    return edit_status(root, lambda t: t.replace(" ready 0 0 ", " benchmarking 0 2 "))


def mutate(rng, text, kind):
    """The status text after one mutation of kind (never the same text)."""
    data = bytearray(text.encode())
    if kind == "flip":
        for _ in range(rng.randint(1, 3)):
            i = rng.randrange(len(data))
            data[i] ^= rng.randint(1, 255)
        return bytes(data)
    lines = text.splitlines(keepends=True)
    if kind == "cut":
        return bytes(data[:rng.randrange(len(data))])
    if kind == "drop":
        del lines[rng.randrange(len(lines))]
        return "".join(lines).encode()
    # widen: a position or steps far past what mdfio made, the checksum
    # left as it was (an edit by hand)
    pos, steps = rng.choice([(0, 2000), (1000, 2), (0, 999999), (5, 0)])
    widened = re.sub(r"^rank 0 \w+ \d+ \d+ ", f"rank 0 benchmarking {pos} {steps} ", text, flags=re.M)
    assert widened != text
    return widened.encode()


def cleanups(roots):
    """One jobfile of a cleanup section per root."""
    lines = ["[global]", f"ioengine=external:{engine_path()}", "numjobs=1",
             *(f"{k}={v}" for k, v in OPTS.items())]
    for root in roots:
        lines += ["", f"[cleanup-{root.name}]", f"directory={root}", "phase=cleanup"]
    return "\n".join(lines) + "\n"


def plant(root):
    for name in USER:
        (root / name).write_text(f"USER {name}\n")


def test_no_mutated_status_deletes_a_file_mdfio_did_not_make(tmpfs, tmp_path):
    rng = random.Random(SEED)
    template = tmpfs / "template"
    original = make_namespace(template, tmp_path)
    made = sorted(str(p.relative_to(template)) for p in template.glob("0_*/file-*"))
    assert made == [f"0_{d}/file-{i}" for d in range(2) for i in range(4)]
    seen = {k: 0 for k in MUTATIONS}
    for first in range(0, CASES, BATCH):
        cases = []
        for n in range(first, min(first + BATCH, CASES)):
            kind = MUTATIONS[n % len(MUTATIONS)]
            root = tmpfs / f"case-{n}"
            if kind == "copy":
                # the whole namespace, status and all, in another root
                shutil.copytree(template, root)
                text = original.encode()
            else:
                # the same namespace in a root of its own: its status, as
                # mdfio writes it, is bound to that root
                shutil.copytree(template, root)
                text = mutate(rng, edit_status(root, lambda t: t), kind)
            (root / "mdfio.status").write_bytes(text)
            plant(root)
            seen[kind] += 1
            cases.append((root, kind, text))
        run = run_fio(cleanups([root for root, _, _ in cases]), tmp_path, check=False)
        assert run.rc != 0, run.stderr
        lines = run.mdfio_lines()
        for root, kind, text in cases:
            ctx = f"case {root.name} ({kind}): {text!r}\n{run.stderr}"
            # nothing of the user's is touched
            for name in USER:
                assert (root / name).read_text() == f"USER {name}\n", ctx
            # a refusal: one line naming this root's status, and nothing
            # deleted; the job failed
            mine = [l for l in lines if f"{root}/" in l or l.endswith(str(root))]
            assert mine == [l for l in mine if l.startswith(f"mdfio: {root}/mdfio.status: ")], ctx
            assert len(mine) == 1 and "refusing to touch this directory" in mine[0], ctx
            assert sorted(str(p.relative_to(root)) for p in root.glob("0_*/file-*")) == \
                sorted(made + [n for n in USER if "/file-" in n]), ctx
            (j,) = [j for j in run.jobs() if j["jobname"] == f"cleanup-{root.name}"]
            assert j["error"] != 0, ctx
            shutil.rmtree(root)
    assert all(seen.values()), seen
    # the template's own status, untouched, is trusted: its cleanup
    # removes what mdfio made and leaves the user's files
    plant(template)
    run = run_fio(job(["cleanup"], template, **OPTS), tmp_path, check=False)
    assert run.rc != 0 and sorted(str(p.relative_to(template)) for p in template.glob("0_*/*")) == sorted(USER), \
        run.stderr
