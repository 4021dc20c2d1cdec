"""What ``ltr plot`` draws from the runs it was given: the figure options, ``--select-by``'s
choice of runs, the output folder, every file name checked before anything is written,
then the curves (separate or in panels; click runs, by default, in a panel per click model:
:mod:`ltr_cli.reports.click_plot`), ``--theory``, ``--regret`` and the batch bars.

The command parses options into a :class:`PlotRequest`, picks the runs
(:mod:`ltr_cli.cli.chosen_runs`) and prints the paths :func:`draw` returns.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ltr_cli.errors import LtrError
from ltr_cli.reports.batch_bars import bar_names, is_batch, plot_bars
from ltr_cli.reports.conditions_plot import conditions_names, plot_conditions
from ltr_cli.reports.logsize import logsize_names, plot_logsize
from ltr_cli.reports.figures import check_outputs
from ltr_cli.reports.plot import output_names, plot_runs, plot_theory
from ltr_cli.reports.plot_style import FigureOptions, parse_size
from ltr_cli.reports.regret_plot import plot_regret


@dataclass(frozen=True)
class PlotRequest:
    """``ltr plot``'s options, parsed: the results paths as given, the metrics (None: all),
    the output folder (None: ``<first results path>/plots``) and what to draw."""

    results: list[Path]
    metrics: list[str] | None
    out: Path | None
    layout: str
    options: FigureOptions
    max_rounds: int | None = None
    theory: bool = False
    regret: bool = False
    band: str = "minmax"
    select_by: str | None = None
    window: int = 10


def figure_options(size: str | None, font_size: float, legend: str, title: bool, palette: str) -> FigureOptions:
    """The figure options, ``--size`` read as ``WxH`` (a one-line error naming it)."""
    try:
        dims = parse_size(size) if size is not None else None
    except ValueError as exc:
        raise LtrError(f"--size: {exc}") from None
    return FigureOptions(dims, font_size, legend, title, palette=palette)


def canonical_metrics(metrics: list[str] | None) -> list[str] | None:
    """Metric names in their one spelling (``map`` is ``ap``): files and labels use it."""
    if not metrics:
        return metrics
    from ltr_cli.measures.registry import canonical_name

    return [canonical_name(m) for m in metrics]


def draw(request: PlotRequest, runs: list[Any]) -> list[Path]:
    """Every figure of ``runs`` under the output folder; the paths written. The names are
    all checked first: a clash or a refused path writes nothing."""
    options = request.options
    selected: dict[Path, tuple[str, str]] = {}
    if request.select_by:
        runs, selected, tag = select_runs(runs, request.select_by, request.window)
        options = dataclasses.replace(options, tag=tag)
    first = request.results[0]
    target = request.out or (first if first.is_dir() else first.parent) / "plots"
    check_folder(target)
    batch = [r for r in runs if is_batch(r)]
    online = [r for r in runs if not is_batch(r)]
    curves = bool(online) or not batch  # with no run at all, the curve planner says what is missing
    folders = by_folder(request.results, online) if request.layout == "panels" else []
    check_outputs(target, _curve_names(request, online, folders, options, curves)
                  + bar_names(batch, request.metrics, options.tag)
                  + logsize_names(batch, options.tag) + conditions_names(batch, options.tag))  # before anything is written
    written = _draw_curves(request, online, folders, target, options, selected, curves)
    written += plot_bars(batch, request.metrics, target, options)
    metric = request.metrics[0] if request.metrics else None
    written += plot_logsize(batch, metric, target, options)  # click-log runs of several sizes
    return written + plot_conditions(batch, metric, target, options)  # click-log runs of several logs


def _curve_names(request: PlotRequest, online: list[Any], folders: list[list[Any]], options: FigureOptions,
                 curves: bool) -> list[str]:
    if request.layout == "panels":
        from ltr_cli.reports.panels import panel_names

        names = panel_names(folders, request.metrics, options)
    else:
        from ltr_cli.reports.click_plot import click_names

        clicks, others = split_clicks(online)
        names = click_names(clicks, request.metrics, options) if clicks else []
        if curves and (others or not clicks):
            names += output_names(others, request.metrics, False, False, options)
    if curves and (request.theory or request.regret):
        names += output_names(online, [], request.theory, request.regret, options)
    return names


def _draw_curves(request: PlotRequest, online: list[Any], folders: list[list[Any]], target: Path,
                 options: FigureOptions, selected: dict[Path, tuple[str, str]], curves: bool) -> list[Path]:
    if request.layout == "panels":
        from ltr_cli.reports.panels import plot_panels

        written = plot_panels(folders, request.metrics, target, request.max_rounds, request.band, options, selected)
    else:
        from ltr_cli.reports.click_plot import plot_clicks

        clicks, others = split_clicks(online)
        written = plot_clicks(clicks, request.metrics, target, request.max_rounds, request.band, options,
                              selected) if clicks else []
        if curves and (others or not clicks):
            written += plot_runs(others, request.metrics, target, request.max_rounds, request.band, options, selected)
    if curves and request.theory:
        written += plot_theory(online, target, options)
    if curves and request.regret:
        written += plot_regret(online, target, options)
    return written


def split_clicks(runs: list[Any]) -> tuple[list[Any], list[Any]]:
    """The click runs with curves (drawn a panel per click model) and the others."""
    from ltr_cli.reports.click_runs import is_click_run

    chosen = [is_click_run(r) and "t" in r.rounds.columns for r in runs]
    return [r for r, c in zip(runs, chosen) if c], [r for r, c in zip(runs, chosen) if not c]


def check_folder(target: Path) -> None:
    """The output folder must be a folder (or not exist yet), named by printable text."""
    text = str(target)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise LtrError(f"--out {text!r}: a folder name with control characters; give a plain path")
    if target.exists() and not target.is_dir():
        raise LtrError(f"--out {target}: exists and is not a folder; give a folder to write the figures in")


def select_runs(runs: list[Any], select_by: str, window: int) -> tuple[list[Any], dict[Path, tuple[str, str]], str]:
    """The runs of each learner's best settings, the legend note and caption detail of each
    (``eta=0.1, best by ndcg@10``), and the file-name suffix ``_best-by-ndcg_at_10``."""
    from ltr_cli.names import count
    from ltr_cli.reports.captions import short_settings
    from ltr_cli.reports.run_labels import describe_settings
    from ltr_cli.reports.selection import select

    choices = select(runs, select_by, window)
    metric = choices[0].metric if choices else select_by
    chosen, selected = [], {}
    for choice in choices:
        shown = describe_settings(short_settings(choice.settings))
        note = f"{shown + ', ' if shown else ''}best by {metric}"
        detail = (f"best of {count(choice.candidates, 'setting')} by the time-averaged {metric} over the last {window} "
                  f"rounds ({choice.score:.4g}"
                  + (f"; {count(choice.tied, 'other setting')} tie, the first by config id is drawn" if choice.tied else "")
                  + ")" + (f"; settings {describe_settings(choice.settings)}" if choice.settings else ""))
        for run in choice.runs:
            selected[run.path] = (note, detail)
        chosen += choice.runs
    return chosen, selected, f"_best-by-{metric.replace('@', '_at_')}"


def by_folder(results: list[Path], runs: list[Any]) -> list[list[Any]]:
    """The runs under each results path, in the order given (a run under two paths goes
    with the first)."""
    left = list(runs)
    out = []
    for path in results:
        root = path.resolve()
        mine = [r for r in left if r.path.resolve() == root or r.path.resolve().is_relative_to(root)]
        left = [r for r in left if r not in mine]
        out.append(mine)
    return out
