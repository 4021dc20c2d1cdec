"""``permurank`` with ``variant: max-violation``: not the paper's Fig. 2 but a cutting-plane
method on another type-two bound of its s.4.2, the hinge with each query's maximum
(before the paper relaxes the maximum to a sum):

    min_w  1/2 ||w||^2 + C sum_i max_{pi* perfect, pi imperfect}
                         (1 - E(pi)) [1 - (F(pi*) - F(pi))]_+

over the cuts found so far (an n-slack dual, per-query caps C). Each round computes, per
query, the cut of the lowest-F perfect and the highest-F imperfect permutation (the same
oracles as the paper's, :mod:`ltr_cli.learners.batch.permutations`) and adds it when it is
violated by more than the query's slack; it stops when the new cuts would raise the
objective by at most ``eps`` times its value, or after ``rounds``. A cut with zero dual
weight for ``max_age`` rounds in a row is dropped. Cuts are pairs, not the cross product
of two sets, and nothing is averaged over the perfect permutations.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from ltr_cli.learners.batch.common import Queries, measure_fn
from ltr_cli.learners.batch.convergence import Convergence, FitContext, converged, progress_of
from ltr_cli.learners.batch.permutations import Levels, highest_imperfect, lowest_perfect, permutation_features
from ltr_cli.learners.batch.qp import solve_dual_qp
from ltr_cli.results.models import LinearModel


@dataclass
class Cuts:
    """The cuts: ``G`` (cuts, d) rows ``loss * (Phi(perfect) - Phi(imperfect))``, their
    losses, query ids, dual weights and idle ages."""

    G: np.ndarray
    loss: np.ndarray
    query: np.ndarray
    alpha: np.ndarray
    age: np.ndarray

    @classmethod
    def empty(cls, d: int) -> Cuts:
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


def _slacks(cuts: Cuts, w: np.ndarray, n_queries: int) -> np.ndarray:
    """Each query's slack: its largest ``max(0, loss - g.w)`` over its cuts."""
    xi = np.zeros(n_queries)
    if cuts.loss.shape[0]:
        np.maximum.at(xi, cuts.query, np.maximum(0.0, cuts.loss - cuts.G @ w))
    return xi


def fit_permurank_max_violation(train: Queries, C: float, measure: str = "map", rounds: int = 30,
                                threshold: float = 0.0, eps: float = 1e-3, context: FitContext | None = None,
                                max_age: int = 10) -> LinearModel:
    """The max-violation method of the module's docstring; every grid point starts cold
    (the cuts depend on the path, so a warm start would make the answer depend on the
    grid's order)."""
    start = time.perf_counter()
    E = measure_fn(measure, threshold)
    d = train[0][0].shape[1]
    queries = [(X, y, lv) for X, y in train if (lv := Levels.of(y, measure, threshold)).has_imperfect()]
    cuts = Cuts.empty(d)
    w = np.zeros(d)
    progress = progress_of(context)
    it, gap, objective = 0, np.inf, 0.0

    def solve(objective: float) -> np.ndarray:
        G = cuts.G
        cuts.alpha, _ = solve_dual_qp(G @ G.T, cuts.loss, "blocks", cap=C, blocks=cuts.query, start=cuts.alpha,
                                      abs_tol=eps * max(objective, 1e-12) / 10, max_iter=5000)
        cuts.age = np.where(cuts.alpha > 1e-12, 0, cuts.age + 1)
        return G.T @ cuts.alpha

    while it < rounds:
        it += 1
        xi = _slacks(cuts, w, len(queries))
        objective = 0.5 * float(w @ w) + C * float(xi.sum())
        added = 0.0
        for q, (X, y, lv) in enumerate(queries):
            f = X @ w
            bad = highest_imperfect(f, lv)
            assert bad is not None
            loss = 1.0 - E(bad, y)
            g = loss * (permutation_features(X, lowest_perfect(f, lv)) - permutation_features(X, bad))
            violation = loss - float(g @ w) - xi[q]
            if violation > 1e-12 * max(1.0, loss):
                cuts.add(g, loss, q)
                added += violation
        gap = C * added  # the objective the new cuts would add at the current w
        if progress is not None:
            progress(it, gap / max(objective, 1e-300))
        if converged(gap, objective, eps) or not cuts.loss.shape[0]:
            break
        w = solve(objective)
        cuts.keep(cuts.age < max_age)
    done = converged(gap, objective, eps)
    conv = Convergence("PermuRank max-violation cuts", it, objective, float(gap), eps, done,
                       not done and it >= rounds, time.perf_counter() - start)
    return LinearModel(w, {"rounds": it, "cuts": int(cuts.loss.shape[0]), "convergence": conv.to_dict()})
