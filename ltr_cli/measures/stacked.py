"""Many queries evaluated at once under a :class:`~ltr_cli.measures.conventions.Convention`: the
compiled kernel (:mod:`ltr_cli.kernels.evaluation`) when kernels are on and the tie policy
is deterministic, else :func:`~ltr_cli.measures.conventions.evaluate_query` per query (the
reference; ``random`` ties draw from the generator query by query, as it does).

Which measures: a list of :class:`~ltr_cli.measures.conventions.Measure` (default: the convention's
columns, :func:`~ltr_cli.measures.conventions.default_metric_names`). On the compiled path the
convention's columns come from the table kernel, ERR and RR from ``stacked_measures``
(their per-document inputs computed by the registry's ``doc_values``), and any other
measure (e.g. NERU, or NDCG@k beyond the convention's positions) from its reference function
beside them, on the same rankings.

Layout: documents stacked by query, query q owning ``offsets[q]:offsets[q+1]``; the result
is a :class:`Table` of shape (queries, measures) with the measures' names as keys and a
mask of the values the convention defines (the reference's None).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ltr_cli import kernels
from ltr_cli.kernels import ahead
from ltr_cli.measures.conventions import Convention, Measure, bind, default_metric_names, evaluate_query, letor_discounts
from ltr_cli.measures.metrics import log2_discount, no_relevant_value, rank_from_scores, row_scores

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

    def contributions(self, conv: Convention) -> np.ndarray:
        """What each query adds to :meth:`average` (Q, K), NaN where it is left out:
        letor-style presets count a missing value as 0 and leave NaN out; the paper preset
        leaves a missing value out."""
        return np.where(self.defined, self.values, 0.0 if conv.letor_style else np.nan)

    def average(self, conv: Convention) -> dict[str, float | None]:
        """The averages of :func:`~ltr_cli.measures.conventions.average_metrics`, column by column:
        letor-style presets sum the defined values in query order (a missing value adds 0,
        NaN leaves numerator and denominator) over the queries kept; the paper preset takes
        the NaN-mean of the defined values. Both are means of :meth:`contributions`."""
        return {key: mean_kept(col, conv) for key, col in zip(self.keys, self.contributions(conv).T)}


def mean_kept(values: np.ndarray, conv: Convention) -> float | None:
    """The mean of one column of :meth:`Table.contributions` as :meth:`Table.average` takes
    it (None when every value is left out): letor-style presets sum in query order, as
    ``sum()``; the paper preset takes the NaN-mean."""
    col = np.ascontiguousarray(values, dtype=np.float64)
    kept = ~np.isnan(col)
    n = int(kept.sum())
    if not n:
        return None
    if conv.letor_style:
        return float(np.cumsum(np.where(kept, col, 0.0))[-1]) / n  # sequential, as sum()
    return float(np.nanmean(col))


def linear_scores(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """``X @ w`` (m,) for rows X (m, d) and weights w (d,), every row summed in one fixed
    order, so identical rows get bit-identical scores and tie as the tie rule has them
    (BLAS's ``X @ w`` breaks such ties by rounding noise): the compiled
    :func:`~ltr_cli.kernels.core.row_scores_into` when kernels are on, else its numpy
    reference :func:`~ltr_cli.measures.metrics.row_scores` (the same bits). Each row's score
    depends on that row alone, so rows may be scored in any grouping."""
    w = np.ascontiguousarray(w, dtype=np.float64)
    X = np.asarray(X)
    if X.dtype not in (np.float32, np.float64):
        X = X.astype(np.float64)
    if not kernels.ENABLED or X.shape[0] == 0:
        return row_scores(X, w)
    s = np.empty(X.shape[0])
    (kernels.module or kernels.load()).core.row_scores_into(np.ascontiguousarray(X), w, s)
    return s


def evaluate_stacked(
    scores: np.ndarray, labels: np.ndarray, offsets: np.ndarray, conv: Convention, ties: str | None = None,
    no_relevant: str | None = None, threshold: float = 0.0, rng: np.random.Generator | None = None,
    measures: list[Measure] | None = None,
) -> Table:
    """Every query's ``measures`` (default: the convention's columns under ``no_relevant``
    and ``threshold``), as :func:`~ltr_cli.measures.conventions.evaluate_query` gives them."""
    ties = ties or conv.ties
    measures = measures or bind(None, conv, no_relevant, threshold)
    keys = [meas.name for meas in measures]
    s = np.ascontiguousarray(scores, dtype=np.float64)
    y = np.ascontiguousarray(labels, dtype=np.float64)
    offsets = np.asarray(offsets, dtype=np.int64)
    Q = offsets.shape[0] - 1
    values = np.zeros((Q, len(keys)))
    defined = np.ones((Q, len(keys)), dtype=bool)
    if not kernels.ENABLED or ties not in _TIES or Q == 0:
        for q in range(Q):
            a, b = offsets[q], offsets[q + 1]
            row = evaluate_query(s[a:b], y[a:b], conv, ties, rng=rng, measures=measures)
            for j, key in enumerate(keys):
                v = row[key]
                defined[q, j] = v is not None
                values[q, j] = 0.0 if v is None else v
        return Table(keys, values, defined)
    table_keys = default_metric_names(conv)
    in_table = [j for j, meas in enumerate(measures) if meas.name in table_keys
                and meas.no_relevant == (no_relevant or conv.no_relevant) and meas.threshold == threshold]
    if in_table:
        t_values, t_defined = _table_kernel(s, y, offsets, conv, ties, no_relevant, threshold)
        cols = [table_keys.index(keys[j]) for j in in_table]
        values[:, in_table], defined[:, in_table] = t_values[:, cols], t_defined[:, cols]
    stacked_measures = ahead.function("ltr_cli.kernels.evaluation:stacked_measures")

    compiled = [j for j, meas in enumerate(measures) if j not in in_table and meas.info.doc_values is not None
                and meas.info.kernel is not None]
    if compiled:
        spec = np.array([_row(measures[j]) for j in compiled])
        doc = np.stack([_doc_values(measures[j], y) for j in compiled])
        values[:, compiled] = stacked_measures(s, y, offsets, _TIES[ties], spec, doc)
    rest = [j for j in range(len(measures)) if j not in in_table and j not in compiled]
    for q in range(Q if rest else 0):  # Python-only measures, beside the compiled ones
        a, b = offsets[q], offsets[q + 1]
        ranking = rank_from_scores(s[a:b], ties, labels=y[a:b])
        for j in rest:
            v = measures[j].value(ranking, y[a:b])
            defined[q, j] = v is not None
            values[q, j] = 0.0 if v is None else v
    return Table(keys, values, defined)


def _row(meas: Measure) -> tuple[float, float, float, float, float]:
    """``stacked_measures``' row of a measure, under any convention (the convention is in
    the per-document inputs)."""
    return (float(meas.info.kernel or 0), -1.0 if meas.k is None else float(meas.k), meas.threshold,
            meas.none_value, 2.0 ** meas.max_grade)


def _doc_values(meas: Measure, y: np.ndarray) -> np.ndarray:
    """The per-document inputs of a measure's kernel (N,): a function of each document's
    label alone, so one call covers every query."""
    assert meas.info.doc_values is not None
    return np.ascontiguousarray(meas.info.doc_values(y, meas), dtype=np.float64)


def _table_kernel(s: np.ndarray, y: np.ndarray, offsets: np.ndarray, conv: Convention, ties: str,
                  no_relevant: str | None, threshold: float) -> tuple[np.ndarray, np.ndarray]:
    """The convention's columns (:func:`default_metric_names`) of every query, compiled."""
    evaluate_queries = ahead.function("ltr_cli.kernels.evaluation:evaluate_queries")  # built ahead, or numba's

    policy = no_relevant or conv.no_relevant
    longest = int(np.diff(offsets).max())
    if conv.letor_style:
        gain = conv.gains(y)
        rel = conv.relevance(y, threshold)
        zero_value = no_relevant_value(policy) if no_relevant else 0.0
    else:  # the convention's gain on real labels (2^r - 1, or r), relevant = label > threshold
        gain = conv.gains(y)
        rel = conv.relevance(y, threshold)
        zero_value = no_relevant_value(policy)
    size = max(longest, conv.positions, 1)
    return evaluate_queries(
        s, y, gain, rel, offsets, conv.positions, _TIES[ties], conv.letor_style, log2_discount(size),
        letor_discounts(size), no_relevant_value(policy), zero_value, conv.beyond_list == "omit",
        bool(conv.letor_style and conv.mean_ndcg))


