"""Facts that the C and the Python both hold agree: the version (meson,
pyproject, the Debian changelog, the package), the engine's option
defaults and the tools' (fiojson.DEFAULTS), the most ranks, the fio JSON
slot of each phase and of each operation. The engine's side is read from
its sources, so a change to one side alone fails here."""
import re
import tomllib

from conftest import SOURCE_ROOT

import mdfio
from mdfio import fiojson

ENGINE_SOURCES = sorted((SOURCE_ROOT / "engines").rglob("*.[ch]"))
DDIR = {"DDIR_WRITE": "write", "DDIR_READ": "read", "DDIR_TRIM": "trim", "DDIR_SYNC": "sync"}


def engine_text():
    return "\n".join(p.read_text() for p in ENGINE_SOURCES)


def test_one_version_everywhere():
    meson = re.search(r"version : '([^']+)'", (SOURCE_ROOT / "meson.build").read_text())[1]
    pyproject = tomllib.loads((SOURCE_ROOT / "pyproject.toml").read_text())["project"]["version"]
    debian = re.match(r"mdfio \(([^)-]+)", (SOURCE_ROOT / "debian" / "changelog").read_text())[1]
    assert (pyproject, debian, mdfio.VERSION) == (meson, meson, f"mdfio-{meson}")


def test_option_defaults_are_the_engines():
    c = dict(re.findall(r'MDFIO_OPT\("(\w+)", \w+, "([^"]*)"', engine_text()))
    assert c, "no MDFIO_OPT found in engines/"
    for name, value in fiojson.DEFAULTS.items():
        assert name in c, f"fiojson.DEFAULTS has {name}, the engine has no such option"
        # "|0": a default the engine tells from a value given (options.c)
        assert c[name].removeprefix("|") == value, (name, c[name], value)


def test_the_most_ranks():
    m = re.search(r"#define MDFIO_MAX_RANKS \(1u << (\d+)\)", engine_text())
    assert m and fiojson.MAX_RANKS == 1 << int(m[1])


def test_each_phase_and_operation_has_its_slot():
    text = engine_text()
    phases = dict(re.findall(r"\[MDFIO_(PRECREATE|BENCHMARK|CLEANUP)\] = \{[^}]*?\.ddir = (DDIR_\w+)", text, re.S))
    assert {p.lower(): DDIR[d] for p, d in phases.items()} == fiojson.HEADLINE
    ops = dict(re.findall(r"\[MDFIO_OP_(CREATE|STAT|READ|DELETE)\] = (DDIR_\w+),", text))
    assert {o.lower(): DDIR[d] for o, d in ops.items()} == {op: slot for op, (slot, _) in fiojson.SLOT.items()}
