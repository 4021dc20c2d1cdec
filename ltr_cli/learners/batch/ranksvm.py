"""Batch Ranking SVM (Joachims 2002; as a large-scale linear RankSVM, Lee & Lin 2014).

The objective, exactly (``Q`` the training queries that have a pair, ``P_q`` the pairs
(i, j) of query q with ``y_i > y_j``, ``lambda = 1/C``)::

    J(w) = lambda/2 ||w||^2 + (1/Q) sum_q sum_{(i,j) in P_q} l(1 - w.(x_i - x_j))

    loss: squared-hinge   l(z) = max(0, z)^2   (default; Newton, below)
    loss: hinge           l(z) = max(0, z)     (SVMlight's; BMRM, :mod:`ltr_cli.learners.batch.bmrm`)

Equivalently ``1/2 ||w||^2 + (C/Q) sum_q sum_pairs l``: C weighs the mean over queries of
each query's *summed* pair losses, so a query with more pairs weighs more, and scikit-learn's
``LinearSVC(C=C/Q)`` on the explicit pair differences (no intercept) has the same
minimiser.

The squared hinge is solved by a truncated Newton method: conjugate gradients on the
generalised Hessian for the direction, a backtracking line search for the step. Its
loss, gradient and Hessian-vector products come from counting in O(L m log m) per query
(:mod:`ltr_cli.kernels.ranksvm`; the reference here enumerates the pairs). J is
lambda-strongly convex, so ``||grad J||^2 / (2 lambda)`` bounds ``J(w) - min J``; the fit
stops when that bound is at most ``eps * J(w)``.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ltr_cli import kernels
from ltr_cli.learners.batch.bmrm import fit_bmrm
from ltr_cli.learners.batch.common import Queries
from ltr_cli.learners.batch.convergence import Convergence, FitContext, converged, progress_of, warm_weights
from ltr_cli.learners.batch.losses import pairwise_hinge
from ltr_cli.results.models import LinearModel
from ltr_cli.config.schema import BatchLearnerConfig, Grid

# --- reference: every pair enumerated ------------------------------------------------------


def squared_hinge_pairs(s: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
    """One query's squared pairwise hinge by enumerating its pairs: value, gradient (m,) in
    the scores, and the generalised Hessian (m, m) in the scores."""
    hi, lo = np.nonzero(y[:, None] > y[None, :])
    margin = 1.0 - (s[hi] - s[lo])
    act = margin > 0
    hi, lo, margin = hi[act], lo[act], margin[act]
    grad = np.zeros(s.shape[0])
    np.add.at(grad, hi, -2.0 * margin)
    np.add.at(grad, lo, 2.0 * margin)
    H = np.zeros((s.shape[0], s.shape[0]))
    np.add.at(H, (hi, hi), 2.0)
    np.add.at(H, (lo, lo), 2.0)
    np.add.at(H, (hi, lo), -2.0)
    np.add.at(H, (lo, hi), -2.0)
    return float(margin @ margin), grad, H


# --- the problem: stacked queries ----------------------------------------------------------


@dataclass
class PairwiseProblem:
    """The training queries stacked: ``X`` (N, d) float64, ``y`` (N,), ``offsets`` (Q+1,);
    only queries with two distinct labels are kept. Each query's features are centred
    (their mean over the query's documents subtracted): pair differences, and so J, do
    not change, and a large common offset no longer spoils the Hessian's conditioning."""

    X: np.ndarray
    y: np.ndarray
    offsets: np.ndarray
    lam: float

    @classmethod
    def from_queries(cls, queries: Queries, C: float) -> PairwiseProblem:
        kept = [(X - X.mean(axis=0), y) for X, y in queries if np.unique(y).shape[0] > 1]
        d = queries[0][0].shape[1]
        X = np.vstack([X for X, _ in kept]).astype(np.float64) if kept else np.zeros((0, d))
        y = np.concatenate([np.asarray(y, np.float64) for _, y in kept]) if kept else np.zeros(0)
        offsets = np.zeros(len(kept) + 1, dtype=np.int64)
        np.cumsum([y.shape[0] for _, y in kept], out=offsets[1:])
        return cls(np.ascontiguousarray(X), y, offsets, 1.0 / C)

    @property
    def n_queries(self) -> int:
        return self.offsets.shape[0] - 1

    def at(self, w: np.ndarray) -> Curvature:
        """J(w), its gradient (d,), and the Hessian's action and diagonal there."""
        Q = max(self.n_queries, 1)
        s = self.X @ w
        if kernels.ENABLED:
            k = _kernels()
            order = np.empty(s.shape[0], dtype=np.int64)
            value, grad_s = k.squared_hinge_value_grad(s, self.y, self.offsets, order)

            def hess_s(v: np.ndarray) -> np.ndarray:
                return k.squared_hinge_hessvec(s, self.y, self.offsets, order, v)

            def diag() -> np.ndarray:
                return k.squared_hinge_hess_diag(self.X, s, self.y, self.offsets, order)
        else:
            value, grad_s, blocks = 0.0, np.zeros_like(s), []
            for a, b in zip(self.offsets[:-1], self.offsets[1:]):
                v_q, g_q, H_q = squared_hinge_pairs(s[a:b], self.y[a:b])
                value += v_q
                grad_s[a:b] = g_q
                blocks.append((a, b, H_q))

            def hess_s(v: np.ndarray) -> np.ndarray:
                out = np.zeros_like(v)
                for a, b, H_q in blocks:
                    out[a:b] = H_q @ v[a:b]
                return out

            def diag() -> np.ndarray:
                return sum((np.einsum("if,ij,jf->f", self.X[a:b], H_q, self.X[a:b]) for a, b, H_q in blocks),
                           np.zeros(self.X.shape[1]))

        return Curvature(self.lam / 2 * float(w @ w) + value / Q, self.lam * w + (self.X.T @ grad_s) / Q,
                         lambda v: self.lam * v + (self.X.T @ hess_s(self.X @ v)) / Q,
                         lambda: self.lam + diag() / Q)


@dataclass
class Curvature:
    """The objective at one w: value, gradient (d,), ``hessvec(v)`` and ``diagonal()``."""

    J: float
    g: np.ndarray
    hessvec: Callable[[np.ndarray], np.ndarray]
    diagonal: Callable[[], np.ndarray]


def _kernels() -> Any:
    from ltr_cli.kernels import ranksvm  # numba loads only when a RankSVM fit runs

    return ranksvm


# --- truncated Newton ----------------------------------------------------------------------


def _conjugate_gradient(hessvec: Callable[[np.ndarray], np.ndarray], g: np.ndarray, M: np.ndarray,
                        tol: float, max_iter: int) -> np.ndarray:
    """Approximately solve ``H d = -g`` (H positive definite) by conjugate gradients with the
    diagonal preconditioner ``M``, to residual norm ``tol``."""
    d = np.zeros_like(g)
    r = -g.copy()
    z = r / M
    p = z.copy()
    rz = float(r @ z)
    for _ in range(max_iter):
        if np.sqrt(float(r @ r)) <= tol:
            break
        Hp = hessvec(p)
        step = rz / float(p @ Hp)
        d += step * p
        r -= step * Hp
        z = r / M
        rz_new = float(r @ z)
        p = z + (rz_new / rz) * p
        rz = rz_new
    return d


def newton_ranksvm(problem: PairwiseProblem, eps: float = 1e-6, max_iter: int = 200,
                   warm: np.ndarray | None = None,
                   progress: Callable[[int, float], None] | None = None) -> tuple[np.ndarray, Convergence]:
    """Minimise the squared-hinge objective from ``warm`` (else 0); ``progress(iteration,
    relative gap)`` after each Newton step.

    Stops when the Newton decrement ``-g.d / 2`` (d the preconditioned-CG Newton
    direction; the exact distance to the minimum for a quadratic, and invariant to how the
    features are scaled) or the certified bound ``||g||^2 / (2 lambda)`` is at most
    ``eps * J``; the step of that last direction is still taken."""
    start = time.perf_counter()
    dim = problem.X.shape[1]
    w = np.zeros(dim) if warm is None else np.asarray(warm, dtype=np.float64).copy()
    here = problem.at(w)
    if warm is not None:  # a warm start worse than 0 is dropped
        zero = problem.at(np.zeros(dim))
        if zero.J < here.J:
            w, here = np.zeros(dim), zero
    it, gap, done = 0, np.inf, False
    while not done and it < max_iter:
        gap = float(here.g @ here.g) / (2 * problem.lam)
        if converged(gap, here.J, eps):
            done = True
            break
        gnorm = float(np.sqrt(here.g @ here.g))
        direction = _conjugate_gradient(here.hessvec, here.g, here.diagonal(), 0.1 * gnorm, 2 * dim)
        slope = float(here.g @ direction)
        if slope >= 0:  # rounding: no descent direction left
            break
        gap = min(gap, -slope / 2)
        done = converged(gap, here.J, eps)
        it += 1
        t = 1.0
        while True:  # Armijo backtracking; the Newton step t = 1 is accepted near the optimum
            trial = problem.at(w + t * direction)
            if trial.J <= here.J + 1e-4 * t * slope or t < 1e-10:
                break
            t /= 2
        if trial.J > here.J:  # no descent at rounding level: w is as good as this precision allows
            break
        w, here = w + t * direction, trial
        if progress is not None:
            progress(it, gap / max(abs(here.J), 1e-300))
    return w, Convergence("Newton-CG", it, here.J, gap, eps, done, not done and it >= max_iter,
                          time.perf_counter() - start)


def fit_ranksvm(train: Queries, C: float, loss: str = "squared-hinge", eps: float | None = None,
                max_iter: int | None = None, context: FitContext | None = None) -> LinearModel:
    """Ranking SVM with ``lambda = 1/C`` (the objective in the module docstring)."""
    if loss == "hinge":
        return fit_bmrm(train, pairwise_hinge, C, eps or 1e-3, max_iter or 1000, context)
    w, conv = newton_ranksvm(PairwiseProblem.from_queries(train, C), eps or 1e-6, max_iter or 200,
                             warm_weights(context), progress_of(context))
    return LinearModel(w, {"iterations": conv.iterations, "objective": conv.objective,
                           "convergence": conv.to_dict()})


class RankSVMSpec(BatchLearnerConfig):
    """Ranking SVM on the pairs of each query (objective: :mod:`ltr_cli.learners.batch.ranksvm`)."""

    type: Literal["ranksvm"]
    summary: ClassVar[str] = "batch (cv:): Ranking SVM, pairwise (squared) hinge (Newton / BMRM)"
    grid: Grid = Field(default_factory=lambda: {"C": [0.01, 0.1, 1.0, 10.0]})
    loss: Literal["squared-hinge", "hinge"] = Field(
        "squared-hinge", description="squared-hinge (L2-loss RankSVM, Newton) or hinge (SVMlight's, BMRM)")
    eps: float | None = Field(None, gt=0, description="relative tolerance; default 1e-6 (Newton), 1e-3 (BMRM)")
    max_iter: int | None = Field(None, gt=0, description="iteration cap; default 200 (Newton), 1000 (BMRM)")

    def paper_role(self) -> str:
        return "RankSVM"  # its row in the paper's tables

    def fit(self, train: Queries, params: dict[str, Any], context: FitContext | None = None) -> LinearModel:
        return fit_ranksvm(train, params["C"], self.loss, self.eps, self.max_iter, context)
