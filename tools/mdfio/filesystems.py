"""A fresh file system mounted for a benchmark or a test, made in one call
and removed in one: tmpfs; a FUSE mirror (bindfs) of a fresh tmpfs or of a
given directory; or ext4, xfs or btrfs on an image file on a loop device,
or on a named block device.
A set-up that fails or is stopped halfway (a mount refused, SIGTERM right
after losetup) undoes what it made, so no caller is left holding a loop
device it never heard of. The one implementation bench/run and the tests'
fixtures share."""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType

# the kinds of file system made here, and the programs each needs
KINDS = ("tmpfs", "fuse", "ext4", "xfs", "btrfs")
MKFS = {"ext4": ("mkfs.ext4", "-q", "-F"), "xfs": ("mkfs.xfs", "-q", "-f"), "btrfs": ("mkfs.btrfs", "-q", "-f")}


class FilesystemError(Exception):
    """A file system that could not be made, mounted or unmounted. str() is
    one line saying which and why; step is the step that failed: "tool" (a
    program is not installed), "image", "mkfs", "losetup", "mount", or
    "unmount" (a mount stayed busy). A caller tells from step whether the
    machine cannot make this kind at all (tool, losetup, mount: a test
    skips) or something went wrong (a test fails)."""

    def __init__(self, message: str, step: str) -> None:
        super().__init__(message)
        self.step = step


def mounted(path: str | os.PathLike[str]) -> bool:
    """Whether path is a mount point, as the kernel's mount table says: a
    FUSE mount whose daemon died is one, though stat fails on it."""
    real = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        # the table escapes a space, tab, newline and backslash as octal
        return any(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split()[1]) == real for line in f)


def release(mnt: str | os.PathLike[str], wait: float = 10.0) -> bool:
    """Unmounts mnt, retrying for up to wait seconds while it is busy (a
    killed fio's job processes, or bindfs's daemon, take a moment to let go
    of it); True once it is not mounted, False if it stays mounted."""
    deadline = time.monotonic() + wait
    while mounted(mnt):
        if subprocess.run(["umount", str(mnt)], capture_output=True).returncode == 0:
            break
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True


def _run(step: str, what: str, cmd: Sequence[str | os.PathLike[str]]) -> str:
    """Runs cmd; its stdout, or FilesystemError(step) saying what failed and
    the program's own words."""
    try:
        done = subprocess.run([str(c) for c in cmd], capture_output=True, text=True)
    except FileNotFoundError:
        raise FilesystemError(f"{what}: {cmd[0]} is not installed", "tool") from None
    if done.returncode:
        why = " ".join(line.strip() for line in done.stderr.splitlines() if line.strip())
        raise FilesystemError(f"{what}: {why or f'{cmd[0]} exited with {done.returncode}'}", step)
    return done.stdout


