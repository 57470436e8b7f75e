"""Shared fixtures: real fio, the engines of the build under test, and real
file systems (tmpfs, loop devices) made and removed per test."""
import contextlib
import copy
import ctypes
import dataclasses
import errno
import fcntl
import functools
import itertools
import mmap
import os
import re
import shutil
import signal
import socket
import stat
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

ENGINE_DIR = Path(os.environ.get("MDFIO_ENGINE_DIR", Path(__file__).parent.parent / "build" / "engines"))
SOURCE_ROOT = Path(os.environ.get("MDFIO_SOURCE_ROOT", Path(__file__).parent.parent))
SANITIZER_REPORT = re.compile(r"ERROR: AddressSanitizer|runtime error:|LeakSanitizer")

# the package under test, from the source tree
sys.path.insert(0, str(SOURCE_ROOT / "tools"))
import mdfio.filesystems  # noqa: E402
import mdfio.fio  # noqa: E402
import mdfio.hosts  # noqa: E402
import mdfio.slurm  # noqa: E402
import mdfio.versitygw  # noqa: E402


def need_root(what):
    """Skips the test, saying why, when not run as root."""
    if os.geteuid() != 0:
        pytest.skip(f"needs root: {what}")


@functools.lru_cache(maxsize=None)
def io_uring_missing():
    """Why this process cannot set up an io_uring, or None when it can
    (kernels without it, kernel.io_uring_disabled, seccomp filters)."""
    libc = ctypes.CDLL(None, use_errno=True)
    params = ctypes.create_string_buffer(120)     # struct io_uring_params
    fd = libc.syscall(425, 1, params)              # io_uring_setup, the same number on every arch
    if fd >= 0:
        os.close(fd)
        return None
    err = ctypes.get_errno()
    return f"io_uring_setup fails here: {errno.errorcode.get(err, err)} ({os.strerror(err)})"


def engine_path(name="posix"):
    if name == "uring" and io_uring_missing():
        pytest.skip(f"mdfio-uring needs io_uring: {io_uring_missing()}")
    path = mdfio.fio.engine_path(ENGINE_DIR, name)
    assert path.is_file(), f"{path} not built"
    return path


ENGINES = ("posix", "uring", "aio")
NR_IOS = "posix-in-nr-ios-fio"


NR_IOS_FIO = "fio-3.33"     # the release fio-patch/io_u-nr-ios.patch applies to


def fio_src_version():
    """The fio release of the source tree the engines are built against."""
    src = Path(os.environ.get("MDFIO_FIO_SRC", SOURCE_ROOT / ".deps" / "fio"))
    text = (src / "FIO-VERSION-GEN").read_text()
    return re.search(r"^DEF_VER=(\S+)", text, re.M).group(1)


def path_first(directory):
    """PATH with directory first: its fio is the one tests run."""
    return f"{directory}:{os.environ['PATH']}"


@pytest.fixture(scope="session")
def nr_ios_fio():
    """The directory of a fio with fio-patch/io_u-nr-ios.patch, in which
    mdfio-posix runs several units per io_u."""
    version = fio_src_version()
    if version != NR_IOS_FIO:
        pytest.skip(f"fio-patch/io_u-nr-ios.patch is made for {NR_IOS_FIO}; the engines are built for {version}")
    out = ENGINE_DIR.parent / "fio-nr-ios"     # bench/run builds the same
    if not os.access(ENGINE_DIR.parent, os.W_OK):
        pytest.skip(f"cannot build the patched fio: {ENGINE_DIR.parent} is not writable")
    build_fio(out)
    return out


def build_fio(out, *flags):
    """fio-patch/build [flags] out, once: meson runs test files in
    parallel, and one builds while the others wait for it."""
    with open(ENGINE_DIR.parent / "fio-nr-ios.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        subprocess.run([str(SOURCE_ROOT / "fio-patch" / "build"), *flags, str(out)], check=True)


# mdfio-s3 in the core suite: the same phases against a versitygw of the
# test file's own, each test in a bucket of its own
S3 = "s3"
_BUCKETS = itertools.count()


class S3Engine(str):
    """The engine name "s3" with the store a test runs it against: the
    server and the test's bucket, which every jobfile names."""

    def __new__(cls, server, bucket):
        self = super().__new__(cls, S3)
        self.server, self.bucket = server, bucket
        return self

    @property
    def opts(self):
        return {"bucket": self.bucket}


def engine_opts(engine):
    """The options a jobfile of engine needs beside the core's: mdfio-s3's bucket=."""
    return getattr(engine, "opts", {})


@pytest.fixture(scope="session")
def versitygw():
    """One versitygw for the test file (its start is paid once), on
    127.0.0.1; the test is skipped where mdfio-s3 or versitygw is not built."""
    if not mdfio.fio.engine_path(ENGINE_DIR, S3).is_file():
        pytest.skip("mdfio-s3 not built (meson builds it only where libcurl is: ./setup installs "
                    "libcurl4-openssl-dev)")
    why = mdfio.versitygw.need_versitygw(SOURCE_ROOT)
    if why:
        pytest.skip(why)
    with mdfio.versitygw.server(SOURCE_ROOT) as srv:
        yield srv


@pytest.fixture
def s3_engine(versitygw, monkeypatch, request):
    """mdfio-s3 with a fresh bucket of the test's own; the test's fio
    runs (fio_env) get the server's endpoint and keys."""
    named = re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())
    bucket = f"t{next(_BUCKETS)}-{os.getpid()}-{named}"[:63].strip("-")
    versitygw.make_bucket(bucket)
    for k, v in versitygw.env().items():
        monkeypatch.setenv(k, v)
    return S3Engine(versitygw, bucket)


