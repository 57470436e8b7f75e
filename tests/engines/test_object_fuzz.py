"""A seeded mutation fuzz of what lies at object names, against every
engine's benchmark, cleanup and recovery: test_beneath's one-position
matrix (a name that holds no object fails its stat) spread over many
names, kinds and phases at once.

Each case is a real namespace of a real precreate (N ranks, D, P, I
small), in which one kind of file is put at 1 to 3 seeded object names,
inside the window the case's phase touches or outside it: a symlink to a
victim file outside the root, a FIFO, a UNIX socket, a directory (empty,
or with a file in it), a hard link to a victim file, a character device
(/dev/null's numbers), or a regular file of the user's at a name the
benchmark is about to create. Then one seeded phase: a benchmark in
mdfio-posix, mdfio-uring (linked=0, 1) or mdfio-aio (iodepth 1, 4), a
cleanup, or a recovery cleanup of a status edited to say a benchmark was
interrupted. For every case:

- the run ends within its timeout (nothing waits on a FIFO or a socket);
- its job fails exactly when an alien is in the phase's reach;
- its lines are the ones that name each alien the phase met, per rank,
  and nothing else;
- no alien and nothing of the victim is deleted, followed, read, written
  or changed (type, mode, inode, link count, mtime, atime on a
  strictatime mount, bytes), but for the one exception docs/design.md
  states: the cleanup of a trusted status unlinks each object's name, so
  a name that is no directory goes (a hard link's file loses that link);
- the objects mdfio made are what the phase leaves of them.

The seed is fixed; the roots are precreated in batches, one fio per
batch, and run the same way, so that the size fits CI. A failure names
each case by its number: MDFIO_OBJFUZZ_CASES=7,12 runs only those (the
cases are drawn the same whatever runs)."""
import collections
import os
import random
import re
import shutil
import time

from conftest import (ALIENS, ENGINES, edit_status, engine_path, io_uring_missing, mounted_tmpfs, put_alien,
                      run_fio, snapshot, held)

SEED = 20261127
CASES = 384
BATCH = 12             # roots, one section each, per fio run
TIMEOUT = 120          # of one fio run: a hang shows as a TimeoutError
N, D, P, I = 2, 2, 4, 2
OPTS = dict(numjobs=N, datasets=D, precreate_per_set=P, steps_per_set=I, bs=100)
KINDS = (*ALIENS, "directory with a file", "user file")
TEXT = {**ALIENS, "directory with a file": ALIENS["directory"]}
PHASES = ("benchmark", "cleanup", "recovery")
# mdfio-uring's ring (issue=ring, units in flight) rather than the system
# calls that issue=auto makes on a tmpfs
RUNS = {"posix": ("posix", {}),
        "uring linked=0": ("uring", {"iodepth": 4, "issue": "ring", "linked": 0}),
        "uring linked=1": ("uring", {"iodepth": 4, "issue": "ring", "linked": 1}),
        "aio iodepth=1": ("aio", {"iodepth": 1}),
        "aio iodepth=4": ("aio", {"iodepth": 4})}
assert {e for e, _ in RUNS.values()} == set(ENGINES)
DEV_NULL = os.stat("/dev/null").st_rdev
WINDOW = {"benchmark": ("read", "create"), "cleanup": ("read", "idle"), "recovery": ("read", "idle", "create")}


def reader(x, d):
    """The rank whose benchmark reads dataset x_d (rank_offset 1); with
    N = 2 it also writes there, the object of index i+P for i."""
    return (x + d + 1) % N


def slot(i):
    """Where index i lies for the benchmark at 0: 'read' (stat, read,
    delete), 'idle' (an object no step touches), 'create' (a name it
    creates) or 'far' (beyond everything)."""
    return "read" if i < I else "idle" if i < P else "create" if i < P + I else "far"


