"""The self-contained HTML pages (tools/mdfio/htmlpage.py): mdfio-report
--html of a saved run and mdfio-study report of a history made here from
it, parsed back with html.parser: nothing outside the page is referenced,
the report block is mdfio-report's text, hostile texts are escaped, the
figures decode as PNG, a run not completed says so, and the study's
tables hold the database's figures. No fio runs; gnuplot draws."""
import base64
import json
import sqlite3
import statistics
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from conftest import SOURCE_ROOT
from mdfio.figures import load_run
from mdfio.history import Environment, open_db, read_outputs, record

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
STUDY = SOURCE_ROOT / "tools" / "mdfio-study"
FIXTURE = SOURCE_ROOT / "tests" / "fixtures" / "fio" / "posix-2-ranks.json"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HOSTILE = '<script>alert("x")</script><img src="http://example.invalid/x.png"> & \'q\''
# the attributes that make a browser fetch or open something
FETCHING = {"src", "href", "srcset", "action", "formaction", "data", "poster", "background", "cite", "xlink:href",
            "manifest", "longdesc", "ping"}
ENV = Environment(hostname="node7", kernel="6.1.0-test", cpu_model="test CPU", cpus=4, memory_bytes=8 << 30,
                  directory="/tmp/mdfio-root", fs_type="xfs", mount_source="/dev/sdz1", mount_point="/tmp",
                  mount_options="rw,noatime", device_model="TEST DISK", mkfs_options="-b size=4096")


TMPFS_ENV = Environment(hostname="node1", kernel="6.1.0-test", cpu_model="test CPU", cpus=4, memory_bytes=8 << 30,
                        directory="/tmp/mdfio-root", fs_type="tmpfs", mount_source="tmpfs", mount_point="/tmp",
                        mount_options="rw,size=1g", device_model="unknown")