@pytest.fixture(params=ENGINES + (NR_IOS, S3))
def engine(request, monkeypatch):
    """Each engine in turn: one shared core, so one suite; mdfio-posix once
    more in the patched fio that counts several units per io_u; mdfio-s3
    against an S3 server (an S3Engine: see store_view for what a test sees
    of its namespace)."""
    if request.param == NR_IOS:
        monkeypatch.setenv("PATH", path_first(request.getfixturevalue("nr_ios_fio")))
        return "posix"
    if request.param == S3:
        return request.getfixturevalue("s3_engine")
    return request.param


def not_on_s3(why):
    """The engine parametrization of a test whose subject mdfio-s3 does not
    have (a POSIX file system's own behaviour): every engine but mdfio-s3,
    which is listed as skipped, with why."""
    return pytest.mark.parametrize("engine", [*ENGINES, NR_IOS, pytest.param(
        S3, marks=pytest.mark.skip(reason=f"mdfio-s3: {why}"))], indirect=True)


def fio_env(extra=None):
    env = dict(os.environ)
    preload = os.environ.get("MDFIO_PRELOAD")
    if preload:
        env["LD_PRELOAD"] = preload
        # fio itself leaks by design; the engine is what is checked here
        env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1:verify_asan_link_order=0"
        env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    for k in list(env):
        if k.startswith("MDW_"):
            del env[k]
    env.update(extra or {})
    return env


def client_env():
    """The environment of a fio client (--client): fio_env() without the
    sanitizers. A client loads no engine, so they would check fio alone,
    and ASan's realloc, which always copies, makes the growing buffer of
    fio's output quadratic: minutes of a client's CPU for one json+
    document of many sections."""
    env = fio_env()
    if os.environ.get("MDFIO_PRELOAD"):
        env.pop("LD_PRELOAD", None)
        if "LD_PRELOAD" in os.environ:
            env["LD_PRELOAD"] = os.environ["LD_PRELOAD"]
    return env


def run_fio(jobtext, tmp_path, env=None, args=(), prefix=(), check=None, timeout=600):
    """Runs fio on jobtext (mdfio.fio.run, in the test's environment);
    returns its FioRun. Fails the test on any sanitizer report, and with
    check=True/False unless fio succeeded/failed; raises TimeoutError past
    timeout seconds."""
    jobfile = tmp_path / f"job-{len(list(tmp_path.glob('job-*.fio')))}.fio"
    run = mdfio.fio.run(jobfile, jobtext, args=args, prefix=prefix, env=fio_env(env), timeout=timeout)
    assert not SANITIZER_REPORT.search(run.stderr), run.stderr
    if check is not None:
        assert (run.rc == 0) == check, f"rc={run.rc}\n{run.stderr}"
    return run


# md-workbench under data load, small enough for a test: each benchmark
# repeat and the data jobs' time per repeat are LOAD_TIME; steps enough that
# the stonewall timer, not the steps, ends each repeat on tmpfs
UNDER_LOAD = {"LOAD_TIME": "1", "LOAD_WRITE_SIZE": "16m", "LOAD_READ_SIZE": "16m"}
UNDER_LOAD_MDW = {"MDW_D": "4", "MDW_P": "10000", "MDW_I": "10000"}


def under_load_jobfile(repeats=2, load=None):
    """tools/mdfio-jobfile --under-load -R repeats in an environment of
    load's LOAD_* variables alone, naming the engine of the build under test."""
    env = {k: v for k, v in fio_env().items() if not k.startswith("LOAD_")}
    env.update(load or {})
    proc = subprocess.run([sys.executable, str(SOURCE_ROOT / "tools" / "mdfio-jobfile"), "--under-load",
                           "-R", str(repeats)], capture_output=True, text=True, env=env, check=True, timeout=60)
    line = "ioengine=external:./build/engines/mdfio-posix.so"
    assert line in proc.stdout
    return proc.stdout.replace(line, f"ioengine=external:{engine_path()}")


def run_under_load(fs, tmp_path, repeats=2, load=None, check=True):
    """Runs the under-load jobfile with md-workbench's root fs/out (the data
    jobs in fs/out.load) and UNDER_LOAD's sizes; its FioRun, and the path of
    its json+ output."""
    text = under_load_jobfile(repeats, {**UNDER_LOAD, **(load or {})})
    run = run_fio(text, tmp_path, env={**UNDER_LOAD_MDW, "MDW_ROOT": str(Path(fs) / "out")},
                  args=["--output-format=json+"], check=check, timeout=300)
    return run, sorted(tmp_path.glob("job-*.json"))[-1]


# IOR's mdtest: its phases in the order it runs them, the slot of fio's JSON
# mdfio-mdtest records each in, each one's title in mdtest's SUMMARY
# (tests/fixtures/mdtest/phases) and a figure of that table; one home for
# the tests of the engine and of mdfio-report
MDTEST_ORDER = ("tree_create", "dir_create", "dir_stat", "dir_rename", "dir_remove", "file_create", "file_stat",
                "file_read", "file_remove", "tree_remove")
MDTEST_SLOT = {"tree_create": "write", "dir_create": "write", "dir_stat": "read", "dir_rename": "write",
               "dir_remove": "trim", "file_create": "write", "file_stat": "read", "file_read": "read",
               "file_remove": "trim", "tree_remove": "trim"}
MDTEST_TITLES = {"dir_create": "Directory creation", "dir_stat": "Directory stat", "dir_rename": "Directory rename",
                 "dir_remove": "Directory removal", "file_create": "File creation", "file_stat": "File stat",
                 "file_read": "File read", "file_remove": "File removal", "tree_create": "Tree creation",
                 "tree_remove": "Tree removal"}
MDTEST_NUMBER = re.compile(r"-?[0-9]+\.[0-9]{3}")


# job()'s object size: md-workbench's default
OBJECT_SIZE = 3901


