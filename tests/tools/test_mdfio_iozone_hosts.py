"""tools/mdfio-iozone --hosts: the sweep run at once on two "hosts", each a
fio server in a UTS namespace of its own on 127.0.0.2 and 127.0.0.3
(mdfio.hosts), each on its own file of one tmpfs; every table of the
report recomputed here from the kept fio client JSON, per host and summed
as IOzone's throughput mode sums its children; the hosts' files removed;
a host that cannot drop the page cache, or holds a file of the tool's
name, refused in one line before anything runs."""
import json
import re
import subprocess

import pytest

from conftest import SOURCE_ROOT, fio_env, need_root
import mdfio.hosts  # noqa: E402 (conftest puts the package on the path)
from mdfio.fiojson import read_documents  # noqa: E402

TOOL = SOURCE_ROOT / "tools" / "mdfio-iozone"
REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
TITLES = {"Writer report": "write", "Re-writer report": "rewrite", "Reader report": "read",
          "Re-Reader report": "reread", "Random read report": "randread", "Random write report": "randwrite"}
# the passes' data direction in fio's JSON
SLOT = {p: "read" if p.endswith("read") else "write" for p in TITLES.values()}
HOST_FILE = re.compile(r"/mdfio-iozone-([12])\.tmp")


def iozone(*args):
    return subprocess.run([str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=300)


def host_list(path, servers):
    """fio's host list of the servers (fio --client=FILE)."""
    path.write_text("".join(f"ip:{s.address},{s.port}\n" for s in servers))
    return path


def by_hand(out):
    """{(host, pass, file KB, record KB): bytes per second} from every kept
    client JSON of a sweep: bytes over the sum of the pass's I/O
    latencies, each pass having moved its whole file on its host's own
    file; the shell job before each test done on every host."""
    rates = {}
    for path in out.glob("*.json"):
        doc = read_documents(path.read_text(), str(path))[-1]
        jobs = [j for j in doc["client_stats"] if j["jobname"] != "All clients"]
        for j in jobs:
            if not j["jobname"].startswith("iozone-"):
                assert j["jobname"].endswith("-prepare") and j["read"]["io_bytes"] == 4096, (path, j)
                continue
            test = j["jobname"].removeprefix("iozone-")
            slot = j[SLOT[test]]
            m = re.match(r"([0-9]+)k-([0-9]+)k-", path.name)
            file_kb, record_kb = int(m.group(1)), int(m.group(2))
            assert j["error"] == 0 and slot["io_bytes"] == file_kb * 1024, (path, j)
            assert slot["lat_ns"]["N"] == file_kb // record_kb, (path, j)
            rates[(j["hostname"], test, file_kb, record_kb)] = slot["io_bytes"] / (
                slot["lat_ns"]["mean"] * slot["lat_ns"]["N"] / 1e9)
    return rates


def parse_tables(text):
    """{(host or None, pass, file KB, record KB): KB/s} of the report's
    tables: IOzone's titles for the sums, '<title>, <host>' for a host's."""
    found = {}
    for block in text.split("Excel output is below:\n", 1)[1].strip("\n").split("\n\n"):
        title, head, *rows = block.split("\n")
        name, _, host = title.strip('"').partition(", ")
        records = [int(r) for r in re.findall(r'  "([0-9]+)"', head)]
        for row in rows:
            m = re.fullmatch(r'"([0-9]+)"  ((?: [0-9]+ )+)', row)
            assert m, row
            for record, value in zip(records, m.group(2).split()):
                found[(host or None, TITLES[name], int(m.group(1)), record)] = int(value)
    return found


@pytest.fixture
def two_hosts(tmp_path):
    """Two fio servers; the second, with a prelude, sees
    /proc/sys/vm/drop_caches read-only when asked (the factory's
    argument), as in a container."""
    why = mdfio.hosts.need_unshare()
    if why:
        pytest.skip(why)
    stack = []

    def start(read_only_drop=False):
        ro = "mount --bind {0} {0} && mount -o remount,bind,ro {0}".format("/proc/sys/vm/drop_caches")
        cm = mdfio.hosts.fio_servers(2, tmp_path, env=fio_env(),
                                     prelude=(lambda i: ro if i == 1 else "true") if read_only_drop else None)
        stack.append(cm)
        return cm.__enter__()

    yield start
    for cm in reversed(stack):
        cm.__exit__(None, None, None)


def test_sweep_over_two_hosts(two_hosts, tmpfs, tmp_path):
    """Every test at once on both hosts, each on its own file: each host's
    table equals its rates recomputed from the kept client JSON, each
    summed table the sum of the hosts' rates in bytes per second cut to
    KB; the page cache dropped on each host before each test (the shell
    job before it moved its block); mdfio-report of the kept files prints
    the same; nothing is left in the directory."""
    need_root("drops the page cache on the hosts")
    servers = two_hosts()
    hosts = host_list(tmp_path / "hosts.list", servers)
    out = tmp_path / "out"
    proc = iozone("-n", 16, "-g", 16, "-y", 8, "-q", 16, "--hosts", hosts, "--directory", tmpfs, "--out", out)
    assert proc.returncode == 0, proc.stderr
    addresses = [s.address for s in servers]
    assert proc.stdout.startswith(
        f"mdfio-iozone: fio psync on {tmpfs}, buffered, page cache dropped before each test, on 2 hosts at once "
        f"({', '.join(addresses)})\n"), proc.stdout
    table = parse_tables(proc.stdout)
    rates = by_hand(out)
    assert sorted(rates) == sorted(k for k in table if k[0] is not None), (sorted(rates), sorted(table))
    assert len(rates) == 2 * 6 * 2, rates
    for (host, test, file_kb, record_kb), rate in rates.items():
        assert table[(host, test, file_kb, record_kb)] == int(rate) >> 10
    for test in TITLES.values():
        for record_kb in (8, 16):
            total = sum(rates[(h, test, 16, record_kb)] for h in addresses)
            assert table[(None, test, 16, record_kb)] == int(total) >> 10, (test, record_kb)
    # each host wrote its own file, named by its place in the list
    for job in out.glob("*.host[12].fio"):
        n = job.name[-5]
        assert f"\nfilename={tmpfs}/mdfio-iozone-{n}.tmp\n" in job.read_text(), job
        assert "echo 3 > /proc/sys/vm/drop_caches" in job.read_text(), job
    assert list(tmpfs.iterdir()) == []
    again = subprocess.run([str(REPORT), *sorted(out.glob("*.json"))], capture_output=True, text=True, timeout=120)
    assert (again.returncode, again.stdout, again.stderr) == (0, proc.stdout, ""), again
    doc = json.loads(subprocess.run([str(REPORT), "--json", *out.glob("*.json")], capture_output=True, text=True,
                                    timeout=120).stdout)
    assert doc["hosts"] == addresses
    files = {(c["host"], HOST_FILE.search(c["filename"]).group(1)) for c in doc["cells"]}
    assert files == {(addresses[0], "1"), (addresses[1], "2")}, files
    assert {(t["test"], t["file_kb"], t["record_kb"]): t["kb_per_s"] for t in doc["totals"]} == {
        k[1:]: v for k, v in table.items() if k[0] is None}
    assert (out / "reread-surface.png").read_bytes()[:4] == b"\x89PNG"


def test_host_without_drop(two_hosts, tmpfs, tmp_path):
    """A host whose /proc/sys/vm/drop_caches is read-only: refused in one
    line naming it, before any test runs; --no-drop-caches runs there.
    A file of the tool's name on one host: refused, and kept."""
    need_root("mounts in the hosts' namespaces")
    servers = two_hosts(read_only_drop=True)
    hosts = host_list(tmp_path / "hosts.list", servers)
    out = tmp_path / "out"
    proc = iozone("-n", 8, "-g", 8, "-y", 8, "-q", 8, "-i", 0, "--hosts", hosts, "--directory", tmpfs, "--out", out)
    assert (proc.returncode, proc.stdout) == (2, ""), proc
    assert proc.stderr == (f"mdfio-iozone: --drop-caches: host {servers[1].address}: cannot write "
                           "/proc/sys/vm/drop_caches (run its fio server as root, or give --no-drop-caches to "
                           "measure with what the cache holds)\n"), proc.stderr
    assert list(out.glob("*.json")) == [] and list(tmpfs.iterdir()) == []

    theirs = tmpfs / "mdfio-iozone-1.tmp"
    theirs.write_text("theirs")
    proc = iozone("-n", 8, "-g", 8, "-y", 8, "-q", 8, "-i", 0, "--no-drop-caches", "--hosts", hosts,
                  "--directory", tmpfs, "--out", tmp_path / "out2")
    assert (proc.returncode, proc.stderr) == (2, f"mdfio-iozone: --directory {tmpfs}: host {servers[0].address}: "
                                                 "mdfio-iozone-1.tmp is there already; not the tool's to "
                                                 "overwrite: remove it, or give another directory\n"), proc
    assert [p.name for p in tmpfs.iterdir()] == ["mdfio-iozone-1.tmp"] and theirs.read_text() == "theirs"

    theirs.unlink()
    proc = iozone("-n", 8, "-g", 8, "-y", 8, "-q", 8, "-i", 0, "--no-drop-caches", "--hosts", hosts,
                  "--directory", tmpfs, "--out", tmp_path / "out3")
    assert proc.returncode == 0, proc.stderr
    assert "page cache not dropped (--no-drop-caches), on 2 hosts at once" in proc.stdout
    assert list(tmpfs.iterdir()) == []


@pytest.mark.parametrize("args, line", [
    (["--directory", "relative"], "mdfio-iozone: --directory relative: with --hosts, expected an absolute path of "
                                  "letters, digits and _.+@/- (fio runs the tool's commands on the hosts "
                                  "through a shell)"),
    (["--directory", "/tmp/a b"], "mdfio-iozone: --directory /tmp/a b: with --hosts, expected an absolute path of "
                                  "letters, digits and _.+@/- (fio runs the tool's commands on the hosts "
                                  "through a shell)"),
    (["--hosts", "EMPTY"], "mdfio-iozone: --hosts EMPTY: no host in it: expected fio's host list, one fio server "
                           "a line"),
    (["--hosts", "UNREACHABLE"], "mdfio-iozone: --hosts UNREACHABLE: fio could not run on them: fio: failed to "
                                 "connect to 127.0.0.2:1"),
])
def test_bad_hosts_input(args, line, tmp_path):
    (tmp_path / "empty").write_text("# no host\n\n")
    (tmp_path / "unreachable").write_text("ip:127.0.0.2,1\n")
    names = {"EMPTY": tmp_path / "empty", "UNREACHABLE": tmp_path / "unreachable"}
    args = [str(names.get(a, a)) for a in args]
    if "--hosts" not in args:
        args += ["--hosts", str(tmp_path / "unreachable")]
    if "--directory" not in args:
        args += ["--directory", str(tmp_path)]
    proc = iozone("-n", 64, "-g", 64, "--no-drop-caches", *args, "--out", tmp_path / "out")
    line = line.replace("EMPTY", str(tmp_path / "empty")).replace("UNREACHABLE", str(tmp_path / "unreachable"))
    assert (proc.returncode, proc.stderr, proc.stdout) == (2, line + "\n", ""), proc
