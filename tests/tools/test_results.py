"""mdfio.results, bench/run's result writer: table cells and tables, the
commit and clean-tree state a result names, and result files that never
replace one already there."""
import json
import subprocess

from mdfio.results import Num, Out, Spread, Switched, result_base, tree_state, write


def test_a_result_is_never_written_over(tmp_path):
    (tmp_path / "2026-11-26-engines.md").write_text("kept\n")
    assert result_base(tmp_path, "2026-11-26-engines") == tmp_path / "2026-11-26-engines-2"
    (tmp_path / "2026-11-26-engines-2.json").write_text("{}\n")
    assert result_base(tmp_path, "2026-11-26-engines") == tmp_path / "2026-11-26-engines-3"
    assert result_base(tmp_path, "2026-11-26-pairs") == tmp_path / "2026-11-26-pairs"


def section():
    out = Out()
    out.append("\n### Engines on tmpfs: ratios\n")
    out.table("engine", "precreate", "switched")
    out.row("mdfio-uring", Spread([2.0, 1.0, 3.0]), Switched(2, [0.5]))
    out.row("mdfio-posix (objects/s)", Num(1234.5, ".0f"), "")
    out.fact("clock_read_ns", 20.5)
    return out


def test_tables_print_markdown_and_keep_every_value_for_the_json():
    out = section()
    assert out.lines[-2:] == ["| mdfio-uring | 2.000 [1.000, 3.000] | 1 of 2 (after 50.0%) |",
                              "| mdfio-posix (objects/s) | 1234 |  |"]
    [table] = out.tables
    assert table["title"] == "Engines on tmpfs: ratios" and table["columns"] == ["engine", "precreate", "switched"]
    assert table["rows"] == [
        {"engine": "mdfio-uring", "precreate": {"median": 2.0, "min": 1.0, "max": 3.0, "values": [2.0, 1.0, 3.0]},
         "switched": {"runs": 2, "switched_after": [0.5]}},
        {"engine": "mdfio-posix (objects/s)", "precreate": 1234.5, "switched": ""}]


def test_each_write_of_one_name_gets_a_file_of_its_own(tmp_path):
    """Three results of one name: name, name-2, name-3, each with its own
    Markdown and JSON, the first ones untouched; a dot in a name stays."""
    doc = {"section": "engines", "quick": True}
    bases = [write(tmp_path, "2026-11-26-engines", f"## run {k}", section(), doc, ("abc123", k != 2))
             for k in (1, 2, 3)]
    assert bases == [tmp_path / n for n in ("2026-11-26-engines", "2026-11-26-engines-2", "2026-11-26-engines-3")]
    for k, base in enumerate(bases, 1):
        md = base.with_name(base.name + ".md").read_text()
        assert md == "\n".join([f"## run {k}", "Measured at commit abc123" +
                                ("" if k != 2 else ", with changes not committed") + ".", *section().lines]) + "\n"
        data = json.loads(base.with_name(base.name + ".json").read_text())
        assert data == {**doc, "commit": "abc123", "tree_clean": k != 2, "tables": section().tables,
                        "facts": {"clock_read_ns": 20.5}}
    assert write(tmp_path, "ext4-1.5G", "## h", Out(), {}, ("abc", True)) == tmp_path / "ext4-1.5G"
    assert (tmp_path / "ext4-1.5G.md").exists() and (tmp_path / "ext4-1.5G.json").exists()
    assert len(list(tmp_path.iterdir())) == 8


def git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_the_tree_state_names_the_commit_and_a_change_not_committed(tmp_path):
    assert tree_state(tmp_path) == ("unknown (not a git tree)", False)
    git(tmp_path, "init", "-q")
    (tmp_path / "f").write_text("1\n")
    git(tmp_path, "add", "f")
    git(tmp_path, "commit", "-q", "-m", "f")
    head = git(tmp_path, "rev-parse", "HEAD")
    assert tree_state(tmp_path) == (head, True)
    (tmp_path / "untracked").write_text("no change to the code\n")
    assert tree_state(tmp_path) == (head, True)
    (tmp_path / "f").write_text("2\n")
    assert tree_state(tmp_path) == (head, False)