def job(phases, root, engine="posix", numjobs=1, bs=OBJECT_SIZE, **opts):
    """A jobfile with one section per phase name ('benchmark' may repeat)."""
    return mdfio.fio.jobfile(phases, root, engine_path(engine), numjobs=numjobs, bs=bs,
                             **engine_opts(engine), **opts)


def namespace(root):
    """{dataset dir name: sorted object indices} of everything mdfio-shaped."""
    found = {}
    for entry in sorted(Path(root).iterdir()):
        if entry.is_dir() and re.fullmatch(r"\d+_\d+", entry.name):
            found[entry.name] = sorted(int(p.name[5:]) for p in entry.iterdir()
                                       if re.fullmatch(r"file-\d+", p.name))
    return found


def expected(ranks, datasets, first, depth):
    return {f"{r}_{d}": list(range(first, first + depth)) for r in range(ranks) for d in range(datasets)}


def held(path, meta=False):
    """What path holds, without following a symlink and without opening
    anything but a regular file: its bytes, ("->", target) of a symlink,
    None for a directory, its file type's letter ("p", "s", "c", "b") for
    anything else. meta=True adds its mode, inode, link count, mtime,
    device numbers and, but for a directory or a symlink (listing one,
    reading the other's target, is reading it), its atime: on a
    strictatime mount any read of it shows. The bytes are read with
    O_NOATIME, so that looking is not reading."""
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        what = ("->", os.readlink(path))
    elif stat.S_ISDIR(st.st_mode):
        what = None
    elif stat.S_ISREG(st.st_mode):
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NOATIME)
        except PermissionError:     # O_NOATIME: only the owner, or root
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        with open(fd, "rb") as f:
            what = f.read()
    else:
        what = stat.filemode(st.st_mode)[0]
    if not meta:
        return what
    atime = None if stat.S_ISDIR(st.st_mode) or stat.S_ISLNK(st.st_mode) else st.st_atime_ns
    return what, st.st_mode, st.st_ino, st.st_nlink, st.st_mtime_ns, st.st_rdev, atime


def snapshot(root, meta=False):
    """{relative path: held(path, meta)} of everything under root."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = os.path.join(dirpath, name)
            out[os.path.relpath(p, root)] = held(p, meta)
    return out


def files(root):
    """Every path under root and its bytes (None: a directory); of the rank
    file, which every fio run on a namespace writes into (its ranks, its
    pid), whether it is there."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            keep = p.is_file() and p.name != "mdfio.ranks"
            out[str(p.relative_to(root))] = p.read_bytes() if keep else None
    return out


class PosixView:
    """What a test sees of a namespace whose coordination is in root, and
    does to it: with the POSIX engines the datasets are directories of
    root and their objects files. Names are relative to root (rank_d,
    rank_d/file-i, notes.txt)."""
    # what a live namespace holds beside its datasets and coordination
    claim = []
    # how the engine's line says a create found its name taken
    taken = "File exists"

    def __init__(self, root):
        self.root = Path(root)

    def name(self, rel):
        """How mdfio's messages name a dataset or object."""
        return f"{self.root}/{rel}"

    def namespace(self):
        return namespace(self.root)

    def put(self, rel, data):
        """Someone else's file (or key) rel holding data, in place of any."""
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def read(self, rel):
        return (self.root / rel).read_bytes()

    def remove(self, rel):
        (self.root / rel).unlink()

    def entries(self):
        """Every name the namespace and its coordination hold, sorted."""
        return sorted(files(self.root))

    def left(self):
        """entries(), but for empty updates of killed ranks."""
        return [n for n in self.entries() if not (KILLED_UPDATE.fullmatch(n) and
                                                  os.path.getsize(self.root / n) == 0)]

    def snapshot(self):
        """{name: bytes, None for a directory or a dataset's marker} of
        entries() (the rank file's bytes aside: see files())."""
        return files(self.root)


class S3View(PosixView):
    """A namespace of mdfio-s3: the coordination in root, the datasets in
    the test's bucket, seen and changed through the server's S3 API (a
    dataset's marker key rank_d/ shown as rank_d)."""
    claim = [".mdfio-namespace"]
    taken = "File exists (HTTP 412 PreconditionFailed)"

    def __init__(self, root, engine):
        super().__init__(root)
        self.server, self.bucket = engine.server, engine.bucket

    def name(self, rel):
        return f"s3://{self.bucket}/{rel}"

    def keys(self):
        return self.server.keys(self.bucket)

    def namespace(self):
        found = {}
        for key in self.keys():
            m = re.fullmatch(r"(\d+_\d+)/(?:file-(\d+))?", key)
            if m:
                found.setdefault(m[1], [])
                if m[2] is not None:
                    found[m[1]].append(int(m[2]))
        return {k: sorted(v) for k, v in sorted(found.items())}

    def put(self, rel, data):
        self.server.put(self.bucket, rel, data)

    def read(self, rel):
        status, body = self.server.request("GET", f"/{self.bucket}/{rel}")
        assert status == 200, (rel, status, body[:200])
        return body

    def remove(self, rel):
        self.server.delete(self.bucket, rel)

    def entries(self):
        return sorted(list(files(self.root)) + [k.removesuffix("/") for k in self.keys()])

    def left(self):
        return [n for n in self.entries() if not (KILLED_UPDATE.fullmatch(n) and
                                                  (self.root / n).is_file() and os.path.getsize(self.root / n) == 0)]

    def snapshot(self):
        out = files(self.root)
        for key in self.keys():
            out[key.removesuffix("/")] = None if key.endswith("/") else self.read(key)
        return out


def store_view(root, engine="posix"):
    """The test's view of the namespace engine keeps with coordination in root."""
    return S3View(root, engine) if isinstance(engine, S3Engine) else PosixView(root)


