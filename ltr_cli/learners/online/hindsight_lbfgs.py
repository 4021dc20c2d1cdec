"""Quasi-Newton minimisation over a ball for the comparator in hindsight
(:mod:`ltr_cli.learners.online.hindsight`), and the smoothed pairwise hinge it minimises
for RankSVM.

**Over the ball.** scipy's L-BFGS-B (exact gradients) minimises ``G(v) = F(P(v))`` over all
of R^d, ``P`` the projection onto the ball ``||w|| <= U``: ``G = F`` inside, and outside
``G`` is F on the sphere, constant along rays, with gradient
``(U / ||v||) (I - w w^T / U^2) grad F(w)``, ``w = P(v)``. Every point evaluated is a point
of the ball, so the certified bound of a convex F (the minimum over the ball of its
linearisation at that point, ``F(w) - g . w - U ||g||``) is kept at every evaluation, and the
search stops as soon as it meets the tolerance. A start on the sphere (a warm start, the
last smoothing's point) is moved outward along its ray, off the kink of ``P`` there. At a minimum on the sphere ``grad F = -lambda w``
(lambda >= 0) and at one inside ``grad F = 0``: in both cases that bound is tight, so a
converged run is certified.

**The hinge, smoothed.** RankSVM's hinge ``sum_pairs c max(0, z)``, ``z = delta - (s_i - s_j)``,
is piecewise linear. Its Huber smoothing ``h_mu(z)`` (0 for z <= 0, ``z^2 / (2 mu)`` up to mu,
``z - mu/2`` beyond) is below the hinge by at most ``mu / 2`` a pair, so a lower bound on
the smoothed minimum is one on the hinge's. The smoothed problems are solved for mu =
``delta/10, delta/100, ...``, each from the last one's point, until the hinge's best value
meets the bound within the tolerance (continuation). The pairs are enumerated once (at
most ``MAX_PAIRS``; more: the first-order method runs on the exact hinge instead).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

MAX_PAIRS = 5_000_000  # ~24 bytes a pair, kept, and a few temporaries of 8 bytes
SMOOTHING = 0.1  # the first mu, a share of delta
SHRINK = 0.1  # each next mu, a share of the last
STAGES = 12

#: ``fun(w) -> (objective, gradient, exact)``: the objective minimised (a convex lower
#: approximation of F, or F), its gradient, and F itself at w (what the comparator's value is)
Objective = Callable[[np.ndarray], tuple[float, np.ndarray, float]]


class _Stop(Exception):
    """Raised from inside the search to end it (met the tolerance, or out of evaluations)."""


@dataclass
class Search:
    """What the searches have found so far: the best point by F, F there, the best certified
    lower bound on the minimum, and the evaluations spent. ``tick(evaluations, best, bound)``
    is told after every evaluation; ``done(best, bound)`` ends the search."""

    radius: float
    budget: int
    done: Callable[[float, float | None], bool]
    tick: Callable[[int, float, float | None], None]
    best_w: np.ndarray | None = None
    best: float = float("inf")
    bound: float = -float("inf")
    evaluations: int = 0

    def evaluate(self, fun: Objective, w: np.ndarray, stage_done: Callable[[float, float], bool] | None = None
                 ) -> tuple[float, np.ndarray]:
        if self.evaluations >= self.budget:
            raise _Stop
        value, grad, exact = fun(w)
        self.evaluations += 1
        if exact < self.best:
            self.best, self.best_w = exact, w.copy()
        linear = value - float(grad @ w) - self.radius * float(np.linalg.norm(grad))
        self.bound = max(self.bound, linear)
        self.tick(self.evaluations, self.best, self.bound)
        if self.done(self.best, self.bound) or (stage_done is not None and stage_done(value, linear)):
            raise _Stop
        return value, grad


def ball_lbfgs(search: Search, fun: Objective, start: np.ndarray,
               stage_done: Callable[[float, float], bool] | None = None) -> None:
    """Minimise ``fun``'s objective over the ball from ``start`` (module docstring), recording
    into ``search``; returns when L-BFGS-B converges, ``search`` is done, ``stage_done(value,
    linear bound at the point)`` holds, or the evaluations run out."""
    from scipy.optimize import minimize

    U = search.radius

    def radial(v: np.ndarray) -> tuple[float, np.ndarray]:
        n = float(np.linalg.norm(v))
        if n <= U:
            return search.evaluate(fun, v, stage_done)
        w = v * (U / n)
        value, g = search.evaluate(fun, w, stage_done)
        return value, (U / n) * (g - (float(g @ w) / (U * U)) * w)

    v0 = np.asarray(start, dtype=np.float64)
    if float(np.linalg.norm(v0)) >= U * (1.0 - 1e-9):  # on the sphere, where P has its kink: from outside
        v0 = 2.0 * v0
    try:
        minimize(radial, v0, jac=True, method="L-BFGS-B",
                 options={"maxiter": search.budget, "maxfun": search.budget, "maxcor": 20, "ftol": 1e-15,
                          "gtol": 1e-12})
    except _Stop:
        pass


def _joined(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)


class PairHinge:
    """RankSVM's hinge over the enumerated pairs ``(i, j)``, ``y_i > y_j``, of the blocks'
    queries, each weighted by its query's count: exact, and Huber-smoothed."""

    def __init__(self, blocks: list, delta: float):
        self.blocks, self.delta = blocks, delta
        self.pairs = []
        for b in blocks:
            upper, lower, weight = [], [], []
            for a, e, c in zip(b.starts.tolist(), b.ends.tolist(), b.counts.tolist()):
                if c:
                    ii, jj = np.nonzero(b.y[a:e, None] > b.y[None, a:e])
                    upper.append(ii + a)
                    lower.append(jj + a)
                    weight.append(np.full(ii.shape[0], float(c)))
            self.pairs.append((_joined(upper, np.int64), _joined(lower, np.int64), _joined(weight, np.float64)))

    @staticmethod
    def count(blocks: list) -> int:
        """How many pairs :class:`PairHinge` would enumerate (by label counts, no pairs built)."""
        total = 0
        for b in blocks:
            for a, e, c in zip(b.starts.tolist(), b.ends.tolist(), b.counts.tolist()):
                if c:
                    _, sizes = np.unique(b.y[a:e], return_counts=True)
                    total += (int(e - a) ** 2 - int(sizes @ sizes)) // 2
        return total

    def objective(self, mu: float) -> Objective:
        """``w -> (smoothed hinge, its gradient, exact hinge)`` (mu = 0: the hinge and a
        subgradient)."""
        def fun(w: np.ndarray) -> tuple[float, np.ndarray, float]:
            value, exact, grad = 0.0, 0.0, np.zeros(w.shape[0])
            for b, (upper, lower, weight) in zip(self.blocks, self.pairs):
                s = b.scores(w)
                z = self.delta - (s[upper] - s[lower])
                active = z > 0.0
                exact += float(weight[active] @ z[active])
                if mu > 0.0:
                    smooth = np.where(z >= mu, z - 0.5 * mu, np.where(active, z * z / (2.0 * mu), 0.0))
                    value += float(weight @ smooth)
                    dz = weight * np.clip(z / mu, 0.0, 1.0)
                else:
                    dz = np.where(active, weight, 0.0)
                n = s.shape[0]
                grad += b.backward(np.bincount(lower, dz, n) - np.bincount(upper, dz, n))
            return (value if mu > 0.0 else exact), grad, exact

        return fun
