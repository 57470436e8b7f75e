"""mdfio-study's study files without running anything (no root): what a
file it cannot use is refused with (one line naming the file and the key,
exit status 2), how a matrix expands (fixed_count, stable point names),
and the shipped studies. Running them: test_mdfio_study.py."""
import subprocess
import sys

import pytest

from conftest import SOURCE_ROOT
from mdfio.study import StudyError, check_device, parse, parse_text

TOOL = SOURCE_ROOT / "tools" / "mdfio-study"
STUDIES = SOURCE_ROOT / "jobfiles" / "studies"
MINIMAL = '[study]\nname = "s"\n[[filesystem]]\nkind = "tmpfs"\n'


def tool(*args, **kw):
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True,
                          timeout=60, **kw)


@pytest.mark.parametrize("text,says", [
    ("[study\nname = 1", "not valid TOML: "),
    ('[study]\nname = "s"\ncolour = "red"\n[[filesystem]]\nkind = "tmpfs"\n', "[study] colour: unknown key"),
    (MINIMAL + "[parameters]\nranks = []\n", "[parameters] ranks: an empty list"),
    (MINIMAL + '[parameters]\nranks = "2"\n', "[parameters] ranks: expected a positive integer or a list of them, "
                                              "not '2'"),
    (MINIMAL + "[parameters]\nranks = [1, true]\n", "[parameters] ranks: expected a positive integer"),
    (MINIMAL + "[parameters]\nD = 0\n", "[parameters] D: expected a positive integer"),
    (MINIMAL + "[parameters]\nrank = 2\n", "[parameters] rank: unknown key"),
    (MINIMAL + "[parameters]\ndrop_caches = 1\n", "[parameters] drop_caches: expected true or false"),
    (MINIMAL + "[parameters]\nranks = [1, 2, 1]\n", "[parameters] ranks: a value is listed twice"),
    (MINIMAL + "[parameters]\nP = 10\nfixed_count = 100\n", "[parameters] fixed_count: not with P"),
    (MINIMAL + "[parameters]\nranks = [4, 16]\nfixed_count = 10\n",
     "[parameters] fixed_count = 10 with ranks = 16 gives P = 0"),
    ('[study]\nname = "s"\n', "[[filesystem]]: missing"),
    (MINIMAL + "[parameter]\nranks = 2\n", ": parameter: unknown key (expected one of study, parameters, filesystem)"),
    ('[study]\nname = "a b"\n[[filesystem]]\nkind = "tmpfs"\n', "[study] name: expected a name"),
    ('[study]\nname = "s"\nrepeats = 0\n[[filesystem]]\nkind = "tmpfs"\n', "[study] repeats: expected a positive"),
    ('[study]\nname = "s"\n[[filesystem]]\nkind = "ntfs"\n', "[[filesystem]] #1 kind: expected one of"),
    ('[study]\nname = "s"\n[[filesystem]]\nkind = "ext4"\nsize = 64\n', "[[filesystem]] #1 size: expected a size"),
    ('[study]\nname = "s"\n[[filesystem]]\nkind = "ext4"\nmount = "noatime"\n', "[[filesystem]] #1 mount: unknown"),
    ('[study]\nname = "s"\n[[filesystem]]\nkind = "tmpfs"\ndevice = "/dev/sdb"\n',
     "[[filesystem]] #1 device: a tmpfs is made in memory"),
    ('[study]\nname = "s"\n[[filesystem]]\nkind = "ext4"\ndevice = "/dev/sdb"\nsize = "1G"\n',
     "[[filesystem]] #1 size: not with device"),
    ('[study]\nname = "s"\n[[filesystem]]\nkind = "ext4"\n[[filesystem]]\nkind = "ext4"\n',
     "[[filesystem]] name: 'ext4' names two entries"),
    ('[study]\nname = "s"\n[[filesystem]]\nkind = "ext4"\nmkfs_options = [1]\n',
     "[[filesystem]] #1 mkfs_options: expected a string or a list of strings"),
])
def test_a_file_it_cannot_use_is_one_line_naming_the_key(tmp_path, text, says):
    path = tmp_path / "study.toml"
    path.write_text(text)
    with pytest.raises(StudyError) as e:
        parse(path)
    assert str(e.value).startswith(f"{path}: ") and says in str(e.value), str(e.value)
    for command in (["list", path], ["run", path, "--db", tmp_path / "h.db"]):
        proc = tool(*command)
        assert proc.returncode == 2 and proc.stdout == "", proc.stdout + proc.stderr
        assert proc.stderr.splitlines() == [f"mdfio-study: {e.value}"], proc.stderr
    assert not (tmp_path / "h.db").exists()


