"""``ltr eval``: a score file evaluated against a labelled file under a metric convention."""

from __future__ import annotations

import json
import math
import warnings
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from ltr_cli.cli.options import (BaseOpt, ConventionOpt, DatasetOpt, GroupOpt, NoRelevantOpt, QidSourceOpt, TiesOpt,
                                 _value)
from ltr_cli.data.registry import reader_options


def _finite(value: float | None) -> float | None:
    if value is not None and not math.isfinite(value):
        raise typer.BadParameter("must be a finite number, e.g. 0 or 1")
    return value


def eval_(
    data_file: Annotated[Path, typer.Argument(metavar="DATA_FILE", help="labelled SVMlight/LETOR file")],
    score_file: Annotated[Path, typer.Argument(metavar="SCORE_FILE", help="one score per line, in data-file order")],
    convention: Annotated[Optional[ConventionOpt], typer.Option("--convention", help="metric preset: gain, discount, k beyond the list, no-relevant value (ltr list shows them: paper, letor3, letor4, mslr, lightgbm, trec_eval, ranx, allrank); default: that of --run, else paper (--dataset does not change it)")] = None,
    ties: Annotated[Optional[TiesOpt], typer.Option("--ties", help="tie policy (default: the preset's, input-order)")] = None,
    no_relevant: Annotated[Optional[NoRelevantOpt], typer.Option("--no-relevant", help="value of a query without relevant documents (default: the preset's, zero)")] = None,
    threshold: Annotated[Optional[float], typer.Option("--relevance-threshold", callback=_finite, help="paper preset: relevant = label > this (default: --run's, else 0)")] = None,
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
    from ltr_cli.measures.conventions import CONVENTIONS
    from ltr_cli.results.file_eval import evaluate_file, format_tables, nan_to_none

    opts = reader_options(dataset, None, index_base, _value(qid), group, None)
    given = frozenset(key for key, value in (("ties", ties), ("no_relevant", no_relevant),
                                             ("relevance_threshold", threshold)) if value is not None)
    name, why = eval_convention(_value(convention), run, dataset, given)
    taken = run_measure_settings(run, given | {"convention"}) if run is not None else {}
    ties_ = _value(ties) or taken.get("ties")
    no_relevant_ = _value(no_relevant) or taken.get("no_relevant")
    threshold_ = threshold if threshold is not None else float(taken.get("relevance_threshold", 0.0))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = evaluate_file(data_file, score_file, opts, name, ties_, no_relevant_, threshold_, seed,
                               per_query, metric)
    # after any error: errors stay one line
    typer.echo(f"ltr: convention {CONVENTIONS[name].title(no_relevant_)}: {why}", err=True)
    if taken:
        typer.echo("ltr: from the run: " + ", ".join(f"{k} {v}" for k, v in taken.items()
                                                     if k != "convention"), err=True)
    for w in caught:
        typer.echo(f"ltr: warning: {w.message}", err=True)
    if as_json:
        typer.echo(json.dumps(nan_to_none(result), indent=2, allow_nan=False))
    else:
        typer.echo(format_tables(result, per_query), nl=False)


def eval_convention(convention: str | None, run: Path | None, dataset: str | None,
                    given: frozenset[str] = frozenset()) -> tuple[str, str]:
    """The convention ``ltr eval`` uses and why: ``--convention``, else the run's (a batch
    run's ``summary.json`` records its ``cv.convention``; an online run measures by the paper
    preset), else ``paper``. ``--dataset`` says how to read the file, never how to measure:
    when its own scripts' convention (what ``cv.convention`` defaults to) is another, the
    reason names it and how to take it. A run folder is read as untrusted input (one-line
    error)."""
    from ltr_cli.data.registry import get_dataset
    from ltr_cli.measures.conventions import CONVENTIONS

    if convention is not None:
        return convention, "--convention"
    if run is not None:
        from ltr_cli.errors import ResultsError
        from ltr_cli.results.folders import read_run

        summary = read_run(run).summary
        if summary.get("protocol") != "batch-cv":
            return str(run_measure_settings(run, given)["convention"]), f"metrics.convention of online run {run}; --convention to change"
        name = summary.get("convention")
        if not isinstance(name, str) or name not in CONVENTIONS:
            raise ResultsError(f"{run / 'summary.json'}: 'convention' must be one of {', '.join(CONVENTIONS)}, "
                               f"not {name!r}; give --convention")
        return name, f"cv.convention of run {run}; --convention to change"
    own = get_dataset(dataset).convention if dataset else None
    if own is not None and own != "paper":
        return "paper", (f"the default, whatever --dataset says; --convention {own} for {dataset}'s own "
                         f"script ({CONVENTIONS[own].summary()}), --run RUN_DIR for a run's")
    return "paper", "the default; --convention to change, or --run RUN_DIR to take a run's"


def run_measure_settings(run: Path, given: frozenset[str] = frozenset()) -> dict[str, Any]:
    """How an online run measured its rankings, from its ``config.yaml``: ``metrics.convention``,
    ``ties``, ``no_relevant`` and ``relevance_threshold`` (the defaults of ``ltr eval --run``;
    an option given on the command line wins, and its key in ``given`` is not read). A batch
    run measures by its ``cv.convention`` alone: nothing is taken. Read as untrusted input: a wrong value is a one-line error."""
    from ltr_cli.errors import ResultsError
    from ltr_cli.core.convention_table import NO_RELEVANT_POLICIES, TIE_POLICIES
    from ltr_cli.measures.conventions import CONVENTIONS
    from ltr_cli.results.folders import read_run

    folder = read_run(run)
    if folder.summary.get("protocol") == "batch-cv":
        return {}
    metrics = folder.config.get("metrics")
    where = run / "config.yaml"
    if not isinstance(metrics, dict):
        raise ResultsError(f"{where}: 'metrics' must be a mapping; give --convention, --ties and --no-relevant")
    allowed: dict[str, tuple[str, ...]] = {"convention": tuple(CONVENTIONS), "ties": TIE_POLICIES,
                                           "no_relevant": NO_RELEVANT_POLICIES}
    taken: dict[str, Any] = {}
    for key, choices in allowed.items():
        if key in given:
            continue
        value = metrics.get(key)
        if not isinstance(value, str) or value not in choices:
            raise ResultsError(f"{where}: 'metrics.{key}' must be one of {', '.join(choices)}, not {value!r}; "
                               f"give --{key.replace('_', '-')}")
        taken[key] = value
    if "relevance_threshold" in given:
        return taken
    threshold = metrics.get("relevance_threshold", 0.0)
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
        raise ResultsError(f"{where}: 'metrics.relevance_threshold' must be a finite number, not {threshold!r}; "
                           "give --relevance-threshold")
    taken["relevance_threshold"] = float(threshold)
    return taken
