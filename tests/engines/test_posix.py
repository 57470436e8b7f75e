"""What only mdfio-posix promises: md-workbench's own system calls."""
import re

from conftest import job, run_fio


def test_syscalls_of_a_step_match_md_workbench(tmpfs, tmp_path):
    opts = dict(datasets=1, precreate_per_set=4, steps_per_set=2, bs=100)
    run_fio(job(["precreate"], tmpfs, **opts), tmp_path, check=True)
    trace = tmp_path / "strace.out"
    run_fio(job(["benchmark"], tmpfs, **opts), tmp_path, check=True,
            prefix=["strace", "-f", "-qq", "-o", str(trace), "-e",
                    "trace=newfstatat,stat,statx,openat,read,write,close,unlink,unlinkat"])
    root = str(tmpfs)
    calls, fds = [], set()
    for line in trace.read_text().splitlines():
        m = re.match(r"\d+\s+(\w+)\((.*)\)\s+=\s+(-?\d+)", line)
        if not m:
            continue
        name, args, ret = m.group(1), m.group(2), int(m.group(3))
        if root in args and "/file-" in args:
            calls.append((name, args))
            if name == "openat" and ret >= 0:
                fds.add(ret)
        elif name in ("read", "write", "close") and int(args.split(",")[0]) in fds:
            calls.append((name, args))
            if name == "close":
                fds.discard(int(args.split(",")[0]))
    names = [c[0] for c in calls]
    step = ["newfstatat", "openat", "read", "close", "unlink", "openat", "write", "close"]
    assert names == step * 2, calls
    for k in range(2):
        stat, ropen, _, _, unl, wopen, _, _ = calls[k * 8:(k + 1) * 8]
        assert f"{root}/0_0/file-{k}\"" in stat[1] and f"{root}/0_0/file-{k}\"" in unl[1]
        assert "O_RDONLY" in ropen[1]
        assert f"{root}/0_0/file-{4 + k}\"" in wopen[1] and "O_CREAT" in wopen[1] and "O_EXCL" in wopen[1]
    run_fio(job(["cleanup"], tmpfs, **opts), tmp_path, check=True)
