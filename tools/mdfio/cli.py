"""What mdfio-report and mdfio-plot share as Unix commands: a bad option
is one line naming it (exit status 2), and a closed output ends the tool
quietly, as it ends cat or grep."""
from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Callable
from typing import NoReturn


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with its refusal of an option in one line (argparse's own
    is the usage, then the message)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def positive_int(text: str) -> int:
    """argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}")
    return value


def positive_seconds(text: str) -> float:
    """argparse type: a time in seconds above 0 (a decimal number)."""
    try:
        value = float(text)
    except ValueError:
        value = 0.0
    if not 0 < value < 1e9:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, not {text!r}")
    return value


def run_as_command(main: Callable[[], int]) -> NoReturn:
    """Runs a tool's main() as the command's process. Python ignores
    SIGPIPE and raises BrokenPipeError at a write to a closed pipe, which
    ended `mdfio-report run.json | head` in a traceback; with SIGPIPE's
    default action restored, the kernel ends the tool at that write,
    silently, as it ends coreutils (exit status 141 in the shell)."""
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.exit(main())


# The commands as pip installs them (pyproject.toml); meson installs the
# scripts in tools/, which call run_as_command() the same way.
def report_command() -> NoReturn:
    from mdfio.report import main
    run_as_command(main)


def plot_command() -> NoReturn:
    from mdfio.plot import main
    run_as_command(main)


def jobfile_command() -> NoReturn:
    from mdfio.jobfile import main
    run_as_command(main)


def compare_command() -> NoReturn:
    from mdfio.compare import main
    run_as_command(main)


def study_command() -> NoReturn:
    from mdfio.study import main
    run_as_command(main)


def iozone_command() -> NoReturn:
    from mdfio.iozone import main
    run_as_command(main)
