"""mdfio-tree, the small-file tree study's steps (docs/studies.md): a copy
that is the source byte for byte, modes and symlinks included; searches that
count what find counts; reads of every byte; a rewrite of every file with
one small value; a delete that leaves the destination as it was, foreign
files kept; and bad options refused in one line. mdfio-tree is the only
engine of these steps: its phases are the study's system calls, which
md-workbench's engines (posix, uring, aio) have no phases for."""
import os
import stat
import subprocess

import pytest

from conftest import engine_path, run_fio

PATTERNS = "*a*:*b*:*c*:*d*:*e*:*f*:*g*:*h*:*i*:*j*"


def tree_job(root, sections, **glob):
    """A jobfile of one stonewalled section per (phase, {options})."""
    lines = ["[global]", f"ioengine=external:{engine_path('tree')}", f"directory={root}",
             "percentile_list=50:90:99"]
    lines += [f"{k}={v}" for k, v in glob.items()]
    for i, (phase, opts) in enumerate(sections):
        lines += ["", f"[{phase}-{i}]", "stonewall", f"phase={phase}"]
        lines += [f"{k}={v}" for k, v in opts.items()]
    return "\n".join(lines) + "\n"


def make_source(src):
    """A small tree of what a source package holds: nested directories,
    files of several sizes and modes, an empty file, symlinks (relative,
    absolute, out of the tree, dangling), a read-only directory, and names
    with a newline, a '%' and upper case."""
    (src / "lib" / "Deep" / "er").mkdir(parents=True)
    (src / "doc").mkdir()
    (src / "ro").mkdir()
    files = {
        "README": b"alpha beta\n" * 30,
        "lib/Alpha.pm": os.urandom(70000),
        "lib/Deep/beta.c": b"int b;\n",
        "lib/Deep/er/empty": b"",
        "doc/Changes%1": b"% percent\n",
        "doc/new\nline": b"newline\n",
        "ro/GAMMA": b"g" * 4097,
    }
    for name, data in files.items():
        (src / name).write_bytes(data)
    os.chmod(src / "lib/Deep/beta.c", 0o751)
    os.chmod(src / "README", 0o600)
    os.symlink("Deep/beta.c", src / "lib" / "link-rel")
    os.symlink("/etc/hostname", src / "doc" / "abs-link")
    os.symlink("../../../outside", src / "lib" / "Deep" / "escape")
    os.symlink("no-such-file", src / "dangling")
    os.chmod(src / "ro", 0o555)
    return src


def listing(top):
    """{relative path: (type, mode, content or link target, mtime)} of a
    tree, without following symlinks."""
    out = {}
    for dirpath, dirs, files in os.walk(top):
        for name in dirs + files:
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            rel = os.path.relpath(p, top)
            if stat.S_ISLNK(st.st_mode):
                out[rel] = ("l", os.readlink(p))
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = ("d", stat.S_IMODE(st.st_mode), st.st_mtime_ns)
            else:
                with open(p, "rb") as f:
                    out[rel] = ("f", stat.S_IMODE(st.st_mode), f.read(), st.st_mtime_ns)
    return out


def slots(run, phase):
    """Every rank's figures of a phase's sections: a list of dicts."""
    out = []
    for j in run.jobs():
        if j["jobname"].split("-")[0] != phase:
            continue
        out.append({k: j[k] for k in ("read", "write", "trim", "sync", "error")})
    return out


@pytest.fixture
def src(tmp_path):
    s = make_source(tmp_path / "src")
    yield s
    os.chmod(s / "ro", 0o755)


@pytest.fixture
def dst(tmp_path):
    d = tmp_path / "dst"
    d.mkdir()
    (d / "notes.txt").write_text("the user's\n")
    return d


def test_copy_is_the_source_and_delete_leaves_the_destination_as_before(src, dst, tmp_path):
    before = listing(dst)
    run = run_fio(tree_job(dst, [("copy", {"tree_source": src})]), tmp_path, check=True)
    assert listing(dst / "tree") == listing(src)
    assert stat.S_IMODE(os.lstat(dst / "tree").st_mode) == stat.S_IMODE(os.lstat(src).st_mode)
    c, = slots(run, "copy")
    names = len(listing(src))
    files = sum(1 for v in listing(src).values() if v[0] == "f")
    # a unit per name and the tree's own directory; a create per file, a
    # mkdir or symlink per other name in sync; the bytes of every file
    assert c["write"]["total_ios"] == names + 1
    assert c["write"]["clat_ns"]["N"] == files
    assert c["sync"]["lat_ns"]["N"] == names + 1 - files
    assert c["write"]["io_bytes"] == sum(len(v[2]) for v in listing(src).values() if v[0] == "f")
    assert c["write"]["slat_ns"]["N"] == 1 and c["write"]["slat_ns"]["min"] > 0
    run = run_fio(tree_job(dst, [("delete", {})]), tmp_path, check=True)
    d, = slots(run, "delete")
    assert d["trim"]["total_ios"] == names + 1
    assert d["trim"]["clat_ns"]["N"] + d["sync"]["lat_ns"]["N"] == names + 1
    assert listing(dst) == before
    assert (tmp_path / "src" / "README").exists()


