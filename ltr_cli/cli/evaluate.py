"""``ltr eval``: a score file evaluated against a labelled file under a metric convention."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Annotated, Optional

import typer

from ltr_cli.cli.options import (BaseOpt, ConventionOpt, DatasetOpt, GroupOpt, NoRelevantOpt, QidSourceOpt, TiesOpt,
                                 _value)
from ltr_cli.data.registry import reader_options


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise typer.BadParameter("must be a finite number, e.g. 0 or 1")
    return value


def eval_(
    data_file: Annotated[Path, typer.Argument(metavar="DATA_FILE", help="labelled SVMlight/LETOR file")],
    score_file: Annotated[Path, typer.Argument(metavar="SCORE_FILE", help="one score per line, in data-file order")],
    convention: Annotated[Optional[ConventionOpt], typer.Option("--convention", help="metric preset: gains, discount and relevance rule (ltr list shows them); default: that of --run, else of --dataset, else paper")] = None,
    ties: Annotated[Optional[TiesOpt], typer.Option("--ties", help="tie policy (default: the preset's, input-order)")] = None,
    no_relevant: Annotated[Optional[NoRelevantOpt], typer.Option("--no-relevant", help="value of a query without relevant documents (default: the preset's, zero)")] = None,
    threshold: Annotated[float, typer.Option("--relevance-threshold", callback=_finite, help="paper preset: relevant = label > this")] = 0.0,
    seed: Annotated[int, typer.Option("--seed", min=0, help="seed for --ties random")] = 0,
    per_query: Annotated[bool, typer.Option("--per-query", help="also print every query")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    metric: Annotated[Optional[list[str]], typer.Option("--metric", metavar="METRIC", help="a metric to report, repeatable (e.g. --metric err@10 --metric rr; 'ltr list' shows them); default: the convention's NDCG@k, MAP, P@k columns")] = None,
    dataset: DatasetOpt = None, index_base: BaseOpt = None, qid: QidSourceOpt = None,
    group: GroupOpt = None,
    run: Annotated[Optional[Path], typer.Option("--run", metavar="RUN_DIR", help="the run whose scores these are: its evaluation convention is the default (a batch run's cv.convention; paper for an online run)")] = None,
) -> None:
    """Evaluate scores per query and averaged under a metric convention: by default NDCG@k,
    MAP and P@k (the LETOR scripts' tables), or the metrics given with --metric."""
    from ltr_cli.measures.file_eval import evaluate_file, format_tables, nan_to_none

    opts = reader_options(dataset, None, index_base, _value(qid), group, None)
    name, why = eval_convention(_value(convention), run, dataset)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = evaluate_file(data_file, score_file, opts, name, _value(ties),
                               _value(no_relevant), threshold, seed, per_query, metric)
    typer.echo(f"ltr: convention {name} ({why})", err=True)  # after any error: errors stay one line
    for w in caught:
        typer.echo(f"ltr: warning: {w.message}", err=True)
    if as_json:
        typer.echo(json.dumps(nan_to_none(result), indent=2, allow_nan=False))
    else:
        typer.echo(format_tables(result, per_query), nl=False)


def eval_convention(convention: str | None, run: Path | None, dataset: str | None) -> tuple[str, str]:
    """The convention ``ltr eval`` uses and why: ``--convention``, else the run's (a batch
    run's ``summary.json`` records its ``cv.convention``; an online run measures by the paper
    preset), else the ``--dataset``'s own scripts' (as ``cv.convention`` defaults), else
    ``paper``. A run folder is read as untrusted input (one-line error)."""
    from ltr_cli.data.registry import get_dataset
    from ltr_cli.measures.conventions import CONVENTIONS

    if convention is not None:
        return convention, "--convention"
    if run is not None:
        from ltr_cli.errors import ResultsError
        from ltr_cli.results.folders import read_run

        summary = read_run(run).summary
        if summary.get("protocol") != "batch-cv":
            return "paper", f"that of online run {run}; --convention to change"
        name = summary.get("convention")
        if not isinstance(name, str) or name not in CONVENTIONS:
            raise ResultsError(f"{run / 'summary.json'}: 'convention' must be one of {', '.join(CONVENTIONS)}, "
                               f"not {name!r}; give --convention")
        return name, f"cv.convention of run {run}; --convention to change"
    if dataset:
        return get_dataset(dataset).convention, f"{dataset}'s own, as cv.convention defaults; --convention to change"
    return "paper", "the default; --convention to change, or --dataset / --run to take theirs"
