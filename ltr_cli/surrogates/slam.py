"""SLAM surrogates (perceptron paper, Eq. 8/9) and their subgradient (Eq. 13/16).

For scores ``s`` (m,), relevance ``R`` (m,) and non-negative weights ``v`` (m,)::

    phi(s, R) = sum_i v_i * c_i,   c_i = max(0, max_{j: R_j < R_i} (margin_ij + s_j - s_i))

with ``margin_ij = delta`` (``margin="constant"``, the paper, delta = 1 by default) or
``margin_ij = delta * (R_i - R_j)`` (``margin="label-difference"``, the authors' code).
The subgradient w.r.t. s is ``sum_{i: c_i > 0} v_i (e_{k_i} - e_i)`` with ``k_i`` the
maximising j. Which j wins among equal maxima is a named convention, ``ties``
(:data:`MAXIMISER_TIES`), recorded with every run:

* ``first-index``: the smallest document index (the default);
* ``authors-code``: the higher relevance level first, then the *later* document in file
  order - what the authors' MATLAB does (it sorts the list by label, stable ascending, then
  reverses it, and takes MATLAB's first maximum). It matters from the first rounds on real
  data, where many documents tie at w = 0.

Cost: O(m log m) - one lexsort plus a pass over the distinct relevance levels, using
``max_{j: R_j < L} (s_j - delta R_j)`` as a running maximum over lower levels; no m x m
matrix is ever formed.

Weight vectors (documents sorted by relevance descending, ties in input order):

* v^NDCG (Eq. 11): ``v_i = G(R_(i)) D(i) / Z(R)`` with G = 2^r - 1, D(i) = 1/log2(i + 1)
  and Z the ideal DCG over all m documents (sum v = 1; all zero when no document is
  relevant); v^NDCG@k (Eq. 24): the same with positions beyond k weighted 0 and Z = Z_k.
* v^AP (Eq. 10) on binary relevance ``R > threshold``: ``1/r`` on the r relevant
  documents, 0 elsewhere.
* ``level_average=True``: each weight replaced by the mean over its relevance level, as
  the authors' code did. See :func:`slam_weights` for the order within a level.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ltr_cli.measures.metrics import exp2_gain, log2_discount

Margin = Literal["constant", "label-difference"]
MaximiserTies = Literal["first-index", "authors-code"]
MAXIMISER_TIES: tuple[str, ...] = ("first-index", "authors-code")


def slam_weights(
    labels: np.ndarray,
    scores: np.ndarray | None = None,
    measure: str = "ndcg",
    k: int | None = None,
    level_average: bool = False,
    threshold: float = 0.0,
) -> np.ndarray:
    """SLAM weight vector v (m,) in the documents' original order.

    ``measure``: ``ndcg`` (Eq. 11; ``k`` given -> v^NDCG@k of Eq. 24: positions beyond k get
    0 and Z is the ideal DCG@k) or ``ap`` (Eq. 10 on ``label > threshold``).

    The equations index documents sorted by relevance. Within a relevance level the order
    follows the scores, best first, as in the proof of Theorem 8 (ties by index): the
    weights then depend only on each document's relevance and rank inside its level, so
    documents of a level are exchangeable. (A consequence the paper does not discuss: with
    several documents in one level, this assignment is a minimum over orders and makes phi
    non-convex in s; ``level_average=True`` is both exchangeable and convex.)
    ``level_average=True`` replaces each weight by the mean over its level, as the
    authors' code did. All weights are 0 when no document is relevant.
    """
    y = np.asarray(labels, dtype=np.float64)
    m = y.shape[0]
    if measure == "ap":
        rel = y > threshold
        r = int(rel.sum())
        return rel / r if r else np.zeros(m)
    if measure != "ndcg":
        raise ValueError(f"unknown SLAM weight measure {measure!r}; expected ndcg or ap")
    idx = np.arange(m)
    if scores is None:
        order = np.lexsort((idx, -y))
    else:
        order = np.lexsort((idx, -np.asarray(scores, dtype=np.float64), -y))
    n = m if k is None else min(int(k), m)
    contrib = exp2_gain(y[order]) * log2_discount(m)
    contrib[n:] = 0.0
    z = contrib.sum()
    v = np.zeros(m)
    if z <= 0.0:
        return v
    v[order] = contrib / z
    if level_average:
        v = _level_mean(y, v)
    return v


def _level_mean(y: np.ndarray, v: np.ndarray) -> np.ndarray:
    levels, inverse = np.unique(y, return_inverse=True)
    sums = np.bincount(inverse, weights=v, minlength=levels.shape[0])
    counts = np.bincount(inverse, minlength=levels.shape[0])
    return (sums / counts)[inverse]


def ndcg_weights(labels: np.ndarray, level_average: bool = False) -> np.ndarray:
    """v^NDCG of Eq. 11 with documents of a level in input order (a fixed, score-free
    assignment, for which phi is convex: Lemma 3)."""
    return slam_weights(labels, None, "ndcg", None, level_average)


def ap_weights(labels: np.ndarray, threshold: float = 0.0) -> np.ndarray:
    """v^AP of Eq. 10 on labels binarised as ``label > threshold``."""
    return slam_weights(labels, measure="ap", threshold=threshold)


def weight_ratio(v: np.ndarray) -> float:
    """v_max of Lemma 5 for one query: max_{i,j: v_i, v_j > 0} v_i / v_j (0 if no weight)."""
    pos = v[v > 0]
    return float(pos.max() / pos.min()) if pos.size else 0.0


def slam_terms(
    scores: np.ndarray,
    labels: np.ndarray,
    margin: Margin = "constant",
    delta: float = 1.0,
    ties: MaximiserTies = "first-index",
) -> tuple[np.ndarray, np.ndarray]:
    """Per-document hinge terms ``c`` (m,) and maximisers ``k`` (m,) of Eq. 14.

    ``k[i] = -1`` where document i has no less relevant document (then ``c[i] = 0``).
    ``ties``: which maximiser wins among equal candidates (module docstring).
    """
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    m = s.shape[0]
    if margin == "constant":
        a = s
        b = delta - s
    elif margin == "label-difference":
        a = s - delta * y
        b = delta * y - s
    else:
        raise ValueError(f"unknown SLAM margin {margin!r}")
    if ties not in MAXIMISER_TIES:
        raise ValueError(f"unknown maximiser tie rule {ties!r}; expected one of {MAXIMISER_TIES}")
    authors = ties == "authors-code"
    idx = np.arange(m)
    # ascending level; within a level the best candidate (largest a, then the smallest index,
    # or under authors-code the largest) first
    order = np.lexsort((-idx if authors else idx, -a, y))
    y_sorted = y[order]
    starts = np.flatnonzero(np.concatenate(([True], y_sorted[1:] != y_sorted[:-1])))
    ends = np.append(starts[1:], m)

    best_a = np.full(m, -np.inf)
    best_k = np.full(m, -1, dtype=np.int64)
    run_a, run_k = -np.inf, -1
    for lo, hi in zip(starts, ends):
        members = order[lo:hi]
        best_a[members] = run_a
        best_k[members] = run_k
        cand = order[lo]
        ca = a[cand]
        # a tie with the lower levels' best: the smaller index, or (authors-code) this level
        if ca > run_a or (ca == run_a and (authors or cand < run_k)):
            run_a, run_k = ca, int(cand)
    has_lower = best_k >= 0
    c = np.zeros(m)
    c[has_lower] = np.maximum(0.0, b[has_lower] + best_a[has_lower])
    return c, best_k


def slam_value_and_grad(
    scores: np.ndarray,
    labels: np.ndarray,
    weights: np.ndarray,
    margin: Margin = "constant",
    delta: float = 1.0,
    ties: MaximiserTies = "first-index",
) -> tuple[float, np.ndarray]:
    """SLAM value (Eq. 9) and a subgradient w.r.t. the scores (Eq. 13), shapes () and (m,)."""
    v = np.asarray(weights, dtype=np.float64)
    c, k = slam_terms(scores, labels, margin, delta, ties)
    active = (c > 0.0) & (v > 0.0)
    grad = np.zeros(c.shape[0])
    np.subtract.at(grad, np.flatnonzero(active), v[active])
    np.add.at(grad, k[active], v[active])
    return float(v @ c), grad


def max_pair_value_and_grad(
    scores: np.ndarray,
    labels: np.ndarray,
    margin: Margin = "constant",
    delta: float = 1.0,
    ties: MaximiserTies = "first-index",
) -> tuple[float, np.ndarray]:
    """Crammer-Singer style surrogate of Alg. 3 (Eq. 27) and its subgradient (Eq. 29).

    ``phi_C = max_{i,j: R_i > R_j} (delta + s_j - s_i)_+`` = the largest SLAM hinge term, so
    the same O(m log m) sweep gives it; the subgradient is ``e_j* - e_i*`` for the maximising
    pair, or 0 when phi_C = 0. Among equal maxima, ``ties="first-index"`` takes the first
    document index i; ``"authors-code"`` the i of the highest relevance level, then the
    latest in file order (and its partner j by the same rule, see :func:`slam_terms`).
    """
    c, k = slam_terms(scores, labels, margin, delta, ties)
    grad = np.zeros(c.shape[0])
    if not c.size:
        return 0.0, grad
    i = int(np.argmax(c))
    if ties == "authors-code" and c[i] == c[i]:
        tied = np.flatnonzero(c == c[i])
        y = np.asarray(labels, dtype=np.float64)[tied]
        i = int(tied[np.lexsort((tied, y))[-1]])  # highest level, then the latest document
    if c[i] <= 0.0:
        return 0.0, grad
    grad[i] -= 1.0
    grad[k[i]] += 1.0
    return float(c[i]), grad


def authors_feature_gradient(X: np.ndarray, labels: np.ndarray, c: np.ndarray, k: np.ndarray,
                             v: np.ndarray) -> np.ndarray:
    """SLAM's subgradient in weight space (d,) as the authors' MATLAB forms it, for X (m, d),
    labels, hinge terms ``c``, maximisers ``k`` (:func:`slam_terms`) and weights ``v`` (m,):
    over the documents in their loop order (labels descending, equal labels later document
    first), ``g = g + v_i (X[k_i] - X[i])`` where ``c_i > 0`` and ``v_i > 0``. Equal to
    ``X.T @ grad_s``, but equal rows cancel exactly, as in their code."""
    X64 = np.asarray(X, dtype=np.float64)
    g = np.zeros(X64.shape[1])
    for i in np.argsort(np.asarray(labels, dtype=np.float64), kind="stable")[::-1]:
        if c[i] > 0.0 and v[i] > 0.0:
            g = g + v[i] * (X64[k[i]] - X64[i])
    return g
