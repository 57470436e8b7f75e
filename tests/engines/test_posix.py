"""What only mdfio-posix promises: md-workbench's own system calls."""
import os
import json
import re
import subprocess

import pytest

from conftest import fio_env, job, path_first, run_fio


def test_syscalls_of_a_step_match_md_workbench(tmpfs, tmp_path):
    """md-workbench's calls in its order, each on a single name in the
    dataset's descriptor (strace -y shows the directory) and following no
    symlink; and between the read's open and its read the two calls that
    make sure the name held an object: the open does not wait (O_NONBLOCK:
    a FIFO there would never answer), fstat sees a regular file of one
    link, and fcntl makes the read wait as md-workbench's does."""
    opts = dict(datasets=1, precreate_per_set=4, steps_per_set=2, bs=100)
    run_fio(job(["precreate"], tmpfs, **opts), tmp_path, check=True)
    trace = tmp_path / "strace.out"
    run_fio(job(["benchmark"], tmpfs, **opts), tmp_path, check=True,
            prefix=["strace", "-f", "-y", "-qq", "-o", str(trace), "-e",
                    "trace=newfstatat,fstat,stat,statx,fcntl,openat,read,write,close,unlink,unlinkat"])
    root = str(tmpfs)
    calls, pending = [], {}
    for line in trace.read_text().splitlines():
        # a call another thread of the process interrupts is split in two
        # lines: "PID name(args <unfinished ...>", "PID <... name resumed>rest"
        m = re.match(r"(\d+)\s+(.*) <unfinished \.\.\.>$", line)
        if m:
            pending[m.group(1)] = m.group(2)
            continue
        m = re.match(r"(\d+)\s+<\.\.\. \w+ resumed>(.*)$", line)
        if m and m.group(1) in pending:
            line = f"{m.group(1)} {pending.pop(m.group(1))}{m.group(2)}"
        m = re.match(r"\d+\s+(\w+)\((.*)\)\s+=\s+-?\d+", line)
        # a call on an object's name, or on a descriptor open on an object
        if m and ('"file-' in m.group(2) or re.match(r"\d+<[^>]*/file-\d+>", m.group(2))):
            calls.append((m.group(1), m.group(2)))
    # glibc's fstat is a newfstatat of "" on some architectures
    names = ["fstat" if c[0] == "newfstatat" and '"", ' in c[1] else c[0] for c in calls]
    step = ["newfstatat", "openat", "fstat", "fcntl", "read", "close", "unlinkat", "openat", "write", "close"]
    assert names == step * 2, calls
    for k in range(2):
        stat, ropen, fstat, fcntl, _, _, unl, wopen, _, _ = calls[k * 10:(k + 1) * 10]
        for call, index in ((stat, k), (ropen, k), (unl, k), (wopen, 4 + k)):
            assert f'<{root}/0_0>, "file-{index}"' in call[1], call
        assert "AT_SYMLINK_NOFOLLOW" in stat[1]
        assert all(f in ropen[1] for f in ("O_RDONLY", "O_NOFOLLOW", "O_NONBLOCK")), ropen
        assert f"/0_0/file-{k}>" in fstat[1], fstat
        assert "F_SETFL" in fcntl[1] and "O_NONBLOCK" not in fcntl[1], fcntl
        assert all(f in wopen[1] for f in ("O_CREAT", "O_EXCL", "O_NOFOLLOW"))
    run_fio(job(["cleanup"], tmpfs, **opts), tmp_path, check=True)


@pytest.mark.parametrize("fio", ["stock", "nr-ios"])
def test_posix_runs_up_to_16_units_per_io_u(tmpfs, tmp_path, fio, request, monkeypatch):
    """mdfio-posix runs up to 16 units per io_u, in stock fio (the engine
    counts the batch's other units) and in fio with io_u-nr-ios.patch (fio
    counts them): fio's --debug=io prints one 'queue' line per io_u, and
    fio's JSON still counts every unit."""
    if fio == "nr-ios":
        monkeypatch.setenv("PATH", path_first(request.getfixturevalue("nr_ios_fio")))
    D, P, I = 3, 20, 5
    opts = dict(datasets=D, precreate_per_set=P, steps_per_set=I)

    def io_us(phase):
        jobfile = tmp_path / f"{phase}.fio"
        jobfile.write_text(job([phase], tmpfs, **opts))
        out = subprocess.run(["fio", "--debug=io", "--output-format=json", str(jobfile)],
                             capture_output=True, text=True, env=fio_env(), check=True).stdout
        # fio's debug lines come first on the same stream as its JSON
        (j,) = json.JSONDecoder().raw_decode(out, out.index("\n{\n") + 1)[0]["jobs"]
        return len(re.findall(r" queue: io_u ", out)), {k: j[k]["total_ios"] for k in ("read", "write", "trim")}

    assert io_us("precreate") == (4, {"read": 0, "write": D * P, "trim": 0})     # 60 creates
    assert io_us("benchmark") == (1, {"read": D * I, "write": 0, "trim": 0})     # 15 steps
    assert io_us("cleanup") == (4, {"read": 0, "write": 0, "trim": D * P})
    assert os.listdir(tmpfs) == []


