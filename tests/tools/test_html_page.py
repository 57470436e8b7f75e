"""The self-contained HTML pages (tools/mdfio/htmlpage.py): mdfio-report
--html of a saved run, parsed back with html.parser: nothing outside the
page is referenced, the report block is mdfio-report's text, hostile
texts are escaped, the figures decode as PNG, a run not completed says
so. No fio runs; gnuplot draws."""
import base64
import json
import subprocess
import sys
from html.parser import HTMLParser

from conftest import SOURCE_ROOT
from mdfio.figures import load_run
from mdfio.history import Environment, open_db, read_outputs, record

REPORT = SOURCE_ROOT / "tools" / "mdfio-report"
FIXTURE = SOURCE_ROOT / "tests" / "fixtures" / "fio" / "posix-2-ranks.json"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
HOSTILE = '<script>alert("x")</script><img src="http://example.invalid/x.png"> & \'q\''
# the attributes that make a browser fetch or open something
FETCHING = {"src", "href", "srcset", "action", "formaction", "data", "poster", "background", "cite", "xlink:href",
            "manifest", "longdesc", "ping"}
ENV = Environment(hostname="node7", kernel="6.1.0-test", cpu_model="test CPU", cpus=4, memory_bytes=8 << 30,
                  directory="/tmp/mdfio-root", fs_type="xfs", mount_source="/dev/sdz1", mount_point="/tmp",
                  mount_options="rw,noatime", device_model="TEST DISK", mkfs_options="-b size=4096")


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