# what an object's stat says of each kind of file put at its name
ALIENS = {"symlink": "a symlink, which mdfio never follows", "FIFO": "a FIFO", "socket": "a socket",
          "directory": "a directory", "hard link": "a regular file of other than one link (a hard link)",
          "character device": "a character device"}


def put_alien(path, kind, victim, device=os.makedev(1, 5), link_to=None):
    """Puts kind at path, in place of the object there if any: a symlink to
    the victim's file of its name, a hard link to link_to (by default a
    new file beside the datasets, not-an-object), one of the file types no
    create makes (the device: /dev/zero's numbers unless given), a
    directory with a file in it ("directory with a file"), or a regular
    file of the user's ("user file")."""
    path.unlink(missing_ok=True)
    if kind == "symlink":
        path.symlink_to(victim / path.name)
    elif kind == "FIFO":
        os.mkfifo(path)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as s:
            s.bind(str(path))
    elif kind == "directory":
        path.mkdir()
    elif kind == "directory with a file":
        path.mkdir()
        (path / "notes.txt").write_bytes(b"the user's notes\n")
    elif kind == "hard link":
        if link_to is None:
            link_to = path.parent.parent / "not-an-object"
            link_to.write_bytes(b"precious\n")
        os.link(link_to, path)
    elif kind == "user file":
        path.write_bytes(b"the user's own %s\n" % path.name.encode())
    else:
        assert kind == "character device", kind
        os.mknod(path, 0o600 | stat.S_IFCHR, device)


def status_checksum(body):
    """The checksum line mdfio-status 4 ends with, of body (every line
    before it): FNV-1a, 64 bits, as engines/lib/status.c computes it."""
    h = 0xcbf29ce484222325
    for b in body.encode():
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"checksum {h:016x}\n"


def edit_status(root, change):
    """Rewrites root's mdfio.status in place (the same file, so the same
    inode) as change(body) makes its lines before the checksum, and
    recomputes the checksum: a state mdfio itself can leave (a kill in mid
    phase), made without waiting for one. Returns the new text."""
    path = Path(root) / "mdfio.status"
    text = path.read_text()
    body = change(text[:text.rindex("\nchecksum ") + 1])
    path.write_text(body + status_checksum(body))
    return path.read_text()


def bind_status(root):
    """Binds root's mdfio.status, copied from another root, to root and to
    its own file, as mdfio would have written it there."""
    ino = os.stat(Path(root) / "mdfio.status").st_ino
    return edit_status(root, lambda t: re.sub(r"^identity root-inode \d+ file-inode \d+$",
                                              f"identity root-inode {os.stat(root).st_ino} file-inode {ino}", t,
                                              count=1, flags=re.M))


def old_status(text, version):
    """text (an mdfio-status 4) as an older mdfio wrote it: version 1 (no
    steps), 2, or 3 (a root mdfio created); no identity, no checksum."""
    lines = [l for l in text.splitlines() if not l.startswith(("identity ", "checksum ", "taken ", "objects "))]
    lines[0] = f"mdfio-status {version}"
    if version < 3:
        lines = [l for l in lines if l != "root created-by-mdfio"]
    if version == 1:
        lines = [" ".join(f for i, f in enumerate(l.split()) if i != 4) if l.startswith("rank ") else l
                 for l in lines]
    return "\n".join(lines) + "\n"


def loops_under(path):
    """{loop device: its backing file} of the loop devices whose image is
    under path (also an image removed since: the kernel still names it)."""
    backing = {}
    for f in Path("/sys/block").glob("loop*/loop/backing_file"):
        try:
            name = f.read_text().strip()
        except OSError:
            continue
        if name.startswith(f"{path}/"):
            backing[f"/dev/{f.parent.parent.name}"] = name
    return backing


def mounts_under(path):
    """The mount points under path, from the kernel's mount table."""
    with open("/proc/self/mounts") as f:
        return [line.split()[1] for line in f if line.split()[1].startswith(f"{path}/")]


def filesystem(kind, **opts):
    """A mdfio.filesystems.Filesystem of kind for a test: the test is
    skipped where the machine cannot make one (a program missing, a loop
    device or the mount refused), and fails on any other error."""
    try:
        return mdfio.filesystems.Filesystem(kind, **opts)
    except mdfio.filesystems.FilesystemError as e:
        if e.step == "tool":
            pytest.skip(f"{e} (./setup installs it)")
        if e.step in ("losetup", "mount"):
            pytest.skip(str(e))
        raise


@contextlib.contextmanager
def mounted_tmpfs(options="size=512m", prefix="mdfio-tmpfs-"):
    """A tmpfs with mount options mounted on a fresh directory, unmounted
    (lazily, if busy) and removed on every way out; the test is skipped
    where none can be mounted."""
    need_root("mounts a tmpfs")
    fs = filesystem("tmpfs", size=None, options=options, prefix=prefix)
    try:
        yield fs.mnt
    finally:
        fs.close(wait=0, lazy=True)


@pytest.fixture
def tmpfs():
    """A fresh tmpfs of its own, so tests never see each other's files."""
    with mounted_tmpfs() as d:
        yield d


@pytest.fixture
def fusefs(tmpfs, tmp_path):
    """bindfs's FUSE mirror of a fresh tmpfs: every call a request to a
    daemon, as on a FUSE mount of an object store."""
    fs = filesystem("fuse", over=tmpfs, workdir=tmp_path)
    yield fs.mnt
    fs.close(wait=0, lazy=True)


@pytest.fixture
def work(tmp_path):
    """An empty work directory for images and mount points; whatever a
    failing test left mounted or attached there is removed after it."""
    work = tmp_path / "work"
    work.mkdir()
    yield work
    for mnt in mounts_under(work):
        subprocess.run(["umount", "-l", mnt], check=False)
    for dev in loops_under(work):
        subprocess.run(["losetup", "-d", dev], check=False)


