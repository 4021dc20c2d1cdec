"""``ltr plot``: time-averaged metric curves of finished runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ltr_cli.cli.chosen_runs import CONFIG_HELP, LATEST_HELP, chosen_runs
from ltr_cli.cli.options import BandOpt, LayoutOpt, LegendOpt, PaletteOpt, _value


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
    from ltr_cli.reports.plot_request import PlotRequest, canonical_metrics, draw, figure_options

    options = figure_options(size, font_size, _value(legend), title, _value(palette))
    request = PlotRequest(results, canonical_metrics(metric), out, _value(layout), options, max_rounds, theory, regret,
                          _value(band), select_by, window)
    runs = chosen_runs(results, latest, config, say=not select_by)  # a selection shows one each
    for p in draw(request, runs):
        typer.echo(str(p))