def draw(rng, n, runs):
    """Case n: its kind, phase, run and {name: kind}. Kinds and phases
    take turns, so that every pair occurs; the rest is seeded. A user's
    file goes only where the benchmark creates."""
    kind = KINDS[n % len(KINDS)]
    phase = PHASES[n // len(KINDS) % len(PHASES)]
    run = rng.choice(runs)
    names = [f"{x}_{d}/file-{i}" for x in range(N) for d in range(D)
             for i in (range(P, P + I) if kind == "user file" else (*range(P + I + 2), 999))]
    aliens = {name: kind for name in rng.sample(names, rng.randint(1, 3))}
    return dict(n=n, kind=kind, phase=phase, run=run, aliens=aliens)


def index(name):
    return int(name.rsplit("-", 1)[1])


def reach(case):
    """{rank: what of the case's aliens the phase meets}: for the
    benchmark 'stat' (at names it reads) and 'create' (at names it creates
    whose unit gets past its stat); for a cleanup everything in the rank's
    datasets, and 'gone', what the phase removes by design."""
    phase, aliens = case["phase"], case["aliens"]
    out = {r: {"stat": [], "create": [], "left": [], "gone": []} for r in range(N)}
    for name, kind in aliens.items():
        x, d = map(int, name.split("/")[0].split("_"))
        i, where = index(name), slot(index(name))
        if phase == "benchmark":
            if where == "read":
                out[reader(x, d)]["stat"].append(name)
            elif where == "create" and f"{x}_{d}/file-{i - P}" not in aliens:
                out[reader(x, d)]["create"].append(name)
        elif phase == "cleanup" and not kind.startswith("directory") and where in WINDOW[phase]:
            # a cleanup of a trusted status unlinks each object's name as
            # md-workbench does, without looking first (docs/design.md):
            # the name goes, never what it points or links to
            out[x]["gone"].append(name)
        elif phase == "recovery" and kind == "user file" and where in WINDOW[phase]:
            # a regular file of one link at a name the interrupted
            # benchmark may have created: the recovery cannot tell it from
            # one mdfio made, and its window is what the status allows
            # (docs/design.md, Recovery)
            out[x]["gone"].append(name)
        else:
            out[x]["left"].append(name)
    return out


def in_reach(case):
    return any(v for r in reach(case).values() for k, v in r.items() if k != "gone")


def sections(cases, phase_of):
    """A jobfile of a section per case, each of its own engine (whose
    options follow it) in its own root, all of them in one fio group."""
    lines = []
    for c in cases:
        engine, extra = RUNS[c["run"]]
        lines += ["", f"[{phase_of(c)}-case-{c['n']}]", f"ioengine=external:{engine_path(engine)}",
                  f"directory={c['root']}", f"phase={phase_of(c)}",
                  *(f"{k}={v}" for k, v in {**OPTS, **extra}.items())]
    return "\n".join(lines) + "\n"


def seen_state(c):
    """What the case's aliens and victim hold, all of it (held, meta)."""
    root, out = c["root"], {"victim": snapshot(c["victim"], meta=True)}
    for name in c["aliens"]:
        p = root / name
        out[name] = held(p, meta=True) if os.path.lexists(p) else "missing"
        if os.path.isdir(p) and not os.path.islink(p):
            out[name + "/"] = snapshot(p, meta=True)
    return out


def expected_lines(c):
    """[(regex, at most, at least)] of the case's lines, each ROOT-relative."""
    root, phase = re.escape(str(c["root"])), c["phase"]
    text = {name: re.escape(TEXT.get(kind, "")) for name, kind in c["aliens"].items()}
    out = []

    def one_of(names, then=""):
        return "(?:" + "|".join(f"{root}/{re.escape(n)}{then.format(t=text[n])}" for n in names) + ")"
    for r, got in reach(c).items():
        if phase == "benchmark":
            halts = bool(got["create"])
            if halts:
                out.append((rf"rank {r} benchmark: cannot create {one_of(got['create'])}: File exists; "
                            r"the run stops here \(ignore_precreate_errors=1 counts such errors and goes on\)", 1, 1))
                # creates in flight when it stopped, which failed as well
                out.append((rf"rank {r} benchmark: \d+ create errors \(first: {one_of(got['create'])}: File exists\)",
                            1 if len(got["create"]) > 1 else 0, 0))
            if got["stat"]:
                count = str(len(got["stat"])) if not halts else r"\d+"
                out.append((rf"rank {r} benchmark: {count} stat errors? \(first: "
                            rf"{one_of(got['stat'], ': {t}')}, not an object \(mdfio makes each a regular file "
                            r"of one link\): left as it is\)", 1, 0 if halts else 1))
            continue
        dirs = [n for n in got["left"] if c["aliens"][n].startswith("directory") and slot(index(n)) in WINDOW[phase]]
        if phase == "cleanup" and dirs:
            out.append((rf"rank {r} cleanup: {len(dirs)} delete errors? \(first: {one_of(dirs)}: Is a directory\)", 1, 1))
        if phase == "recovery":
            out.append((rf"rank {r}: the status of {root} cannot be trusted; removing the \d+ objects found in "
                        rf"its datasets with indices 0 to {P + I - 1}", 1, 1))
            if got["left"]:
                n = len(got["left"])
                out.append((rf"rank {r} cleanup: left {n} entr{'ies' if n > 1 else 'y'} in its datasets "
                            rf"\(first: {one_of(got['left'])}\): mdfio removes only regular files of one link file-<i> with "
                            rf"0 <= i <= {P + I - 1}, ", 1, 1))
        for ds in sorted({n.split("/")[0] for n in got["left"]}):
            out.append((rf"rank {r}: cannot remove dataset {root}/{ds}: Directory not empty \(it holds files "
                        r"mdfio did not expect; they were left alone\)", 1, 1))
    return out


def check_lines(c, lines):
    """Violations of expected_lines in the case's lines."""
    bad, rules = [], expected_lines(c)
    hits = [0] * len(rules)
    for line in lines:
        body = line[len("mdfio: "):]
        match = [k for k, (rx, _, _) in enumerate(rules) if re.fullmatch(rx + ".*", body)]
        if not match:
            bad.append(f"a line not expected: {line}")
        for k in match:
            hits[k] += 1
    for (rx, most, least), h in zip(rules, hits):
        if not least <= h <= most:
            bad.append(f"{h} lines where {least} to {most} expected of: {rx}")
    return bad


def check_namespace(c):
    """What the phase left of mdfio's objects: the aliens aside, every
    dataset holds exactly the objects it should."""
    root, phase, aliens = c["root"], c["phase"], c["aliens"]
    gone = {n for got in reach(c).values() for n in got["gone"]}
    halted = {r for r, got in reach(c).items() if got["create"]}
    bad = []
    for x in range(N):
        for d in range(D):
            ds = f"{x}_{d}"
            mine = {n for n in aliens if n.startswith(ds + "/") and n not in gone}
            entries = {f"{ds}/{e}" for e in os.listdir(root / ds)} if (root / ds).is_dir() else None
            if phase != "benchmark":
                # the cleanup removes every object, and the dataset with
                # them unless an alien stays in it
                want = mine or None
                if entries != want:
                    bad.append(f"dataset {ds} holds {sorted(entries) if entries is not None else 'nothing (removed)'}"
                               f", expected {sorted(want) if want else 'removed'}")
                continue
            objects = {index(e) for e in entries or () if e not in aliens}
            if entries is None or not all(re.fullmatch(r"file-\d+", e.split("/")[1]) for e in entries):
                bad.append(f"dataset {ds}: {sorted(entries) if entries is not None else 'removed'}")
                continue
            for i in range(I):
                alien_read, made = f"{ds}/file-{i}" in aliens, P + i in objects
                if alien_read:
                    ok = not made           # the step stopped at its stat
                elif reader(x, d) in halted:
                    # a rank that stopped the run: each unit ran whole,
                    # or not at all (its create may be the one that failed)
                    ok = not made if i in objects else made or f"{ds}/file-{P + i}" in aliens
                else:
                    ok = i not in objects and (made or f"{ds}/file-{P + i}" in aliens)
                if not ok:
                    bad.append(f"dataset {ds}: unit {i} left objects {sorted(objects)}")
            idle = {i for i in range(I, P) if f"{ds}/file-{i}" not in aliens}
            if not idle <= objects or objects - set(range(P + I)):
                bad.append(f"dataset {ds}: objects {sorted(objects)}, idle ones {sorted(idle)}")
    status = (root / "mdfio.status").exists()
    if phase != "benchmark" and status != any((root / f"{x}_{d}").exists() for x in range(N) for d in range(D)):
        bad.append(f"mdfio.status {'stays' if status else 'is gone'} with the datasets otherwise")
    if phase == "benchmark" and not status:
        bad.append("mdfio.status is gone")
    return bad


def describe(c):
    return (f"case {c['n']} (seed {SEED}): {c['phase']} by {c['run']}, "
            f"{', '.join(f'{k} at {n} ({slot(index(n))})' for n, k in c['aliens'].items())}")


def test_no_object_name_of_any_kind_is_touched_or_waited_on(tmp_path, capsys):
    runs = [r for r in RUNS if not (RUNS[r][0] == "uring" and io_uring_missing())]
    rng = random.Random(SEED)
    cases = [draw(rng, n, runs) for n in range(CASES)]
    only = os.environ.get("MDFIO_OBJFUZZ_CASES")
    if only:
        cases = [cases[int(n)] for n in only.split(",")]
    counts = {"kind": collections.Counter(), "phase": collections.Counter(), "run": collections.Counter(),
              "kind x phase": collections.Counter(), "run x phase": collections.Counter(),
              "in reach": collections.Counter()}
    violations, failing = [], collections.defaultdict(list)
    start = time.monotonic()
    with mounted_tmpfs("size=256m,strictatime", prefix="mdfio-objfuzz-") as fs:
        for first in range(0, len(cases), BATCH):
            batch = cases[first:first + BATCH]
            for c in batch:
                c["root"], c["victim"] = fs / f"case-{c['n']}", fs / f"victim-{c['n']}"
                c["root"].mkdir()
                c["victim"].mkdir()
                for name in c["aliens"]:
                    (c["victim"] / name.split("/")[1]).write_bytes(b"precious %s\n" % name.encode())
            run_fio(sections(batch, lambda c: "precreate"), tmp_path, check=True, timeout=TIMEOUT)
            for c in batch:
                for name, kind in c["aliens"].items():
                    put_alien(c["root"] / name, kind, c["victim"], device=DEV_NULL,
                              link_to=c["victim"] / name.split("/")[1])
                if c["phase"] == "recovery":
                    edit_status(c["root"], lambda t: t.replace(" ready 0 0 ", " benchmarking 0 2 "))
                c["before"] = seen_state(c)
            text = sections(batch, lambda c: "cleanup" if c["phase"] == "recovery" else c["phase"])
            try:
                run = run_fio(text, tmp_path, check=None, timeout=TIMEOUT)
            except TimeoutError as e:
                raise AssertionError(f"{e}: a hang, in one of\n" + "\n".join(map(describe, batch))) from None
            lines = run.mdfio_lines()
            halting = sum(bool(got["create"]) for c in batch for got in reach(c).values())
            stopped = [l for l in lines if re.fullmatch(r"mdfio: rank \d+ stopped after \d+ of \d+ benchmark units; "
                                                        r"the namespace is marked as interrupted", l)]
            if len(stopped) != halting:
                violations.append(f"batch of cases {batch[0]['n']}..{batch[-1]['n']}: {len(stopped)} ranks say they "
                                  f"stopped, {halting} stopped the run\n{run.stderr}")
            if (run.rc != 0) != any(in_reach(c) for c in batch):
                violations.append(f"batch of cases {batch[0]['n']}..{batch[-1]['n']}: rc={run.rc}")
            for c in batch:
                bad = []
                # what the phase removes by design is gone, whole; a hard
                # link's file keeps its other names
                for got in reach(c).values():
                    for name in got["gone"]:
                        c["before"][name] = "missing"
                        if c["aliens"][name] == "hard link":
                            victim = c["before"]["victim"]
                            what, mode, ino, nlink, *rest = victim[name.split("/")[1]]
                            victim[name.split("/")[1]] = (what, mode, ino, nlink - 1, *rest)
                after = seen_state(c)
                if after != c["before"]:
                    bad += [f"{k}: {c['before'].get(k)!r} -> {after.get(k)!r}"
                            for k in sorted(set(c["before"]) | set(after)) if c["before"].get(k) != after.get(k)]
                jobs = [j for j in run.jobs() if j["jobname"].endswith(f"-case-{c['n']}")]
                failed = any(j["error"] for j in jobs)
                if len(jobs) != N or failed != in_reach(c):
                    bad.append(f"its jobs' errors {[j['error'] for j in jobs]}, an alien in reach: {in_reach(c)}")
                mine = re.compile(re.escape(str(c["root"])) + r"(?=[/\s:;,)]|$)")
                bad += check_lines(c, [l for l in lines if mine.search(l)])
                bad += check_namespace(c)
                if bad:
                    violations.append(describe(c) + "\n  " + "\n  ".join(bad))
                    failing[c["phase"], c["kind"]].append(c["n"])
                counts["kind"][c["kind"]] += 1
                counts["phase"][c["phase"]] += 1
                counts["run"][c["run"]] += 1
                counts["kind x phase"][c["kind"], c["phase"]] += 1
                counts["run x phase"][c["run"], c["phase"]] += 1
                counts["in reach"]["in reach" if in_reach(c) else "none in reach"] += 1
                shutil.rmtree(c["root"])
                shutil.rmtree(c["victim"])
            lines_left = [l for l in lines if l not in stopped and not any(
                re.search(re.escape(str(c["root"])) + r"(?=[/\s:;,)]|$)", l) for c in batch)]
            if lines_left:
                violations.append("lines of no case:\n" + "\n".join(lines_left))
    with capsys.disabled():
        print(f"\n{len(cases)} cases in {time.monotonic() - start:.1f} s, seed {SEED}")
        for what, counter in counts.items():
            print(f"  by {what}: " + ", ".join(f"{k if isinstance(k, str) else ' x '.join(k)} {v}"
                                               for k, v in sorted(counter.items())))
    assert not violations, f"{len(violations)} violations; the cases by phase and kind: " + "; ".join(
        f"{p} x {k}: {','.join(map(str, ns))}" for (p, k), ns in sorted(failing.items())) + \
        "\n" + "\n".join(violations[:30])
    if not only:
        assert all(counts["kind x phase"][k, p] for k in KINDS for p in PHASES), counts["kind x phase"]
        assert set(counts["run"]) == set(runs) and len(counts["in reach"]) == 2, counts
