"""The engines' layers (engines/meson.build): every #include of engines/**
stays within what its layer may include, and no module (a .c file) calls
back up into one that calls it. Both read the sources only: fast, and
without a build.

    lib/       lib/ only: no fio header, no other layer
    core/      lib/, core/ and fio's headers; never a backend
    backends/  lib/ and the backend interface (core/backend.h) only
    workloads/ lib/, core/ and fio's headers: an engine of its own each,
               beside md-workbench's (bottom up: lib, core, backends,
               workloads)

The call graph: which .c file defines each function and global object that
is not static, and which .c files refer to it (calls, data, and what the
macros and static inline functions of the headers they use refer to), as
`nm` would show it for the objects. A cycle in it is a module that calls
back up, and so is a reference from a layer to one above it (bottom up:
lib, core, backends)."""
import os
import re
from pathlib import Path

from conftest import SOURCE_ROOT

ENGINES = SOURCE_ROOT / "engines"
# fio's source tree, whose headers an include in <> may name too
FIO_SRC = Path(os.environ.get("MDFIO_FIO_SRC", SOURCE_ROOT / ".deps" / "fio"))
LAYERS = ("lib", "core", "backends", "workloads")
# what each layer may include: layers, "fio" (a quoted header that is not
# the engines': fio's), and for backends the interface header(s) of core/
MAY_INCLUDE = {
    "lib": {"lib"},
    "core": {"lib", "core", "fio"},
    "backends": {"lib"},
    "workloads": {"lib", "core", "fio", "workloads"},
}
BACKEND_INTERFACE = {"backend.h"}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def layer_of(path):
    return path.relative_to(ENGINES).parts[0]


def sources(root=None):
    root = root or ENGINES
    return sorted(p for p in root.rglob("*") if p.suffix in (".c", ".h"))


def resolve(path, name, root):
    """The engines' file a quoted include names (the including file's own
    folder first, then the layers' include directories), else None."""
    for d in (path.parent, *(root / layer for layer in LAYERS)):
        if (d / name).is_file():
            return d / name
    return None


def include_violations(root=None):
    root = root or ENGINES
    bad = []
    for path in sources(root):
        layer = path.relative_to(root).parts[0]
        for m in INCLUDE.finditer(path.read_text()):
            kind, name = m.groups()
            target = resolve(path, name, root)
            if target is not None:
                what = target.relative_to(root).parts[0]
            elif kind == '"' or (FIO_SRC / name).is_file():
                what = "fio"
            else:
                continue    # the system's and the libraries' (liburing.h)
            if what in MAY_INCLUDE.get(layer, ()):
                continue
            if layer == "backends" and what == "core" and target.name in BACKEND_INTERFACE:
                continue
            bad.append(f"{path.relative_to(root)}: #include {kind}{name}{'>' if kind == '<' else kind}"
                       f" ({what}), which layer {layer}/ must not include")
    return bad


IDENT = re.compile(r"[A-Za-z_]\w*$")
TOKEN = re.compile(r"[A-Za-z_]\w*|\S")
NOISE = re.compile(r"""/\*.*?\*/|//[^\n]*|"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*'""", re.S)


def code_of(path):
    """The text without comments, string and character literals (lines
    kept), with line splices joined."""
    def blank(m):
        s = m.group(0)
        return "\n" * s.count("\n") + " " if s.startswith("/*") else " " if s.startswith("//") else '""'
    return NOISE.sub(blank, path.read_text().replace("\\\n", " "))


def without_attributes(toks):
    out, i = [], 0
    while i < len(toks):
        if toks[i] != "__attribute__":
            out.append(toks[i])
            i += 1
            continue
        depth, i = 0, i + 1
        while i < len(toks):
            depth += {"(": 1, ")": -1}.get(toks[i], 0)
            i += 1
            if not depth:
                break
    return out


def declared_name(stmt):
    """A definition's name and whether it is static: a function's (the
    identifier before the last parenthesised group, past any macro call
    before it at file scope) or an object's (before its = or [)."""
    if stmt[-1] == ")":
        depth, k = 0, len(stmt) - 1
        while k >= 0:
            depth += {")": 1, "(": -1}.get(stmt[k], 0)
            if not depth:
                break
            k -= 1
        k -= 1
    else:
        k = min([q for q, t in enumerate(stmt) if t in ("=", "[")], default=len(stmt)) - 1
    if k < 1 or not IDENT.match(stmt[k]) or stmt[0] in ("extern", "typedef") or \
            stmt[k - 1] in ("struct", "enum", "union"):
        return None, False
    before = stmt[:k]
    last = max([q for q, t in enumerate(before) if t == ")"], default=-1)
    return stmt[k], "static" in before[last + 1:], "inline" in before[last + 1:]


def parse(path):
    """(definitions {name: static}, names referred to, macros {name: names
    in its body}, static inline functions {name: names in its body})."""
    code, macros = [], {}
    for line in code_of(path).split("\n"):
        m = re.match(r"\s*#\s*define\s+(\w+)(.*)", line)
        if m:
            macros[m.group(1)] = set(re.findall(r"[A-Za-z_]\w*", m.group(2)))
        elif not re.match(r"\s*#", line):
            code.append(line)
    toks = without_attributes(TOKEN.findall("\n".join(code)))
    defs, refs, inline = {}, set(), {}
    depth, stmt, body_of = 0, [], None
    for t in toks:
        if depth:
            depth += {"{": 1, "}": -1}.get(t, 0)
            if IDENT.match(t):
                refs.add(t)
                if body_of:
                    inline[body_of].add(t)
            continue
        if t not in (";", "{"):
            stmt.append(t)
            continue
        # a statement at file scope ends: a declaration, a definition of
        # an object (its initializer follows a "{" after "="), or of a
        # function (its body follows a "{" after ")")
        refs.update(x for x in stmt if IDENT.match(x))
        body_of = None
        if stmt and (t == ";" and "(" not in stmt or t == "{"):
            found = declared_name(stmt)
            if found[0]:
                name, static, is_inline = found
                defs[name] = static
                refs.discard(name)
                if t == "{" and stmt[-1] == ")" and static and is_inline:
                    body_of = name
                    inline[name] = set()
        if t == "{":
            depth = 1
        stmt = []
    return defs, refs, macros, inline


