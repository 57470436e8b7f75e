"""tools/mdfio-jobfile as a command: its man page names every option it
has. What it writes, run by fio: tests/jobfiles/test_md_workbench.py."""
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
