"""mdfio-report --follow on real fio runs with --status-interval: the lines
read while fio still runs, the phase lines against the final report's,
the report after them against mdfio-report's of fio's JSON, a terminal's
live line, the end of a FILE's writer, and bad or cut input."""
import fcntl
import json
import os
import pty
import re
import select
import signal
import struct
import subprocess
import termios
import threading
import time

import pytest

from conftest import SANITIZER_REPORT, SOURCE_ROOT, fio_env, job

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
N, D, P, I = 2, 4, 500, 300
PHASES = ["precreate", "benchmark", "benchmark", "cleanup"]
# a phase line in every text format, a process line, and md-workbench's
# detailed line (tab after the phase); not the header or footer
PHASE_LINE = re.compile(r"(precreate|benchmark|cleanup)( err)?[ \t]|\d+(@\S+)?: ")
LIVE = re.compile(r"live: (precreate|benchmark repeat (\d+) of (\d+)|cleanup): (\d+) of (\d+) objects, "
                  r"(n/a|\d+\.\d) obj/s, (n/a|\d+\.\d s), (\d+) of (\d+) ranks ended")
FIO_ARGS = ["--status-interval=1", "--output-format=json+"]
# s between the sections' earliest starts
SPACING = 2


def jobtext(root):
    """The run's jobfile: fio reports every second, and section k starts
    no sooner than SPACING*k s after fio's start (fio counts startdelay
    from there), so that fio runs on, mostly asleep, after the first
    phases have ended."""
    lines, k = [], 0
    for line in job(PHASES, root, numjobs=N, datasets=D, precreate_per_set=P, steps_per_set=I).splitlines():
        lines.append(line)
        if line.startswith("phase="):
            lines.append(f"startdelay={SPACING * k}")
            k += 1
    return "\n".join(lines) + "\n"


def report(*args, **kw):
    return subprocess.run([str(REPORT), *map(str, args)], capture_output=True, text=True, **kw)


# s a follow of a run may take; then it is killed, and its test fails
WATCHDOG = 300


def read_lines(proc, fio):
    """proc's output lines, each with whether fio still ran when it came."""
    lines = []
    watchdog = threading.Timer(WATCHDOG, proc.kill)
    watchdog.start()
    try:
        for line in proc.stdout:
            lines.append((line.decode().rstrip("\n"), fio.poll() is None))
    finally:
        watchdog.cancel()
    return lines


def check_live_lines(lines):
    """Each live line as described, its counts within the phase's, and
    growing within a phase."""
    seen = {}
    for line in lines:
        m = LIVE.fullmatch(line)
        assert m, line
        done, due, ended, ranks = (int(m[i]) for i in (4, 5, 8, 9))
        per_set = I if m[1].startswith("benchmark") else P
        assert due == D * per_set * N and 0 <= done <= due and ranks == N and 0 <= ended <= N, line
        assert done >= seen.get(m[1], 0), line
        seen[m[1]] = done
        if m[2]:
            assert 1 <= int(m[2]) <= int(m[3]) == 2, line
    return seen


def split(out, final):
    """The live part of --follow's output, which ends with final (the
    report): its phase lines and its live lines."""
    assert out.endswith(final) and final, out
    live = out[:len(out) - len(final)].splitlines()
    return [x for x in live if not x.startswith("live: ")], [x for x in live if x.startswith("live: ")]


def check_phase_lines(live_phases, final):
    assert live_phases == [x for x in final.splitlines() if PHASE_LINE.match(x)]
    assert len(live_phases) >= len(PHASES)


