"""Per-query structured and pairwise losses of a linear scorer, as (value, d value / d w).

* :func:`ap_structural_hinge` - SVMmap's margin-rescaled hinge with Delta = 1 - AP and the
  normalised joint feature map ``Psi = 1/(R M) sum_{i rel, j non-rel} z_ij (x_i - x_j)``;
  the most violated ranking by the exact greedy interleaving (BATCH-REFERENCE s.1).
* :func:`ndcg_structural_hinge` - the NDCG loss of Le & Smola / CofiRank,
  ``max_pi 1 - NDCG@k(pi) + <c, f_pi - f_pi*>``, by a linear assignment problem.
* :func:`pairwise_hinge` - Ranking SVM's hinge over pairs with different labels, by
  counting (:func:`ltr_cli.surrogates.pairwise.ranksvm_value_and_grad`).

:func:`mean_risk` averages a per-query loss over queries (queries where it is undefined
are skipped) for BMRM.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ltr_cli.measures.metrics import exp2_gain
from ltr_cli.surrogates.pairwise import ranksvm_value_and_grad

QueryLoss = Callable[[np.ndarray, np.ndarray, np.ndarray], "tuple[float, np.ndarray] | None"]


def psi(X: np.ndarray, rel: np.ndarray, ranking: np.ndarray) -> np.ndarray:
    """SVMmap's joint feature map of ``ranking`` (doc indices, best first), normalised by R M."""
    rel_r = rel[ranking]
    R, M = int(rel.sum()), int((~rel).sum())
    nonrel_above = np.cumsum(~rel_r) - (~rel_r)
    rel_above = np.cumsum(rel_r) - rel_r
    coef = np.where(rel_r, M - 2 * nonrel_above, R - 2 * rel_above).astype(np.float64)
    return (coef @ X[ranking]) / (R * M)


def ap_most_violated(scores: np.ndarray, rel: np.ndarray) -> tuple[np.ndarray, float]:
    """Most violated ranking for ``1 - AP + w.Psi`` and the hinge value (>= 0).

    Relevant and non-relevant documents keep descending score order (ties by index); k_j,
    the number of relevant documents above the j-th non-relevant one, maximises
    ``g_j(k) = sum_{i > k} d_j(i)`` independently per j (smallest maximiser).
    """
    s = np.asarray(scores, dtype=np.float64)
    P = np.flatnonzero(rel)
    N = np.flatnonzero(~rel)
    P = P[np.argsort(-s[P], kind="stable")]
    N = N[np.argsort(-s[N], kind="stable")]
    R, M = P.shape[0], N.shape[0]
    i = np.arange(1, R + 1)[None, :]
    j = np.arange(1, M + 1)[:, None]
    d = (1.0 / R) * i / ((i + j - 1) * (i + j)) - 2.0 * (s[P][None, :] - s[N][:, None]) / (R * M)
    g = np.zeros((M, R + 1))
    g[:, :R] = np.cumsum(d[:, ::-1], axis=1)[:, ::-1]  # g[j, k] = sum_{i=k+1..R} d[j, i]
    best = g.max(axis=1)
    k = np.argmax(g >= best[:, None] - 1e-12, axis=1)
    ranking = []
    for r in range(R + 1):
        ranking.extend(N[k == r].tolist())
        if r < R:
            ranking.append(int(P[r]))
    return np.asarray(ranking), float(best.sum())


def ap_structural_hinge(
    X: np.ndarray, y: np.ndarray, w: np.ndarray, threshold: float = 0.0
) -> tuple[float, np.ndarray] | None:
    """SVMmap hinge of one query and its subgradient ``Psi(yhat) - Psi(y*)``; None when the
    query has no relevant or no non-relevant document (relevant: label > threshold)."""
    rel = np.asarray(y) > threshold
    if rel.all() or not rel.any():
        return None
    ranking, hinge = ap_most_violated(X @ w, rel)
    ideal = np.concatenate((np.flatnonzero(rel), np.flatnonzero(~rel)))
    return hinge, psi(X, rel, ranking) - psi(X, rel, ideal)


class APHinge:
    """SVMmap's per-query loss, :func:`ap_structural_hinge` with ``threshold``, as BMRM's
    risk over fixed training queries (:meth:`mean_risk`): each query's relevance, document
    split and ideal ``psi`` are computed once, and the most violated ranking comes from the
    compiled search (:mod:`ltr_cli.kernels.structural`) unless ``LTR_KERNELS=0``: the same
    values, bit for bit, as ``mean_risk(queries, ap_structural_hinge)``."""

    def __init__(self, threshold: float = 0.0):
        self.threshold = threshold

    def __call__(self, X: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray] | None:
        return ap_structural_hinge(X, y, w, self.threshold)

    def mean_risk(self, queries: Sequence[tuple[np.ndarray, np.ndarray]]
                  ) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
        from ltr_cli import kernels

        if not kernels.ENABLED:
            return mean_risk(queries, self)
        from ltr_cli.kernels import structural  # numba loads only when a fit runs

        kept = []
        for X, y in queries:
            rel = np.asarray(y) > self.threshold
            if rel.all() or not rel.any():
                continue
            ideal = np.concatenate((np.flatnonzero(rel), np.flatnonzero(~rel)))
            kept.append((X, rel, int(rel.sum()) * int((~rel).sum()), psi(X, rel, ideal)))

        def risk(w: np.ndarray) -> tuple[float, np.ndarray]:
            total, grad = 0.0, np.zeros_like(w)
            for X, rel, RM, ideal_psi in kept:
                ranking, hinge, coef = structural.ap_most_violated(X @ w, rel)
                total += hinge
                grad += (coef @ X[ranking]) / RM - ideal_psi
            n = len(kept)
            return (total / n, grad / n) if n else (0.0, grad)

        return risk


