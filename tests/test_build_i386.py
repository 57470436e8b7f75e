"""The engine sources compile for 32-bit x86 (i386), one of the
architectures debian/control's `linux-any` takes in: each source of the
engines is compiled with this build's own command (meson's
compile_commands.json) plus -m32 and -Werror, once as Debian's i386 builds
(32-bit time_t) and once with _TIME_BITS=64 (Debian's armhf and armel since
trixie). A system call number the architecture lacks (SYS_newfstatat) and a
warning only 32 bits show both fail here. Objects only: nothing here can
link them, as there is no 32-bit fio, liburing or libaio to link against;
./setup installs gcc-multilib for -m32."""
import json
import shlex
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from conftest import ENGINE_DIR, SOURCE_ROOT

BUILD = ENGINE_DIR.parent
VARIANTS = {"time32": [], "time64": ["-D_TIME_BITS=64"]}


def engine_compiles():
    """{source: (directory, argv without output, dependency files or debug
    information)}, once per source of the engines' shared core, backends
    and pure library, and of the test-only backend."""
    entries = json.loads((BUILD / "compile_commands.json").read_text())
    found = {}
    for e in entries:
        source = (Path(e["directory"]) / e["file"]).resolve()
        if (SOURCE_ROOT / "engines").resolve() not in source.parents:
            continue
        args, argv = shlex.split(e["command"]), []
        while args:
            a = args.pop(0)
            if a in ("-o", "-MQ", "-MF"):
                args.pop(0)
            elif a not in ("-MD", "-g", "-fdiagnostics-color=always"):
                argv.append(a)
        # an engine's own command where there is one; a source only a
        # test builds (the mdfio-flat backend) with the test's
        if e["output"].startswith("engines/") or source.name not in found:
            found[source.name] = (e["directory"], argv)
    return found


COMPILES = engine_compiles()


def test_every_engine_source_is_compiled():
    """The selection is the engines' sources, every one of them."""
    sources = {p.name for p in (SOURCE_ROOT / "engines").rglob("*.c")}
    assert set(COMPILES) == sources
    assert {"sysio.c", "reserve.c", "uring.c", "aio.c", "posix.c", "waits.c"} <= sources


@pytest.mark.parametrize("variant", VARIANTS)
def test_engine_sources_compile_for_i386(tmp_path, variant):
    def compile_one(item):
        name, (directory, argv) = item
        obj = tmp_path / (name + ".o")
        proc = subprocess.run([*argv, "-m32", "-Werror", *VARIANTS[variant], "-o", str(obj)],
                              cwd=directory, capture_output=True, text=True)
        return name, obj, proc

    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(compile_one, sorted(COMPILES.items())))
    failed = [f"{name}:\n{proc.stderr}" for name, _, proc in results if proc.returncode]
    assert not failed, "\n".join(failed)
    for name, obj, _ in results:
        header = obj.read_bytes()[:20]
        # ELFCLASS32, EM_386: a real i386 object, not one the flags left 64-bit
        assert header[4] == 1 and int.from_bytes(header[18:20], "little") == 3, name