@pytest.fixture
def loopfs(tmp_path):
    """make(fstype, size) -> mount point of a loop-mounted file system
    (ext4, xfs or btrfs, as mkfs makes it by default)."""
    need_root("mounts loop devices")
    made = []

    def make(fstype="ext4", size="64M"):
        made.append(filesystem(fstype, size=size, workdir=tmp_path))
        return made[-1].mnt

    yield make
    for fs in made:
        fs.close(wait=0, lazy=True)


# the ranks md-workbench runs on in the tests against the real program
MDW_RANKS = 2


# Open MPI as root on one machine, ranks unbound unless a test binds them
# (--bind-to); the single-copy mechanism needs ptrace rights a container
# may not grant
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}


def need_mpirun(what="fio runs its ranks under it"):
    """Skips the test, saying why, without Open MPI's mpirun."""
    if not shutil.which("mpirun"):
        pytest.skip(f"mpirun is not installed (openmpi-bin): {what}")


def wait_ended(pids, within, killed):
    """Waits until every process of pids has ended, at most within seconds
    after killed (what the test killed, for the line) ended; past that,
    kills them and fails."""
    end = time.monotonic() + within
    while left := [p for p in pids if mdfio.hosts.alive(p)]:
        if time.monotonic() > end:
            for p in left:
                os.kill(p, signal.SIGKILL)
            pytest.fail(f"processes {left} ran on {within} s after {killed} was killed")
        time.sleep(0.05)


# strace's line of a rank's shared lock of the rank file's header: one look
# at the file (a poll, or the look when the launcher's fence completes)
HEADER_LOOK = re.compile(r"F_OFD_SETLKW, \{l_type=F_RDLCK, l_whence=SEEK_SET, l_start=0, l_len=160\}")


def rank_file_looks(jobfile, trace, pmix, late=3, timeout=300):
    """Runs jobfile on 3 fio processes under mpirun, the last started late
    seconds after the others (so that theirs wait at the first barrier),
    with PMIx or (pmix False) with PMIX_NAMESPACE taken away; each fio under
    strace into trace.<rank>. Returns each rank's looks at the rank file's
    header."""
    script = (("" if pmix else "unset PMIX_NAMESPACE; ") +
              f'[ "$OMPI_COMM_WORLD_RANK" = 2 ] && sleep {late}; '
              f'exec strace -f -qq -e trace=fcntl -o "{trace}.$OMPI_COMM_WORLD_RANK" '
              f'fio --output-format=json --output="{trace}.$OMPI_COMM_WORLD_RANK.json" "{jobfile}"')
    proc = subprocess.run([*MPIRUN, "--bind-to", "none", "-np", "3", "sh", "-c", script],
                          capture_output=True, text=True, env=fio_env(MPI_ENV), timeout=timeout)
    assert proc.returncode == 0 and not SANITIZER_REPORT.search(proc.stdout + proc.stderr), proc.stderr
    return [len(HEADER_LOOK.findall(Path(f"{trace}.{r}").read_text())) for r in range(3)]


# MPICH's mpirun (Hydra) listens on every address of its network namespace,
# so it runs in a namespace of its own whose one address is loopback; its
# processes start by fork on this host, also inside a Slurm allocation
MPIRUN_MPICH = ["unshare", "-n", "sh", "-c", 'ip link set lo up && exec "$@"', "sh",
                "mpirun.mpich", "-launcher", "fork", "-hosts", "localhost"]


def need_mpich(what="fio runs its ranks under it"):
    """Skips the test, saying why, without MPICH's mpirun.mpich or a
    network namespace for it."""
    if not shutil.which("mpirun.mpich"):
        pytest.skip(f"mpirun.mpich is not installed (mpich; ./setup installs it): {what}")
    if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("ip"):
        pytest.skip("mpirun.mpich runs in a network namespace of its own: needs root, unshare and ip")