def test_find_counts_what_find_counts(src, dst, tmp_path):
    run = run_fio(tree_job(dst, [("copy", {"tree_source": src}), ("find", {"drop_caches": 0}),
                                 ("find", {"find_iname": PATTERNS})]), tmp_path, check=True)
    cold, warm = slots(run, "find")

    def find(pattern):
        out = subprocess.run(["find", str(dst / "tree"), "-mindepth", "1", "-iname", pattern, "-print0"],
                             capture_output=True, check=True).stdout
        return out.count(b"\0")

    names = len(listing(src))
    dirs = 1 + sum(1 for v in listing(src).values() if v[0] == "d")
    assert cold["read"]["total_ios"] == 1 and warm["read"]["total_ios"] == 10
    assert cold["read"]["short_ios"] == names and warm["read"]["short_ios"] == 10 * names
    assert cold["write"]["short_ios"] == find("*a*")
    assert warm["write"]["short_ios"] == sum(find(p) for p in PATTERNS.split(":"))
    # a listing of each directory per pass
    assert cold["read"]["clat_ns"]["N"] == dirs and warm["read"]["clat_ns"]["N"] == 10 * dirs
    run_fio(tree_job(dst, [("delete", {})]), tmp_path, check=True)


def test_read_reads_every_byte_and_rewrite_writes_the_value(src, dst, tmp_path):
    run = run_fio(tree_job(dst, [("copy", {"tree_source": src}), ("read", {"numjobs": 3}),
                                 ("rewrite", {"numjobs": 2, "rewrite_size": 1000}),
                                 ("read", {})]), tmp_path, check=True)
    files = {k: v for k, v in listing(src).items() if v[0] == "f"}
    reads = slots(run, "read")
    first, second = reads[:3], reads[3:]
    assert sum(r["read"]["total_ios"] for r in first) == len(files)
    assert sum(r["read"]["clat_ns"]["N"] for r in first) == len(files)
    assert sum(r["read"]["io_bytes"] for r in first) == sum(len(v[2]) for v in files.values())
    assert all(r["read"]["slat_ns"]["N"] == 1 for r in first)
    rewrites = slots(run, "rewrite")
    assert sum(r["write"]["io_bytes"] for r in rewrites) == 1000 * len(files)
    values = {(dst / "tree" / k).read_bytes() for k in files}
    assert len(values) == 1 and len(values.pop()) == 1000
    assert second[0]["read"]["io_bytes"] == 1000 * len(files)
    # the symlinks and directories are as copied, the source untouched
    assert {k: v for k, v in listing(dst / "tree").items() if v[0] != "f"} == \
        {k: v for k, v in listing(src).items() if v[0] != "f"}
    assert (src / "lib" / "Alpha.pm").stat().st_size == 70000
    run_fio(tree_job(dst, [("delete", {})]), tmp_path, check=True)


