"""``ltr compare``: paired significance tests between the learners of finished runs, as rows
of pairs (text, JSON) or as a table of learners x metrics (Markdown, CSV, LaTeX)."""

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


class CompareFormat(str, Enum):
    text = "text"
    json = "json"
    markdown = "markdown"
    csv = "csv"
    latex = "latex"


class On(str, Enum):
    test = "test"
    online = "online"
    heldout = "heldout"
    cumulative = "cumulative"


class Adjust(str, Enum):
    holm = "holm"
    bh = "bh"
    none = "none"


def _alpha(value: float) -> float:
    if not 0.0 < value < 1.0:
        raise typer.BadParameter("must be between 0 and 1, e.g. 0.05")
    return value


def compare(
    results: Annotated[list[Path], typer.Argument(metavar="RESULTS", help="run directories or folders containing them")],
    metric: Annotated[list[str], typer.Option("--metric", help="a metric to compare (e.g. ndcg@10, map; 'ltr list' shows them); repeatable: the table's columns")],
    test: Annotated[Test, typer.Option("--test", help="paired t-test, Wilcoxon signed-rank test or Fisher's paired randomization test (seeded sign flips; two-sided)")] = Test.t,
    on: Annotated[Optional[On], typer.Option("--on", help="what is compared: test (batch runs' test queries), online (a seed's last10), heldout (a seed's last held-out evaluation), cumulative (a click run's discounted cumulative value); default: test for batch runs, online for online runs")] = None,
    adjust: Annotated[Adjust, typer.Option("--adjust", help="adjustment for the number of comparisons: Holm's step-down, Benjamini-Hochberg, or none")] = Adjust.holm,
    alpha: Annotated[float, typer.Option("--alpha", callback=_alpha, help="significance level of the table's marks")] = 0.05,
    fmt: Annotated[CompareFormat, typer.Option("--format", help="rows of pairs (text, json) or a table of learners x metrics with means, 95% intervals and significance marks (markdown, csv, latex)")] = CompareFormat.text,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON (as --format json)")] = False,
    out: Annotated[Optional[Path], typer.Option("--out", help="also write the output to this file")] = None,
    latest: Annotated[bool, typer.Option("--latest", help=LATEST_HELP)] = False,
    config: Annotated[Optional[Path], typer.Option("--config", help=CONFIG_HELP)] = None,
    logs: Annotated[bool, typer.Option("--logs", help="learners trained on simulated click logs: compare them condition by condition (data and clicks.generate settings), paired by log (clicks.generate.seed) and test query, intervals and p counting both")] = False,
) -> None:
    """Paired tests between every two learners of an experiment: batch runs over the test
    queries pooled over the folds, online runs over the seeds (--on: last10, the last
    held-out evaluation or the discounted cumulative value); p-values adjusted for the
    number of comparisons. --format markdown|csv|latex gives the table a paper prints:
    learners x metrics, means with 95% intervals, letters of the learners each is
    significantly better than, and a caption naming the data, test and convention."""
    import json

    from ltr_cli.errors import LtrError
    from ltr_cli.outputs import write_text
    from ltr_cli.reports.compare import compare as compare_runs, metric_name
    from ltr_cli.reports.compare_table import render_table
    from ltr_cli.reports.compare_text import json_object, render_text

    kind = "json" if as_json else _value(fmt)
    if as_json and fmt not in (CompareFormat.text, CompareFormat.json):
        raise LtrError(f"--json and --format {_value(fmt)} ask for two outputs; give one")
    names = [metric_name(m) for m in metric]  # an unknown metric is refused before any run is read
    twice = sorted({m for m in names if names.count(m) > 1})
    if twice:
        raise LtrError(f"--metric: {twice[0]} is given twice; give each metric once")
    runs = chosen_runs(results, latest, config, say=kind == "text")
    if logs:
        from ltr_cli.reports.log_pairs import compare_logs, render_logs

        if kind not in ("text", "json") or _value(test) != "t":
            raise LtrError("--logs prints its own comparison (text or --json) with its own test; drop --format "
                           "and --test")
        text = "".join(render_logs(compare_logs(runs, m, _value(adjust)), m, _value(adjust), kind == "json")
                       for m in names)
        if out is not None:
            write_text(out, text)
        typer.echo(text, nl=False)
        return
    comparisons = [compare_runs(runs, m, _value(test), _value(on), _value(adjust), alpha) for m in names]
    if kind == "text":
        text = "\n".join(render_text(c) for c in comparisons)
    elif kind == "json":
        objects = [json_object(c) for c in comparisons]
        text = json.dumps(objects[0] if len(objects) == 1 else objects, indent=2, allow_nan=False) + "\n"
    else:
        text = render_table(comparisons, runs, kind)
    if out is not None:
        write_text(out, text)
    typer.echo(text, nl=False)
