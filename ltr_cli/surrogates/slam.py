"""SLAM surrogates (perceptron paper, Eq. 8/9) and their subgradient (Eq. 13/16).

For scores ``s`` (m,), relevance ``R`` (m,) and non-negative weights ``v`` (m,)::

    phi(s, R) = sum_i v_i * c_i,   c_i = max(0, max_{j: R_j < R_i} (margin_ij + s_j - s_i))

with ``margin_ij = delta`` (``margin="constant"``, the paper, delta = 1 by default) or
``margin_ij = delta * (R_i - R_j)`` (``margin="label-difference"``, the authors' code).
The subgradient w.r.t. s is ``sum_{i: c_i > 0} v_i (e_{k_i} - e_i)`` with ``k_i`` the
maximising j; among equal maxima the smallest document index is taken (so the fast kernel
and the slow reference in the tests agree exactly, even at s = 0).

Cost: O(m log m) - one lexsort plus a pass over the distinct relevance levels, using
``max_{j: R_j < L} (s_j - delta R_j)`` as a running maximum over lower levels; no m x m
matrix is ever formed.

Weight vectors (documents sorted by relevance descending, ties in input order):

* ``ndcg_weights``: Eq. 11, ``v_i = G(R_(i)) D(i) / Z(R)`` with G = 2^r - 1,
  D(i) = 1/log2(i + 1) and Z the ideal DCG over all m documents (sum v = 1; all zero when
  no document is relevant). ``level_average=True`` replaces each weight by the mean over
  its relevance level, as the authors' code did (documents of one level are then
  exchangeable).
* ``ap_weights``: Eq. 10 on binary relevance ``R > threshold``: ``1/r`` on the r relevant
  documents, 0 elsewhere.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ltr_cli.metrics import exp2_gain, log2_discount

Margin = Literal["constant", "label-difference"]


def ndcg_weights(labels: np.ndarray, level_average: bool = False) -> np.ndarray:
    """v^NDCG of Eq. 11, in the documents' original order (shape (m,))."""
    y = np.asarray(labels, dtype=np.float64)
    m = y.shape[0]
    order = np.argsort(-y, kind="stable")
    contrib = exp2_gain(y[order]) * log2_discount(m)
    z = contrib.sum()
    v = np.zeros(m)
    if z <= 0.0:
        return v
    v[order] = contrib / z
    if level_average:
        levels, inverse = np.unique(y, return_inverse=True)
        sums = np.bincount(inverse, weights=v, minlength=levels.shape[0])
        counts = np.bincount(inverse, minlength=levels.shape[0])
        v = (sums / counts)[inverse]
    return v


def ap_weights(labels: np.ndarray, threshold: float = 0.0) -> np.ndarray:
    """v^AP of Eq. 10 on labels binarised as ``label > threshold``."""
    rel = np.asarray(labels, dtype=np.float64) > threshold
    r = int(rel.sum())
    return rel / r if r else np.zeros(rel.shape[0])


def slam_terms(
    scores: np.ndarray,
    labels: np.ndarray,
    margin: Margin = "constant",
    delta: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Per-document hinge terms ``c`` (m,) and maximisers ``k`` (m,) of Eq. 14.

    ``k[i] = -1`` where document i has no less relevant document (then ``c[i] = 0``).
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
    idx = np.arange(m)
    # ascending level; within a level the best candidate (largest a, then smallest index) first
    order = np.lexsort((idx, -a, y))
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
        if ca > run_a or (ca == run_a and cand < run_k):
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
) -> tuple[float, np.ndarray]:
    """SLAM value (Eq. 9) and a subgradient w.r.t. the scores (Eq. 13), shapes () and (m,)."""
    v = np.asarray(weights, dtype=np.float64)
    c, k = slam_terms(scores, labels, margin, delta)
    active = (c > 0.0) & (v > 0.0)
    grad = np.zeros(c.shape[0])
    np.subtract.at(grad, np.flatnonzero(active), v[active])
    np.add.at(grad, k[active], v[active])
    return float(v @ c), grad
