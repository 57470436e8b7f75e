"""A benchmark's results: table cells of repeated measurements, a section's
Markdown lines and the same numbers as tables, and the result files they
go to (DIR/NAME.md and DIR/NAME.json), which name the commit measured and
whether the tree had changes not committed, and never replace a file
there."""
from __future__ import annotations

import json
import os
import statistics
import subprocess
from collections.abc import Iterable, Mapping
from pathlib import Path


def spread(values: Iterable[float], fmt: str = ".3f") -> str:
    """median [min, max] of repeated measurements, as every table prints them."""
    values = list(values)
    return f"{statistics.median(values):{fmt}} [{min(values):{fmt}}, {max(values):{fmt}}]"


class Cell:
    """A table cell: str() is its Markdown, data() its JSON value."""

    def data(self) -> object:
        raise NotImplementedError


class Spread(Cell):
    """A table cell of repeated measurements: median [min, max]."""

    def __init__(self, values: Iterable[float], fmt: str = ".3f") -> None:
        self.values, self.fmt = list(values), fmt

    def __str__(self) -> str:
        return spread(self.values, self.fmt)

    def data(self) -> dict[str, object]:
        return {"median": statistics.median(self.values), "min": min(self.values), "max": max(self.values),
                "values": self.values}


class Num(Cell):
    """A table cell of one number, printed with fmt."""

    def __init__(self, value: float, fmt: str) -> None:
        self.value, self.fmt = value, fmt

    def __str__(self) -> str:
        return format(self.value, self.fmt)

    def data(self) -> float:
        return self.value


class Switched(Cell):
    """A table cell of mdfio-uring's issue=auto: of the ranks' runs of a
    phase, how many moved to the ring during it, and after what share of
    the phase's units (each rank's line on stderr, docs/engines.md)."""

    def __init__(self, runs: int, shares: Iterable[float]) -> None:
        self.runs, self.shares = runs, sorted(shares)

    def __str__(self) -> str:
        # a switch early in a long phase is well under 1 %
        after = ", ".join(f"{x:.1%}" for x in self.shares)
        return f"{len(self.shares)} of {self.runs}" + (f" (after {after})" if after else "")

    def data(self) -> dict[str, object]:
        return {"runs": self.runs, "switched_after": self.shares}


class Out:
    """A section's results: its Markdown lines, and the same numbers as
    tables (one object per row, keyed by column) and facts for its JSON."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.tables: list[dict[str, object]] = []
        self.facts: dict[str, object] = {}

    def append(self, line: str) -> None:
        self.lines.append(line)

    def table(self, *columns: str) -> None:
        """Starts a table under the latest ### heading."""
        title = next((l.strip().removeprefix("### ") for l in reversed(self.lines) if l.strip().startswith("### ")),
                     "")
        self.tables.append({"title": title, "columns": list(columns), "rows": []})
        self.lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]

    def row(self, *cells: object) -> None:
        """A row of the latest table: a Cell gives its data() to the JSON,
        anything else itself."""
        table = self.tables[-1]
        assert len(cells) == len(table["columns"]), (table["columns"], cells)
        self.lines.append("| " + " | ".join(map(str, cells)) + " |")
        table["rows"].append({c: v.data() if isinstance(v, Cell) else v for c, v in zip(table["columns"], cells)})

    def fact(self, key: str, value: object) -> None:
        """A number the text states outside the tables."""
        self.facts[key] = value


def tree_state(root: str | os.PathLike[str]) -> tuple[str, bool]:
    """(the commit of the git tree at root, whether the tree has no
    uncommitted change): a result is only as good as the code it names.
    ("unknown (not a git tree)", False) outside one."""
    head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True)
    status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                            capture_output=True, text=True)
    if head.returncode or status.returncode:
        return "unknown (not a git tree)", False
    return head.stdout.strip(), not status.stdout.strip()


def _file(base: Path, suffix: str) -> Path:
    # not with_suffix: a name may hold a dot of its own (ext4-1.5G)
    return base.with_name(base.name + suffix)


def result_base(out_dir: str | os.PathLike[str], name: str) -> Path:
    """out_dir/name, or name-2, name-3, ... where a result of that name is
    there already (its .md or its .json): a result is never overwritten (a
    rerun on one day gets a name of its own; the one it supersedes is
    removed by hand, and git keeps it)."""
    base, k = Path(out_dir) / name, 1
    while _file(base, ".md").exists() or _file(base, ".json").exists():
        k += 1
        base = Path(out_dir) / f"{name}-{k}"
    return base


def measured_line(commit: str, clean: bool) -> str:
    """The line of a result's Markdown that names what was measured."""
    return f"Measured at commit {commit}" + ("" if clean else ", with changes not committed") + "."


def write(out_dir: str | os.PathLike[str], name: str, heading: str, out: Out, doc: Mapping[str, object],
          tree: tuple[str, bool]) -> Path:
    """Writes a section's result files under result_base(out_dir, name):
    the Markdown (heading, the commit line, out's lines) and the JSON (doc's
    keys, then commit, tree_clean, and out's tables and facts); tree is
    tree_state()'s. Each file is created, never opened over one that is
    there, also one another run wrote meanwhile. Returns the base (the
    files are base + .md, base + .json)."""
    commit, clean = tree
    markdown = "\n".join([heading, measured_line(commit, clean), *out.lines]) + "\n"
    data = json.dumps({**doc, "commit": commit, "tree_clean": clean, "tables": out.tables, "facts": out.facts},
                      indent=1, ensure_ascii=False) + "\n"
    while True:
        base = result_base(out_dir, name)
        try:
            with open(_file(base, ".md"), "x") as f:
                f.write(markdown)
        except FileExistsError:
            continue
        try:
            with open(_file(base, ".json"), "x") as f:
                f.write(data)
        except FileExistsError:
            _file(base, ".md").unlink()
            continue
        return base

