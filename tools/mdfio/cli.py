"""What mdfio-report and mdfio-plot share as Unix commands: a bad option
is one line naming it (exit status 2)."""
import argparse


class ArgumentParser(argparse.ArgumentParser):
    """argparse, with its refusal of an option in one line (argparse's own
    is the usage, then the message)."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def positive_int(text):
    """argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, not {text!r}")
    return value