@pytest.fixture
def md_workbench():
    """run(args, cwd) -> the stdout of IOR's md-workbench on MDW_RANKS ranks
    under mpirun; skips without the binary (MDFIO_MD_WORKBENCH) or mpirun."""
    exe = os.environ.get("MDFIO_MD_WORKBENCH") or shutil.which("md-workbench")
    if not exe:
        pytest.skip("md-workbench not found: set MDFIO_MD_WORKBENCH to IOR's md-workbench binary "
                    "or put md-workbench on PATH (tests/fixtures/md-workbench/README.md builds it)")
    need_mpirun("md-workbench runs its ranks under it")
    env = dict(os.environ, **MPI_ENV)

    def run(args, cwd):
        proc = subprocess.run([*MPIRUN, "--bind-to", "none", "-np", str(MDW_RANKS), exe, *args],
                              capture_output=True, text=True, env=env, cwd=cwd, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert not SANITIZER_REPORT.search(proc.stderr), proc.stderr
        return proc.stdout
    return run


@pytest.fixture
def postmark():
    """run(commands, cwd) -> (stdout, the operations postmark made under cwd,
    as (kind, path below cwd)): Debian's postmark (MDFIO_POSTMARK, else on
    PATH) given commands as its configuration file, its location cwd, under
    strace; skips without postmark or strace."""
    exe = os.environ.get("MDFIO_POSTMARK") or shutil.which("postmark")
    if not exe or not shutil.which("strace"):
        pytest.skip("postmark or strace not found (./setup installs both; or set MDFIO_POSTMARK)")

    def run(commands, cwd):
        cfg, trace = Path(cwd).parent / "postmark.cfg", Path(cwd).parent / "postmark.strace"
        cfg.write_text(f"set location {cwd}\n" + "".join(c + "\n" for c in commands) + "run\nquit\n")
        proc = subprocess.run(["strace", "-f", "-qq", "-e", "trace=openat,unlink,unlinkat", "-o", trace,
                               exe, cfg], capture_output=True, text=True, cwd=cwd, timeout=300)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        ops, prefix = [], f'"{cwd}/'
        for line in trace.read_text().splitlines():
            at = line.find(prefix)
            if at < 0:
                continue
            name = line[at + len(prefix):line.index('"', at + 1)]
            kind = ("delete" if "unlink" in line[:at] else "append" if "O_APPEND" in line
                    else "create" if "O_CREAT" in line else "read")
            ops.append((kind, name))
        return proc.stdout, ops
    return run


@pytest.fixture(scope="session")
def slurm_cluster(tmp_path_factory):
    """A single-node Slurm cluster of the test session's own (mdfio.slurm),
    started once: its start is the slow part, and jobs end with their
    test."""
    why = mdfio.slurm.need_slurm()
    if why:
        pytest.skip(why)
    with mdfio.slurm.cluster(tmp_path_factory.mktemp("slurm")) as cluster:
        yield cluster


@pytest.fixture
def slurm(slurm_cluster):
    """The session's Slurm cluster, its daemons alive; every job the test
    left (a failed assertion, a timeout) cancelled and its processes
    killed after it."""
    dead = [name for name, proc in slurm_cluster.daemons.items() if proc.poll() is not None]
    assert not dead, "\n".join(f"{name} exited:\n{slurm_cluster.log(name)[-3000:]}" for name in dead)
    yield slurm_cluster
    slurm_cluster.cancel_all()


def parent_of(pid):
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


# a rank killed while it wrote a status update leaves that file
# (mdfio.status.<host>.<thread>.<n>.tmp); the cleanup that removes the
# status removes it too, unless it was killed before its first write (an
# empty file proves nothing)
KILLED_UPDATE = re.compile(r"mdfio\.status\..+\.tmp")


def but_killed_updates(names):
    return [n for n in names if not KILLED_UPDATE.fullmatch(n)]


def after_cleanup(root):
    """What a cleanup left in root, but for empty updates of killed ranks."""
    return [n for n in os.listdir(root) if not (KILLED_UPDATE.fullmatch(n) and os.path.getsize(root / n) == 0)]


def kill_fio_when(jobtext, tmp_path, ready, env=None):
    """Starts fio on jobtext (env: more of its environment) and kills it
    and its job processes with SIGKILL once ready() holds (within 60 s)."""
    jobfile = tmp_path / "killed.fio"
    jobfile.write_text(jobtext)
    proc = subprocess.Popen(["fio", str(jobfile)], env=fio_env(env), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 60
    while time.time() < deadline and not ready():
        time.sleep(0.05)
    # fio puts each job process in a group of its own: kill them by parent
    kids = [int(p) for p in os.listdir("/proc") if p.isdigit() and parent_of(p) == proc.pid]
    for pid in [proc.pid, *kids]:
        os.kill(pid, signal.SIGKILL)
    proc.wait()
    time.sleep(0.2)


# --- runs over a shared file system whose clients are separate -----------
# (test_gluster.py, test_ceph.py): each module gives a fixture shared_fs, a
# SharedFS of its file system, and the tests below run on it. A run here
# takes 3-10 s.

SHARED_D, SHARED_P, SHARED_I = 3, 8, 3
SHARED_TIMEOUT = 120    # s, any one fio client


@dataclasses.dataclass
class SharedFS:
    control: Path       # the test's own mount
    hostmount: Path     # each host's mount, in the host's mount namespace
    prelude: object     # () -> shell commands that mount hostmount (hosts.py's prelude)
    mount: object       # (path) -> another mount of the test's own there, with the same settings
    # (server) -> None: what ends a host's client cleanly before its
    # server is killed at the end of a test, where a killed client holds
    # what it held for a while (CephFS); None: nothing
    release: object = None


@pytest.fixture
def servers(request, tmp_path):
    """servers(n) -> n fio servers host1..hostn, torn down after the test."""
    why = mdfio.hosts.need_unshare()
    if why:
        pytest.skip(why)
    stack = []

    def start(n, names=None):
        # the servers load the engine under test: the sanitizers' runtime
        # and options too
        cm = mdfio.hosts.fio_servers(n, tmp_path, names=names, env=fio_env())
        stack.append(cm)
        return cm.__enter__()

    yield start
    for cm in reversed(stack):
        cm.__exit__(None, None, None)
    for log in tmp_path.glob("fio-server-*.log"):
        assert not SANITIZER_REPORT.search(log.read_text()), log.read_text()


@pytest.fixture
def shared_root(shared_fs, request):
    """A fresh root on the shared file system: (its path on the hosts'
    mounts, on the test's own)."""
    name = request.node.name.replace("[", "-").replace("]", "")
    mine = shared_fs.control / name
    mine.mkdir()
    return shared_fs.hostmount / name, mine


@pytest.fixture
def shared_servers(shared_fs, tmp_path):
    """servers(n) -> n fio servers host1..hostn, each with its own mount of
    the shared file system, torn down after the test."""
    stack = []

    def start(n):
        cm = mdfio.hosts.fio_servers(n, tmp_path, env=fio_env(), prelude=lambda i: shared_fs.prelude())
        servers = cm.__enter__()
        stack.append((cm, servers))
        return servers

    yield start
    for cm, servers in reversed(stack):
        try:
            for s in servers:
                if shared_fs.release and s.proc is not None:
                    shared_fs.release(s)
        finally:
            cm.__exit__(None, None, None)
    for log in tmp_path.glob("fio-server-*.log"):
        assert not SANITIZER_REPORT.search(log.read_text()), log.read_text()


def fio_client(servers, text, tmp_path, per_host=False, check=None, timeout=300):
    """fio --client for every server (fio servers, mdfio.hosts) running
    the job text: one hosts file, or (per_host) the per-host form
    --client=A job --client=B job. Its FioRun's messages are what the
    servers printed (in the client's output file, before its JSON) and
    the client's own output; no sanitizer report."""
    n = len(list(tmp_path.glob("client-*.fio")))
    job = tmp_path / f"client-{n}.fio"
    job.write_text(text)
    if per_host:
        args = [a for s in servers for a in (s.client_arg, str(job))][:-1]
    else:
        hosts = tmp_path / f"client-{n}.hosts"
        hosts.write_text("".join(f"ip:{s.address},{s.port}\n" for s in servers))
        args = [f"--client={hosts}"]
    run = mdfio.fio.run(job, args=args, env=client_env(), timeout=timeout)
    output = job.with_suffix(".json").read_text()
    run.messages = output[:output.find("\n{")] + run.stdout + run.stderr
    assert not SANITIZER_REPORT.search(run.messages), run.messages
    if check is not None:
        assert (run.rc == 0) == check, f"rc={run.rc}\n{run.messages}"
    return run


def shared_client(servers, text, tmp_path, check=None, timeout=SHARED_TIMEOUT):
    """A fio client of servers on the shared file system."""
    return fio_client(servers, text, tmp_path, check=check, timeout=timeout)


def shared_job(phases, root, servers, clones=1, **opts):
    opts = dict(dict(datasets=SHARED_D, precreate_per_set=SHARED_P, steps_per_set=SHARED_I), **opts)
    return mdfio.fio.jobfile(phases, root, engine_path(), numjobs=clones,
                             hosts=",".join(s.name for s in servers), verify_read=1, join_timeout=5, **opts)


def ofd(fd, kind, start, length, cmd=fcntl.F_OFD_SETLKW):
    """An open file description lock (fcntl's F_OFD_*) of kind on a range."""
    return fcntl.fcntl(fd, cmd, struct.pack("hhqqi4x", kind, os.SEEK_SET, start, length, 0))


def check_coherent(a, b):
    """What mdfio relies on across two clients (docs/hosts.md's P1, P4-P8),
    with a writer on directory a and a reader on the same directory b of
    another mount: an OFD lock on one conflicts with one on the other and
    F_OFD_GETLK there shows it; a pread on an open kept since before the
    write (under a read lock, as the barrier reads), a fresh open, O_DIRECT,
    the size and mtime see the other's write at once; names made, linked,
    renamed and removed show at once; O_EXCL and link() fail on a name the
    other made; a name renamed over shows the new file."""
    (a / "f").write_bytes(b"0" * 4096)
    w = os.open(a / "f", os.O_RDWR)
    r = os.open(b / "f", os.O_RDWR)
    try:
        assert os.pread(r, 8, 64) == b"0" * 8
        ofd(w, fcntl.F_WRLCK, 0, 10)
        with pytest.raises(BlockingIOError):
            ofd(r, fcntl.F_WRLCK, 0, 10, fcntl.F_OFD_SETLK)
        held = struct.unpack("hhqqi4x", ofd(r, fcntl.F_WRLCK, 0, 10, fcntl.F_OFD_GETLK))
        assert held[0] == fcntl.F_WRLCK, held
        ofd(w, fcntl.F_UNLCK, 0, 10)
        ofd(r, fcntl.F_WRLCK, 0, 10, fcntl.F_OFD_SETLK)
        ofd(r, fcntl.F_UNLCK, 0, 10)
        for i in range(1, 4):
            token = b"%08d" % i
            ofd(w, fcntl.F_WRLCK, 0, 160)
            os.pwrite(w, token, 64)
            ofd(w, fcntl.F_UNLCK, 0, 160)
            ofd(r, fcntl.F_RDLCK, 0, 160)
            assert os.pread(r, 8, 64) == token, "a kept open read stale data"
            ofd(r, fcntl.F_UNLCK, 0, 160)
            fresh = os.open(b / "f", os.O_RDONLY)
            assert os.pread(fresh, 8, 64) == token, "a fresh open read stale data"
            os.close(fresh)
        direct = os.open(b / "f", os.O_RDONLY | os.O_DIRECT)
        buf = mmap.mmap(-1, 4096)
        os.pwrite(w, b"direct!!", 64)
        os.preadv(direct, [buf], 0)
        assert buf[64:72] == b"direct!!"
        os.close(direct)
        mtime = os.stat(b / "f").st_mtime_ns
        time.sleep(0.01)
        os.pwrite(w, b"x", 5000)
        assert (os.stat(b / "f").st_size, os.fstat(r).st_size) == (5001, 5001)
        assert os.stat(b / "f").st_mtime_ns != mtime
    finally:
        os.close(w)
        os.close(r)
    assert not (b / "g").exists()
    (a / "g").write_bytes(b"g")
    assert (b / "g").exists()
    os.rename(a / "g", a / "h")
    assert not (b / "g").exists() and (b / "h").exists()
    os.link(a / "h", a / "i")
    assert (b / "i").exists()
    os.unlink(a / "i")
    assert not (b / "i").exists()
    assert sorted(os.listdir(b)) == ["f", "h"]
    with pytest.raises(FileExistsError):
        os.open(b / "h", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    with pytest.raises(FileExistsError):
        os.link(b / "f", b / "h")
    old = os.open(b / "h", os.O_RDONLY)
    try:
        (a / "h.tmp").write_bytes(b"new")
        os.rename(a / "h.tmp", a / "h")
        assert (b / "h").read_bytes() == b"new"
        assert os.stat(b / "h").st_ino != os.fstat(old).st_ino
    finally:
        os.close(old)


def check_status_replaced(a, b):
    """Two clients (directories a and b, one on each mount) replace the
    status in turn under its lock, as the ranks of a phase do across hosts,
    three processes on each: not a single lock fails."""
    helper = Path(os.environ.get("MDFIO_TEST_LIB_DIR", engine_path().parent.parent / "tests")) / "test_status"
    procs = [subprocess.Popen([helper, "replace", d, "5"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for d in (a, b) * 3]
    results = [p.communicate(timeout=SHARED_TIMEOUT) + (p.returncode,) for p in procs]
    for out, err, rc in results:
        assert rc == 0 and not SANITIZER_REPORT.search(err), err
    assert all(int(out) > 0 for out, _, _ in results), results


def check_run_over_hosts(hosts, root, tmp_path):
    """A precreate and two benchmarks over the hosts, each reading what
    another host wrote (verify_read), then a cleanup that empties the
    root."""
    theirs, mine = root
    run = shared_client(hosts, shared_job(["precreate", "benchmark", "benchmark"], theirs, hosts, rank_offset=1),
                        tmp_path, check=True)
    assert namespace(mine) == expected(len(hosts), SHARED_D, SHARED_I * 2, SHARED_P)
    for j in run.jobs():
        assert (j["error"], j["total_err"]) == (0, 0), j
        if j["jobname"].startswith("benchmark"):
            assert (j["read"]["total_ios"], j["read"]["drop_ios"]) == (SHARED_D * SHARED_I, 0)
    assert sorted(j["desc"].split()[3] for j in run.jobs(mdfio.fio.jobname("precreate", 0))) == sorted(
        f"host={s.name};" for s in hosts)
    shared_client(hosts, shared_job(["cleanup"], theirs, hosts), tmp_path, check=True)
    assert os.listdir(mine) == []


def check_refused_then_host_dies(hosts, root, tmp_path, locks_go_within=0):
    """Over two hosts: a cleanup by a plain fio on the test's mount while a
    benchmark runs is refused at once, naming the live run, and the run goes
    on; the second host killed mid-benchmark (its fio server and its
    client: its mount and its locks go) fails the client naming it;
    restarted with a new mount, a cleanup over both hosts empties the root.
    The cleanup is retried while the dead client's locks hold its ranks, for
    up to locks_go_within seconds after the kill (0: tried once). Returns
    the seconds from the kill to the client's end and to the cleanup
    accepted."""
    theirs, mine = root
    big = dict(precreate_per_set=300, steps_per_set=300)
    shared_client(hosts, shared_job(["precreate"], theirs, hosts, clones=2, **big), tmp_path, check=True)
    jobpath = tmp_path / "dies.fio"
    jobpath.write_text(shared_job(["benchmark"], theirs, hosts, clones=2, **big))
    hostfile = tmp_path / "dies.hosts"
    hostfile.write_text("".join(f"ip:{s.address},{s.port}\n" for s in hosts))
    proc = subprocess.Popen(["fio", f"--client={hostfile}", "--output-format=json", f"--output={tmp_path}/dies.json",
                             str(jobpath)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=client_env())
    try:
        deadline = time.monotonic() + 60
        while (mine / "mdfio.status").read_text().count("benchmarking") < 4:
            assert time.monotonic() < deadline and proc.poll() is None, "the benchmark did not start"
            time.sleep(0.01)
        second = mdfio.fio.run(tmp_path / "second.fio",
                               mdfio.fio.jobfile(["cleanup"], mine, engine_path(), numjobs=2, datasets=SHARED_D,
                                                 join_timeout=2, **big), env=fio_env(), timeout=SHARED_TIMEOUT)
        assert second.rc != 0
        assert "another fio run is using this namespace" in second.stderr, second.stderr
        assert proc.poll() is None, "the refused fio stopped the run"
        hosts[1].kill()
        killed = time.monotonic()
        out, _ = proc.communicate(timeout=SHARED_TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    ended = time.monotonic() - killed
    out += (tmp_path / "dies.json").read_text()
    assert proc.returncode != 0
    assert f"client: host={hosts[1].address} disconnected" in out, out
    hosts[1].restart()
    cleanup = shared_job(["cleanup"], theirs, hosts, clones=2, **big)
    while (run := shared_client(hosts, cleanup, tmp_path)).rc:
        assert "is taken by a live fio" in run.messages or "another fio run" in run.messages, run.messages
        assert time.monotonic() < killed + locks_go_within, (
            f"the dead host's locks still hold its ranks {time.monotonic() - killed:.0f} s after\n{run.messages}")
        time.sleep(1)
    assert os.listdir(mine) == []
    return ended, time.monotonic() - killed


# Synthetic histories (test_mdfio_compare.py, test_mdfio_plot_history.py):
# copies of one real run with seeded lognormal noise of this sd on every
# phase time and latency
RUN_NOISE = 0.03
_SYNTHETIC_RUNS = itertools.count()


def synthetic_outputs(outputs):
    """outputs with a line after fio's JSON naming a synthetic run: the
    history keeps each output once, and each synthetic run is a run."""
    number = next(_SYNTHETIC_RUNS)
    return [(name, f"{text}synthetic run {number}\n") for name, text in outputs]


def perturbed_run(run, rng, rate_factor=1.0, phase="benchmark"):
    """A copy of run (mdfio.figures.Run) whose phase times and latencies
    are each multiplied by a draw of noise (RUN_NOISE), the times of phase
    also divided by rate_factor: its rates are rate_factor times as high."""
    from mdfio.figures import LATENCY
    run = copy.deepcopy(run)
    for f in run.phases:
        f.t_max_s *= rng.lognormvariate(0, RUN_NOISE) / (rate_factor if f.phase == phase else 1)
        for o in f.ops.values():
            if o.count:
                scale = rng.lognormvariate(0, RUN_NOISE)
                for k in LATENCY:
                    setattr(o, k, getattr(o, k) * scale)
    return run
