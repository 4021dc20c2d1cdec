"""``ltr eval``: score a labelled file under a named metric convention.

Presets (``../shared/METRIC-CONVENTIONS.md``):

* ``paper`` - perceptron paper Eq. 1/2: gain 2^r - 1 for any real label, discount
  1/log2(i+1), NDCG@k over min(k, m) positions, relevant = label > threshold for AP and
  P@k, P@k divided by k, no-relevant value by policy (default 0).
* ``letor4`` - LETOR 4.0 ``Eval-Score-4.0.pl``: gains {0: 0, 1: 1, 2: 3}, other labels
  gain 0 and are not relevant (a warning is printed); discount 1 at positions 1 and 2,
  1/log2(i) from position 3; NDCG@k = 0 when the ideal DCG@k is 0 and for k > m; P@k with
  relevant = label 1 or 2, missing positions not relevant, divided by k; AP over the whole
  list, 0 without relevant documents; MeanNDCG = mean of NDCG@1..NDCG@m; ties keep file
  order; averages are plain means of the unrounded per-query values.
* ``letor3`` - ``Eval-Score-3.0.pl``: as letor4 but positions 1..16, and NDCG@k / P@k only
  for k <= m (omitted from the query's row; they add nothing to the average, whose
  denominator is still the number of queries); no MeanNDCG.
* ``mslr`` - ``Eval-Score-MSLR.pl``: as letor4 with gains {0, 1, 3, 7, 15} for labels 0-4
  and relevant = label >= 2 for P@k and AP.

The LETOR scripts read integer labels only (their line pattern is ``^(\\d+) qid:``), so
the letor/mslr presets refuse other labels. Queries are grouped by qid (lines of one qid
anywhere in the file form one query, in file order) and reported in numeric qid order
where all qids are numeric.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader, iter_lines
from ltr_cli.errors import DataFormatError, LtrError
from ltr_cli.metrics import (
    average_precision,
    ndcg_at_k,
    no_relevant_value,
    precision_at_k,
    rank_from_scores,
)


@dataclass(frozen=True)
class Convention:
    name: str
    gains: dict[int, float] | None  # None: 2^r - 1 on real labels
    relevant: frozenset[int] | None  # None: label > threshold
    positions: int
    beyond_list: str  # "truncate" (paper), "zero" (letor4/mslr), "omit" (letor3)
    mean_ndcg: bool
    ties: str = "input-order"
    no_relevant: str = "zero"

    @property
    def letor_style(self) -> bool:
        return self.gains is not None


CONVENTIONS: dict[str, Convention] = {
    "paper": Convention("paper", None, None, 10, "truncate", False),
    "letor3": Convention("letor3", {0: 0.0, 1: 1.0, 2: 3.0}, frozenset({1, 2}), 16, "omit", False),
    "letor4": Convention("letor4", {0: 0.0, 1: 1.0, 2: 3.0}, frozenset({1, 2}), 10, "zero", True),
    "mslr": Convention(
        "mslr", {0: 0.0, 1: 1.0, 2: 3.0, 3: 7.0, 4: 15.0}, frozenset({2, 3, 4}), 10, "zero", True
    ),
}


def letor_discounts(n: int) -> np.ndarray:
    """LETOR scripts' discounts for positions 1..n: 1, 1, then 1/log2(i) for i >= 3."""
    i = np.arange(1, n + 1, dtype=np.float64)
    d = np.ones(n)
    d[2:] = np.log(2.0) / np.log(i[2:])
    return d


def _letor_dcg_prefix(gains_in_order: np.ndarray, n: int) -> np.ndarray:
    """DCG@1..n with missing positions (beyond the list) counted as gain 0."""
    g = np.zeros(n)
    k = min(n, gains_in_order.shape[0])
    g[:k] = gains_in_order[:k]
    return np.cumsum(g * letor_discounts(n))


def evaluate_query(
    scores: np.ndarray,
    labels: np.ndarray,
    conv: Convention,
    ties: str | None = None,
    no_relevant: str | None = None,
    threshold: float = 0.0,
    rng: np.random.Generator | None = None,
) -> dict[str, float | None]:
    """Per-query values ``ndcg@1..``, ``p@1..``, ``ap`` (and ``mean_ndcg``) under ``conv``.

    ``ties`` / ``no_relevant`` override the preset's policies. Values the convention does
    not define for this query (letor3, k > m) are ``None``.
    """
    ties = ties or conv.ties
    policy = no_relevant or conv.no_relevant
    y = np.asarray(labels, dtype=np.float64)
    ranking = rank_from_scores(scores, ties, rng, labels=y)
    m = y.shape[0]
    P = conv.positions
    out: dict[str, float | None] = {}
    if not conv.letor_style:
        for k in range(1, P + 1):
            out[f"ndcg@{k}"] = ndcg_at_k(ranking, y, k, policy)
        out["ap"] = average_precision(ranking, y, threshold, policy)
        for k in range(1, P + 1):
            out[f"p@{k}"] = precision_at_k(ranking, y, k, threshold)
        return out

    table = conv.gains or {}
    ints = y.astype(np.int64)
    gain = np.array([table.get(int(v), 0.0) for v in ints])
    rel = np.array([int(v) in conv.relevant for v in ints]) if conv.relevant else y > threshold
    n_pos = max(m, P)
    dcg = _letor_dcg_prefix(gain[ranking], n_pos)
    ideal = _letor_dcg_prefix(np.sort(gain)[::-1], n_pos)
    zero_value = no_relevant_value(policy) if no_relevant else 0.0
    with np.errstate(invalid="ignore", divide="ignore"):
        ndcg_all = np.where(ideal > 0, dcg / np.where(ideal > 0, ideal, 1.0), zero_value)
    for k in range(1, P + 1):
        if k <= m:
            out[f"ndcg@{k}"] = float(ndcg_all[k - 1])
        else:
            out[f"ndcg@{k}"] = None if conv.beyond_list == "omit" else 0.0
    hits = np.cumsum(rel[ranking])
    r = int(hits[-1]) if m else 0
    if r:
        positions = np.arange(1, m + 1)
        out["ap"] = float((hits[rel[ranking]] / positions[rel[ranking]]).sum() / r)
    else:
        out["ap"] = zero_value
    for k in range(1, P + 1):
        if k <= m:
            out[f"p@{k}"] = float(hits[k - 1] / k)
        elif conv.beyond_list == "omit":
            out[f"p@{k}"] = None
        else:
            out[f"p@{k}"] = float(hits[-1] / k) if m else 0.0
    if conv.mean_ndcg:
        out["mean_ndcg"] = float(ndcg_all[:m].mean()) if m else 0.0
    return out


def average_metrics(per_query: list[dict[str, float | None]], conv: Convention) -> dict[str, float | None]:
    """Average per-query values the way the convention's script does: letor-style presets
    sum what exists (a missing k > m value adds 0) and divide by the number of queries;
    NaN (``--no-relevant skip``) leaves numerator and denominator; the paper preset takes
    the mean of the defined values."""
    average: dict[str, float | None] = {}
    for key in per_query[0]:
        vals = [v[key] for v in per_query]
        if conv.letor_style:
            kept = [v for v in vals if v is None or not math.isnan(v)]
            average[key] = float(sum(v for v in kept if v is not None) / len(kept)) if kept else None
        else:
            arr = np.array([np.nan if v is None else v for v in vals], dtype=np.float64)
            average[key] = None if np.isnan(arr).all() else float(np.nanmean(arr))
    return average


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
            odd_labels += int(sum(int(v) not in (conv.gains or {}) for v in y))
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
