"""LambdaMART's objective on per-document targets: RankNet's pairwise logistic loss on
the pairs of a per-document estimator's targets (:mod:`ltr_cli.clicklog.target_pairs`),
as a LightGBM custom objective (LightGBM's ``lambdarank`` takes whole-number grades only,
and the targets are real numbers of any sign).

For the pairs (i over j) with ``t_i > t_j`` of each training query, weighing
``c_ij = t_i - t_j``, and the scores ``s`` (N,) of all the training rows::

    L(s) = sum_{(i, j)} c_ij log(1 + exp(-(s_i - s_j)))

The logistic loss bounds the 0/1 loss ``1[s_j > s_i]`` (up to the factor log 2), so L is
a convex surrogate of the estimated rank sum minus its constant (the derivation in
:mod:`ltr_cli.clicklog.target_pairs`). Its gradient in the scores, with
``rho_ij = sigmoid(-(s_i - s_j))``: ``-c_ij rho_ij`` to ``s_i``, ``+c_ij rho_ij`` to ``s_j``;
its Hessian's diagonal (LightGBM's ``hess``): ``c_ij rho_ij (1 - rho_ij)`` to both. No
|delta NDCG| factor: that factor depends on the current ranking, so the gradient would no
longer be the gradient of a fixed objective; these are RankNet's gradients (LambdaMART's
trees, RankNet's pairs). Every array is computed for all the pairs at once (no loop over
queries or documents).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TargetPairs:
    """The pairs as indices of the training rows: ``better``, ``worse`` (P,) and their
    weights ``c`` (P,) > 0."""

    better: np.ndarray
    worse: np.ndarray
    c: np.ndarray

    def value(self, s: np.ndarray) -> float:
        """L(s) for the scores ``s`` (N,) of the training rows."""
        d = np.asarray(s, dtype=np.float64)[self.better] - np.asarray(s, dtype=np.float64)[self.worse]
        return float(self.c @ np.logaddexp(0.0, -d))

    def grad_hess(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """L's gradient (N,) in the scores and its Hessian's diagonal (N,)."""
        s = np.asarray(s, dtype=np.float64)
        n = s.shape[0]
        d = s[self.better] - s[self.worse]
        rho = 0.5 * (1.0 - np.tanh(0.5 * d))  # sigmoid(-d), without overflow
        g = self.c * rho
        h = self.c * rho * (1.0 - rho)
        grad = np.bincount(self.worse, g, n) - np.bincount(self.better, g, n)
        hess = np.bincount(self.better, h, n) + np.bincount(self.worse, h, n)
        return grad, hess

    def objective(self, preds: np.ndarray, _data: object) -> tuple[np.ndarray, np.ndarray]:
        """LightGBM's custom objective: ``(grad, hess)`` at the raw scores ``preds``."""
        return self.grad_hess(preds)


def rows_of(sizes: list[int], query: np.ndarray, better: np.ndarray, worse: np.ndarray,
            weight: np.ndarray) -> TargetPairs:
    """Per-query pairs (``query`` indexing queries of ``sizes`` documents, ``better`` and
    ``worse`` within them) as pairs of the stacked rows, the queries' documents one query
    after another."""
    start = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(sizes, out=start[1:])
    q = np.asarray(query, dtype=np.int64)
    return TargetPairs(start[q] + np.asarray(better, dtype=np.int64), start[q] + np.asarray(worse, dtype=np.int64),
                       np.asarray(weight, dtype=np.float64))
