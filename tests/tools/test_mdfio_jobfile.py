"""tools/mdfio-jobfile as a command: its man page names every option it
has, and a --from file it cannot use is one line, not a traceback or a read
without end. What it writes, run by fio: tests/jobfiles/test_md_workbench.py."""
import re
import subprocess
import sys

from conftest import SOURCE_ROOT, fio_env

JOBFILE_TOOL = SOURCE_ROOT / "tools" / "mdfio-jobfile"
MAN = SOURCE_ROOT / "man"


def tool(*args, **kw):
    return subprocess.run([sys.executable, str(JOBFILE_TOOL), *map(str, args)], capture_output=True,
                          env=fio_env(), timeout=60, **kw)


def man_text(page):
    """A man page's text as man shows it, the roff escapes of '-' undone."""
    return page.read_text().replace("\\-", "-")


def test_every_tool_has_a_man_page_with_every_option():
    """Each tool installed to bin (tools/meson.build) has its man page
    installed (man/meson.build), and the page names every option of the
    tool's --help, its exit status and examples."""
    scripts = re.search(r"foreach script : \[([^\]]*)\]", (SOURCE_ROOT / "tools" / "meson.build").read_text())
    tools = re.findall(r"'([^']+)'", scripts.group(1))
    assert "mdfio-jobfile" in tools, tools
    installed = re.search(r"install_man\(([^)]*)\)", (MAN / "meson.build").read_text()).group(1)
    for name in tools:
        page = MAN / f"{name}.1"
        assert page.is_file() and f"'{name}.1'" in installed, (name, installed)
        text = man_text(page)
        assert text.startswith(f".TH {name.upper()} 1 ") and ".SH EXIT STATUS" in text and ".SH EXAMPLES" in text
        proc = subprocess.run([sys.executable, str(SOURCE_ROOT / "tools" / name), "--help"], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 0, proc.stderr
        # the option strings argparse lists, each at a line's start
        heads = re.findall(r"^  (-\S.*?)(?:  |$)", proc.stdout.split("options:", 1)[1], re.M)
        options = {o for head in heads for o in re.findall(r"(?<![\w-])--?[A-Za-z][\w-]*", head)}
        assert "-h" in options and len(options) > 2, heads
        missing = sorted(o for o in options if not re.search(rf"(?<![\w-]){re.escape(o)}(?![\w-])", text))
        assert not missing, (name, missing)


def one_line(proc, start):
    assert proc.returncode == 2 and proc.stdout == b"", proc.stdout[:200] + proc.stderr
    lines = proc.stderr.decode().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"mdfio-jobfile: {start}"), proc.stderr
    assert "Traceback" not in lines[0]


def test_a_from_file_it_cannot_use_is_one_line(tmp_path):
    """--from a device (read until memory ran out), binary data, a
    directory, a file without a [global] section: one line naming --from
    and the file. A jobfile's bytes that are not UTF-8 (a comment in
    Latin-1) pass through as they are."""
    one_line(tool("--from", "/dev/zero"), "--from /dev/zero: ")
    binary = tmp_path / "binary.fio"
    binary.write_bytes(b"[global]\nioengine=null\n\0\0\0[j]\n")
    one_line(tool("--from", binary), f"--from {binary}: holds NUL bytes")
    one_line(tool("--from", tmp_path), f"--from {tmp_path}: cannot read it: Is a directory")
    one_line(tool("--from", "/dev/null"), "--from /dev/null: no [global] section")
    one_line(tool("--from", tmp_path / "absent.fio"), f"--from {tmp_path / 'absent.fio'}: cannot read it")
    latin = tmp_path / "latin1.fio"
    latin.write_bytes(b"; caf\xe9\n[global]\n; r\xe9sum\xe9\nioengine=null\n[precreate]\nphase=precreate\n")
    proc = tool("-R", "2", "--from", latin)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(b"[global]\n; r\xe9sum\xe9\nioengine=null\nrepeats=2\n"), proc.stdout
    assert proc.stdout.count(b"phase=benchmark") == 2
