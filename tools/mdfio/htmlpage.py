"""One self-contained HTML page to hand over: of a run (mdfio-report
--html: the report, the parameters, the environment, the figures) or of
a study (mdfio-study report: its file, a table per phase of objects/s
per point, the environment of its runs, mdfio-plot --study's figures).
Every figure is a PNG in a data: URI and the style is inline: no script,
no reference to any other file or address, so that the page reads the
same attached to a mail, opened from a disk or archived. Every text that
comes from a run, a study file or a database is escaped (html.escape)
where it is written, by the few functions below that write markup."""
from __future__ import annotations

import base64
import datetime
import html
import json
import sqlite3
import statistics
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any

from . import VERSION
from .fiojson import BadInput
from .figures import Run
from .history import capture_environment
from .plot import plot_run
from .plot_study import plot_study, study_runs
from .report import mark_line
from .study import PARAMETERS, Point, Study, config_name
from .workloads import RATE_UNIT

PHASES = ("precreate", "benchmark", "cleanup")

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1250px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
nav a { margin-right: 1em; } .meta { color: #555; }
pre { background: #f6f6f6; border: 1px solid #ddd; padding: 0.8em; font-size: 13px; white-space: pre-wrap;
      overflow-wrap: anywhere; }
table { border-collapse: collapse; margin: 0.6em 0 1.2em; } caption { text-align: left; font-weight: bold; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.6em; vertical-align: top; text-align: left; }
th { background: #f0f0f0; } td.num { text-align: right; font-variant-numeric: tabular-nums; }
.alert { border: 2px solid #b00; background: #fff0f0; color: #700; padding: 0.6em 1em; margin: 1em 0; }
.note { border-left: 4px solid #888; padding-left: 0.8em; color: #444; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #555; }
"""


def esc(value: object) -> str:
    """A text for the page: <, >, &, and both quotes escaped."""
    return html.escape(str(value), quote=True)


def cell(value: object) -> str:
    """A table cell: numbers right-aligned, None as a dash."""
    if value is None:
        return "<td>–</td>"
    if isinstance(value, bool):     # as the study file writes it
        return f"<td>{'true' if value else 'false'}</td>"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'<td class="num">{esc(value)}</td>'
    return f"<td>{esc(value)}</td>"


def table(header: Sequence[str], rows: Iterable[Sequence[object]], caption: str | None = None) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(map(cell, row)) + "</tr>" for row in rows)
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    return f"<table>{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def pairs(rows: Iterable[tuple[str, object]], caption: str | None = None) -> str:
    """A table of name and value, one row each."""
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    body = "".join(f"<tr><th>{esc(k)}</th>{cell(v)}</tr>" for k, v in rows)
    return f"<table>{cap}<tbody>{body}</tbody></table>"


def pre(text: str) -> str:
    return f"<pre>{esc(text)}</pre>"


def alert(title: str, lines: Sequence[str]) -> str:
    """What a reader must not miss, at the top of the page, in red."""
    items = "".join(f"<li>{esc(line)}</li>" for line in lines)
    return f'<div class="alert"><strong>{esc(title)}</strong><ul>{items}</ul></div>'


def note(text: str) -> str:
    return f'<p class="note">{esc(text)}</p>'


def png_figure(path: Path, caption: str) -> str:
    """The PNG at path, embedded as a data: URI, with its caption."""
    data = base64.b64encode(path.read_bytes()).decode("ascii")
    return (f'<figure><img alt="{esc(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{esc(caption)}</figcaption></figure>")


def document(title: str, subtitle: str, alerts: Sequence[str], sections: Sequence[tuple[str, str, str]]) -> str:
    """The page: its title, the alerts, a list of links to the sections
    (anchor, heading, markup), then the sections. The anchors are this
    module's own words, never a run's text."""
    nav = "".join(f'<a href="#{a}">{esc(h)}</a>' for a, h, _ in sections)
    body = "".join(f'<section id="{a}"><h2>{esc(h)}</h2>{markup}</section>' for a, h, markup in sections)
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{esc(title)}</title><style>{STYLE}</style></head><body>"
            f'<h1>{esc(title)}</h1><p class="meta">{esc(subtitle)}</p>{"".join(alerts)}<nav>{nav}</nav>'
            f"{body}</body></html>\n")


def write_page(path: str, text: str) -> None:
    """Writes the page; a failure is one line (BadInput)."""
    try:
        Path(path).write_text(text, encoding="utf-8")
    except OSError as e:
        raise BadInput(f"--html {path}: cannot write it: {e.strerror}") from None


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def gib(n: int | None) -> str | None:
    return None if n is None else f"{n / 2**30:.1f} GiB ({n} bytes)"


# --- a run -------------------------------------------------------------

def run_problems(run: Run) -> list[str]:
    """Each reason the run's figures are not a whole run's: fio or the
    engine refused it, a phase not every rank completed (as the report's
    mark line says it), errors, a rank's fio error."""
    lines = [run.refused()] if run.refused() else []
    lines += [mark_line(m) + " (no figures, not drawn)" for m in run.marks]
    if run.errors:
        lines.append(f"the run reported {run.errors} errors: the report's lines with 'errs!!!' say where")
    lines += run.failed()
    return lines


def options_markup(run: Run) -> str:
    """fio's and the engine's options of the run's sections: those every
    section has alike, then each section's own."""
    secs = run.sections
    common = {k: v for k, v in secs[0].opts.items() if all(x.opts.get(k) == v for x in secs)}
    rows = [(x.name, x.phase, run.repeat_of.get(x.name) or "",
             " ".join(f"{k}={v}" for k, v in x.opts.items() if k not in common)) for x in secs]
    return (pairs(sorted(common.items()), "options of every section (global and job options, from fio's JSON)")
            + table(("section", "phase", "repeat", "its own options"), rows, "the sections, in the run's order"))


def parameters_markup(run: Run) -> str:
    args = "md-workbench" + "".join(f' "{a}"' for a in run.md_workbench_args())
    mdw = [*run.params().items(), ("total objects", run.total_objects),
           ("working set (MiB)", round(run.working_set, 3))]
    return (pairs(mdw, "md-workbench's parameters") + "<p>The md-workbench command line of the same run:</p>"
            + pre(args) + options_markup(run))


ENV_ROWS = (("hostname", "host"), ("kernel", "kernel"), ("cpu_model", "CPU"), ("cpus", "CPUs"),
            ("memory_bytes", "memory"), ("directory", "directory"), ("fs_type", "file system"),
            ("mount_source", "mount source"), ("mount_point", "mount point"), ("mount_options", "mount options"),
            ("device_model", "device model"), ("mkfs_options", "mkfs options"))


def environment_markup(env: Mapping[str, Any], run: Run, origin: str) -> str:
    rows = [(name, gib(env.get(key)) if key == "memory_bytes" else env.get(key)) for key, name in ENV_ROWS]
    rows += [("ranks", run.ranks), ("hosts of the ranks", ", ".join(run.hosts) or "not in fio's JSON (one fio)"),
             ("Nodemap", run.nodemap()), ("versions", run.version)]
    if env.get("label") is not None:
        rows.append(("label", env["label"]))
    if env.get("config_name") is not None:
        rows.append(("configuration name", env["config_name"]))
    return note(origin) + pairs(rows)


def run_figures(run: Run, logs: str | None) -> tuple[str, str | None]:
    """mdfio-plot's figures of the run, drawn in a scratch directory and
    embedded; and the line of those skipped for lack of logs."""
    with tempfile.TemporaryDirectory(prefix="mdfio-html-") as scratch:
        out = Path(scratch)
        made, skipped = plot_run(out, run, logs)
        markup = "".join(png_figure(out / f"{name}.png", name) for name in made)
    return markup or "<p>No figure: no phase completed on every rank.</p>", skipped


def run_page(run: Run, report_lines: Sequence[str], logs: str | None = None,
             recorded: Mapping[str, Any] | None = None) -> str:
    """The page of run: report_lines as mdfio-report prints them, its
    parameters, its environment (recorded: as the history holds it, from
    history.recorded_environment; else captured here, now) and
    mdfio-plot's figures (logs: the latency_log= prefix)."""
    if recorded is not None:
        env = recorded
        origin = (f"As recorded in the history database with run {recorded['run_id']}, at "
                  f"{recorded['recorded_at']}.")
    else:
        env = asdict(capture_environment(str(run.params()["root"])))
        origin = (f"Captured on {env['hostname']} at {now()}, when this page was written, for the run's directory "
                  "as it is then: not recorded with the run (mdfio-report --record does that right after it), so a "
                  "directory gone or mounted elsewhere since shows as it is now.")
    figures, skipped = run_figures(run, logs)
    problems = run_problems(run)
    alerts = [alert("This run did not complete as a whole: its figures are not a whole run's.", problems)] \
        if problems else []
    sections = [("report", "md-workbench report", pre("\n".join(report_lines))),
                ("parameters", "Parameters", parameters_markup(run)),
                ("environment", "Environment", environment_markup(env, run, origin)),
                ("figures", "Figures", (note(skipped) if skipped else "") + figures)]
    subtitle = f"{run.name}; written by mdfio-report {VERSION} at {now()}"
    return document(f"mdfio run: {Path(run.name.split(', ')[0]).name}", subtitle, alerts, sections)


# --- a study -----------------------------------------------------------

def point_runs(db: sqlite3.Connection, study: Study, label: str) -> dict[str, list[int]]:
    """The ids of each point's runs recorded under label, by point name."""
    return {p.name: [r for (r,) in db.execute("SELECT id FROM runs WHERE config_name = ? AND label = ? ORDER BY id",
                                              (config_name(study, p), label))] for p in study.points()}


def spread(values: Sequence[float]) -> tuple[Any, ...]:
    """n, mean, standard deviation (of the sample), its % of the mean,
    min and max; None where there is none."""
    if not values:
        return (0, None, None, None, None, None)
    mean = statistics.fmean(values)
    sd = statistics.stdev(values) if len(values) > 1 else None
    pct = None if sd is None or mean == 0 else round(sd / mean * 100, 1)
    r = lambda v: None if v is None else round(v, 1)
    return (len(values), r(mean), r(sd), pct, r(min(values)), r(max(values)))


def dimensions(study: Study) -> list[str]:
    """The parameters that take more than one value (P too when fixed_count sets it)."""
    if study.workload != "md-workbench":
        return [k for k, v in study.parameters.items() if len(v) > 1]
    dims = [k for k in PARAMETERS if len(study.parameters[k]) > 1]
    if study.fixed_count and "P" not in dims and len({p.values["P"] for p in study.points()}) > 1:
        dims.insert(list(PARAMETERS).index("P"), "P")
    return dims


def point_cells(point: Point, dims: Sequence[str]) -> list[object]:
    return [point.filesystem.name, *(point.values[k] for k in dims)]


def spread_table(db: sqlite3.Connection, study: Study, runs: Mapping[str, list[int]], query: str,
                 args: Sequence[object], unit: str, title: str) -> str:
    """A rate per point, over every run of the point: query selects the
    values of runs whose ids it is given last ("run_id IN ({ids})"), in
    order."""
    dims = dimensions(study)
    rows = []
    for p in study.points():
        ids = runs[p.name]
        values = [v for (v,) in db.execute(query.format(ids=", ".join("?" * len(ids))), (*args, *ids))] \
            if ids else []
        rows.append([*point_cells(p, dims), len(ids), *spread(values)])
    return table(["file system", *dims, "runs", "n", f"mean {unit}", "sd", "sd % of mean", "min", "max"], rows,
                 title)


def phase_table(db: sqlite3.Connection, study: Study, runs: Mapping[str, list[int]], phase: str) -> str:
    """objects/s of phase per point: over every run of the point and,
    for the benchmark, every repeat of each."""
    what = "every benchmark repeat of every run" if phase == "benchmark" else "one per run"
    return spread_table(db, study, runs,
                        "SELECT obj_per_s FROM phases WHERE phase = ? AND obj_per_s IS NOT NULL AND run_id IN "
                        "({ids}) ORDER BY run_id, position", (phase,), "obj/s",
                        f"{phase}: objects/s per point ({what})")


def op_table(db: sqlite3.Connection, study: Study, runs: Mapping[str, list[int]], phase: str, op: str,
             unit: str) -> str:
    """Another workload's rate of op in phase per point: over every run
    of the point and every repeat (mdtest's iterations) of each."""
    return spread_table(db, study, runs,
                        "SELECT o.rate FROM ops o JOIN phases ph ON ph.run_id = o.run_id AND "
                        "ph.position = o.position WHERE ph.phase = ? AND o.op = ? AND o.rate IS NOT NULL "
                        "AND o.run_id IN ({ids}) ORDER BY o.run_id, o.position", (phase, op), unit,
                        f"{phase}: {op} {unit} per point")


def workload_tables(db: sqlite3.Connection, study: Study, runs: Mapping[str, list[int]]) -> str:
    """A table per phase and operation the history keeps of the study's
    workload (docs/reports.md "Other workloads in the history"), in the
    order recorded."""
    ids = [r for rs in runs.values() for r in rs]
    if not ids:
        return "<p>No run recorded.</p>"
    pairs_ = db.execute(f"SELECT ph.phase, o.op FROM ops o JOIN phases ph ON ph.run_id = o.run_id AND "
                        f"ph.position = o.position WHERE o.run_id IN ({', '.join('?' * len(ids))}) "
                        f"GROUP BY ph.phase, o.op ORDER BY min(o.run_id * 100000 + o.position), o.op", ids).fetchall()
    return "".join(op_table(db, study, runs, ph, op, RATE_UNIT[study.workload]) for ph, op in pairs_)


def study_environment(db: sqlite3.Connection, ids: Sequence[int]) -> str:
    """The distinct environments of the study's runs, with how many runs
    each (the mount point and directory, new for every run, left out)."""
    if not ids:
        return "<p>No run recorded.</p>"
    cols = ("hostname", "kernel", "cpu_model", "cpus", "memory_bytes", "fs_type", "mount_options", "device_model",
            "mkfs_options", "hosts")
    rows = db.execute(f"SELECT {', '.join('e.' + c for c in cols)}, r.fio_version, r.mdfio_version, count(*) "
                      f"FROM environment e JOIN runs r ON r.id = e.run_id WHERE r.id IN ({', '.join('?' * len(ids))}) "
                      f"GROUP BY {', '.join('e.' + c for c in cols)}, r.fio_version, r.mdfio_version "
                      f"ORDER BY e.fs_type, e.hostname", tuple(ids)).fetchall()
    out = [(*row[:4], None if row[4] is None else f"{row[4] / 2**30:.1f} GiB", *row[5:9], ", ".join(json.loads(row[9])), *row[10:]) for row in rows]
    return table(("host", "kernel", "CPU", "CPUs", "memory", "file system", "mount options", "device model",
                  "mkfs options", "hosts of the ranks", "fio", "mdfio", "runs"), out,
                 "the environments of the study's runs (each set of values once, with its count of runs)")


def study_figures(db: sqlite3.Connection, study: Study, runs: Mapping[str, list[int]], label: str) -> str:
    """mdfio-plot --study's figures of the study's runs (mdfio.plot_study):
    objects/s per phase against ranks, a panel per file system and memory
    limit, bars from the repeats; and the benchmark's repeats."""
    ids = {r for rs in runs.values() for r in rs}
    if not ids:
        return "<p>No figure: no run recorded.</p>"
    if study.workload != "md-workbench":
        return note(f"No figure here: mdfio-plot --study draws md-workbench's studies; "
                    f"mdfio-plot --history DB --label {label} draws each point's runs of {study.workload}.")
    with tempfile.TemporaryDirectory(prefix="mdfio-html-") as scratch:
        try:
            mine = [r for r in study_runs(db, label) if r.run_id in ids]
            made = plot_study(Path(scratch), mine, label)
        except BadInput as e:
            return note(f"No figure: {e}")
        return "".join(png_figure(Path(scratch) / f"{name}.png", name) for name in made)


def study_markup(study: Study, text: str) -> str:
    single = [(k, v[0]) for k, v in study.parameters.items() if len(v) == 1]
    lists = [("file system", ", ".join(f.name for f in study.filesystems))] if len(study.filesystems) > 1 else []
    lists += [(k, ", ".join(map(str, v))) for k, v in study.parameters.items() if len(v) > 1]
    if study.fixed_count:
        lists.append(("fixed_count (P = fixed_count // ranks)", ", ".join(map(str, study.fixed_count))))
    fs = [(f.name, f.kind, f.size, " ".join(f.mkfs_options), f.mount_options, f.device, f.direct_io)
          for f in study.filesystems]
    points = study.points()
    return (pairs([("name", study.name), ("workload", study.workload), ("file", study.path), ("repeats (runs per point)", study.repeats),
                   ("points", len(points)), ("runs", len(points) * study.repeats),
                   ("memory_cgroup", study.memory_cgroup)], "the study")
            + (pairs(lists, "dimensions") if lists else note("No dimension: the study has one point."))
            + pairs(single, "fixed parameters")
            + table(("name", "kind", "size", "mkfs options", "mount options", "device", "direct_io"), fs,
                    "file systems")
            + "<p>The study file:</p>" + pre(text))


def study_page(db: sqlite3.Connection, study: Study, text: str, label: str) -> str:
    """The page of study (text: its file) as db holds its runs under label."""
    runs = point_runs(db, study, label)
    short = [f"{name}: {len(ids)} of {study.repeats}" for name, ids in runs.items() if len(ids) < study.repeats]
    alerts = []
    if short:
        alerts.append(alert(f"{len(short)} of {len(runs)} points have fewer runs recorded under the label "
                            f"“{label}” than the study's repeats (not run yet, failed, or another label):", short))
    ids = [r for rs in runs.values() for r in rs]
    run_rows = [(name, len(rs), " ".join(map(str, rs))) for name, rs in runs.items()]
    results = ("".join(phase_table(db, study, runs, ph) for ph in PHASES) if study.workload == "md-workbench"
               else workload_tables(db, study, runs))
    sections = [("study", "Parameters and dimensions", study_markup(study, text)),
                ("results", "Objects/s per phase and point" if study.workload == "md-workbench"
                 else "Rates per phase, operation and point", results
                 + table(("point", "runs", "run ids in the database"), run_rows, "the runs of each point")),
                ("environment", "Environment of its runs", study_environment(db, ids)),
                ("figures", "Figures", study_figures(db, study, runs, label))]
    subtitle = f"label {label}; {len(ids)} runs; written by mdfio-study {VERSION} at {now()}"
    return document(f"mdfio study: {study.name}", subtitle, alerts, sections)