class Page(HTMLParser):
    """Every start tag with its attributes, the text of each pre, of
    each table (its caption and rows of cells) and of the alerts, and all
    text."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.tags, self.pres, self.tables, self.alerts, self.text, self.styles = [], [], [], [], [], []
        self.open = []          # the elements we are inside
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        self.tags.append((tag, attrs))
        if tag == "pre":
            self.pres.append("")
        elif tag == "table":
            self.tables.append({"caption": "", "rows": []})
        elif tag == "tr":
            self.tables[-1]["rows"].append([])
        elif tag in ("td", "th"):
            self.tables[-1]["rows"][-1].append("")
        elif tag == "div" and "alert" in (attrs.get("class") or ""):
            self.alerts.append("")
        if tag not in ("img", "meta", "br"):
            self.open.append((tag, attrs))

    def handle_endtag(self, tag):
        while self.open and self.open.pop()[0] != tag:
            pass

    def handle_data(self, data):
        self.text.append(data)
        inside = [t for t, _ in self.open]
        if "style" in inside:
            self.styles.append(data)
        if "pre" in inside:
            self.pres[-1] += data
        if "caption" in inside:
            self.tables[-1]["caption"] += data
        elif "td" in inside or "th" in inside:
            self.tables[-1]["rows"][-1][-1] += data
        if any(t == "div" and "alert" in (a.get("class") or "") for t, a in self.open):
            self.alerts[-1] += data

    def table(self, caption_start):
        [found] = [t for t in self.tables if t["caption"].startswith(caption_start)]
        return found["rows"]

    def pairs(self, caption_start=None):
        """The name-value rows of every two-column table (or of one)."""
        tables = self.tables if caption_start is None else [
            t for t in self.tables if t["caption"].startswith(caption_start)]
        return {r[0]: r[1] for t in tables for r in t["rows"] if len(r) == 2}


def assert_self_contained(page):
    """No element that loads or runs anything, no attribute that names
    anything but a data: URI or an anchor of the page, no event handler,
    no URL in the style; at least one figure, each a PNG that decodes."""
    ids = {a["id"] for _, a in page.tags if "id" in a}
    for tag, attrs in page.tags:
        assert tag not in ("script", "link", "iframe", "frame", "object", "embed", "base", "audio", "video",
                           "source", "track", "form"), tag
        for name, value in attrs.items():
            assert not name.startswith("on"), (tag, name)
            if name in FETCHING:
                assert value.startswith("data:") or value[1:] in ids and value.startswith("#"), (tag, name, value)
    style = "".join(page.styles)
    assert "url(" not in style and "@import" not in style
    images = [a["src"] for t, a in page.tags if t == "img"]
    assert images
    for src in images:
        head, data = src.split(",", 1)
        assert head == "data:image/png;base64"
        assert base64.b64decode(data, validate=True).startswith(PNG_MAGIC)
    return images


def report(*args):
    return subprocess.run([sys.executable, str(REPORT), *map(str, args)], capture_output=True, text=True,
                          timeout=120)


def test_run_page_holds_the_report_and_embeds_the_figures(tmp_path):
    page_path = tmp_path / "run.html"
    proc = report(FIXTURE, "--html", page_path)
    assert proc.returncode == 0, proc.stderr
    plain = report(FIXTURE)
    page = Page(page_path.read_text())
    # the report as mdfio-report prints it, to the byte (its time is the
    # run's, not the page's)
    assert page.pres[0] + "\n" == proc.stdout == plain.stdout
    images = assert_self_contained(page)
    # the figures of fio's JSON alone: a boxplot per phase and repeat, and
    # the rate of the repeats
    assert len(images) == 4 + 1
    assert not page.alerts
    params = page.pairs("md-workbench's parameters")
    assert (params["data-sets"], params["precreate-per-set"], params["obj-per-proc"], params["ranks"]) == (
        "2", "20", "10", "2")
    assert page.pairs("options of every section")["ioengine"] == "external:/usr/lib/mdfio/mdfio-posix.so"
    # not recorded: captured now, for a directory that is not here
    env = page.pairs()
    assert env["file system"] == "unknown" and env["versions"].endswith("/fio-3.33")


def test_hostile_texts_are_escaped_and_the_recorded_environment_shown(tmp_path):
    """A job name and a directory with markup in them, and a label that
    is markup: each shows as its text, none as an element. The run
    recorded before (with an environment given) shows that one."""
    doc = json.loads(FIXTURE.read_text())
    doc["global options"]["directory"] = f"/tmp/{HOSTILE}"
    for j in doc["jobs"]:
        if j["jobname"] == "benchmark-1":
            j["jobname"] = HOSTILE
    run_json = tmp_path / "hostile.json"
    run_json.write_text(json.dumps(doc))
    db = tmp_path / "h.db"
    con = open_db(db)
    record(con, load_run([run_json]), read_outputs([run_json]), label=HOSTILE, config_name="c", environment=ENV)
    con.close()
    page_path = tmp_path / "run.html"
    proc = report("--record", db, run_json, "--html", page_path)
    assert proc.returncode == 0 and "already recorded as run 1" in proc.stderr, proc.stderr
    text = page_path.read_text()
    page = Page(text)
    assert_self_contained(page)
    assert page.pres[0] + "\n" == proc.stdout and f"/tmp/{HOSTILE}" in page.pres[0]
    assert [r[0] for r in page.table("the sections")[1:]] == ["precreate-0", HOSTILE, "benchmark-2", "cleanup-3"]
    env = page.pairs()
    assert env["label"] == HOSTILE and env["directory"] == "/tmp/mdfio-root"
    assert (env["host"], env["file system"], env["mount options"], env["device model"], env["mkfs options"]) == (
        "node7", "xfs", "rw,noatime", "TEST DISK", "-b size=4096")
    assert "<script>" not in text and "http://example.invalid" not in "".join(
        v for _, a in page.tags for v in a.values() if v)


def test_a_run_not_completed_says_so(tmp_path):
    doc = json.loads(FIXTURE.read_text())
    doc["jobs"][2]["error"] = 5      # rank 0's first benchmark repeat
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc))
    page_path = tmp_path / "bad.html"
    proc = report(bad, "--html", page_path)
    assert proc.returncode == 1, proc.stderr
    page = Page(page_path.read_text())
    assert page.pres[0] + "\n" == proc.stdout
    [said] = page.alerts
    assert "did not complete" in said and "benchmark incomplete (repeat 1, job benchmark-1)" in said
    # the repeat not completed has no boxplot
    assert len(assert_self_contained(page)) == 3 + 1


def test_html_options_are_refused_where_they_cannot_go(tmp_path):
    for args, said in ((["--logs", "x"], "--logs: expected with --html"),
                       (["--json", "--html", tmp_path / "p.html"], "--html: not with --json"),
                       (["--html", tmp_path / "no" / "p.html"], "cannot write it")):
        proc = report(FIXTURE, *args)
        assert proc.returncode == 2 and said in proc.stderr, (args, proc.stderr)


STUDY_TOML = """\
[study]
name = "small"
repeats = 3

[parameters]
ranks = 2
D = 2
P = 20
I = 10
S = 3901
R = 2

[[filesystem]]
kind = "tmpfs"