def evaluate_pairs(pairs: list[tuple[np.ndarray, np.ndarray]], conv: Convention,
                   measures: list[Measure] | None = None) -> Table:
    """Every query's ``measures`` (default: the convention's columns) over ``[(scores (m,),
    labels (m,)), ...]``, in order (the batch CV's vali and test tables)."""
    offsets = np.zeros(len(pairs) + 1, dtype=np.int64)
    np.cumsum([p[1].shape[0] for p in pairs], out=offsets[1:])
    s = np.concatenate([np.zeros(0)] + [np.asarray(p[0], dtype=np.float64) for p in pairs])
    y = np.concatenate([np.zeros(0)] + [np.asarray(p[1], dtype=np.float64) for p in pairs])
    return evaluate_stacked(s, y, offsets, conv, measures=measures)


def evaluate_lists(pairs: list[tuple[np.ndarray, np.ndarray]], conv: Convention,
                   measures: list[Measure] | None = None) -> dict[str, float | None]:
    """Mean ``measures`` (default: the convention's columns) over ``[(scores (m,), labels
    (m,)), ...]``, as averaging :func:`~ltr_cli.measures.conventions.evaluate_query` with
    :func:`~ltr_cli.measures.conventions.average_metrics` gives them."""
    if not pairs:
        return {}
    return evaluate_pairs(pairs, conv, measures).average(conv)
