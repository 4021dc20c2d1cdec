"""PermuRank (Xu et al. 2008) as reconstructed in BATCH-REFERENCE s.3 (the paper itself was
not available): slack-rescaled bound over working sets of perfect (lowest-scoring) and
imperfect (highest-scoring) permutations, n-slack dual with per-query caps, until the sets
stop changing. Each round adds the cut of its newest pair only. Measures: ``map`` or
``ndcg@k`` (:func:`ltr_cli.batch.common.measure_fn`).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from ltr_cli.batch.common import Queries, batch_measure, measure_fn
from ltr_cli.batch.qp import solve_dual_qp
from ltr_cli.models import LinearModel
from ltr_cli.schema import BatchLearnerConfig


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


def fit_permurank(train: Queries, C: float, measure: str = "map", rounds: int = 50,
                  threshold: float = 0.0) -> LinearModel:
    E = measure_fn(measure, threshold)
    d = train[0][0].shape[1]
    w = np.zeros(d)
    perfect: list[list[np.ndarray]] = [[] for _ in train]
    imperfect: list[list[np.ndarray]] = [[] for _ in train]
    alpha = None
    cuts_g: list[np.ndarray] = []
    cuts_l: list[float] = []
    cuts_q: list[int] = []
    seen: set[tuple[int, bytes, bytes]] = set()
    it = 0
    while it < rounds:
        it += 1
        changed = False
        for q, (X, y) in enumerate(train):
            f = X @ w
            star, bad = lowest_perfect(f, y), highest_imperfect(f, y)
            if bad is None:
                continue
            for pool, perm in ((perfect[q], star), (imperfect[q], bad)):
                if not any(np.array_equal(perm, p) for p in pool):
                    pool.append(perm)
                    changed = True
            # one cut per query and round: this round's lowest perfect x highest imperfect
            # permutation (all |B| x |C| pairs make the QP grow quadratically in the rounds)
            key = (q, star.tobytes(), bad.tobytes())
            if key not in seen:
                seen.add(key)
                loss = 1.0 - E(bad, y)
                cuts_l.append(loss)
                cuts_g.append(loss * (permutation_features(X, star) - permutation_features(X, bad)))
                cuts_q.append(q)
        if not changed:
            break
        if not cuts_g:
            break
        G = np.vstack(cuts_g)
        start = None if alpha is None else np.concatenate((alpha, np.zeros(len(cuts_g) - alpha.shape[0])))
        alpha, _ = solve_dual_qp(G @ G.T, np.asarray(cuts_l), "blocks", cap=C,
                                 blocks=np.asarray(cuts_q), start=start, abs_tol=1e-6)
        w = G.T @ alpha
    return LinearModel(w, {"rounds": it, "cuts": len(cuts_g)})


# --- config ------------------------------------------------------------------------------

class PermuRankSpec(BatchLearnerConfig):
    """PermuRank.MAP (reconstructed; see the README): working sets of permutations."""

    type: Literal["permurank"]
    summary: ClassVar[str] = "batch (cv:): PermuRank.MAP (reconstructed working-set method)"
    measure: str = "map"
    grid: dict[str, list[float]] = Field(default_factory=lambda: {"C": [0.1, 1.0, 10.0]})
    rounds: int = Field(30, gt=0)
    relevance_threshold: float = 0.0

    _m = field_validator("measure")(batch_measure)

    def paper_role(self) -> str:
        return "PermuRank"  # its row in the paper's tables

    def fit(self, train: Queries, params: dict[str, Any]) -> LinearModel:
        return fit_permurank(train, params["C"], self.measure, self.rounds, self.relevance_threshold)