class Filesystem:
    """A fresh file system of kind mounted on a new directory under workdir
    (tempfile's directory if None) named prefix + random (prefix by default
    mdfio-<kind>-), unmounted and removed by close() or at the end of a
    with block.

    - tmpfs: size (its size= option, none if None) and options (mount
      options, comma-separated, as mount -o takes them);
    - fuse: bindfs's mirror of over, or of a fresh tmpfs of size beside the
      mount point (<mount>.back) if over is None: every call a request to a
      daemon, as on FUSE mounts of object stores; options go to bindfs -o;
    - ext4, xfs, btrfs: an image file of size (<mount>.img, as truncate -s
      takes it) made with mkfs.<kind> and mkfs_options, on a loop device
      (direct_io: the loop device reads and writes the image with direct
      I/O, so that the host's page cache does not hold the image a second
      time), mounted with options; or, with device, made with mkfs on
      that block device itself (no image, no loop device; size and
      direct_io do not apply): whatever the device held is lost, so the
      caller decides whether it may be formatted (mdfio.study asks blkid).

    Raises FilesystemError, having removed whatever it made, when a step
    fails; anything else raised during the set-up (KeyboardInterrupt, a
    signal handler's exception) also removes it first. wait is how long
    close() waits for a busy mount by default."""

    def __init__(self, kind: str, workdir: str | os.PathLike[str] | None = None, *, size: str | None = "4G",
                 options: str = "", mkfs_options: Sequence[str] = (), direct_io: bool = False,
                 over: str | os.PathLike[str] | None = None, prefix: str | None = None,
                 wait: float = 10.0, device: str | os.PathLike[str] | None = None) -> None:
        if kind not in KINDS:
            raise ValueError(f"unknown file system {kind}: expected one of {', '.join(KINDS)}")
        self.kind = kind
        self.wait = wait
        self.img: Path | None = None
        self.dev: str | None = None
        self.back: Path | None = None
        self.over = None if over is None else Path(over)
        if device is not None and kind not in MKFS:
            raise ValueError(f"{kind} is not made on a device: only {', '.join(MKFS)} are")
        self.device = None if device is None else str(device)
        self.mnt = Path(tempfile.mkdtemp(prefix=prefix or f"mdfio-{kind}-", dir=workdir))
        try:
            self._make(size, options, mkfs_options, direct_io)
        except BaseException:
            self.undo()
            raise

    def __enter__(self) -> Filesystem:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        try:
            self.close()
        except FilesystemError as e:
            # the error that ended the block is the one to see; this one
            # goes with it
            if exc is None:
                raise
            exc.add_note(str(e))

    def _make(self, size: str | None, options: str, mkfs_options: Sequence[str], direct_io: bool) -> None:
        if self.kind == "tmpfs":
            self._tmpfs(self.mnt, size, options)
        elif self.kind == "fuse":
            if not shutil.which("bindfs"):
                raise FilesystemError(f"cannot mount bindfs on {self.mnt}: bindfs is not installed", "tool")
            source = self.over
            if source is None:
                self.back = self.mnt.with_name(self.mnt.name + ".back")
                self.back.mkdir()
                self._tmpfs(self.back, size, "")
                source = self.back
            _run("mount", f"cannot mount bindfs on {self.mnt}",
                 ["bindfs", *(["-o", options] if options else []), source, self.mnt])
        else:
            self._loop(size, options, mkfs_options, direct_io)

    @staticmethod
    def _tmpfs(mnt: Path, size: str | None, options: str) -> None:
        opts = ",".join(o for o in ([f"size={size}"] if size else []) + options.split(",") if o)
        _run("mount", f"cannot mount a tmpfs on {mnt}",
             ["mount", "-t", "tmpfs", *(["-o", opts] if opts else []), "tmpfs", mnt])

    def _loop(self, size: str | None, options: str, mkfs_options: Sequence[str], direct_io: bool) -> None:
        mkfs = MKFS[self.kind]
        if self.device is not None:
            if not shutil.which(mkfs[0]):
                raise FilesystemError(f"cannot make {self.kind}: {mkfs[0]} is not installed", "tool")
            _run("mkfs", f"cannot make {self.kind} on {self.device}", [*mkfs, *mkfs_options, self.device])
            self.dev = self.device
            _run("mount", f"cannot mount {self.kind} ({self.dev}) on {self.mnt}",
                 ["mount", *(["-o", options] if options else []), self.dev, self.mnt])
            return
        if size is None:
            raise ValueError(f"{self.kind} on a loop device needs the size of its image")
        # a missing program is found before anything is made
        for tool in (mkfs[0], "losetup"):
            if not shutil.which(tool):
                raise FilesystemError(f"cannot make {self.kind}: {tool} is not installed", "tool")
        self.img = self.mnt.with_name(self.mnt.name + ".img")
        _run("image", f"cannot make the image {self.img}", ["truncate", "-s", size, self.img])
        _run("mkfs", f"cannot make {self.kind} on {self.img}", [*mkfs, *mkfs_options, self.img])
        self.dev = _run("losetup", f"cannot attach {self.img} to a loop device",
                        ["losetup", "--find", "--show", f"--direct-io={'on' if direct_io else 'off'}",
                         self.img]).strip()
        _run("mount", f"cannot mount {self.kind} ({self.dev}) on {self.mnt}",
             ["mount", *(["-o", options] if options else []), self.dev, self.mnt])

    def _detach(self) -> None:
        """Detaches every loop device on the image, also one losetup
        attached before it could say which, and removes the image."""
        if self.img is None or not self.img.exists():
            return
        attached = subprocess.run(["losetup", "-j", str(self.img)], capture_output=True, text=True).stdout
        for line in attached.splitlines():
            subprocess.run(["losetup", "-d", line.split(":", 1)[0]], capture_output=True)
        self.img.unlink()

    def _remove_dirs(self) -> None:
        # rmdir, not rmtree: a mount point that is still mounted (a
        # mirror's, of the caller's directory) must never be emptied
        for d in (self.mnt, self.back):
            if d is not None:
                with contextlib.suppress(OSError):
                    d.rmdir()

    def undo(self) -> None:
        """Removes whatever a set-up made before it failed: mounts (lazily:
        nothing of the caller's uses them), loop devices, the image, the
        directories."""
        for mnt in (self.mnt, self.back):
            if mnt is not None and mounted(mnt):
                subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        self._detach()
        self._remove_dirs()

    def close(self, wait: float | None = None, lazy: bool = False) -> None:
        """Unmounts and removes it all (again: nothing). A mount still busy
        after wait seconds (release(); None: the wait given when made) is, with lazy, unmounted lazily (out
        of the tree at once, freed by the kernel when its last user goes)
        and the rest removed; without, it stays mounted, with what it
        stands on, and FilesystemError("unmount") says so."""
        for mnt, on in ((self.mnt, self.dev or self.kind), (self.back, "tmpfs")):
            if mnt is None or release(mnt, self.wait if wait is None else wait):
                continue
            if not lazy:
                raise FilesystemError(f"could not unmount {mnt}: it stays mounted, on {on}", "unmount")
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True)
        self._detach()
        self._remove_dirs()

    def fresh_dir(self, name: str) -> Path:
        """An empty directory name at the top of the file system: what was
        there under that name is removed first."""
        d = self.mnt / name
        if d.exists():
            shutil.rmtree(d)
        d.mkdir()
        return d
