"""The root directory (root=, md-workbench's -o): a precreate creates it
when only its last component is missing, as md-workbench's does, and the
cleanup that empties the namespace removes it, but only a root mdfio
created and only if nothing else is in it."""
import os
import stat

from conftest import job, run_fio, store_view

OPTS = dict(numjobs=2, datasets=2, precreate_per_set=3, steps_per_set=2, bs=100)


def rooted(phases, root, **opts):
    """A jobfile that names its root with the engine's root= (fio's own
    directory= refuses a missing directory when it parses the jobfile)."""
    return job(phases, "/unused", **opts).replace("directory=/unused", f"root={root}")


def umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_a_precreate_creates_the_root_and_the_cleanup_removes_it(tmpfs, tmp_path, engine):
    root = tmpfs / "ns"
    run_fio(rooted(["precreate"], root, engine=engine, **OPTS), tmp_path, check=True)
    assert stat.S_IMODE(root.stat().st_mode) == 0o775 & ~umask()     # md-workbench's DIRMODE
    status = (root / "mdfio.status").read_text()
    assert status.startswith("mdfio-status 4\n") and "\nroot created-by-mdfio\n" in status, status
    run_fio(rooted(["benchmark"], root, engine=engine, **OPTS), tmp_path, check=True)
    assert "\nroot created-by-mdfio\n" in (root / "mdfio.status").read_text()
    run_fio(rooted(["cleanup"], root, engine=engine, **OPTS), tmp_path, check=True)
    assert os.listdir(tmpfs) == [] and store_view(root, engine).entries() == []
    # and all in one fio
    run = run_fio(rooted(["precreate", "benchmark", "cleanup"], root, engine=engine, **OPTS), tmp_path,
                  check=True)
    assert os.listdir(tmpfs) == [] and store_view(root, engine).entries() == [] and run.mdfio_lines() == []


def test_a_root_that_existed_is_kept(tmpfs, tmp_path):
    root = tmpfs / "ns"
    root.mkdir()
    run_fio(rooted(["precreate"], root, **OPTS), tmp_path, check=True)
    assert "\nroot created-by-mdfio\n" not in (root / "mdfio.status").read_text()
    run_fio(rooted(["benchmark", "cleanup"], root, **OPTS), tmp_path, check=True)
    assert os.listdir(root) == []
    # fio's directory= with the same root
    run_fio(job(["precreate", "cleanup"], root, **OPTS), tmp_path, check=True)
    assert os.listdir(root) == []


def test_only_the_last_component_is_created(tmpfs, tmp_path):
    (tmpfs / "file").write_text("not a directory")
    for root, why in [(tmpfs / "a" / "b", "No such file or directory"),
                      (tmpfs / "file" / "b", "Not a directory")]:
        run = run_fio(rooted(["precreate", "cleanup"], root, **OPTS), tmp_path, check=False)
        lines = run.mdfio_lines()
        assert run.rc != 0 and len(lines) == 1, run.stderr
        assert lines[0] == (f"mdfio: directory={root}: cannot create it: {why} (mdfio creates only the last "
                            "component of the root; create its parent first)"), lines
        assert sorted(os.listdir(tmpfs)) == ["file"]
        assert all(j["write"]["total_ios"] == 0 for j in run.jobs())


def test_only_a_precreate_creates_the_root(tmpfs, tmp_path):
    root = tmpfs / "ns"
    run = run_fio(rooted(["benchmark"], root, **OPTS), tmp_path, check=False)
    lines = run.mdfio_lines()
    assert run.rc != 0 and len(lines) == 1, run.stderr
    assert f"directory={root}: not an existing directory (only a precreate creates the root" in lines[0]
    assert os.listdir(tmpfs) == []


def test_fio_directory_refuses_a_missing_root_itself(tmpfs, tmp_path):
    """fio checks directory= when it parses the jobfile, before any engine
    code runs: root= is the way to a root the precreate creates."""
    run = run_fio(job(["precreate"], tmpfs / "ns", **OPTS), tmp_path, check=False)
    assert run.rc != 0 and "failed parsing directory=" in run.stderr, run.stderr
    assert os.listdir(tmpfs) == []


def test_a_root_that_holds_a_foreign_file_is_kept_with_a_notice(tmpfs, tmp_path):
    root = tmpfs / "ns"
    run_fio(rooted(["precreate"], root, **OPTS), tmp_path, check=True)
    (root / "notes.txt").write_text("mine")
    run = run_fio(rooted(["cleanup"], root, **OPTS), tmp_path, check=True)
    assert run.mdfio_lines() == [f"mdfio: directory={root}: mdfio created it, but it holds files such as "
                                 "notes.txt, which mdfio did not make: left in place"], run.stderr
    assert os.listdir(root) == ["notes.txt"] and (root / "notes.txt").read_text() == "mine"


def test_a_refused_precreate_leaves_no_root(tmpfs, tmp_path):
    """The root is created before the jobs' checks; a precreate that one of
    them refuses leaves nothing, the root included."""
    root = tmpfs / "ns"
    info = tmp_path / "info"
    info.write_text("not md-workbench's\n")
    run = run_fio(rooted(["precreate"], root, run_info_file=info, **OPTS), tmp_path, check=False)
    lines = run.mdfio_lines()
    assert run.rc != 0 and len(lines) == 1 and "not an md-workbench run-info file" in lines[0], run.stderr
    assert os.listdir(tmpfs) == []


def test_one_root_spelled_two_ways_is_refused_before_anything_runs(tmpfs, tmp_path):
    """Sections name one directory as "/r" and "/r/", or "/r/.": one line
    naming both spellings, nothing made. A second spelling used to
    run as a second run of the namespace in the same fio, refused as
    "another fio run" naming this fio's own pid, after the first had run."""
    root = tmpfs / "ns"
    root.mkdir()
    for other in (f"{root}/", f"{root}/."):
        text = job(["precreate", "benchmark", "cleanup"], root, **OPTS)
        text = text.replace("[cleanup-2]\n", f"[cleanup-2]\ndirectory={other}\n")
        assert f"directory={other}\n" in text
        run = run_fio(text, tmp_path, check=False)
        pair = sorted([str(root), other])
        assert run.mdfio_lines() == [f"mdfio: directory={pair[0]} and directory={pair[1]} are one directory: "
                                     "name a root the same way in every section of the jobfile"], run.stderr
        assert os.listdir(root) == [], other