def module_graph(root):
    """{file: {file it refers to: the symbols}} over the .c files."""
    parsed = {p: parse(p) for p in sources(root)}
    expand, owner, edges = {}, {}, {}
    for path, (defs, refs, macros, inline) in parsed.items():
        if path.suffix == ".h":
            expand.update(macros)
            expand.update(inline)
        else:
            for name, static in defs.items():
                if not static:
                    owner.setdefault(name, []).append(path)
    for path, (defs, refs, macros, inline) in parsed.items():
        if path.suffix != ".c":
            continue
        local = dict(expand, **macros)
        seen, todo = set(), list(refs)
        while todo:
            name = todo.pop()
            if name not in seen:
                seen.add(name)
                todo.extend(local.get(name, ()))
        for name in seen:
            if defs.get(name):     # its own static one
                continue
            for other in owner.get(name, ()):
                if other != path:
                    edges.setdefault(path, {}).setdefault(other, set()).add(name)
    return owner, edges


def sccs(nodes, edges):
    """The strongly connected components of more than one node (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, {}):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while not comp or comp[-1] != v:
                comp.append(stack.pop())
                on.discard(comp[-1])
            if len(comp) > 1:
                out.append(comp)

    for v in nodes:
        if v not in index:
            visit(v)
    return out


def cycles(root=None):
    """Each cycle of modules, as lines naming the files and the symbols of
    each edge in it."""
    root = root or ENGINES
    _, edges = module_graph(root)
    out = []
    for comp in sccs(sorted(root.rglob("*.c")), edges):
        comp = set(comp)
        lines = [f"{p.relative_to(root)} -> {q.relative_to(root)}: {', '.join(sorted(edges[p][q]))}"
                 for p in sorted(comp) for q in sorted(edges.get(p, {})) if q in comp]
        out.append("cycle of " + ", ".join(sorted(str(p.relative_to(root)) for p in comp))
                   + ":\n  " + "\n  ".join(lines))
    return out


def test_every_source_is_in_a_layer():
    stray = [str(p.relative_to(ENGINES)) for p in sources() if layer_of(p) not in LAYERS]
    assert not stray, f"engines/ sources outside lib/, core/ and backends/: {stray}"


def test_includes_stay_in_their_layer():
    bad = include_violations()
    assert not bad, "\n".join(bad)


def calls_up(root=None):
    """Each reference from a layer to one above it (bottom up: lib, core,
    backends; the core reaches a backend only through the table handed to
    it, never by name)."""
    root = root or ENGINES
    _, edges = module_graph(root)
    rank = {layer: k for k, layer in enumerate(LAYERS)}
    return [f"{p.relative_to(root)} -> {q.relative_to(root)}: {', '.join(sorted(names))}"
            for p in sorted(edges) for q, names in sorted(edges[p].items())
            if rank.get(p.relative_to(root).parts[0], 0) < rank.get(q.relative_to(root).parts[0], 0)]


def test_no_module_calls_back_up():
    found = cycles() + calls_up()
    assert not found, "\n".join(found)


def test_the_checks_see_what_they_guard(tmp_path):
    """Both checks fail on a planted fault: a lib/ file that includes fio,
    a backend that includes the core's job state or a fio header, and two
    modules that call each other."""
    (tmp_path / "lib").mkdir()
    (tmp_path / "core").mkdir()
    (tmp_path / "backends").mkdir()
    (tmp_path / "lib" / "a.h").write_text("int lib_a(void);\n")
    (tmp_path / "lib" / "a.c").write_text('#include "fio.h"\n#include "a.h"\nint lib_a(void) { return core_b(); }\n')
    (tmp_path / "core" / "job.h").write_text("int core_b(void);\n")
    (tmp_path / "core" / "backend.h").write_text('#include "fio.h"\n')
    (tmp_path / "core" / "b.c").write_text('#include "job.h"\n#include "a.h"\n'
                                           "int core_b(void) { return 1; }\nint core_c(void) { return lib_a(); }\n")
    (tmp_path / "backends" / "x.c").write_text('#include "backend.h"\n#include "job.h"\n#include <liburing.h>\n')
    (tmp_path / "backends" / "y.c").write_text('#include <stdio.h>\n#include <fio.h>\n')
    bad = include_violations(tmp_path)
    assert len(bad) == 3, bad
    assert bad[0].startswith("backends/x.c: #include \"job.h\" (core)"), bad
    assert bad[1].startswith("backends/y.c: #include <fio.h> (fio)"), bad
    assert bad[2].startswith("lib/a.c: #include \"fio.h\" (fio)"), bad
    [cycle] = cycles(tmp_path)
    assert "core/b.c -> lib/a.c: lib_a" in cycle and "lib/a.c -> core/b.c: core_b" in cycle, cycle
    assert calls_up(tmp_path) == ["lib/a.c -> core/b.c: core_b"]
