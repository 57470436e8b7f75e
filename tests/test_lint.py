"""The lint of ./run-tests: the C of the engines, tools and tests compiles
without a warning (warnings fatal, at the project's warning level) by gcc
and by clang, pyflakes finds nothing in the Python of the package, the
tools, bench and the tests, and every public function of the package has
type hints."""
import ast
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import SOURCE_ROOT


def python_files():
    """Every Python file of the repository: *.py, and scripts whose first
    line names python."""
    out = []
    for top in ("tools", "bench", "tests", "jobfiles", "packaging"):
        for p in sorted((SOURCE_ROOT / top).rglob("*")):
            if not p.is_file() or "__pycache__" in p.parts:
                continue
            if p.suffix == ".py":
                out.append(p)
            elif not p.suffix:
                with open(p, "rb") as f:
                    if b"python" in f.readline():
                        out.append(p)
    return out


def test_pyflakes_finds_nothing():
    pyflakes = shutil.which("pyflakes3")
    assert pyflakes, "pyflakes3 is missing: run ./setup"
    files = python_files()
    assert any(p.name == "report.py" for p in files) and any(p.name == "run" for p in files), files
    run = subprocess.run([pyflakes, *map(str, files)], capture_output=True, text=True)
    assert run.returncode == 0 and not run.stdout, run.stdout + run.stderr


def missing_hints(path):
    """'file:line function: what' for each public function and method
    (module level, or in a class) of a module that lacks a hint: of its
    return, or of a parameter (self and cls aside; *args and **kwargs
    need one too)."""
    rel = path.relative_to(SOURCE_ROOT)
    out = []

    def look(body, scope):
        for node in body:
            if isinstance(node, ast.ClassDef):
                look(node.body, f"{scope}{node.name}.")
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                a = node.args
                params = [*a.posonlyargs, *a.args]
                if scope and params and params[0].arg in ("self", "cls"):
                    params = params[1:]
                params += [*a.kwonlyargs, *(x for x in (a.vararg, a.kwarg) if x is not None)]
                lacking = [x.arg for x in params if x.annotation is None]
                lacking += ["return"] if node.returns is None else []
                if lacking:
                    out.append(f"{rel}:{node.lineno} {scope}{node.name}: no hint of {', '.join(lacking)}")
    look(ast.parse(path.read_text(), str(path)).body, "")
    return out


def test_public_functions_have_type_hints():
    files = sorted((SOURCE_ROOT / "tools" / "mdfio").glob("*.py"))
    assert any(p.name == "fiojson.py" for p in files), files
    missing = [line for p in files for line in missing_hints(p)]
    assert not missing, "public functions without type hints:\n" + "\n".join(missing)


@pytest.mark.parametrize("compiler", ["gcc", "clang"])
def test_c_compiles_without_a_warning(tmp_path, compiler):
    assert shutil.which(compiler), f"{compiler} is missing: run ./setup"
    env = dict(os.environ, CC=compiler)
    fio_src = os.environ.get("MDFIO_FIO_SRC", str(SOURCE_ROOT / ".deps" / "fio"))
    setup = subprocess.run(["meson", "setup", str(tmp_path / "b"), "-Dwerror=true", f"-Dfio_src={fio_src}"],
                           cwd=SOURCE_ROOT, env=env, capture_output=True, text=True)
    assert setup.returncode == 0, setup.stdout + setup.stderr
    build = subprocess.run(["ninja", "-C", str(tmp_path / "b")], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout[-6000:] + build.stderr
    assert "warning:" not in build.stdout, build.stdout[-6000:]
    assert Path(tmp_path / "b" / "engines" / "mdfio-posix.so").is_file()