@pytest.fixture(scope="module")
def piped(tmp_path_factory):
    """fio --status-interval=1 | mdfio-report --follow -, with fio's output
    kept: (the lines, each with whether fio still ran when it came; the
    output; the file of fio's output)."""
    base = tmp_path_factory.mktemp("piped")
    root = base / "root"
    root.mkdir()
    jobfile = base / "job.fio"
    jobfile.write_text(jobtext(root))
    stream = base / "fio.json"
    fio = subprocess.Popen(["fio", *FIO_ARGS, str(jobfile)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=fio_env())
    follow = subprocess.Popen([str(REPORT), "--follow", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)

    def tee():
        with open(stream, "wb") as keep:
            while data := os.read(fio.stdout.fileno(), 65536):
                keep.write(data)
                follow.stdin.write(data)
                follow.stdin.flush()
        follow.stdin.close()
    copier = threading.Thread(target=tee)
    copier.start()
    try:
        lines = read_lines(follow, fio)
        copier.join(300)
        assert fio.wait(300) == 0 and follow.wait(60) == 0, follow.stderr.read()
    finally:
        for p in (fio, follow):
            if p.poll() is None:
                p.kill()
    assert not SANITIZER_REPORT.search(fio.stderr.read().decode(errors="replace"))
    return lines, "".join(line + "\n" for line, _ in lines), stream


def test_lines_come_while_fio_runs(piped):
    lines, out, stream = piped
    final = report(stream).stdout
    live_phases, live = split(out, final)
    check_phase_lines(live_phases, final)
    check_live_lines(live)
    # the precreate's line, and a live line, while fio ran on
    during = [line for line, running in lines if running]
    assert any(x.startswith("live: ") for x in during), lines
    assert [x for x in during if not x.startswith("live: ")][:1] == live_phases[:1], lines


def test_a_file_fio_writes_until_fio_ends(tmp_path, tmpfs):
    """fio --output=FILE; --follow FILE, started before fio has made it,
    waits for it, and ends when fio, which keeps its output open until it
    exits, has closed it; the formats' options apply to the phase lines."""
    (tmp_path / "job.fio").write_text(jobtext(tmpfs))
    out = tmp_path / "run.json"
    args = ["--process-reports", "--print-detailed-stats"]
    follow = subprocess.Popen([str(REPORT), "--follow", *args, str(out)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE)
    fio = subprocess.Popen(["fio", *FIO_ARGS, f"--output={out}", str(tmp_path / "job.fio")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=fio_env())
    try:
        lines = read_lines(follow, fio)
        ended_after_fio = fio.poll() is not None
        assert fio.wait(300) == 0 and follow.wait(60) == 0, follow.stderr.read()
    finally:
        for p in (fio, follow):
            if p.poll() is None:
                p.kill()
    assert ended_after_fio and not SANITIZER_REPORT.search(fio.stderr.read().decode(errors="replace"))
    final = report(*args, out).stdout
    live_phases, live = split("".join(x + "\n" for x, _ in lines), final)
    check_phase_lines(live_phases, final)
    # each phase's line, then its ranks'
    assert [x.split("\t")[0] for x in live_phases[::N + 1]] == ["precreate ", "benchmark ", "benchmark ", "cleanup "]
    check_live_lines(live)
    assert [x for x, running in lines if running and not x.startswith("live: ")][:N + 1] == live_phases[:N + 1]


@pytest.mark.parametrize("args", [[], ["-q"], ["--print-detailed-stats"], ["-q", "--process-reports"],
                                  ["--format", "md-workbench-2020", "--process-reports"],
                                  ["--format", "md-real-io-2017"], ["--format", "md-real-io-2016"]])
def test_each_format_of_lines(piped, args):
    """fio's recorded stream, given at once: the phase lines of each text
    format and its options, then exactly the report."""
    stream = piped[2]
    final = report(*args, stream)
    proc = report("--follow", *args, "-", stdin=open(stream))
    assert proc.returncode == final.returncode == 0 and proc.stderr == "", proc.stderr
    live_phases, live = split(proc.stdout, final.stdout)
    check_phase_lines(live_phases, final.stdout)
    check_live_lines(live)


def documents(stream):
    """fio's documents in the recorded stream, each as fio wrote it."""
    text = stream.read_text()
    starts = [m.start() for m in re.finditer(r"^\{", text, re.M)] + [len(text)]
    return [text[a:b] for a, b in zip(starts, starts[1:])]


def test_a_terminal_rewrites_the_live_line(piped):
    """On a terminal the live line is rewritten in place (\\r), cut to the
    terminal's width, and erased before each phase line and the report."""
    docs = documents(piped[2])
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 60, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR           # no \r added to each \n
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    feed_r, feed_w = os.pipe()
    # the terminal's own width: COLUMNS would come first (pytest sets it)
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([str(REPORT), "--follow", "-"], stdin=feed_r, stdout=slave, stderr=subprocess.PIPE,
                            env=env)
    os.close(feed_r)
    os.close(slave)
    out = b""
    for doc in docs:
        os.write(feed_w, doc.encode())
        deadline = time.monotonic() + 0.5
        while time.monotonic() < deadline:
            if select.select([master], [], [], 0.05)[0]:
                out += os.read(master, 65536)
    os.close(feed_w)
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    assert proc.wait(60) == 0, proc.stderr.read()
    os.close(master)
    text = out.decode()
    final = report(piped[2]).stdout
    assert text.endswith(final)
    live = text[:len(text) - len(final)]
    # every live line begins with \r, none ends a line; each is erased
    # (blanks, \r) before a line is printed
    shown = re.findall(r"\r(live: [^\r\n]*)", live)
    assert shown and all(len(x) <= 59 for x in shown), shown
    assert "live: " not in "".join(re.sub(r"\r[^\r\n]*", "", x) for x in live.split("\n"))
    printed = [re.sub(r".*\r", "", x) for x in live.split("\n")[:-1]]
    check_phase_lines(printed, final)
    assert live.endswith("\n")


def test_live_lines_that_fios_final_document_changes(piped, tmp_path):
    """A phase line printed live that fio's final document changes (the
    engine counts a precreate's undone datasets when the rank's job ends,
    after its phase time) is printed anew in the report, and said so."""
    docs = documents(piped[2])
    doc = json.loads(docs[-1])
    for j in doc["jobs"]:
        if j["jobname"].startswith("precreate"):
            j["write"]["short_ios"] = 1
    changed = tmp_path / "changed.json"
    changed.write_text("".join(docs[:-1]) + json.dumps(doc, indent=2) + "\n")
    proc = subprocess.Popen([str(REPORT), "--follow", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write("".join(docs[:-1]))
        proc.stdin.flush()
        # the interim documents' precreate line, before the final document
        for line in proc.stdout:
            if line.startswith("precreate process"):
                break
        proc.stdin.write(json.dumps(doc, indent=2) + "\n")
        proc.stdin.close()
        out = proc.stdout.read()
        assert proc.wait(60) == 0
    finally:
        proc.kill()
    final = report(changed).stdout
    assert out.endswith(final) and "dsets: 6 " in final
    assert proc.stderr.read() == ("mdfio-report: <stdin>: the precreate lines printed live differ from those of "
                                  "fio's final document, which the report holds\n")


def one_line_exit_2(proc, start="mdfio-report: "):
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and proc.stderr.startswith(start), proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stderr.strip()


def test_cut_and_malformed_streams(piped, tmp_path):
    docs = documents(piped[2])
    # cut inside a document: the same line as without --follow
    cut = tmp_path / "cut.json"
    text = "".join(docs[:3]) + docs[3][:len(docs[3]) // 2]
    cut.write_text(text)
    line = one_line_exit_2(report("--follow", "-", stdin=open(cut)), "mdfio-report: <stdin>: truncated or malformed")
    assert line == one_line_exit_2(report("-", stdin=open(cut)))
    # a malformed document while fio's output goes on: at once, not at its end
    feed_r, feed_w = os.pipe()
    proc = subprocess.Popen([str(REPORT), "--follow", "-"], stdin=feed_r, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    os.close(feed_r)
    os.write(feed_w, (docs[0] + docs[1].replace('"jobs" : [', '"jobs" : [,', 1)).encode())
    try:
        assert proc.wait(30) == 2
    finally:
        os.close(feed_w)
        proc.kill()
    err = proc.stderr.read()
    assert re.fullmatch(r"mdfio-report: <stdin>: truncated or malformed JSON at line \d+: Expecting value\n", err), err
    # a document fio could not have written, of a phase that has ended
    doc = json.loads(docs[2])
    doc["jobs"][0]["write"]["clat_ns"]["N"] = -1
    bad = tmp_path / "bad.json"
    bad.write_text(docs[0] + json.dumps(doc) + "\n")
    assert "'N' is -1" in one_line_exit_2(report("--follow", "-", stdin=open(bad)))
    # a device: refused at its first NUL byte, not read for ever
    assert one_line_exit_2(report("--follow", "/dev/zero")) == \
        "mdfio-report: /dev/zero: holds NUL bytes: binary data, not fio's JSON output"
    # empty, and no document
    assert "is empty" in one_line_exit_2(report("--follow", "-", input=""))
    proc = report("--follow", "-", input="fio: no such job\n")
    assert proc.returncode == 2 and proc.stderr.startswith("fio: no such job\nmdfio-report: <stdin>: no fio JSON")


def test_fios_messages_come_on_stderr_as_fio_writes_them(piped):
    """A line fio writes between its documents (its own or the engine's
    message, which a fio client relays from its servers) is on stderr as
    soon as it is whole, while fio's output goes on; the report is that of
    the documents alone."""
    docs = documents(piped[2])
    feed_r, feed_w = os.pipe()
    proc = subprocess.Popen([str(REPORT), "--follow", "-"], stdin=feed_r, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    os.close(feed_r)
    said = ["<host2> mdfio: rank 3 benchmark: cannot create /r/3_0/file-9: File exists; the run stops here",
            "fio: pid=12, err=17/file:engines/core/engine.c:1, func=io_u error, error=File exists"]
    try:
        os.write(feed_w, (docs[0] + said[0] + "\n" + said[1][:20]).encode())
        assert select.select([proc.stderr], [], [], 30)[0] and proc.stderr.readline() == said[0] + "\n"
        os.write(feed_w, (said[1][20:] + "\n" + "".join(docs[1:])).encode())
        assert proc.stderr.readline() == said[1] + "\n"
    finally:
        os.close(feed_w)
        assert proc.wait(60) == 0
    assert proc.stdout.read().endswith(report(piped[2]).stdout) and proc.stderr.read() == ""


def test_waiting_is_bounded(piped, tmp_path):
    """Nothing new for --timeout seconds before fio's output ends is one
    line naming --timeout: a pipe kept open, a FILE that is not made, a
    FILE no process writes whose phases have not ended."""
    feed_r, feed_w = os.pipe()
    start = time.monotonic()
    proc = subprocess.run([str(REPORT), "--follow", "--timeout", "1.5", "-"], stdin=feed_r, capture_output=True,
                          text=True, timeout=60)
    took = time.monotonic() - start
    os.close(feed_r)
    os.close(feed_w)
    line = one_line_exit_2(proc, "mdfio-report: <stdin>: nothing new from fio for 1.5 s")
    assert "(--timeout 1.5)" in line and 1.5 <= took < 30
    line = one_line_exit_2(report("--follow", "--timeout", "1", tmp_path / "never.json"))
    assert line == f"mdfio-report: {tmp_path}/never.json: not there after 1 s (--timeout 1): fio has not made it"
    docs = documents(piped[2])
    dead = tmp_path / "dead.json"
    dead.write_text("".join(docs[:2]))
    line = one_line_exit_2(report("--follow", "--timeout", "1", dead))
    assert "no process here writes it, and phases have not ended (--timeout 1)" in line
    # a finished run's FILE needs no wait
    start = time.monotonic()
    proc = report("--follow", "--timeout", "100", piped[2])
    assert proc.returncode == 0 and time.monotonic() - start < 50


def test_ctrl_c_ends_the_follow_quietly(piped):
    """Ctrl-C (SIGINT) while following: exit status 130, the live line
    erased, no traceback."""
    docs = documents(piped[2])
    proc = subprocess.Popen([str(REPORT), "--follow", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write(docs[0])
        proc.stdin.flush()
        # fio's first report may come after a phase has ended (a slow
        # start): that phase's line, then the live line
        line = proc.stdout.readline()
        while line and not line.startswith("live: "):
            line = proc.stdout.readline()
        assert line.startswith("live: ")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(30) == 130
    finally:
        proc.kill()
    assert proc.stdout.read() == "" and proc.stderr.read() == ""


HEAD = {"precreate": ("write", "create"), "benchmark": ("read", "read"), "cleanup": ("trim", "delete")}
OP_SLOT = {"create": ("write", "clat_ns"), "read": ("read", "clat_ns"), "delete": ("trim", "clat_ns"),
           "stat": ("sync", "lat_ns")}


def status(jobs):
    """What the report makes of a section's jobs in one of fio's reports:
    complete when every rank has its phase time (and no error: these runs
    have none), not run when none had begun it, incomplete otherwise."""
    slot = HEAD[jobs[0]["jobname"].rsplit("-", 1)[0]][0]
    if all(j[slot]["slat_ns"]["N"] == 1 and not j["error"] for j in jobs):
        return "complete"
    began = any(j[slot]["total_ios"] or j[slot]["slat_ns"]["N"] or any(j[a][b]["N"] for a, b in OP_SLOT.values())
                for j in jobs)
    return "incomplete" if began else "not run"


def test_a_report_after_any_of_fios_reports(piped, tmp_path):
    """fio killed after any of its reports leaves that one last: each gives
    the phases every rank had completed by then as fio's final report does,
    and marks the others (exit 1), with and without --follow (a running
    job's histogram a sample ahead of its count is fio's, engines.md)."""
    docs = documents(piped[2])
    final = [x for x in report(piped[2]).stdout.splitlines() if PHASE_LINE.match(x)]
    for k in range(1, len(docs) + 1):
        path = tmp_path / f"upto-{k}.json"
        path.write_text("".join(docs[:k]))
        sections = {}
        for j in json.loads(docs[k - 1])["jobs"]:
            sections.setdefault(j["jobname"], []).append(j)
        states = [status(jobs) for jobs in sections.values()]
        plain = report(path)
        assert plain.returncode == (0 if set(states) == {"complete"} else 1), plain.stderr
        assert plain.stdout.startswith("Args: "), plain.stderr
        lines = [x for x in plain.stdout.splitlines() if PHASE_LINE.match(x)]
        assert len(lines) == len(sections) == len(final), lines
        for line, whole, name, state in zip(lines, final, sections, states):
            if state == "complete":
                assert line == whole
            else:
                assert re.fullmatch(rf"{name.rsplit('-', 1)[0]} {state} \((repeat \d, )?job {name}\): .+", line), line
        follow = report("--follow", "--timeout", "1", "-", stdin=open(path))
        assert follow.returncode == plain.returncode and follow.stdout.endswith(plain.stdout), follow.stderr


def test_a_killed_fio_ends_the_follow(tmp_path, tmpfs):
    """fio killed mid-run: the FILE's writer is gone, so --follow ends at
    once, with the report of fio's last document and a line naming the
    phases not completed, which it marks (exit 1), or one line for a
    document cut short."""
    (tmp_path / "job.fio").write_text(jobtext(tmpfs))
    out = tmp_path / "run.json"
    fio = subprocess.Popen(["fio", *FIO_ARGS, f"--output={out}", str(tmp_path / "job.fio")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=fio_env(),
                           start_new_session=True)
    follow = subprocess.Popen([str(REPORT), "--follow", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True)
    try:
        # the precreate's line: fio goes on, at least to the cleanup's start
        for line in follow.stdout:
            if line.startswith("precreate process"):
                break
        os.killpg(fio.pid, signal.SIGKILL)
        killed = time.monotonic()
        rest = follow.stdout.read()
        assert follow.wait(60) in (1, 2) and time.monotonic() - killed < 30
    finally:
        for p in (fio, follow):
            if p.poll() is None:
                p.kill()
        fio.wait()
    err = follow.stderr.read()
    if follow.returncode == 2:
        assert len(err.splitlines()) == 1 and "truncated or malformed JSON" in err, err
    else:
        assert rest.endswith(report(out).stdout)
        # the phases not completed, which the report marks: the last ones
        m = re.fullmatch(r"mdfio-report: \S+: not every rank completed every phase \(the report marks them\): "
                         r"(.*)\n", err)
        names = ["benchmark-1", "benchmark-2", "cleanup-3"]
        assert m and re.sub(r" \((incomplete|not run)\)", "", m[1]) in [", ".join(names[k:]) for k in range(3)], err


@pytest.mark.parametrize("args, needle", [
    (["--follow", "a.json", "b.json"], "--follow: expected one FILE or -, not 2 files"),
    (["--follow", "--json", "-"], "--follow: expected with a format of lines (--format), not --json"),
    (["--follow", "--csv", "-"], "--follow: expected with a format of lines (--format), not --csv"),
    (["--timeout", "5", "-"], "--timeout: expected with --follow"),
    (["--follow", "--timeout", "0", "-"], "argument --timeout: expected a number of seconds above 0, not '0'"),
    (["--follow", "--timeout", "soon", "-"], "argument --timeout: expected a number of seconds above 0, not 'soon'"),
])
def test_bad_follow_options(args, needle):
    proc = report(*args, stdin=subprocess.DEVNULL)
    assert one_line_exit_2(proc) == f"mdfio-report: {needle} (see mdfio-report --help)"
