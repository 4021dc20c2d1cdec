"""``ltr eval``: score a labelled file under a named metric convention (the conventions
are :mod:`ltr_cli.measures.conventions`, the metrics :mod:`ltr_cli.measures.registry`; this module
reads the files, groups queries and formats the LETOR scripts' tables, or one column per
metric for a chosen metric list)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.data.formats import open_dataset
from ltr_cli.data.score_files import DataOrder, read_scores, read_scores_reference
from ltr_cli.data.svmlight import ReaderOptions
from ltr_cli.errors import LtrError
from ltr_cli.measures.conventions import CONVENTIONS, Measure, bind
from ltr_cli.measures.stacked import evaluate_stacked
from ltr_cli.measures.registry import display_name


__all__ = ["evaluate_file", "format_tables", "nan_to_none", "read_scores", "read_scores_reference"]


def _qid_key(qid: str) -> tuple[int, float | str]:
    try:
        return (0, float(qid))
    except ValueError:
        return (1, qid)


def evaluate_file(
    data_path: Path,
    score_path: Path,
    options: ReaderOptions,
    convention: str = "paper",
    ties: str | None = None,
    no_relevant: str | None = None,
    threshold: float = 0.0,
    seed: int = 0,
    per_query: bool = True,
    metrics: list[str] | None = None,
) -> dict[str, Any]:
    """Evaluate a score file against a labelled file: averages and (``per_query``) every
    query's values of ``metrics`` (metric names; default: the convention's columns, and
    then the result has no ``metrics`` list). Lines of one qid anywhere in the file form
    one query, in file order; queries are reported in numeric qid order where all qids are
    numeric."""
    conv = CONVENTIONS[convention]
    measures = _measures(metrics, conv.name, no_relevant, threshold)
    reader = open_dataset(data_path, ReaderOptions(
        n_features=None, index_base=options.index_base, qid_source=options.qid_source,
        group_file=options.group_file, null_value=0.0, split_qids="new-query"))  # features unused
    segments: dict[str, list[tuple[int, int]]] = {}
    runs: list[tuple[str, int]] = []
    label_parts = []
    start = 0
    for qid, y, _ in reader.labelled_queries():
        segments.setdefault(qid, []).append((start, y.shape[0]))
        runs.append((qid, y.shape[0]))
        label_parts.append(y)
        start += y.shape[0]
    labels = np.concatenate(label_parts) if label_parts else np.zeros(0)
    scores = read_scores(score_path, DataOrder(Path(data_path), runs))
    if scores.shape[0] != start:
        raise LtrError(
            f"{score_path}: has {scores.shape[0]} scores but {data_path} has {start} documents; "
            "the score file needs one line per document, in data-file order"
        )
    qids = sorted(segments, key=_qid_key)
    order = np.concatenate([np.arange(a, a + m) for qid in qids for a, m in segments[qid]]) if qids \
        else np.zeros(0, dtype=np.int64)
    offsets = np.zeros(len(qids) + 1, dtype=np.int64)
    np.cumsum([sum(m for _, m in segments[qid]) for qid in qids], out=offsets[1:])
    y, s = labels[order], scores[order]
    if conv.letor_style:
        bad = (y != np.floor(y)) | (y < 0)
        if bad.any():
            first = int(np.argmax(bad))
            qid = qids[int(np.searchsorted(offsets, first, side="right")) - 1]
            raise LtrError(
                f"{data_path}: qid {qid} has label {y[first]:g}; the {conv.name} convention "
                "(official Perl script) reads non-negative integer labels only - use --convention paper"
            )
        odd_labels = conv.outside_gain_table(y)
        if odd_labels:
            warnings.warn(conv.outside_gain_table_warning(odd_labels), stacklevel=2)
    table = evaluate_stacked(s, y, offsets, conv, ties, no_relevant, threshold, np.random.default_rng(seed),
                             measures)
    result: dict[str, Any] = {
        "convention": conv.name,
        "ties": ties or conv.ties,
        "no_relevant": no_relevant or (conv.no_relevant if not conv.letor_style else "zero (script)"),
        "rules": conv.summary(no_relevant),
        "queries": len(qids),
        "documents": start,
    }
    if metrics:
        result["metrics"] = [meas.name for meas in measures]
    if per_query:
        result["per_query"] = {qid: table.row(q) for q, qid in enumerate(qids)}
    result["average"] = table.average(conv) if qids else {}
    return result


def _measures(names: list[str] | None, convention: str, no_relevant: str | None,
              threshold: float) -> list[Measure]:
    """The measures of ``--metric`` names (default: the convention's columns); a name the
    registry does not know is one line naming it and the known ones."""
    conv = CONVENTIONS[convention]
    try:
        measures = bind(names, conv, no_relevant, threshold)
    except ValueError as exc:
        raise LtrError(f"--metric: {exc}; 'ltr list' shows the metrics") from None
    twice = sorted({m.name for m in measures if [n.name for n in measures].count(m.name) > 1})
    if twice:
        raise LtrError(f"--metric: {twice[0]} is given twice; give each metric once")
    return measures


def nan_to_none(obj: Any) -> Any:
    """Replace NaN floats by None recursively, so JSON output is standard (null)."""
    if isinstance(obj, float) and math.isnan(obj):
        return None
    if isinstance(obj, dict):
        return {k: nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [nan_to_none(v) for v in obj]
    return obj


def format_tables(result: dict[str, Any], per_query: bool) -> str:
    """The LETOR scripts' layout: ``qid P@1..P@k MAP`` and ``qid NDCG@1..NDCG@k [MeanNDCG]``;
    for a chosen metric list (``result["metrics"]``), one table ``qid METRIC...``."""
    if "metrics" in result:
        return _format_columns(result, per_query)
    avg = result["average"]
    ks = sorted(int(k.split("@")[1]) for k in avg if k.startswith("ndcg@"))

    def cell(v: float | None) -> str:
        return "" if v is None or math.isnan(v) else f"{v:.4f}"

    lines = [_head(result)]
    lines.append("\t".join(["qid"] + [f"P@{k}" for k in ks] + ["MAP"]))
    rows = list(result["per_query"].items()) if per_query else []
    for qid, vals in rows + [("Average", avg)]:
        lines.append("\t".join([qid] + [cell(vals[f"p@{k}"]) for k in ks] + [cell(vals["ap"])]))
    lines.append("")
    has_mean = "mean_ndcg" in avg
    lines.append("\t".join(["qid"] + [f"NDCG@{k}" for k in ks] + (["MeanNDCG"] if has_mean else [])))
    for qid, vals in rows + [("Average", avg)]:
        cells = [cell(vals[f"ndcg@{k}"]) for k in ks]
        if has_mean:
            cells.append(cell(vals["mean_ndcg"]))
        lines.append("\t".join([qid] + cells))
    return "\n".join(lines) + "\n"


def _head(result: dict[str, Any]) -> str:
    """The tables' first line: the convention with its rules, the policies and the counts."""
    return (f"# convention={result['convention']} ({result['rules']}) ties={result['ties']} "
            f"no_relevant={result['no_relevant']} queries={result['queries']} documents={result['documents']}")


def _cell(v: float | None) -> str:
    return "" if v is None or math.isnan(v) else f"{v:.4f}"


def _format_columns(result: dict[str, Any], per_query: bool) -> str:
    """``qid`` and one column per metric (typeset: ``ERR@10``, ``MAP``, ``MRR``), then ``Average``."""
    names = result["metrics"]
    lines = [_head(result),
             "\t".join(["qid"] + [display_name(n) for n in names])]
    rows = list(result["per_query"].items()) if per_query else []
    for qid, vals in rows + [("Average", result["average"])]:
        lines.append("\t".join([qid] + [_cell(vals.get(n)) for n in names]))
    return "\n".join(lines) + "\n"
