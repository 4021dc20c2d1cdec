"""``ltr report``: tables of finished runs beside the papers' numbers, or one HTML report."""

from __future__ import annotations

import sys
from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ltr_cli.cli.chosen_runs import CONFIG_HELP, LATEST_HELP, chosen_runs
from ltr_cli.cli.options import _value


class ReportFormat(str, Enum):
    markdown = "markdown"
    csv = "csv"
    latex = "latex"


def report(
    results: Annotated[list[Path], typer.Argument(metavar="RESULTS", help="run directories or folders containing them")],
    fmt: Annotated[ReportFormat, typer.Option("--format", help="markdown table, CSV, or LaTeX tabular (booktabs)")] = ReportFormat.markdown,
    pivot: Annotated[bool, typer.Option("--pivot", help="one table across datasets: learners as rows, dataset x metric as columns (online: last10; batch: mean over folds)")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", help="also write the table to this file")] = None,
    select_by: Annotated[Optional[str], typer.Option("--select-by", help="pick each learner's best settings by this metric (e.g. ndcg@10)")] = None,
    window: Annotated[int, typer.Option("--window", min=1, help="with --select-by: rounds at the end of the time-averaged curve to average")] = 10,
    latest: Annotated[bool, typer.Option("--latest", help=LATEST_HELP)] = False,
    config: Annotated[Optional[Path], typer.Option("--config", help=CONFIG_HELP)] = None,
    baseline: Annotated[Optional[str], typer.Option("--baseline", metavar="LEARNER", help="mark each learner significantly better than this one (paired t-test, p < 0.05 after --adjust: online over seeds, batch over test queries) and add a vs_baseline column")] = None,
    adjust: Annotated[str, typer.Option("--adjust", metavar="holm|bh|none", help="--baseline: adjust the p-values over the table's tests by Holm's method, Benjamini-Hochberg's, or not at all")] = "holm",
    html: Annotated[bool, typer.Option("--html", help="write one self-contained HTML report (figures, tables with verdicts and spreads, config, conventions, data fingerprints, versions) to --out, default RESULTS/report.html")] = False,
) -> None:
    """Last-ten-rounds averages per learner and dataset, beside the paper's numbers;
    with --select-by, each learner's best hyper-parameters (mean and spread over seeds);
    with --baseline, marks where a learner is significantly better than that one."""
    from ltr_cli.errors import LtrError
    from ltr_cli.outputs import write_text
    from ltr_cli.reports.run_filter import mixed_configurations

    if pivot and (html or select_by or baseline):
        raise LtrError("--pivot is a table of its own; it does not combine with --html, --select-by or --baseline")
    if baseline is not None and (html or select_by):
        raise LtrError(f"--baseline marks the report's tables; it does not apply to {'--html' if html else '--select-by'}")
    if adjust != "holm" and baseline is None:
        raise LtrError("--adjust adjusts the p-values of --baseline: add --baseline LEARNER")
    runs = chosen_runs(results, latest, config, say=not html)
    if html:
        from ltr_cli.reports.report_html import render_html

        if select_by:
            from ltr_cli.reports.selection import select

            runs = [r for choice in select(runs, select_by, window) for r in choice.runs]
        target = out or (results[0] if results[0].is_dir() else results[0].parent) / "report.html"
        write_text(target, render_html(runs, mixed_configurations(runs), command=["ltr", *sys.argv[1:]]))
        typer.echo(str(target))
        return
    if pivot:
        from ltr_cli.reports.pivot import pivot_table

        text = pivot_table(runs, _value(fmt))
    else:
        from ltr_cli.reports.report import render_report

        text = render_report(runs, _value(fmt), select_by, window, baseline, adjust)
    if out is not None:
        write_text(out, text)
    typer.echo(text, nl=False)