def test_fixed_count_sets_p_per_point():
    """The study's "fixed count": the total object count stays fixed as
    ranks grow, P = fixed_count // ranks."""
    study = parse_text(MINIMAL + "[parameters]\nranks = [1, 2, 3, 4]\nD = 50\nfixed_count = 10000\n", "f.toml")
    assert [(p.values["ranks"], p.values["P"], p.values["D"]) for p in study.points()] == [
        (1, 10000, 50), (2, 5000, 50), (3, 3333, 50), (4, 2500, 50)]
    # a dimension of counts, too
    study = parse_text(MINIMAL + "[parameters]\nranks = [1, 2]\nfixed_count = [100, 200]\n", "f.toml")
    assert [(p.values["ranks"], p.values["P"]) for p in study.points()] == [(1, 100), (1, 200), (2, 50), (2, 100)]


def test_points_are_the_product_with_stable_names():
    """File systems outermost, then each parameter's list in the file's
    order; a point's name holds every value, so it is the same when
    another dimension grows (a resume finds its results)."""
    text = ('[study]\nname = "s"\n[parameters]\nranks = [1, 2]\nlim_free_mem = [1000, 0]\n'
            '[[filesystem]]\nkind = "tmpfs"\n[[filesystem]]\nkind = "ext4"\nname = "ext4-noatime"\n'
            'mount_options = "noatime"\nmkfs_options = "-b 4096 -I 256"\n')
    study = parse_text(text, "p.toml")
    names = [p.name for p in study.points()]
    assert names == [f"{fs}-posix-qd1-n{n}-D10-P3000-I1000-S3901-R3-O1-m{m}-M0-dc0"
                     for fs in ("tmpfs", "ext4-noatime") for n in (1, 2) for m in (1000, 0)]
    assert study.filesystems[1].mkfs_options == ("-b", "4096", "-I", "256")
    grown = parse_text(text.replace("ranks = [1, 2]", "ranks = [1, 2, 4]"), "p.toml")
    assert set(names) < {p.name for p in grown.points()}
    assert len(grown.points()) == 12


def test_the_shipped_studies():
    nightly = parse(STUDIES / "nightly.toml")
    assert [fs.kind for fs in nightly.filesystems] == ["tmpfs", "ext4"] and nightly.filesystems[1].device is None
    assert len(nightly.points()) * nightly.repeats <= 8
    study = parse(STUDIES / "mdrealio-2016.toml")
    points = study.points()
    # ext4, xfs, btrfs x 1-8, 10, 12, 15 processes x 4 memory limits; the
    # paper's 5 repeats are the benchmark's (R), one run per point
    assert len(points) == 3 * 11 * 4 and study.repeats == 1
    assert sorted({p.values["ranks"] for p in points}) == [*range(1, 9), 10, 12, 15]
    assert {(p.values["D"], p.values["P"], p.values["I"], p.values["S"], p.values["R"]) for p in points} == {
        (10, 3000, 1000, 3900, 5)}
    assert sorted({p.values["lim_free_mem"] for p in points}) == [0, 1000, 2500, 5000]
    proc = tool("list", STUDIES / "mdrealio-2016.toml")
    assert proc.returncode == 0 and proc.stdout.splitlines()[-1] == "132 points x 1 repeats = 132 runs", proc.stderr
    # the "fixed count" experiment: P = 10000 // ranks, 50 datasets, 1000 MB
    fixed = parse(STUDIES / "mdrealio-2016-fixed-count.toml")
    assert {(p.values["ranks"], p.values["P"], p.values["D"], p.values["lim_free_mem"])
            for p in fixed.points()} == {(n, 10000 // n, 50, 1000) for n in (1, 2, 3)}
    # the reproduction at this machine's scale keeps the paper's parameters per point
    here = parse(STUDIES / "mdrealio-2016-here.toml")
    assert [fs.kind for fs in here.filesystems] == ["ext4", "xfs", "btrfs"] and here.memory_cgroup
    assert {(p.values["D"], p.values["P"], p.values["I"], p.values["S"], p.values["R"])
            for p in here.points()} == {(10, 3000, 1000, 3900, 5)}


def test_options_of_run_only_are_refused_with_list(tmp_path):
    (tmp_path / "s.toml").write_text(MINIMAL)
    proc = tool("list", tmp_path / "s.toml", "--db", tmp_path / "h.db")
    assert proc.returncode == 2 and proc.stderr.startswith("mdfio-study: --db: only with run"), proc.stderr
    proc = tool("run", tmp_path / "s.toml")
    assert proc.returncode == 2 and "--db DB is required" in proc.stderr, proc.stderr


def test_a_device_that_is_no_block_device_is_refused():
    spec = parse_text('[study]\nname = "s"\n[[filesystem]]\nkind = "ext4"\ndevice = "/dev/null"\n',
                      "d.toml").filesystems[0]
    with pytest.raises(StudyError, match=r"^\[\[filesystem\]\] ext4: device /dev/null: not a block device$"):
        check_device(spec, format_devices=True)
