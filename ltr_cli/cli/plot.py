"""``ltr plot``: time-averaged metric curves of finished runs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ltr_cli.cli.chosen_runs import CONFIG_HELP, LATEST_HELP, chosen_runs
from ltr_cli.cli.options import BandOpt, _value


def plot(
    results: Annotated[list[Path], typer.Argument(metavar="RESULTS", help="run directories or folders containing them")],
    metric: Annotated[Optional[list[str]], typer.Option("--metric", metavar="METRIC", help="metric column(s) to plot (default: all)")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="output folder (default: <first results path>/plots)")] = None,
    max_rounds: Annotated[Optional[int], typer.Option("--max-rounds", min=1, help="plot only the first N rounds")] = None,
    theory: Annotated[bool, typer.Option("--theory", help="also draw cumulative ranking loss beside the paper's bound (separable data)")] = False,
    regret: Annotated[bool, typer.Option("--regret", help="also draw each learner's cumulative regret beside c T^(2/3) (runs with protocol.log_regret)")] = False,
    band: Annotated[BandOpt, typer.Option("--band", help="band over seeds: minmax, std (mean +- sd) or none")] = BandOpt("minmax"),
    select_by: Annotated[Optional[str], typer.Option("--select-by", help="draw only each learner's best settings by this metric")] = None,
    window: Annotated[int, typer.Option("--window", min=1, help="with --select-by: rounds at the end of the curve to average")] = 10,
    latest: Annotated[bool, typer.Option("--latest", help=LATEST_HELP)] = False,
    config: Annotated[Optional[Path], typer.Option("--config", help=CONFIG_HELP)] = None,
) -> None:
    """Plot time-averaged metric curves (PNG + PDF), one line per learner; batch (cv:) runs
    as grouped bars of their test metrics per method."""
    from ltr_cli.reports.batch_bars import bar_names, is_batch, plot_bars
    from ltr_cli.reports.plot import check_outputs, output_names, plot_regret, plot_runs, plot_theory

    if metric:
        from ltr_cli.measures.registry import canonical_name

        metric = [canonical_name(m) for m in metric]  # map is ap: files and labels by the one spelling
    runs = chosen_runs(results, latest, config, say=not select_by)  # a selection shows one each
    if select_by:
        from ltr_cli.reports.selection import select

        runs = [r for choice in select(runs, select_by, window) for r in choice.runs]
    target = out or (results[0] if results[0].is_dir() else results[0].parent) / "plots"
    batch = [r for r in runs if is_batch(r)]
    online = [r for r in runs if not is_batch(r)]
    curves = bool(online) or not batch  # with no run at all, the curve planner says what is missing
    names = (output_names(online, metric, theory, regret) if curves else []) + bar_names(batch, metric)
    check_outputs(target, names)  # before anything is written
    written = plot_runs(online, metric, target, max_rounds, _value(band)) if curves else []
    if theory and curves:
        written += plot_theory(online, target)
    if regret and curves:
        written += plot_regret(online, target)
    written += plot_bars(batch, metric, target)
    for p in written:
        typer.echo(str(p))
