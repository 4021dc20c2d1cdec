"""``ltr report --html``: one self-contained HTML file to attach to a paper or an issue.

Per experiment it holds the figures (PNG, embedded as ``data:`` URIs), the online table
with the paper's numbers and their comparability verdicts and the spread over seeds, the
batch table with the spread over folds, the experiment's config (shared part and each
learner's block), the conventions of its measures and learners, the protocol, the data
fingerprints, the software versions, and every run folder with its timings.

Nothing is fetched when the file is opened: no scripts, no external style sheets, fonts or
images. Every value read from a run folder (which may come from someone else) is escaped,
so a label or path can never become markup.
"""

from __future__ import annotations

import base64
import datetime as _dt
import json
from html import escape
from typing import Any

from ltr_cli import __version__
from ltr_cli.measures.registry import display_name
from ltr_cli.reports.captions import conventions_line, data_title
from ltr_cli.reports.report import batch_columns, batch_rows, report_columns, report_rows
from ltr_cli.results.folders import Run
from ltr_cli.core.yamlio import dump_yaml

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;max-width:1200px;margin:2em auto;
padding:0 1em;color:#222;line-height:1.4}
h1{font-size:1.6em}h2{border-bottom:1px solid #ccc;padding-bottom:.2em;margin-top:2em}h3{margin-top:1.5em}
table{border-collapse:collapse;font-size:.85em;margin:.5em 0;display:block;overflow-x:auto}
th,td{border:1px solid #ddd;padding:.25em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{background:#f7f7f7;padding:.6em;overflow-x:auto;font-size:.8em}
figure{display:inline-block;margin:.5em 1em .5em 0}figcaption{font-size:.8em;color:#555}
img{max-width:100%;height:auto}.note{background:#fff7e0;border-left:4px solid #e0a000;padding:.4em .8em}
.ok{color:#176317}.differs{color:#9a3b00}
"""



def _online_shown(rows: list[dict[str, Any]]) -> list[str]:
    """The text report's columns, less those that are the same for a whole experiment section."""
    return [c for c in report_columns(rows) if c not in ("experiment", "dataset", "convention")]


def _batch_shown(batch: list[Run]) -> list[str]:
    return [c for c in batch_columns(batch) if c not in ("experiment", "dataset", "convention")]


def _with_dataset(rows: list[dict[str, Any]], columns: list[str]) -> list[str]:
    """``columns`` with the dataset first when a row's data is not the dataset in full (a
    sample, generated data): the table says so itself, as the section's note."""
    partial = any(" sample (" in str(r.get("dataset", "")) or str(r.get("dataset", "")).startswith("generated")
                  for r in rows)
    return (["dataset"] if partial else []) + columns


def _said(rows: list[dict[str, Any]]) -> str:
    """The conventions the table's numbers were computed under, as a paragraph."""
    said = conventions_line(rows)
    return f"<p>{escape(said)}</p>" if said else ""


def render_html(runs: list[Run], notes: list[str] | None = None, title: str = "ltr-cli reproduction report",
                command: list[str] | None = None, max_rounds: int | None = None, band: str = "minmax") -> str:
    """The whole report as one HTML document (UTF-8 text)."""
    from ltr_cli.reports.plot import figure_pngs

    figures = figure_pngs(runs, max_rounds, band)
    experiments = sorted({r.experiment for r in runs})
    now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{escape(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{escape(title)}</h1>",
        f"<p>Written by ltr-cli {escape(__version__)} on {escape(now)}"
        + (f" with <code>{escape(' '.join(command))}</code>" if command else "")
        + f". {len(runs)} run{'s' if len(runs) != 1 else ''} in {len(experiments)} experiment"
        + f"{'s' if len(experiments) != 1 else ''}: " + ", ".join(
            f'<a href="#{_anchor(e)}">{escape(e)}</a>' for e in experiments) + ".</p>",
        *(f'<p class="note">{escape(n)}</p>' for n in notes or []),
        _legend_text(),
    ]
    for experiment in experiments:
        mine = [r for r in runs if r.experiment == experiment]
        parts.append(_experiment_section(experiment, mine, [(m, png) for e, m, png in figures if e == experiment]))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _legend_text() -> str:
    return ("<p><b>last10</b>: the mean of the time-averaged curve over the last ten rounds (the "
            "perceptron paper's statistic), averaged over seeds, with its spread over seeds "
            "(<b>last10_std</b>: sample standard deviation, <b>_min</b>, <b>_max</b>). <b>paper</b>: the "
            "number printed in the paper; <b>difference</b> is shown only when <b>vs_paper</b> finds the "
            "run comparable with the paper's setup, otherwise <b>vs_paper</b> says what differs. Batch "
            "runs: test metrics averaged over folds, <b>_std</b> their spread over folds.</p>")


def _anchor(name: str) -> str:
    return "exp-" + "".join(c if c.isalnum() or c in "-_" else "-" for c in name)


def _experiment_section(experiment: str, runs: list[Run], figures: list[tuple[str, bytes]]) -> str:
    first = runs[0]
    out = [f'<h2 id="{_anchor(experiment)}">{escape(experiment)}</h2>']
    description = first.config.get("description")
    if isinstance(description, str) and description:
        out.append(f"<p>{escape(description)}</p>")
    data_read, partial = data_title(runs, of_total=True)
    if data_read and partial:  # a sample, files or generated data: not what a description may name
        out.append(f'<p class="note">Data: {escape(data_read)}.</p>')
    for metric, png in figures:
        data = base64.b64encode(png).decode("ascii")
        alt = f"{experiment}: time-averaged {display_name(metric)}"
        out.append(f'<figure><img src="data:image/png;base64,{data}" alt="{escape(alt)}">'
                   f"<figcaption>{escape(alt)}</figcaption></figure>")
    online = [r for r in runs if r.summary.get("protocol") != "batch-cv"]
    batch = [r for r in runs if r.summary.get("protocol") == "batch-cv"]
    if online:
        rows = report_rows(online)
        out += ["<h3>Online results</h3>", _table(rows, _with_dataset(rows, _online_shown(rows))), _said(rows)]
    if batch:
        rows = batch_rows(batch)
        out += ["<h3>Batch results (k-fold cross validation)</h3>",
                _table(rows, _with_dataset(rows, _batch_shown(batch))), _said(rows)]
    out += ["<h3>Config</h3>", _config_block(runs)]
    out += ["<h3>Conventions</h3>", _conventions(runs)]
    out += ["<h3>Data and protocol</h3>", _data_block(runs)]
    out += ["<h3>Runs</h3>", _runs_table(runs)]
    out += ["<h3>Software</h3>", _versions(runs)]
    return "\n".join(out)


def _cell(value: Any) -> str:
    if value is None:
        return "<td></td>"
    if isinstance(value, bool):
        return f"<td>{value}</td>"
    if isinstance(value, float):
        return f'<td class="num">{value:.4f}</td>'
    if isinstance(value, int):
        return f'<td class="num">{value}</td>'
    text = str(value)
    if text.startswith("comparable"):
        return f'<td class="ok">{escape(text)}</td>'
    if text.startswith("not comparable"):
        return f'<td class="differs">{escape(text)}</td>'
    return f"<td>{escape(text)}</td>"


def _table(rows: list[dict[str, Any]], columns: list[str]) -> str:
    head = "<tr>" + "".join(f"<th>{escape(c)}</th>" for c in columns) + "</tr>"
    body = ["<tr>" + "".join(_cell(r.get(c)) for c in columns) + "</tr>" for r in rows]
    return "<table>" + head + "".join(body) + "</table>"


def _pairs(mapping: dict[str, Any]) -> str:
    rows = [{"key": k, "value": v if isinstance(v, (str, int, float, bool)) or v is None
             else json.dumps(v, sort_keys=True, default=str)} for k, v in mapping.items()]
    return _table(rows, ["key", "value"])


def _shared_config(run: Run) -> dict[str, Any]:
    return {k: v for k, v in run.config.items() if k not in ("learners", "seed")}


def _config_block(runs: list[Run]) -> str:
    """The experiment-wide settings (once per distinct value), then each learner's block."""
    out, seen = [], []
    for run in runs:
        shared = _shared_config(run)
        if shared not in seen:
            seen.append(shared)
    if len(seen) > 1:
        out.append(f'<p class="note">The runs were written with {len(seen)} different experiment '
                   "settings; each is shown.</p>")
    out += [f"<pre>{escape(dump_yaml(shared))}</pre>" for shared in seen]
    learners: dict[str, Any] = {}
    for run in sorted(runs, key=lambda r: r.path.name):
        for name, block in (run.config.get("learners") or {}).items():
            key = f"{name} ({run.summary.get('config_id', run.path.name)})"
            learners.setdefault(key, {name: block})
    out.append("<p>Learners (one block per configuration id):</p>")
    out += [f"<pre># {escape(key)}\n{escape(dump_yaml(block))}</pre>" for key, block in learners.items()]
    return "\n".join(out)


def _distinct(runs: list[Run], field: str) -> list[Any]:
    values: list[Any] = []
    for run in runs:
        value = run.manifest.get(field)
        if value is not None and value not in values:
            values.append(value)
    return values


def _conventions(runs: list[Run]) -> str:
    out = [_pairs(c) if isinstance(c, dict) else f"<p>{escape(str(c))}</p>"
           for c in _distinct(runs, "conventions")]
    learner_rows = []
    for run in sorted(runs, key=lambda r: r.path.name):
        conv = run.manifest.get("learner_conventions")
        if isinstance(conv, dict):
            learner_rows.append({"run": run.path.name, "learner": run.label,
                                 "conventions": "; ".join(f"{k}: {v}" for k, v in conv.items())})
    if learner_rows:
        out.append(_table(learner_rows, ["run", "learner", "conventions"]))
    return "\n".join(out)


def _data_block(runs: list[Run]) -> str:
    out = []
    for dataset in _distinct(runs, "dataset"):
        out.append(_pairs(dataset) if isinstance(dataset, dict) else f"<p>{escape(str(dataset))}</p>")
    for protocol in _distinct(runs, "protocol"):
        out.append(_pairs(protocol) if isinstance(protocol, dict) else f"<p>{escape(str(protocol))}</p>")
    return "\n".join(out)


def _runs_table(runs: list[Run]) -> str:
    rows = []
    for run in sorted(runs, key=lambda r: r.path.name):
        s = run.summary
        rows.append({"folder": str(run.path), "learner": s.get("learner"), "label": run.label,
                     "seed": s.get("seed"), "config_id": s.get("config_id"), "rounds": s.get("rounds"),
                     "wall_seconds": s.get("wall_seconds"), "kernel_load_seconds": s.get("kernel_load_seconds"),
                     "finished_at": run.manifest.get("finished_at"),
                     "command": " ".join(map(str, run.manifest.get("command") or []))})
    return _table(rows, ["folder", "learner", "label", "seed", "config_id", "rounds", "wall_seconds",
                         "kernel_load_seconds", "finished_at", "command"])


def _versions(runs: list[Run]) -> str:
    return "\n".join(_pairs(v) if isinstance(v, dict) else f"<p>{escape(str(v))}</p>"
                     for v in _distinct(runs, "versions"))
