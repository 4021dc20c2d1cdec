"""PermuRank (Xu et al. 2008) as reconstructed in BATCH-REFERENCE s.3 (the paper itself was
not available): slack-rescaled bound over working sets of perfect (lowest-scoring) and
imperfect (highest-scoring) permutations, n-slack dual with per-query caps, until the sets
stop changing. Each round adds the cut of its newest pair only, when it is violated. Measures: ``map`` or
``ndcg@k`` (:func:`ltr_cli.learners.batch.common.measure_fn`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from ltr_cli.learners.batch.common import Queries, batch_measure, measure_fn
from ltr_cli.learners.batch.convergence import Convergence, FitContext, converged, progress_of
from ltr_cli.learners.batch.qp import solve_dual_qp
from ltr_cli.results.models import LinearModel
from ltr_cli.config.schema import BatchLearnerConfig, Grid


def permutation_features(X: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Phi(pi) = 2/(n(n-1)) sum_{k<l} (x_{pi(k)} - x_{pi(l)}): position p weighs n-1-2p."""
    n = X.shape[0]
    coef = (n - 1 - 2 * np.arange(n)).astype(np.float64)
    return (coef @ X[perm]) / (n * (n - 1) / 2)


def lowest_perfect(f: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Perfect permutation (labels non-increasing) with the lowest F: scores ascending within a level."""
    return np.lexsort((np.arange(f.shape[0]), f, -y))


def highest_imperfect(f: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """Imperfect permutation with the highest F; None when all labels are equal."""
    o = np.lexsort((np.arange(f.shape[0]), y, -f))  # score descending, ties: lower label first
    if (np.diff(y[o]) > 0).any():
        return o
    boundary = np.flatnonzero(y[o][:-1] != y[o][1:])
    if boundary.size == 0:
        return None
    gaps = f[o][boundary] - f[o][boundary + 1]
    p = int(boundary[np.argmin(gaps)])
    o = o.copy()
    o[p], o[p + 1] = o[p + 1], o[p]
    return o


@dataclass
class WorkingSet:
    """PermuRank's cuts: ``G`` (cuts, d) rows ``loss * (Phi(perfect) - Phi(imperfect))``,
    their losses, query ids, dual weights and idle ages."""

    G: np.ndarray
    loss: np.ndarray
    query: np.ndarray
    alpha: np.ndarray
    age: np.ndarray

    @classmethod
    def empty(cls, d: int) -> WorkingSet:
        return cls(np.zeros((0, d)), np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0),
                   np.zeros(0, dtype=np.int64))

    def add(self, g: np.ndarray, loss: float, q: int) -> None:
        self.G = np.vstack((self.G, g[None, :]))
        self.loss = np.append(self.loss, loss)
        self.query = np.append(self.query, q)
        self.alpha = np.append(self.alpha, 0.0)
        self.age = np.append(self.age, 0)

    def keep(self, mask: np.ndarray) -> None:
        self.G, self.loss, self.query = self.G[mask], self.loss[mask], self.query[mask]
        self.alpha, self.age = self.alpha[mask], self.age[mask]


def _slacks(ws: WorkingSet, w: np.ndarray, n_queries: int) -> np.ndarray:
    """Each query's slack: its largest ``max(0, loss - g.w)`` over its cuts."""
    xi = np.zeros(n_queries)
    if ws.loss.shape[0]:
        np.maximum.at(xi, ws.query, np.maximum(0.0, ws.loss - ws.G @ w))
    return xi


def fit_permurank(train: Queries, C: float, measure: str = "map", rounds: int = 50,
                  threshold: float = 0.0, eps: float = 1e-3, context: FitContext | None = None,
                  max_age: int = 10) -> LinearModel:
    """PermuRank: ``min 1/2 ||w||^2 + C sum_q xi_q`` over the cuts of the working sets.

    Each round adds, per query, the cut of its lowest-scoring perfect and highest-scoring
    imperfect permutation when it is violated by more than the query's slack, then solves
    the n-slack dual (per-query caps C) from the previous dual. It stops when the new cuts
    would raise the objective by at most ``eps`` times its value (relative), or after
    ``rounds``. A cut with zero dual weight for ``max_age`` rounds in a row is dropped."""
    start = time.perf_counter()
    E = measure_fn(measure, threshold)
    d = train[0][0].shape[1]
    # no warm start from the previous grid point: the cuts come from a heuristic oracle, so
    # carried-over cuts made the answer depend on the grid's order (and, in a test, worse)
    ws = WorkingSet.empty(d)
    w = np.zeros(d)
    progress = progress_of(context)
    it, gap, objective = 0, np.inf, 0.0
    def solve(objective: float) -> np.ndarray:
        G = ws.G
        ws.alpha, _ = solve_dual_qp(G @ G.T, ws.loss, "blocks", cap=C, blocks=ws.query, start=ws.alpha,
                                    abs_tol=eps * max(objective, 1e-12) / 10, max_iter=5000)
        ws.age = np.where(ws.alpha > 1e-12, 0, ws.age + 1)
        return G.T @ ws.alpha

    while it < rounds:
        it += 1
        xi = _slacks(ws, w, len(train))
        objective = 0.5 * float(w @ w) + C * float(xi.sum())
        added = 0.0
        for q, (X, y) in enumerate(train):
            f = X @ w
            bad = highest_imperfect(f, y)
            if bad is None:
                continue
            loss = 1.0 - E(bad, y)
            g = loss * (permutation_features(X, lowest_perfect(f, y)) - permutation_features(X, bad))
            violation = loss - float(g @ w) - xi[q]
            if violation > 1e-12 * max(1.0, loss):
                ws.add(g, loss, q)
                added += violation
        gap = C * added  # the objective the new cuts would add at the current w
        if progress is not None:
            progress(it, gap / max(objective, 1e-300))
        if converged(gap, objective, eps) or not ws.loss.shape[0]:
            break
        w = solve(objective)
        ws.keep(ws.age < max_age)
    done = converged(gap, objective, eps)
    conv = Convergence("PermuRank working sets", it, objective, float(gap), eps, done,
                       not done and it >= rounds, time.perf_counter() - start)
    return LinearModel(w, {"rounds": it, "cuts": int(ws.loss.shape[0]), "convergence": conv.to_dict()})


# --- config ------------------------------------------------------------------------------

class PermuRankSpec(BatchLearnerConfig):
    """PermuRank.MAP (reconstructed; see the README): working sets of permutations."""

    type: Literal["permurank"]
    summary: ClassVar[str] = "batch (cv:): PermuRank.MAP (reconstructed working-set method)"
    measure: str = "map"
    grid: Grid = Field(default_factory=lambda: {"C": [0.1, 1.0, 10.0]})
    rounds: int = Field(30, gt=0, description="cap on working-set rounds; a fit that reaches it warns")
    relevance_threshold: float = 0.0
    eps: float = Field(1e-3, gt=0, description="stop when new cuts add at most eps x the objective")

    _m = field_validator("measure")(batch_measure)

    def paper_role(self) -> str:
        return "PermuRank"  # its row in the paper's tables

    def fit(self, train: Queries, params: dict[str, Any], context: FitContext | None = None) -> LinearModel:
        return fit_permurank(train, params["C"], self.measure, self.rounds, self.relevance_threshold, self.eps,
                             context)
