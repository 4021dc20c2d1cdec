"""``ltr plot`` on click runs (``protocol.feedback: clicks``): the click literature's figures,
one per metric with a panel per click model and a line per learner (its seeds' mean, their
spread as a band; :func:`ltr_cli.reports.curves.draw_curves`), and one legend shared by the
panels.

The metrics are the runs' held-out columns first (``heldout_ndcg@10``: the offline value of
the current weights, drawn at the rounds it was evaluated), then the online metrics (the
time-averaged value of the lists the users were shown); the x-axis counts impressions (one
a round). The click runs of one dataset make one set of figures, whatever experiments they
belong to; a panel holds the runs of one click model, named by it and by any other
``protocol.clicks`` setting that differs between the panels (``navigational, stop:
any-position``). The files are ``clicks_<experiment>-<experiment>..._<metric>`` (``.png``,
``.pdf``, ``.caption.txt``) in the output folder.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ltr_cli.errors import ResultsError
from ltr_cli.measures.registry import display_name
from ltr_cli.names import settings_text
from ltr_cli.reports.captions import Curve, data_title, write_caption
from ltr_cli.reports.click_runs import HELDOUT, click_model, clicks_spec
from ltr_cli.reports.curves import Selected, axis_label, draw_curves, natural
from ltr_cli.reports.figures import EXTS, check_outputs, make_folder, new_figure, pyplot, save, set_title
from ltr_cli.reports.panels import finish_panels, merged_curves
from ltr_cli.reports.plot import metric_columns
from ltr_cli.reports.plot_style import FigureOptions
from ltr_cli.results.folders import Run

_MAX_STEM = 120
_PER_ROW = 4

Panel = tuple[str, list[Run]]  # (click model and settings, its runs)


def panel_key(run: Run, differ: list[str]) -> str:
    """A panel's name: the click model, then the other ``protocol.clicks`` settings in
    ``differ``."""
    spec = clicks_spec(run) or {}
    rest = settings_text({k: spec.get(k) for k in differ if k != "model"})
    return f"{click_model(run)}{', ' + rest if rest else ''}"


def click_panels(runs: list[Run]) -> list[tuple[str, list[Panel]]]:
    """(dataset, its panels) for the click runs with curves, the panels in the models' name
    order."""
    by_data: dict[str, list[Run]] = {}
    for run in runs:
        if "t" in run.rounds.columns and clicks_spec(run) is not None:
            by_data.setdefault(str(run.summary.get("dataset", "")), []).append(run)
    out = []
    for dataset, group in sorted(by_data.items()):
        specs = [clicks_spec(r) or {} for r in group]
        keys = sorted({k for s in specs for k in s})
        differ = [k for k in keys if len({repr(s.get(k)) for s in specs}) > 1]
        panels: dict[str, list[Run]] = {}
        for run in group:
            panels.setdefault(panel_key(run, differ), []).append(run)
        out.append((dataset, sorted(panels.items(), key=lambda p: natural(p[0]))))
    return out


def _metrics(panels: list[Panel], metrics: list[str] | None) -> list[str]:
    """``metrics`` (each must be in some run), else the held-out columns, then the others."""
    runs = [r for _, group in panels for r in group]
    available: list[str] = []
    for run in runs:
        available += [m for m in metric_columns(run) if m not in available]
    for metric in metrics or []:
        if metric not in available:
            raise ResultsError(f"metric {metric!r} is not in the click runs; they have: {', '.join(available)}")
    if metrics:
        return list(metrics)
    return [m for m in available if m.startswith(HELDOUT)] + [m for m in available if not m.startswith(HELDOUT)]


def click_stem(panels: list[Panel], metric: str, options: FigureOptions) -> str:
    names = "-".join(sorted({r.experiment for _, group in panels for r in group}))
    if len(names) > _MAX_STEM:
        names = f"{len({r.experiment for _, group in panels for r in group})}-experiments"
    return f"clicks_{names}_{metric.replace('@', '_at_')}{options.tag}"


def click_plan(runs: list[Run], metrics: list[str] | None) -> list[tuple[str, str, list[Panel]]]:
    """The figures: (dataset, metric, panels)."""
    return [(dataset, metric, panels) for dataset, panels in click_panels(runs) for metric in _metrics(panels, metrics)]


def click_names(runs: list[Run], metrics: list[str] | None, options: FigureOptions) -> list[str]:
    """The files :func:`plot_clicks` writes (checked before anything is drawn)."""
    return [f"{click_stem(panels, metric, options)}.{ext}" for _, metric, panels in click_plan(runs, metrics)
            for ext in (*EXTS, "caption.txt")]


def plot_clicks(runs: list[Run], metrics: list[str] | None, out_dir: Path, max_rounds: int | None, band: str,
                options: FigureOptions, selected: Selected | None = None) -> list[Path]:
    """One figure per dataset and metric, a panel per click model; the written files."""
    plt = pyplot()
    plan = click_plan(runs, metrics)
    check_outputs(out_dir, click_names(runs, metrics, options))
    make_folder(out_dir)
    written: list[Path] = []
    for _, metric, panels in plan:
        with plt.rc_context(options.rc()):
            written += _figure(plt, metric, panels, out_dir, max_rounds, band, options, selected)
    return written


def _short_label(metric: str) -> str:
    """The y-axis label: ``Held-out NDCG@10`` (the caption says whose weights), else the
    usual one."""
    if metric.startswith(HELDOUT):
        return f"Held-out {display_name(metric.removeprefix(HELDOUT))}"
    return axis_label(metric)


def _figure(plt: Any, metric: str, panels: list[Panel], out_dir: Path, max_rounds: int | None, band: str,
            options: FigureOptions, selected: Selected | None) -> list[Path]:
    cols = min(len(panels), _PER_ROW)
    rows = math.ceil(len(panels) / cols)
    fig, axes = new_figure(plt, options, cols, rows)
    try:
        per_panel: list[list[Curve]] = []
        drawn: list[str] = []
        for i, (ax, (name, group)) in enumerate(zip(axes, panels)):
            have = [r for r in group if metric in r.rounds.columns]
            if have:
                per_panel.append(draw_curves(ax, metric, have, max_rounds, band, selected, options))
            else:
                per_panel.append([])
                ax.text(0.5, 0.5, f"no {metric}", ha="center", va="center", transform=ax.transAxes)
            ax.set_xlabel("Impressions")
            ax.set_ylabel(_short_label(metric))
            set_title(ax, f"{name} clicks", options)
            drawn.append(name)
            if i % cols:
                ax.set_ylabel("")  # the row's first panel names the metric
        labels = finish_panels(fig, axes, len(panels), options)
        stem = click_stem(panels, metric, options)
        written = save(fig, out_dir, stem)
        data, _ = data_title([r for _, group in panels for r in group], of_total=True)
        what = "offline: the current weights on the held-out set" if metric.startswith(HELDOUT) else \
            "online: the lists the users were shown, time-averaged"
        heading = [f"Figure: {axis_label(metric)} vs. impressions ({what}), a panel per click model"
                   f"{', left to right' + (', top to bottom' if rows > 1 else '') if len(panels) > 1 else ''}: "
                   + "; ".join(f"({chr(97 + i)}) {n}" for i, n in enumerate(drawn))
                   + (f". Data: {data}." if data else "."), "Curves:"]
        written.append(write_caption(out_dir, stem, heading, merged_curves(labels, per_panel)))
        return written
    finally:
        plt.close(fig)
