"""``ltr plot``: time-averaged metric curves of finished runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ltr_cli.cli.chosen_runs import CONFIG_HELP, LATEST_HELP, chosen_runs
from ltr_cli.cli.options import BandOpt, LayoutOpt, LegendOpt, PaletteOpt, _value
from ltr_cli.errors import LtrError


def plot(
    results: Annotated[list[Path], typer.Argument(metavar="RESULTS", help="run directories or folders containing them")],
    metric: Annotated[Optional[list[str]], typer.Option("--metric", metavar="METRIC", help="metric column(s) to plot (default: all)")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="output folder (default: <first results path>/plots); nothing is written outside it")] = None,
    layout: Annotated[LayoutOpt, typer.Option("--layout", help="separate: a figure per experiment; panels: one figure per metric with a panel per experiment (results folders in the order given) and one shared legend")] = LayoutOpt("separate"),
    size: Annotated[Optional[str], typer.Option("--size", metavar="WxH", help="figure size in inches, e.g. 3.5x2.6 (default: 3.5x2.6; panels: 2.4 in per panel, at most 7 in, x 2.3)")] = None,
    font_size: Annotated[float, typer.Option("--font-size", min=4.0, max=24.0, help="text size in points (tick labels and legend 1 pt smaller)")] = 8.0,
    legend: Annotated[LegendOpt, typer.Option("--legend", help="inside the axes, below them, or none (the caption file names the curves)")] = LegendOpt("below"),
    title: Annotated[bool, typer.Option("--title/--no-title", help="draw titles (what the runs read: a partial read is named a sample)")] = True,
    palette: Annotated[PaletteOpt, typer.Option("--palette", help="tab10 (matplotlib's colours), okabe-ito (colour-blind safe) or gray (for print: shades of gray, each curve in its own line style)")] = PaletteOpt("tab10"),
    max_rounds: Annotated[Optional[int], typer.Option("--max-rounds", min=1, help="plot only the first N rounds")] = None,
    theory: Annotated[bool, typer.Option("--theory", help="also draw cumulative ranking loss beside the paper's bound (separable data)")] = False,
    regret: Annotated[bool, typer.Option("--regret", help="also draw each learner's cumulative regret beside c T^(2/3) (runs with protocol.log_regret)")] = False,
    band: Annotated[BandOpt, typer.Option("--band", help="band over seeds: minmax, std (mean +- sd) or none")] = BandOpt("minmax"),
    select_by: Annotated[Optional[str], typer.Option("--select-by", help="draw only each learner's best settings by this metric (named in the legend; files get the suffix _best-by-METRIC)")] = None,
    window: Annotated[int, typer.Option("--window", min=1, help="with --select-by: rounds at the end of the curve to average")] = 10,
    latest: Annotated[bool, typer.Option("--latest", help=LATEST_HELP)] = False,
    config: Annotated[Optional[Path], typer.Option("--config", help=CONFIG_HELP)] = None,
) -> None:
    """Plot time-averaged metric curves (PNG + PDF + a caption file), one line per learner;
    batch (cv:) runs as grouped bars of their test metrics per method."""
    from ltr_cli.reports.batch_bars import bar_names, is_batch, plot_bars
    from ltr_cli.reports.plot import output_names, plot_runs, plot_theory
    from ltr_cli.reports.figures import check_outputs
    from ltr_cli.reports.plot_style import FigureOptions, parse_size
    from ltr_cli.reports.regret_plot import plot_regret

    try:
        dims = parse_size(size) if size is not None else None
    except ValueError as exc:
        raise LtrError(f"--size: {exc}") from None
    if metric:
        from ltr_cli.measures.registry import canonical_name

        metric = [canonical_name(m) for m in metric]  # map is ap: files and labels by the one spelling
    runs = chosen_runs(results, latest, config, say=not select_by)  # a selection shows one each
    options = FigureOptions(dims, font_size, _value(legend), title, palette=_value(palette))
    selected: dict[Path, tuple[str, str]] = {}
    if select_by:
        runs, selected, tag = _select(runs, select_by, window)
        options = FigureOptions(dims, font_size, _value(legend), title, tag, _value(palette))
    target = out or (results[0] if results[0].is_dir() else results[0].parent) / "plots"
    _check_folder(target)
    batch = [r for r in runs if is_batch(r)]
    online = [r for r in runs if not is_batch(r)]
    curves = bool(online) or not batch  # with no run at all, the curve planner says what is missing
    if _value(layout) == "panels":
        from ltr_cli.reports.panels import panel_names, plot_panels

        folders = _by_folder(results, online)
        names = panel_names(folders, metric, options)
    else:
        names = output_names(online, metric, False, False, options) if curves else []
    names += (output_names(online, [], theory, regret, options) if curves and (theory or regret) else [])
    names += bar_names(batch, metric, options.tag)
    check_outputs(target, names)  # before anything is written
    if _value(layout) == "panels":
        written = plot_panels(folders, metric, target, max_rounds, _value(band), options, selected)
    else:
        written = plot_runs(online, metric, target, max_rounds, _value(band), options, selected) if curves else []
    if theory and curves:
        written += plot_theory(online, target, options)
    if regret and curves:
        written += plot_regret(online, target, options)
    written += plot_bars(batch, metric, target, options)
    for p in written:
        typer.echo(str(p))


def _check_folder(target: Path) -> None:
    """The output folder must be a folder (or not exist yet), named by printable text."""
    text = str(target)
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise LtrError(f"--out {text!r}: a folder name with control characters; give a plain path")
    if target.exists() and not target.is_dir():
        raise LtrError(f"--out {target}: exists and is not a folder; give a folder to write the figures in")


def _select(runs: list[Any], select_by: str, window: int) -> tuple[list[Any], dict[Path, tuple[str, str]], str]:
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


def _by_folder(results: list[Path], runs: list[Any]) -> list[list[Any]]:
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
