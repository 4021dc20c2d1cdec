"""``ltr plot --layout panels``: one figure per metric with a panel per experiment, as the
perceptron paper's Figures 2-3 put MSLR-WEB10K, Yahoo! and Yandex side by side, and ONE
legend shared by the panels (a learner has the same colour, marker and label in each).

Panels follow the results folders in the order given (the experiments inside one folder
by name); each is titled by what its runs read (:func:`ltr_cli.reports.captions.panel_title`).
The file is ``panels_<experiment>-<experiment>..._<metric>`` (``.png``, ``.pdf`` and
``.caption.txt``) in the output folder; its caption names the panels left to right and
gives each curve's details, panel by panel where they differ.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from ltr_cli.errors import ResultsError
from ltr_cli.reports.captions import Curve, panel_title, write_caption
from ltr_cli.reports.curves import Selected, axis_label, draw_curves
from ltr_cli.reports.figures import EXTS, check_outputs, make_folder, new_figure, place_legend, pyplot, save, set_title
from ltr_cli.reports.plot import metric_columns
from ltr_cli.reports.plot_style import FigureOptions
from ltr_cli.results.folders import Run

Panel = tuple[str, list[Run]]  # (experiment, its runs)
_MAX_STEM = 120
_PER_ROW = 4


def panel_plan(folders: list[list[Run]], metrics: list[str] | None) -> tuple[list[Panel], list[str]]:
    """The panels (one per experiment of each results folder, in the folders' order) and
    the metrics drawn: ``metrics``, each of which every panel must have, else the metrics
    all panels share."""
    panels: list[Panel] = []
    for runs in folders:
        curves = [r for r in runs if "t" in r.rounds.columns]  # batch (per-fold) runs have no curve
        for experiment in sorted({r.experiment for r in curves}):
            panels.append((experiment, [r for r in curves if r.experiment == experiment]))
    if len(panels) < 1:
        raise ResultsError("--layout panels: no online runs with curves under the results given")
    shared = [m for m in metric_columns(panels[0][1][0]) if all(
        any(m in r.rounds.columns for r in runs) for _, runs in panels)]
    for metric in metrics or []:
        for experiment, runs in panels:
            if not any(metric in r.rounds.columns for r in runs):
                raise ResultsError(f"--layout panels: metric {metric!r} is not in the runs of {experiment}; "
                                   f"the panels share: {', '.join(shared) or 'no metric'}")
    chosen = list(metrics) if metrics else shared
    if not chosen:
        raise ResultsError("--layout panels: the experiments share no metric; name one with --metric")
    return panels, chosen


def panel_stem(panels: list[Panel], metric: str, options: FigureOptions) -> str:
    names = "-".join(e for e, _ in panels)
    if len(names) > _MAX_STEM:
        names = f"{len(panels)}-experiments"
    return f"panels_{names}_{metric.replace('@', '_at_')}{options.tag}"


def panel_names(folders: list[list[Run]], metrics: list[str] | None, options: FigureOptions) -> list[str]:
    """The files :func:`plot_panels` writes (checked before anything is drawn)."""
    panels, chosen = panel_plan(folders, metrics)
    return [f"{panel_stem(panels, m, options)}.{ext}" for m in chosen for ext in (*EXTS, "caption.txt")]


def plot_panels(folders: list[list[Run]], metrics: list[str] | None, out_dir: Path, max_rounds: int | None,
                band: str, options: FigureOptions, selected: Selected | None = None) -> list[Path]:
    """One figure per metric, a panel per experiment, one shared legend; the written files."""
    plt = pyplot()
    panels, chosen = panel_plan(folders, metrics)
    check_outputs(out_dir, panel_names(folders, metrics, options))
    make_folder(out_dir)
    cols = min(len(panels), _PER_ROW)
    rows = math.ceil(len(panels) / cols)
    written: list[Path] = []
    for metric in chosen:
        with plt.rc_context(options.rc()):
            fig, axes = new_figure(plt, options, cols, rows)
            try:
                per_panel: list[list[Curve]] = []
                titles = []
                for i, (ax, (experiment, runs)) in enumerate(zip(axes, panels)):
                    have = [r for r in runs if metric in r.rounds.columns]
                    per_panel.append(draw_curves(ax, metric, have, max_rounds, band, selected, options))
                    set_title(ax, panel_title(have, experiment), options)
                    titles.append(panel_title(have, experiment, of_total=True))
                    if i % cols:
                        ax.set_ylabel("")  # the row's first panel names the metric
                labels = finish_panels(fig, axes, len(panels), options)
                stem = panel_stem(panels, metric, options)
                written += save(fig, out_dir, stem)
                heading = [f"Figure: {axis_label(metric)} vs. iteration, panels left to right"
                           f"{', top to bottom' if rows > 1 else ''}: "
                           + "; ".join(f"({chr(97 + i)}) {t} [{e}]" for i, (t, (e, _)) in
                                       enumerate(zip(titles, panels))) + ".", "Curves:"]
                written.append(write_caption(out_dir, stem, heading, merged_curves(labels, per_panel)))
            finally:
                plt.close(fig)
    return written


def finish_panels(fig: Any, axes: list[Any], used: int, options: FigureOptions) -> list[str]:
    """Hide the grid's ``axes`` beyond the first ``used`` and give the figure one legend,
    shared by the used panels; its labels, in legend order."""
    for ax in axes[used:]:
        ax.axis("off")
    handles, labels = shared_legend(axes[:used])
    place_legend(fig, axes[:used], options, handles, labels)
    return labels


def shared_legend(axes: list[Any]) -> tuple[list[Any], list[str]]:
    """Every label once, in the order the panels first draw it."""
    handles, labels = [], []
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    return handles, labels


def merged_curves(labels: list[str], per_panel: list[list[Curve]]) -> list[Curve]:
    """One caption line per legend label: its details where the panels that draw it agree,
    else each panel's (``(a) ...``), and which panels it is in when not in all."""
    out = []
    for label in labels:
        found = {i: c for i, curves in enumerate(per_panel) for c in curves if c.label == label.replace(r"\$", "$")}
        where = [f"({chr(97 + i)})" for i in sorted(found)]
        first = next(iter(found.values()))
        if len({tuple(c.details) for c in found.values()}) == 1:
            details = list(first.details)
        else:
            details = [f"({chr(97 + i)}) {', '.join(c.details) or '-'}" for i, c in sorted(found.items())]
        if len(found) < len(per_panel):
            details.append(f"only in {', '.join(where)}")
        out.append(Curve(first.label, details))
    return out
