"""Metric conventions: one :class:`Convention` per named preset, the single source of the
gain, discount, relevance rule, behaviour for k beyond the list, no-relevant value and tie
order that ``ltr eval``, the batch CV and the manifests use.

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
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr_cli.measures.convention_table import BEYOND_LIST, PRESETS
from ltr_cli.measures.metrics import (
    average_precision,
    exp2_gain,
    log2_discount,
    ndcg_at_k,
    no_relevant_value,
    precision_at_k,
    rank_from_scores,
)


@dataclass(frozen=True)
class Convention:
    """A metric convention.

    ``gain_table``: integer label -> gain (other labels gain 0 and are not relevant), or
    None for the paper's ``2^r - 1`` on real labels; ``relevant``: the relevant labels, or
    None for ``label > threshold``; ``positions``: the cut-offs reported (1..positions);
    ``beyond_list``: a key of :data:`BEYOND_LIST`; ``mean_ndcg``: report MeanNDCG;
    ``ties``, ``no_relevant``: the default policies (:data:`ltr_cli.measures.metrics.TIE_POLICIES`,
    :data:`~ltr_cli.measures.metrics.NO_RELEVANT_POLICIES`). The discount is the paper's
    ``1/log2(i + 1)`` without a gain table and the LETOR scripts' ``1, 1, 1/log2(i)`` with one.
    """

    name: str
    gain_table: dict[int, float] | None
    relevant: frozenset[int] | None
    positions: int
    beyond_list: str
    mean_ndcg: bool
    ties: str = "input-order"
    no_relevant: str = "zero"

    @property
    def letor_style(self) -> bool:
        """True for the official scripts' presets (integer labels, gain table)."""
        return self.gain_table is not None

    def gains(self, labels: np.ndarray) -> np.ndarray:
        """Gain of each label (m,)."""
        if self.gain_table is None:
            return exp2_gain(labels)
        ints = np.asarray(labels, dtype=np.float64).astype(np.int64)
        out = np.zeros(ints.shape[0])
        for label, gain in self.gain_table.items():  # labels outside the table keep gain 0
            out[ints == label] = gain
        return out

    def outside_gain_table(self, labels: np.ndarray) -> int:
        """How many of ``labels`` the gain table does not list (they get gain 0 and are not
        relevant, as in the official scripts); 0 for a convention without a table."""
        if self.gain_table is None:
            return 0
        ints = np.asarray(labels, dtype=np.float64).astype(np.int64)  # int(): truncation, as gains()
        return int((~np.isin(ints, np.fromiter(self.gain_table, dtype=np.int64))).sum())

    def outside_gain_table_warning(self, count: int, where: str = "documents") -> str:
        """The one warning line for ``count`` labels outside the gain table."""
        return (f"{count} {where} have labels outside the {self.name} gain table; like the official script "
                "they get gain 0 and count as not relevant")

    def discounts(self, n: int) -> np.ndarray:
        """Discounts of positions 1..n (n,)."""
        return letor_discounts(n) if self.letor_style else log2_discount(n)

    def describe(self) -> dict[str, Any]:
        """The convention as the manifest records it."""
        return {
            "convention": self.name,
            "gain": "2^r - 1" if self.gain_table is None else {str(k): v for k, v in self.gain_table.items()},
            "discount": "1/log2(i+1)" if not self.letor_style else "1 at positions 1-2, then 1/log2(i)",
            "relevant": "label > threshold" if self.relevant is None else sorted(self.relevant),
            "k_beyond_list": BEYOND_LIST[self.beyond_list],
            "ties": self.ties, "no_relevant": self.no_relevant,
        }


CONVENTIONS: dict[str, Convention] = {name: Convention(name, **preset) for name, preset in PRESETS.items()}


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

    ints = y.astype(np.int64)
    gain = conv.gains(y)
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
