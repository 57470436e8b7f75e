"""mdfio.filesystems, which bench/run and the fixtures mount with: a set-up
that fails or is stopped halfway leaves no mount, loop device, image or
directory; a busy mount is waited for, then left (saying so) or detached
lazily; a FUSE mirror of a given directory never touches it."""
import os
import signal
import time

import pytest

import mdfio.filesystems as filesystems
from conftest import loops_under, mounts_under, need_root
from mdfio.filesystems import Filesystem, FilesystemError, mounted


@pytest.fixture(autouse=True)
def root_only():
    need_root("mounts file systems and attaches loop devices")


@pytest.mark.parametrize("kind,size", [("ext4", "64M"), ("xfs", "320M"), ("btrfs", "128M"), ("fuse", "64M")])
def test_a_mount_refused_leaves_nothing(work, kind, size):
    """A mount option the file system refuses: once the image is made and
    on a loop device (for fuse: once its tmpfs is mounted), the mount
    fails; the error says so in one line, and the loop device, the image,
    the tmpfs and the directories are gone."""
    with pytest.raises(FilesystemError) as refused:
        Filesystem(kind, work, size=size, options="no_such_option_here")
    assert refused.value.step == "mount", refused.value
    assert "\n" not in str(refused.value) and f"{work}/mdfio-{kind}-" in str(refused.value)
    assert loops_under(work) == {} and mounts_under(work) == []
    assert os.listdir(work) == []


def test_sigterm_right_after_losetup_leaves_nothing(work, monkeypatch):
    """SIGTERM, whose handler raises (as bench/run's does), delivered the
    moment losetup has attached the image and before the set-up has
    heard which device it got: the device is still found and detached,
    the image and the directory removed, and the signal's exception
    reaches the caller."""
    attached = []
    real_run = filesystems._run

    def run(step, what, cmd):
        out = real_run(step, what, cmd)
        if step == "losetup":
            attached.append(out.strip())
            os.kill(os.getpid(), signal.SIGTERM)
        return out

    def stopped(signum, frame):
        raise SystemExit(f"stopped by signal {signal.Signals(signum).name}")

    monkeypatch.setattr(filesystems, "_run", run)
    old = signal.signal(signal.SIGTERM, stopped)
    try:
        with pytest.raises(SystemExit, match="stopped by signal SIGTERM"):
            Filesystem("ext4", work, size="64M")
    finally:
        signal.signal(signal.SIGTERM, old)
    assert len(attached) == 1 and attached[0].startswith("/dev/loop")
    assert loops_under(work) == {} and mounts_under(work) == []
    assert os.listdir(work) == []


def test_a_busy_mount_is_waited_for_then_left_or_detached_lazily(work):
    """A file held open keeps the mount busy: close() retries for its wait,
    then leaves it mounted and says so in one line; with lazy it unmounts
    it lazily and removes the rest, and the loop device goes once the file
    is closed. Leaving a with block on an error with the mount busy raises
    that error, the unmount's noted on it."""
    fs = Filesystem("ext4", work, size="64M", wait=0.3)
    held = open(fs.mnt / "held", "w")
    try:
        with pytest.raises(FilesystemError) as busy:
            fs.close()
        assert busy.value.step == "unmount"
        assert str(busy.value) == f"could not unmount {fs.mnt}: it stays mounted, on {fs.dev}"
        assert mounted(fs.mnt) and (fs.mnt / "held").exists()
        with pytest.raises(KeyError) as ended:
            with fs:
                raise KeyError("the block's own error")
        assert ended.value.__notes__ == [str(busy.value)]
        fs.close(wait=0, lazy=True)
        assert not mounted(fs.mnt) and os.listdir(work) == []
    finally:
        held.close()
    # the kernel frees a lazily unmounted file system, and its loop
    # device, once its last user goes
    deadline = time.monotonic() + 10
    while loops_under(work) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert loops_under(work) == {}
    fs.close()


def test_a_fuse_mirror_shows_the_directory_and_leaves_it(work, tmp_path):
    """bindfs's mirror of a given directory: what is in the one is in the
    other, and close() unmounts the mirror and leaves the directory and
    its files as they were."""
    over = tmp_path / "over"
    over.mkdir()
    (over / "kept").write_text("the caller's\n")
    with Filesystem("fuse", work, over=over) as fs:
        assert (fs.mnt / "kept").read_text() == "the caller's\n"
        (fs.fresh_dir("made") / "f").write_text("through the mirror\n")
        assert (over / "made" / "f").read_text() == "through the mirror\n"
    assert mounts_under(work) == [] and os.listdir(work) == []
    assert sorted(os.listdir(over)) == ["kept", "made"]


def test_a_missing_program_is_said_before_anything_is_made(work, monkeypatch):
    """No mkfs.xfs on PATH: FilesystemError("tool") naming it, and nothing
    left."""
    monkeypatch.setenv("PATH", str(work / "nothing"))
    with pytest.raises(FilesystemError) as missing:
        Filesystem("xfs", work, size="320M")
    assert missing.value.step == "tool"
    assert str(missing.value) == "cannot make xfs: mkfs.xfs is not installed"
    assert os.listdir(work) == []