[[filesystem]]
kind = "ext4"
name = "ext4-noatime"
mount_options = "noatime"
"""


def study_history(tmp_path, label):
    """A history of the study's two points as mdfio-study records them:
    the saved run with its times scaled (a spread to measure), three runs
    of the tmpfs point and two of ext4's."""
    run = load_run([FIXTURE])
    db = open_db(tmp_path / "h.db")
    n = 0
    for point, runs in (("tmpfs-posix-qd1-n2-D2-P20-I10-S3901-R2-O1-m0-M0-dc0", 3),
                        ("ext4-noatime-posix-qd1-n2-D2-P20-I10-S3901-R2-O1-m0-M0-dc0", 2)):
        for k in range(runs):
            n += 1
            scaled = load_run([FIXTURE])
            for f, g in zip(scaled.phases, run.phases):
                f.t_max_s = g.t_max_s * (1 + n / 10)
                f.obj_per_s = g.obj_per_s / (1 + n / 10)
            # each output once in the database: a line after the JSON tells them apart
            outputs = [(name, f"{text}run {n}\n") for name, text in read_outputs([FIXTURE])]
            record(db, scaled, outputs, label=label, config_name=f"small/{point}",
                   environment=ENV if "ext4" in point else TMPFS_ENV)
    # another label's run of the same point is not the study's
    record(db, run, [(str(FIXTURE), FIXTURE.read_text() + "other\n")], label="other", environment=ENV,
           config_name="small/tmpfs-posix-qd1-n2-D2-P20-I10-S3901-R2-O1-m0-M0-dc0")
    db.close()
    return tmp_path / "h.db"


def test_study_page(tmp_path):
    db = study_history(tmp_path, HOSTILE)
    toml = tmp_path / "small.toml"
    toml.write_text(STUDY_TOML)
    page_path = tmp_path / "study.html"
    proc = subprocess.run([sys.executable, str(STUDY), "report", toml, "--db", db, "--label", HOSTILE,
                           "--html", page_path], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    text = page_path.read_text()
    page = Page(text)
    assert_self_contained(page)
    # mdfio-plot --study's figures of the study's runs
    assert [a["alt"] for t, a in page.tags if t == "img"] == ["study-precreate", "study-benchmark",
                                                             "study-cleanup", "study-variability"]
    assert "<script>" not in text
    assert page.pres == [STUDY_TOML]
    # ext4's point has 2 of 3 runs: said at the top, with the label as text
    [said] = page.alerts
    assert HOSTILE in said and "ext4-noatime-posix-qd1-n2-D2-P20-I10-S3901-R2-O1-m0-M0-dc0: 2 of 3" in said
    con = sqlite3.connect(db)
    for phase in ("precreate", "benchmark", "cleanup"):
        header, *rows = page.table(f"{phase}: objects/s per point")
        assert header[:4] == ["file system", "runs", "n", "mean obj/s"]
        for row, (fs, runs) in zip(rows, (("tmpfs", 3), ("ext4-noatime", 2))):
            values = [v for (v,) in con.execute(
                "SELECT p.obj_per_s FROM phases p JOIN runs r ON r.id = p.run_id WHERE r.label = ? AND "
                "r.config_name LIKE ? AND p.phase = ?", (HOSTILE, f"small/{fs}-posix%", phase))]
            assert len(values) == runs * (2 if phase == "benchmark" else 1)
            assert row[:3] == [fs, str(runs), str(len(values))]
            assert float(row[3]) == pytest.approx(statistics.fmean(values), abs=0.051)
            assert float(row[4]) == pytest.approx(statistics.stdev(values), abs=0.051)
            assert (float(row[6]), float(row[7])) == pytest.approx((min(values), max(values)), abs=0.051)
    # the environments as recorded, each with its count of runs
    envs = page.table("the environments")
    assert [(r[0], r[5], r[-1]) for r in envs[1:]] == [("node1", "tmpfs", "3"), ("node7", "xfs", "2")]


def test_study_report_options(tmp_path):
    toml = tmp_path / "small.toml"
    toml.write_text(STUDY_TOML)
    tool = lambda *args: subprocess.run([sys.executable, str(STUDY), *map(str, args)], capture_output=True,
                                        text=True, timeout=60)
    for args, said in ((["report", toml, "--db", tmp_path / "h.db"], "report: --html PAGE is required"),
                       (["report", toml, "--html", tmp_path / "p.html"], "report: --db DB is required"),
                       (["list", toml, "--html", tmp_path / "p.html"], "--html: only with report"),
                       (["report", toml, "--db", tmp_path / "none.db", "--html", tmp_path / "p.html"],
                        "no such database")):
        proc = tool(*args)
        assert proc.returncode == 2 and said in proc.stderr, (args, proc.stderr)
    assert not (tmp_path / "p.html").exists()