def test_what_the_copy_did_not_make_is_kept(src, dst, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim").write_text("keep me\n")
    run_fio(tree_job(dst, [("copy", {"tree_source": src})]), tmp_path, check=True)
    tree = dst / "tree"
    (tree / "lib" / "Deep" / "foreign").write_text("mine\n")
    # a copied file replaced by another one at its name (the copy kept
    # aside, so that its inode number is not the new file's)
    os.rename(tree / "README", tmp_path / "README-moved")
    (tree / "README").write_text("replaced\n")
    # a copied directory replaced by a symlink out of the tree
    os.rename(tree / "doc", tmp_path / "doc-moved")
    os.symlink(outside, tree / "doc")
    run = run_fio(tree_job(dst, [("rewrite", {}), ("read", {})]), tmp_path, check=False)
    assert (tree / "README").read_text() == "replaced\n"
    assert (outside / "victim").read_text() == "keep me\n"
    assert any("rewrite" in line and "README" in line for line in run.mdfio_lines()), run.stderr
    run = run_fio(tree_job(dst, [("delete", {})]), tmp_path, check=True)
    assert sorted(p.name for p in dst.iterdir()) == ["mdfio.tree", "notes.txt", "tree"]
    assert sorted(str(p.relative_to(tree)) for p in tree.rglob("*")) == \
        ["README", "doc", "lib", "lib/Deep", "lib/Deep/foreign"]
    assert (outside / "victim").read_text() == "keep me\n"
    assert any("left in place" in line for line in run.mdfio_lines()), run.stderr
    # a second delete after the user's clean-up takes the rest
    (tree / "lib" / "Deep" / "foreign").unlink()
    (tree / "README").unlink()
    (tree / "doc").unlink()
    run_fio(tree_job(dst, [("delete", {})]), tmp_path, check=True)
    assert sorted(p.name for p in dst.iterdir()) == ["notes.txt"]


def test_a_destination_it_did_not_make_is_refused(src, dst, tmp_path):
    (dst / "tree").mkdir()
    (dst / "tree" / "x").write_text("x\n")
    run = run_fio(tree_job(dst, [("copy", {"tree_source": src})]), tmp_path, check=False)
    assert len(run.mdfio_lines()) == 1 and "already exists" in run.mdfio_lines()[0], run.stderr
    assert sorted(p.name for p in dst.iterdir()) == ["notes.txt", "tree"]
    # a tree without the copy's manifest is not the copy's
    run = run_fio(tree_job(dst, [("delete", {})]), tmp_path, check=False)
    assert len(run.mdfio_lines()) == 1 and "run phase=copy first" in run.mdfio_lines()[0], run.stderr
    assert (dst / "tree" / "x").read_text() == "x\n"


@pytest.mark.parametrize("section, glob, says", [
    (("bogus", {}), {}, "phase=bogus: expected copy, find, read, rewrite or delete"),
    (("copy", {"numjobs": 2}), {}, "numjobs=2: phase=copy runs as one rank"),
    (("copy", {"tree_source": "/nonexistent/tree"}), {}, "tree_source=/nonexistent/tree: not a directory"),
    (("read", {"find_iname": "*a*"}), {}, "find_iname= is the search's"),
    (("rewrite", {"rewrite_size": "0"}), {}, "rewrite_size=0: expected a whole number from 1 to 1048576"),
    (("find", {"drop_caches": "2"}), {}, "drop_caches=2: expected a whole number from 0 to 1"),
    (("copy", {"rw": "read"}), {}, "rw: phase=copy reports its count as rw=write"),
    (("read", {"hosts": "no-such-host"}), {}, "hosts=no-such-host: this host"),
    (("read", {"join_timeout": "0"}), {}, "join_timeout=0: expected a whole number from 1 to 86400"),
])
def test_bad_options_one_line(dst, tmp_path, section, glob, says):
    run = run_fio(tree_job(dst, [section], **glob), tmp_path, check=False)
    lines = run.mdfio_lines()
    assert len(lines) == 1 and says in lines[0], run.stderr
    assert sorted(p.name for p in dst.iterdir()) == ["notes.txt"]


def test_drop_caches_before_a_cold_read(src, dst, tmp_path):
    if os.geteuid():
        pytest.skip("drop_caches needs root")
    run = run_fio(tree_job(dst, [("copy", {"tree_source": src}), ("read", {"numjobs": 2, "drop_caches": 1}),
                                 ("delete", {})]), tmp_path, check=True)
    files = sum(1 for v in listing(src).values() if v[0] == "f")
    assert sum(r["read"]["total_ios"] for r in slots(run, "read")) == files


def test_more_readers_than_files(src, dst, tmp_path):
    """A rank with no file of the read or rewrite takes part: it meets the
    others at the barriers and ends at the release, with no unit and its
    own time (0 ns only if the clock has not moved); every file is read
    and rewritten once, by the ranks that have one."""
    files = {k: v for k, v in listing(src).items() if v[0] == "f"}
    ranks = len(files) + 2
    run = run_fio(tree_job(dst, [("copy", {"tree_source": src}), ("read", {"numjobs": ranks}),
                                 ("rewrite", {"numjobs": ranks, "rewrite_size": 10})]), tmp_path, check=True)
    for phase, slot in (("read", "read"), ("rewrite", "write")):
        ranks_of = slots(run, phase)
        assert len(ranks_of) == ranks and all(r["error"] == 0 for r in ranks_of)
        assert all(r[slot]["slat_ns"]["N"] == 1 for r in ranks_of)
        ios = sorted(r[slot]["total_ios"] for r in ranks_of)
        assert ios == [0, 0] + [1] * len(files), ios
    assert sum(r["read"]["io_bytes"] for r in slots(run, "read")) == sum(len(v[2]) for v in files.values())
    values = {(dst / "tree" / k).read_bytes() for k in files}
    assert len(values) == 1 and len(values.pop()) == 10
    run_fio(tree_job(dst, [("delete", {})]), tmp_path, check=True)
    assert sorted(p.name for p in dst.iterdir()) == ["notes.txt"]


def test_a_read_of_an_empty_tree_is_refused(dst, tmp_path):
    (tmp_path / "empty").mkdir()
    run_fio(tree_job(dst, [("copy", {"tree_source": tmp_path / "empty"})]), tmp_path, check=True)
    run = run_fio(tree_job(dst, [("read", {"numjobs": 2})]), tmp_path, check=False)
    lines = run.mdfio_lines()
    assert lines and all("phase=read: nothing to do (the tree is empty)" in line for line in lines), run.stderr
    run_fio(tree_job(dst, [("delete", {})]), tmp_path, check=True)
    assert sorted(p.name for p in dst.iterdir()) == ["notes.txt"]
