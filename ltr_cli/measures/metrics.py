"""Ranking measures as pure functions of a ranking and a label vector.

Conventions (the ``paper`` preset: perceptron paper Eq. 1 and Eq. 2):

* A **ranking** ``pi`` is a permutation of ``0..m-1`` given as an int array of length m:
  ``pi[i]`` is the index of the document shown at (1-based) position ``i + 1``.
  Evaluation and feedback use the same ranking, so tie-breaking is decided once, by
  :func:`rank_from_scores`.
* **Gain** ``G(r) = 2**r - 1`` for any real label r >= 0 (negative labels, LETOR's -1 for
  "not judged", get 0); **discount** ``D(i) = 1 / log2(i + 1)``.
* **NDCG@k** sums over the first ``min(k, m)`` positions and divides by the ideal DCG over
  the same number of positions, the ideal ordering being all m labels sorted descending.
* A query **without relevant documents** (ideal DCG 0 for NDCG, no label above the
  threshold for AP) has no defined value; the ``no_relevant`` policy decides:
  ``"zero"`` -> 0.0, ``"one"`` -> 1.0 (the online papers' MATLAB code: loss 0),
  ``"skip"`` -> NaN (left out of averages by the callers).
* **AP** binarises labels with ``label > threshold`` (default 0) and averages precision@j
  over the positions j of relevant documents in the whole list.
* **precision@k** counts relevant documents in the first ``min(k, m)`` positions and
  divides by k (a short list's missing positions count as not relevant).

Everything here is vectorised numpy on one query; nothing keeps state. These are the paper
preset's building blocks (the learners' losses and SLAM weights use them too); metric names
and the metrics under a convention are :mod:`ltr_cli.measures.registry` and
:class:`ltr_cli.measures.conventions.Measure`.
"""

from __future__ import annotations

import re

import numpy as np

from ltr_cli.core.convention_table import NO_RELEVANT_POLICIES, TIE_POLICIES

_NO_RELEVANT_VALUE = {"zero": 0.0, "one": 1.0, "skip": float("nan")}


def no_relevant_value(policy: str) -> float:
    """Value given to a query without relevant documents under ``policy``."""
    try:
        return _NO_RELEVANT_VALUE[policy]
    except KeyError:
        raise ValueError(
            f"unknown no-relevant policy {policy!r}; expected one of {NO_RELEVANT_POLICIES}"
        ) from None


def rank_from_scores(
    scores: np.ndarray,
    ties: str = "input-order",
    rng: np.random.Generator | None = None,
    labels: np.ndarray | None = None,
) -> np.ndarray:
    """Turn scores (shape (m,)) into a ranking, best score first.

    Tie policies for equal scores:

    * ``input-order``: tied documents keep file order (stable sort on -score); this is
      what the LETOR/MSLR Perl scripts do.
    * ``reverse-input``: tied documents in reverse file order: a stable ascending sort,
      then reversed, as the online papers' MATLAB code does.
    * ``random``: tied documents in a uniformly random order drawn from ``rng``.
    * ``pessimistic``: tied documents worst first (lower label first, then file order);
      needs ``labels``. Gives a lower bound on any measure.
    """
    s = np.asarray(scores, dtype=np.float64)
    if ties == "input-order":
        return np.argsort(-s, kind="stable")
    if ties == "reverse-input":
        return np.argsort(s, kind="stable")[::-1].copy()
    if ties == "random":
        if rng is None:
            raise ValueError("tie policy 'random' needs a numpy Generator")
        perm = rng.permutation(s.shape[0])
        return perm[np.argsort(-s[perm], kind="stable")]
    if ties == "pessimistic":
        if labels is None:
            raise ValueError("tie policy 'pessimistic' needs the labels")
        # lexsort: last key is primary. Primary -score, then label ascending, then index.
        idx = np.arange(s.shape[0])
        return np.lexsort((idx, np.asarray(labels, dtype=np.float64), -s))
    raise ValueError(f"unknown tie policy {ties!r}; expected one of {TIE_POLICIES}")


