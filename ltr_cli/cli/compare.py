"""``ltr compare``: paired significance tests between the learners of finished runs."""

from __future__ import annotations

from enum import Enum
from pathlib import Path
from typing import Annotated, Optional

import typer

from ltr_cli.cli.chosen_runs import CONFIG_HELP, LATEST_HELP, chosen_runs
from ltr_cli.cli.options import _value


class Test(str, Enum):
    t = "t"
    wilcoxon = "wilcoxon"
    randomization = "randomization"


def compare(
    results: Annotated[list[Path], typer.Argument(metavar="RESULTS", help="run directories or folders containing them")],
    metric: Annotated[str, typer.Option("--metric", help="the metric to compare (e.g. ndcg@1, map; 'ltr list' shows them)")],
    test: Annotated[Test, typer.Option("--test", help="paired t-test, Wilcoxon signed-rank test or paired randomization test (two-sided)")] = Test.t,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    latest: Annotated[bool, typer.Option("--latest", help=LATEST_HELP)] = False,
    config: Annotated[Optional[Path], typer.Option("--config", help=CONFIG_HELP)] = None,
) -> None:
    """Paired tests between every two learners of an experiment: batch runs over the test
    queries pooled over the folds, online runs over the seeds (the report's last10); p-values
    with Holm's adjustment for the number of comparisons."""
    from ltr_cli.reports.compare import compare as compare_runs, metric_name, render_text, to_json

    metric = metric_name(metric)  # an unknown metric is refused before any run is read
    runs = chosen_runs(results, latest, config, say=not as_json)
    comparison = compare_runs(runs, metric, _value(test))
    typer.echo(to_json(comparison) if as_json else render_text(comparison), nl=False)
