"""Many queries evaluated at once under a :class:`~ltr_cli.measures.conventions.Convention`: the
compiled kernel (:mod:`ltr_cli.kernels.evaluation`) when kernels are on and the tie policy
is deterministic, else :func:`~ltr_cli.measures.conventions.evaluate_query` per query (the
reference; ``random`` ties draw from the generator query by query, as it does).

Layout: documents stacked by query, query q owning ``offsets[q]:offsets[q+1]``; the result
is a :class:`Table` of shape (queries, measures) with the reference's keys and a mask of
the values the convention defines (the reference's None).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ltr_cli import kernels
from ltr_cli.measures.conventions import Convention, evaluate_query, letor_discounts
from ltr_cli.measures.metrics import exp2_gain, log2_discount, no_relevant_value

_TIES = {"input-order": 0, "reverse-input": 1, "pessimistic": 2}


@dataclass
class Table:
    """Per-query values (Q, K) under ``keys``; ``defined`` False where the reference has None."""

    keys: list[str]
    values: np.ndarray
    defined: np.ndarray

    def row(self, q: int) -> dict[str, float | None]:
        """Query q as the reference's dict."""
        return {k: (float(v) if ok else None) for k, v, ok in zip(self.keys, self.values[q], self.defined[q])}

    def average(self, conv: Convention) -> dict[str, float | None]:
        """The averages of :func:`~ltr_cli.measures.conventions.average_metrics`, column by column:
        letor-style presets sum the defined values in query order (a missing value adds 0,
        NaN leaves numerator and denominator) over the queries kept; the paper preset takes
        the NaN-mean of the defined values."""
        out: dict[str, float | None] = {}
        for j, key in enumerate(self.keys):
            col = np.ascontiguousarray(self.values[:, j])
            ok = self.defined[:, j]
            if conv.letor_style:
                kept = ~ok | ~np.isnan(col)
                parts = np.where(ok & kept, col, 0.0)
                total = float(np.cumsum(parts)[-1]) if parts.shape[0] else 0.0  # sequential, as sum()
                n = int(kept.sum())
                out[key] = total / n if n else None
            else:
                vals = np.ascontiguousarray(np.where(ok, col, np.nan))
                out[key] = None if np.isnan(vals).all() else float(np.nanmean(vals))
        return out


def _keys(conv: Convention) -> list[str]:
    P = conv.positions
    keys = [f"ndcg@{k}" for k in range(1, P + 1)] + ["ap"] + [f"p@{k}" for k in range(1, P + 1)]
    return keys + (["mean_ndcg"] if conv.letor_style and conv.mean_ndcg else [])


def evaluate_stacked(
    scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray, conv: Convention, ties: str | None = None,
    no_relevant: str | None = None, threshold: float = 0.0, rng: np.random.Generator | None = None,
) -> Table:
    """Every query's measures, as :func:`~ltr_cli.measures.conventions.evaluate_query` gives them."""
    ties = ties or conv.ties
    keys = _keys(conv)
    s = np.ascontiguousarray(scores, dtype=np.float64)
    y = np.ascontiguousarray(labels, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    Q = offsets.shape[0] - 1
    if not kernels.ENABLED or ties not in _TIES or Q == 0:
        values = np.zeros((Q, len(keys)))
        defined = np.ones((Q, len(keys)), dtype=bool)
        for q in range(Q):
            a, b = offsets[q], offsets[q + 1]
            row = evaluate_query(s[a:b], y[a:b], conv, ties, no_relevant, threshold, rng)
            for j, key in enumerate(keys):
                v = row[key]
                defined[q, j] = v is not None
                values[q, j] = 0.0 if v is None else v
        return Table(keys, values, defined)
    from ltr_cli.kernels.evaluation import evaluate_queries  # numba loads only here

    policy = no_relevant or conv.no_relevant
    longest = int(np.diff(offsets).max()) if Q else 0
    if conv.letor_style:
        gain = conv.gains(y)
        rel = (np.isin(y.astype(np.int64), np.fromiter(conv.relevant, dtype=np.int64)) if conv.relevant
               else y > threshold)
        zero_value = no_relevant_value(policy) if no_relevant else 0.0
    else:
        gain = exp2_gain(y)
        rel = y > threshold
        zero_value = no_relevant_value(policy)
    size = max(longest, conv.positions, 1)
    values, defined = evaluate_queries(
        s, y, gain, rel, offsets, conv.positions, _TIES[ties], conv.letor_style, log2_discount(size),
        letor_discounts(size), no_relevant_value(policy), zero_value, conv.beyond_list == "omit",
        bool(conv.letor_style and conv.mean_ndcg))
    return Table(keys, values, defined)


def evaluate_lists(pairs: list[tuple[np.ndarray, np.ndarray]], conv: Convention) -> dict[str, float | None]:
    """Mean measures over ``[(scores (m,), labels (m,)), ...]`` (the batch CV's test
    table), as averaging :func:`~ltr_cli.measures.conventions.evaluate_query` with
    :func:`~ltr_cli.measures.conventions.average_metrics` gives them."""
    if not pairs:
        return {}
    offsets = np.zeros(len(pairs) + 1, dtype=np.int64)
    np.cumsum([p[1].shape[0] for p in pairs], out=offsets[1:])
    s = np.concatenate([np.asarray(p[0], dtype=np.float64) for p in pairs])
    y = np.concatenate([np.asarray(p[1], dtype=np.float64) for p in pairs])
    return evaluate_stacked(s, y, offsets, conv).average(conv)