def position_weights(n: int, kind: str = "bmrm", k: int = 10) -> np.ndarray:
    """c for the NDCG loss: ``bmrm`` 1/log2(p + 2) for p < k else 0; ``cofirank`` (p+1)^-0.25."""
    p = np.arange(n, dtype=np.float64)
    if kind == "cofirank":
        return (p + 1.0) ** -0.25
    c = 1.0 / np.log2(p + 2.0)
    c[p >= k] = 0.0
    return c


def assignment_structural_hinge(
    X: np.ndarray, w: np.ndarray, a: np.ndarray, b: np.ndarray, c: np.ndarray, ideal: np.ndarray,
    rows: int,
) -> tuple[float, np.ndarray]:
    """The structural hinge of a position-based measure ``M(pi) = sum_p a_p b_{pi(p)}``
    (normalised so the ideal ranking scores 1), for one query:

    ``max_pi 1 - M(pi) + <c, f_pi - f_ideal>`` over the assignments of documents to the
    first ``rows`` positions, by linear assignment (Le & Smola; ranking-losses supplement
    s.1.4: NDCG and NERU differ only in ``a`` and ``b``).

    Shapes: ``X`` (n, d), ``w`` (d,), ``a`` and ``c`` (n,) position weights (zero beyond the
    cut-off), ``b`` (n,) per-document utilities, ``ideal`` (n,) the ideal order. Returns the
    loss and its subgradient in w, ``X^T (sum_p c_p (e_{pi(p)} - e_{ideal(p)}))``.
    """
    from scipy.optimize import linear_sum_assignment  # scipy loads only when a batch fit runs

    f = X @ w
    cost = np.outer(a[:rows], b) - np.outer(c[:rows], f)
    _, pi = linear_sum_assignment(cost)  # pi[p] = document at position p (p < rows)
    loss = 1.0 - float(a[:rows] @ b[pi]) + float(c[:rows] @ (f[pi] - f[ideal[:rows]]))
    dldf = np.zeros(f.shape[0])
    np.add.at(dldf, pi, c[:rows])
    np.subtract.at(dldf, ideal[:rows], c[:rows])
    return loss, X.T @ dldf


def ndcg_structural_hinge(
    X: np.ndarray, y: np.ndarray, w: np.ndarray, k: int = 10, weights: str = "bmrm"
) -> tuple[float, np.ndarray] | None:
    """``max_pi 1 - NDCG@k(pi) + <c, f_pi - f_pi*>`` by linear assignment; None without a
    relevant document. Documents in ideal order: label descending, ties by index."""
    yv = np.asarray(y, dtype=np.float64)
    return position_measure_hinge(X, yv, w, 1.0 / np.log2(np.arange(yv.shape[0]) + 2.0), exp2_gain(yv), k,
                                  weights)


def position_measure_hinge(
    X: np.ndarray, y: np.ndarray, w: np.ndarray, a: np.ndarray, utility: np.ndarray, k: int, weights: str,
) -> tuple[float, np.ndarray] | None:
    """The structural hinge of the measure ``sum_{p<k} a_p utility_{pi(p)}``, normalised by
    its value on the ideal order (label descending, ties by index): NDCG@k with DCG's
    discounts and gains, NERU@k with ERU's. ``a`` (n,) is zeroed beyond k in place; score
    weights c as :func:`position_weights`. None when the ideal value is 0."""
    n = y.shape[0]
    ideal = np.argsort(-y, kind="stable")
    a[np.arange(n) >= k] = 0.0
    best = float(utility[ideal] @ a)
    if best <= 0.0:
        return None
    return assignment_structural_hinge(X, w, a, utility / best, position_weights(n, weights, k), ideal,
                                       n if weights == "cofirank" else min(k, n))


def pairwise_hinge(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray] | None:
    """Ranking SVM's L1 hinge summed over the query's pairs; None without a pair."""
    if np.unique(y).shape[0] < 2:
        return None
    value, grad_s = ranksvm_value_and_grad(X @ w, y)
    return value, X.T @ grad_s


def mean_risk(
    queries: Sequence[tuple[np.ndarray, np.ndarray]], loss: QueryLoss
) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """``R_emp(w)`` = mean of ``loss`` over the queries where it is defined."""

    def risk(w: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad, n = 0.0, np.zeros_like(w), 0
        for X, y in queries:
            out = loss(X, y, w)
            if out is None:
                continue
            total += out[0]
            grad += out[1]
            n += 1
        return (total / n, grad / n) if n else (0.0, grad)

    return risk
