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
trees, RankNet's pairs).

``target_objective: lambdarank`` (:class:`LambdaPairs`) gives LambdaRank's gradients
instead: each pair's ``c_ij`` is multiplied, at every boosting round, by
``|D(r_i) - D(r_j)|``, where ``r`` are the 0-based ranks of the current scores within the
query (ties in the rows' order, as LightGBM's stable sort) and ``D(r) = 1 / log2(2 + r)``:
``c_ij |D(r_i) - D(r_j)| = |delta DCG_ij|``, the change of the query's DCG with the targets
as linear gains when i and j swap. With whole-number targets this is LightGBM's
``lambdarank`` with ``label_gain`` 0, 1, 2, ..., ``lambdarank_norm: false``, no
truncation and ``sigmoid`` 1, up to its per-query factor 1 / max DCG (a DCG, not an NDCG:
the estimate of DCG is linear in the targets, the NDCG's normaliser is not). Every array
is computed for all the pairs at once (no loop over queries or documents).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ltr_cli.clicklog.target_pairs import block_pairs, query_starts


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
        return pair_grad_hess(s, self.better, self.worse, self.pair_weights(s))

    def pair_weights(self, s: np.ndarray) -> np.ndarray:
        """Each pair's weight at the scores ``s``: ``c`` (RankNet's, fixed)."""
        return self.c

    def objective(self, preds: np.ndarray, _data: object) -> tuple[np.ndarray, np.ndarray]:
        """LightGBM's custom objective: ``(grad, hess)`` at the raw scores ``preds``."""
        return self.grad_hess(preds)


@dataclass(frozen=True)
class LambdaPairs(TargetPairs):
    """The pairs under LambdaRank's weights (see the module docstring): ``starts`` (Q + 1,)
    the first row of each query (its rows ``starts[q]:starts[q + 1]``)."""

    starts: np.ndarray = field(default_factory=lambda: np.zeros(1, dtype=np.int64))

    def ranks(self, s: np.ndarray) -> np.ndarray:
        """Each row's 0-based rank within its query (:func:`query_ranks`)."""
        return query_ranks(s, self.starts)

    def pair_weights(self, s: np.ndarray) -> np.ndarray:
        """``c_ij |D(r_i) - D(r_j)|`` at the current ranks: |delta DCG| of each pair."""
        return delta_dcg(self.c, rank_discounts(s, self.starts), self.better, self.worse)


@dataclass(frozen=True)
class BlockPairs:
    """The pairs of the stacked targets ``t`` (N,) made block by block of queries at every
    round, never stored (:func:`~ltr_cli.clicklog.target_pairs.block_pairs`; for folds over
    :data:`~ltr_cli.clicklog.target_pairs.MAX_PAIRS`), under RankNet's or LambdaRank's
    weights (``weights``): the same gradient and Hessian as :class:`TargetPairs` and
    :class:`LambdaPairs` on the stored pairs."""

    t: np.ndarray
    starts: np.ndarray
    blocks: list[tuple[int, int]]
    weights: str = "ranknet"

    def grad_hess(self, s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The loss's gradient (N,) in the scores and its Hessian's diagonal (N,)."""
        s = np.asarray(s, dtype=np.float64)
        grad, hess = np.zeros(s.shape[0]), np.zeros(s.shape[0])
        discount = rank_discounts(s, self.starts) if self.weights == "lambdarank" else None
        for i, j, c in block_pairs(self.t, self.starts, self.blocks):
            w = c if discount is None else delta_dcg(c, discount, i, j)
            g, h = pair_grad_hess(s, i, j, w)
            grad += g
            hess += h
        return grad, hess

    def objective(self, preds: np.ndarray, _data: object) -> tuple[np.ndarray, np.ndarray]:
        """LightGBM's custom objective: ``(grad, hess)`` at the raw scores ``preds``."""
        return self.grad_hess(preds)


def query_ranks(s: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each row's 0-based rank within its query (query q's rows ``starts[q]:starts[q + 1]``)
    by descending score ``s`` (N,), ties in the rows' order; int64 (N,)."""
    n = s.shape[0]
    query = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    order = np.lexsort((np.arange(n), -s, query))
    rank = np.empty(n, dtype=np.int64)
    rank[order] = np.arange(n) - starts[query[order]]
    return rank


def rank_discounts(s: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each row's DCG discount ``D(r) = 1 / log2(2 + r)`` at its 0-based rank ``r`` within
    its query (:func:`query_ranks`), float (N,)."""
    return 1.0 / np.log2(2.0 + query_ranks(s, starts))


def delta_dcg(c: np.ndarray, discount: np.ndarray, better: np.ndarray, worse: np.ndarray) -> np.ndarray:
    """LambdaRank's pair weights ``c_ij |D(r_i) - D(r_j)|`` (P,), from the rows' discounts."""
    return c * np.abs(discount[better] - discount[worse])


def pair_grad_hess(s: np.ndarray, better: np.ndarray, worse: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The gradient (N,) and Hessian diagonal (N,) in the scores ``s`` (N,) of the pairs'
    weighted logistic loss ``sum w_ij log(1 + exp(-(s_i - s_j)))`` at fixed weights ``w``."""
    n = s.shape[0]
    d = s[better] - s[worse]
    rho = 0.5 * (1.0 - np.tanh(0.5 * d))  # sigmoid(-d), without overflow
    g = w * rho
    h = w * rho * (1.0 - rho)
    grad = np.bincount(worse, g, n) - np.bincount(better, g, n)
    hess = np.bincount(better, h, n) + np.bincount(worse, h, n)
    return grad, hess


def rows_of(sizes: list[int], query: np.ndarray, better: np.ndarray, worse: np.ndarray,
            weight: np.ndarray, objective: str = "ranknet") -> TargetPairs:
    """Per-query pairs (``query`` indexing queries of ``sizes`` documents, ``better`` and
    ``worse`` within them) as pairs of the stacked rows, the queries' documents one query
    after another; ``objective``: ``ranknet`` (:class:`TargetPairs`) or ``lambdarank``
    (:class:`LambdaPairs`)."""
    start = query_starts(sizes)
    q = np.asarray(query, dtype=np.int64)
    b, w = start[q] + np.asarray(better, dtype=np.int64), start[q] + np.asarray(worse, dtype=np.int64)
    c = np.asarray(weight, dtype=np.float64)
    if objective == "lambdarank":
        return LambdaPairs(b, w, c, start)
    return TargetPairs(b, w, c)
