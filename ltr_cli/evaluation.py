"""``ltr eval``: score a labelled file under a named metric convention (the conventions
and the per-query measures are :mod:`ltr_cli.conventions`; this module reads the files,
groups queries and formats the LETOR scripts' tables)."""

from __future__ import annotations

import math
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader, iter_lines
from ltr_cli.errors import DataFormatError, LtrError
from ltr_cli.conventions import CONVENTIONS, average_metrics, evaluate_query


def read_scores(path: Path) -> np.ndarray:
    """One score per line (the LETOR tools' prediction format); blank lines not allowed."""
    values: list[float] = []
    for lineno, raw in iter_lines(Path(path)):
        text = raw.strip()
        try:
            v = float(text.split()[0]) if text else float("nan")
        except ValueError:
            raise DataFormatError(str(path), lineno, f"bad score {text[:40]!r}; expected one number per line") from None
        if not math.isfinite(v):
            raise DataFormatError(str(path), lineno, "score is empty or not a finite number")
        values.append(v)
    return np.asarray(values, dtype=np.float64)


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
) -> dict[str, Any]:
    """Evaluate a score file against a labelled file; per-query values and averages."""
    conv = CONVENTIONS[convention]
    reader = SVMLightReader(data_path, ReaderOptions(
        n_features=None, index_base=options.index_base, qid_source=options.qid_source,
        group_file=options.group_file, null_value=0.0, split_qids="new-query"))  # features unused
    labels: dict[str, list[np.ndarray]] = {}
    rows: dict[str, list[np.ndarray]] = {}
    start = 0
    for q in reader.sparse_queries():
        labels.setdefault(q.qid, []).append(q.y)
        rows.setdefault(q.qid, []).append(np.arange(start, start + q.m))
        start += q.m
    scores = read_scores(score_path)
    if scores.shape[0] != start:
        raise LtrError(
            f"{score_path}: has {scores.shape[0]} scores but {data_path} has {start} documents; "
            "the score file needs one line per document, in data-file order"
        )
    rng = np.random.default_rng(seed)
    per_query: dict[str, dict[str, float | None]] = {}
    odd_labels = 0
    for qid in sorted(labels, key=_qid_key):
        y = np.concatenate(labels[qid])
        s = scores[np.concatenate(rows[qid])]
        if conv.letor_style:
            bad = (y != np.floor(y)) | (y < 0)
            if bad.any():
                raise LtrError(
                    f"{data_path}: qid {qid} has label {y[bad][0]:g}; the {conv.name} convention "
                    "(official Perl script) reads non-negative integer labels only - use --convention paper"
                )
            odd_labels += int(sum(int(v) not in (conv.gain_table or {}) for v in y))
        per_query[qid] = evaluate_query(s, y, conv, ties, no_relevant, threshold, rng)
    if odd_labels:
        warnings.warn(
            f"{odd_labels} documents have labels outside the {conv.name} gain table; like the "
            "official script they get gain 0 and count as not relevant",
            stacklevel=2,
        )
    n = len(per_query)
    average = average_metrics(list(per_query.values()), conv)
    return {
        "convention": conv.name,
        "ties": ties or conv.ties,
        "no_relevant": no_relevant or (conv.no_relevant if not conv.letor_style else "zero (script)"),
        "queries": n,
        "documents": start,
        "per_query": per_query,
        "average": average,
    }


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
    """The LETOR scripts' layout: ``qid P@1..P@k MAP`` and ``qid NDCG@1..NDCG@k [MeanNDCG]``."""
    avg = result["average"]
    ks = sorted(int(k.split("@")[1]) for k in avg if k.startswith("ndcg@"))

    def cell(v: float | None) -> str:
        return "" if v is None or math.isnan(v) else f"{v:.4f}"

    lines = [f"# convention={result['convention']} ties={result['ties']} "
             f"no_relevant={result['no_relevant']} queries={result['queries']} "
             f"documents={result['documents']}"]
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