def row_scores(X: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Scores ``X @ w`` (m,) for X (m, d) and w (d,), every row summed in one fixed order:
    four partial sums (column j into sum j mod 4) of the rounded products, then ``(a0 + a1)
    + (a2 + a3)``. Identical rows get bit-identical scores, which BLAS's ``X @ w`` does not
    promise (its tail rows take another kernel); the ``reverse-input`` tie rule needs them
    tied, as the authors' MATLAB had them. Reference of
    :func:`ltr_cli.kernels.core.row_scores_into` (same bits)."""
    P = np.asarray(X, dtype=np.float64) * np.asarray(w, dtype=np.float64)
    acc = np.zeros((4, P.shape[0]))
    with np.errstate(invalid="ignore", over="ignore"):
        for j in range(P.shape[1]):
            acc[j % 4] += P[:, j]
        return (acc[0] + acc[1]) + (acc[2] + acc[3])


def ideal_ranking(labels: np.ndarray, ties: str = "input-order") -> np.ndarray:
    """Ranking that sorts labels descending (ties in scores = ties in labels)."""
    return rank_from_scores(np.asarray(labels, dtype=np.float64), ties=ties)


def exp2_gain(labels: np.ndarray) -> np.ndarray:
    """Gain ``2**r - 1`` (paper Eq. 1), for real-valued labels too.

    Negative labels (LETOR's -1 = not judged) get gain 0, not a negative gain, so NDCG
    stays in [0, 1] and SLAM weights stay non-negative.
    """
    return np.maximum(np.exp2(np.asarray(labels, dtype=np.float64)) - 1.0, 0.0)


def log2_discount(n: int) -> np.ndarray:
    """Discounts ``1 / log2(i + 1)`` for positions ``i = 1..n`` (shape (n,))."""
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def dcg_at_k(ranking: np.ndarray, labels: np.ndarray, k: int | None = None) -> float:
    """DCG over the first ``min(k, m)`` positions of ``ranking`` (paper gain/discount)."""
    m = len(ranking)
    n = m if k is None else min(int(k), m)
    gains = exp2_gain(np.asarray(labels)[np.asarray(ranking)[:n]])
    return float(gains @ log2_discount(n))


def ideal_dcg_at_k(labels: np.ndarray, k: int | None = None) -> float:
    """Ideal DCG over ``min(k, m)`` positions: all m labels sorted descending."""
    y = np.asarray(labels, dtype=np.float64)
    n = y.shape[0] if k is None else min(int(k), y.shape[0])
    top = -np.sort(-y)[:n]
    return float(exp2_gain(top) @ log2_discount(n))


def ndcg_at_k(
    ranking: np.ndarray,
    labels: np.ndarray,
    k: int | None = None,
    no_relevant: str = "zero",
) -> float:
    """NDCG@k of Eq. 1, cut-off ``min(k, m)``; ``k=None`` means k = m.

    Returns the ``no_relevant`` policy value when the ideal DCG is 0 (no label > 0).
    Empty queries (m = 0) are treated as having no relevant document.
    """
    ideal = ideal_dcg_at_k(labels, k) if len(ranking) else 0.0
    if ideal <= 0.0:
        return no_relevant_value(no_relevant)
    return dcg_at_k(ranking, labels, k) / ideal


def average_precision(
    ranking: np.ndarray,
    labels: np.ndarray,
    threshold: float = 0.0,
    no_relevant: str = "zero",
) -> float:
    """AP of Eq. 2 on labels binarised as ``label > threshold``, over the whole list."""
    rel = (np.asarray(labels, dtype=np.float64)[np.asarray(ranking)] > threshold)
    r = int(rel.sum())
    if r == 0:
        return no_relevant_value(no_relevant)
    hits = np.cumsum(rel)
    positions = np.arange(1, rel.shape[0] + 1)
    return float((hits[rel] / positions[rel]).sum() / r)


def precision_at_k(
    ranking: np.ndarray, labels: np.ndarray, k: int, threshold: float = 0.0
) -> float:
    """Relevant (``label > threshold``) documents in the first ``min(k, m)`` positions, / k."""
    top = np.asarray(labels, dtype=np.float64)[np.asarray(ranking)[: int(k)]]
    return float((top > threshold).sum() / int(k))


def eru_weights(n: int, alpha: float) -> np.ndarray:
    """Position weights ``2 ** (-(i - 1) / (alpha - 1))`` for i = 1..n (half-life alpha)."""
    if alpha <= 1.0:
        raise ValueError("ERU half-life alpha must be > 1")
    return np.exp2(-np.arange(n, dtype=np.float64) / (alpha - 1.0))


def eru(
    ranking: np.ndarray,
    labels: np.ndarray,
    d: float = 0.0,
    alpha: float = 5.0,
    k: int | None = None,
) -> float:
    """Expected Rank Utility (ranking-losses supplement, Eq. 8; Breese et al.'s R-score).

    ``sum_{i=1..min(k,m)} 2**(-(i-1)/(alpha-1)) * max(y_{pi(i)} - d, 0)`` with neutral vote
    ``d`` and viewing half-life ``alpha`` (the position whose weight is 1/2).
    """
    m = len(ranking)
    n = m if k is None else min(int(k), m)
    utility = np.maximum(np.asarray(labels, dtype=np.float64)[np.asarray(ranking)[:n]] - d, 0.0)
    return float(utility @ eru_weights(n, alpha))


def neru(
    ranking: np.ndarray,
    labels: np.ndarray,
    d: float = 0.0,
    alpha: float = 5.0,
    k: int | None = None,
    no_relevant: str = "zero",
) -> float:
    """Normalised ERU: ERU of ``ranking`` / ERU of the label-sorted ranking.

    A query where no label exceeds ``d`` has ideal ERU 0 and gets the ``no_relevant`` value.
    """
    best = eru(ideal_ranking(labels), labels, d, alpha, k)
    if best <= 0.0:
        return no_relevant_value(no_relevant)
    return eru(ranking, labels, d, alpha, k) / best


def has_relevant(labels: np.ndarray, threshold: float = 0.0) -> bool:
    """True when at least one label is above ``threshold`` (default: any positive gain)."""
    y = np.asarray(labels, dtype=np.float64)
    return bool(y.shape[0] and y.max() > threshold)


# --- cut-offs -------------------------------------------------------------------------------

_CUTOFF = re.compile(r"[1-9][0-9]{0,8}", re.ASCII)


def parse_cutoff(text: str) -> int | None:
    """A cut-off ``K`` as written after ``@`` (or in ``top-K``): a positive integer in ASCII
    digits without leading zeros, so every cut-off has exactly one spelling (``ndcg@\u0661``
    or ``ndcg@01`` would be a second NDCG@1). None if ``text`` is not one."""
    return int(text) if isinstance(text, str) and _CUTOFF.fullmatch(text) else None


def time_average(values: np.ndarray) -> np.ndarray:
    """Cumulative mean at every round, ignoring NaN (NaN until the first defined value)."""
    v = np.asarray(values, dtype=np.float64)
    defined = ~np.isnan(v)
    sums = np.cumsum(np.where(defined, v, 0.0))
    counts = np.cumsum(defined)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