def test_nr_ios_fio_counts_what_stock_fio_counts(tmp_path, nr_ios_fio):
    """The same run, with failed units in the middle of a batch and as the
    very last unit of a phase, in stock fio and in the patched fio: fio's
    JSON and the engine's report agree number for number."""
    D, P, S = 2, 20, 3901
    opts = dict(datasets=D, precreate_per_set=P, steps_per_set=P, bs=S)
    env = {"stock": None, "nr-ios": {"PATH": path_first(nr_ios_fio)}}
    seen = {}
    for name, extra in env.items():
        root = tmp_path / name
        root.mkdir()
        work = tmp_path / f"{name}-jobs"
        work.mkdir()
        runs = [run_fio(job(["precreate"], root, **opts), work, env=extra, check=True)]
        # benchmark units are k = idx * D + d: 7 is mid-batch, 39 the last
        (root / "0_1" / "file-3").unlink()
        (root / "0_1" / "file-19").unlink()
        runs.append(run_fio(job(["benchmark"], root, **opts), work, env=extra, check=False))
        # so the steps' creates 23 and 39 are missing: cleanup units
        # k = d * P + idx - P: 23 mid-batch, 39 the last
        runs.append(run_fio(job(["cleanup"], root, **opts), work, env=extra, check=False))
        assert [r.rc != 0 for r in runs] == [False, True, True]
        assert os.listdir(root) == []
        seen[name] = [
            ([{k: (j[k]["total_ios"], j[k]["io_bytes"], j[k]["drop_ios"], j[k]["clat_ns"]["N"])
               for k in ("read", "write", "trim")} | {"sync": (j["sync"]["total_ios"], j["sync"]["lat_ns"]["N"])}
              for j in r.jobs()],
             [l.replace(str(root), "ROOT") for l in r.mdfio_lines()])
            for r in runs]
    assert seen["nr-ios"] == seen["stock"]
    cleanup = seen["nr-ios"][2][0][0]
    assert cleanup["trim"] == (D * P, (D * P - 2) * S, 2, D * P - 2)
    assert any("2 delete errors" in l for l in seen["nr-ios"][2][1])


def test_each_rank_gives_its_exact_phase_time(tmpfs, tmp_path):
    """slat_ns of a phase's slot: one sample per rank, at least the sum of
    its operations' times (mdfio-posix runs them one after another) and at
    most fio's runtime, which is whole milliseconds rounded up."""
    run = run_fio(job(["precreate", "benchmark", "cleanup"], tmpfs, numjobs=2, datasets=2,
                      precreate_per_set=50, steps_per_set=20, bs=100), tmp_path, check=True)
    slots = {"precreate-0": "write", "benchmark-1": "read", "cleanup-2": "trim"}
    for name, slot in slots.items():
        for j in run.jobs(name):
            t = j[slot]["slat_ns"]
            assert (t["N"], t["min"], t["mean"]) == (1, t["max"], t["max"]), t
            ops = sum(j[s][k]["mean"] * j[s][k]["N"] for s, k in
                      (("write", "clat_ns"), ("read", "clat_ns"), ("trim", "clat_ns"), ("sync", "lat_ns"))
                      if j[s][k]["N"])
            assert ops <= t["max"] <= j[slot]["runtime"] * 1e6, (name, ops, t, j[slot]["runtime"])
            others = [s for s in ("write", "read", "trim") if s != slot]
            assert all(j[s]["slat_ns"]["N"] == 0 for s in others)


def test_a_long_path_keeps_the_reason_in_its_line(tmpfs, tmp_path):
    """A root of 3000 characters: each one line still ends with its reason."""
    root = tmpfs
    while len(str(root)) < 3000:
        root = root / ("d" * 200)
    root.mkdir(parents=True)
    opts = dict(datasets=1, precreate_per_set=2)
    run_fio(job(["precreate"], root, **opts), tmp_path, check=True)
    run = run_fio(job(["precreate"], root, **opts), tmp_path, check=False)
    lines = run.mdfio_lines()
    assert run.rc != 0 and len(lines) == 1 and lines[0].startswith(f"mdfio: {root}: a namespace already exists") and \
        lines[0].endswith("run phase=cleanup to remove it, or use another directory"), run.stderr
    (root / "0_0" / "file-1").unlink()
    (root / "0_0" / "file-1").mkdir()
    run = run_fio(job(["cleanup"], root, **opts), tmp_path, check=False)
    assert run.rc != 0
    assert f"mdfio: rank 0 cleanup: 1 delete error (first: {root}/0_0/file-1: Is a directory)" in run.mdfio_lines(), \
        run.stderr
    # fio's --output file holds its JSON and nothing of the engine's
    out = sorted(tmp_path.glob("job-*.json"))[-1].read_text()
    assert json.loads(out)["jobs"] and "mdfio:" not in out
