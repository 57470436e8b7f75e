"""mdfio.fio.run on a fio that does not end: past its timeout fio is
killed, and the TimeoutError names a file next to the job that holds what
each of fio's processes and threads was doing (their states, wchan,
kernel stacks where readable, gdb's backtraces where gdb is) and the end
of fio's stderr, and quotes its first lines: the next hang in CI says
where it hung."""
import re
import shutil

import pytest

import mdfio.fio
from conftest import fio_env

# fio's own null engine, which never ends before its runtime: a fio that
# is busy, not broken, stands for a hung one
SLEEPER = """[global]
ioengine=null
size=1g
time_based=1
runtime=300

[sleeper]
rw=read
"""


def test_a_killed_fio_leaves_the_state_of_each_of_its_threads(tmp_path):
    with pytest.raises(TimeoutError) as caught:
        mdfio.fio.run(tmp_path / "sleeper.fio", SLEEPER, env=fio_env(), timeout=3)
    msg = str(caught.value)
    hung = tmp_path / "sleeper.hung"
    assert msg.startswith("fio ran longer than 3 s: ") and f"is in {hung}, which begins:" in msg, msg
    text = hung.read_text()
    assert text.splitlines()[0] in msg
    # fio's main process and the job's own (fio forks it, in a session of
    # its own): each with its threads, state letters and wchan
    procs = re.findall(r"^process (\d+) \((fio)\) state (\w) parent (\d+)$", text, re.M)
    assert len(procs) >= 2, text
    main, job = procs[0], procs[1]
    assert job[3] == main[0], text
    for pid, *_ in procs:
        assert re.search(rf"^process {pid} .*\n  thread {pid} \(fio\) state [RSDtTZI] wchan \S+$", text, re.M), text
    if shutil.which("gdb"):
        for pid, *_ in procs:
            block = text.split(f"gdb backtraces of process {pid}:\n", 1)[1]
            assert re.match(r"  (Thread |#0 |\(gdb did not finish)", block), block
    # then the end of fio's stderr (a barrier says there whom it waits for)
    assert "\nfio's stderr ends:\n" in text, text
    # and the fio is gone, with its job (at most a zombie left to init)
    table = mdfio.fio.processes()
    assert all(table.get(int(pid), ("", "Z", 0))[1] == "Z" for pid, *_ in procs), text
