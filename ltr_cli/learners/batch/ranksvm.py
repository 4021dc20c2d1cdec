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

On a click log (``clicks:``) the same solver fits weighted pairs: clicked over not clicked,
weighing the clicked position's weight (naive, IPS), or, for a per-document estimator's
targets t of any sign, i over j weighing ``t_i - t_j`` for every ``t_i > t_j`` of a query.
The latter's 0/1 objective is the estimated rank sum ``sum_i t_i rank(i)`` minus a constant
that does not depend on the scores, ``C(t) = sum_i t_i + sum_{i<j} min(t_i, t_j)`` (each
unordered pair {i, j}, ``t_i >= t_j``, adds ``t_j + (t_i - t_j) 1[s_j > s_i]``); every weight
is positive, so the squared hinge keeps it convex (derivation and tests:
:mod:`ltr_cli.clicklog.target_pairs`).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal, Protocol

import numpy as np
from pydantic import Field, model_validator

from ltr_cli import kernels
from ltr_cli.learners.batch.bmrm import fit_bmrm
from ltr_cli.clicklog.pairs import ClickPairs
from ltr_cli.learners.batch.common import Queries
from ltr_cli.learners.batch.curvature import Curvature, pair_diagonal
from ltr_cli.learners.batch.convergence import Convergence, FitContext, converged, progress_of, warm_weights
from ltr_cli.learners.batch.losses import pairwise_hinge
from ltr_cli.results.models import LinearModel
from ltr_cli.core.schema import BatchLearnerConfig, Grid
from ltr_cli.clicklog.signal import ClickSignal

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


class Problem(Protocol):
    """What the Newton solver needs of a problem: the rows ``X`` (n, d), ``lam`` and
    :meth:`at` (:class:`PairwiseProblem`; the click log's
    :class:`ltr_cli.learners.batch.click_ranksvm.WeightedPairProblem`)."""

    X: np.ndarray
    lam: float

    def at(self, w: np.ndarray) -> Curvature: ...


def _kernels() -> Any:
    from ltr_cli.kernels import ranksvm  # numba loads only when a RankSVM fit runs

    return ranksvm


# --- the problem on a click log: weighted preference pairs ---------------------------------
#
# Ranking SVM on a click log, naive and propensity-weighted (Joachims, Swaminathan and
# Schnabel, WSDM 2017), by the same Newton solver. ``P_q`` the weighted pairs of query q
# (:mod:`ltr_cli.clicklog.pairs`: in each session, a clicked document over each shown and not
# clicked one, weighing its position's weight, summed per query over its sessions and divided
# by their number), ``Q`` the queries with a pair:
#
#     J(w) = lambda/2 ||w||^2 + (1/Q) sum_q sum_{(i, j, c) in P_q} c max(0, 1 - w.(x_i - x_j))^2
#
# With every weight 1 and one session per query, this is the objective above on the click
# labels (clicked 1, shown and not clicked 0).
#
# A per-document estimator (affine, dm, dr, ...) gives instead estimates t (m_q,) per query,
# of any sign; its pairs are (i over j, weighing t_i - t_j) for every t_i > t_j of a query
# (:mod:`ltr_cli.clicklog.target_pairs`): sum_i t_i rank(i) equals C(t) plus their 0/1 loss
# sum_{t_i > t_j} (t_i - t_j) 1[s_j > s_i], so this objective on them is a convex surrogate
# of the estimated rank sum, and the same solver fits it.

@dataclass
class WeightedPairProblem:
    """The rows the pairs touch (``X`` (n, d), each query's rows centred), the pairs as row
    indices ``i`` (preferred) and ``j``, their weights ``c``, the number of queries with a
    pair and ``lam``."""

    X: np.ndarray
    i: np.ndarray
    j: np.ndarray
    c: np.ndarray
    queries: int
    lam: float

    @classmethod
    def from_pairs(cls, train: Queries, pairs: ClickPairs, C: float) -> WeightedPairProblem:
        d = train[0][0].shape[1] if train else 0
        if not pairs.query.size:
            return cls(np.zeros((0, d)), np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0), 0, 1.0 / C)
        width = max(len(y) for _, y in train)
        ends = np.concatenate((pairs.query * width + pairs.better, pairs.query * width + pairs.worse))
        used, inv = np.unique(ends, return_inverse=True)
        inv = inv.reshape(-1)
        owner = used // width
        cuts = np.flatnonzero(np.diff(owner)) + 1
        blocks = []
        for a, b in zip(np.r_[0, cuts], np.r_[cuts, len(used)]):
            X = np.asarray(train[int(owner[a])][0], dtype=np.float64)[used[a:b] % width]
            blocks.append(X - X.mean(axis=0))
        P = len(pairs.query)
        return cls(np.ascontiguousarray(np.vstack(blocks)), inv[:P], inv[P:], np.asarray(pairs.weight, float),
                   len(np.unique(pairs.query)), 1.0 / C)

    def at(self, w: np.ndarray) -> Curvature:
        """J(w), its gradient, and the generalised Hessian's action and diagonal there."""
        Q, n = max(self.queries, 1), self.X.shape[0]
        s = self.X @ w
        z = 1.0 - (s[self.i] - s[self.j])
        act = z > 0
        ia, ja, ca, za = self.i[act], self.j[act], self.c[act], z[act]
        value = float(ca @ (za * za))
        t = 2.0 * ca * za
        grad_s = np.bincount(ja, t, n) - np.bincount(ia, t, n)

        def hessvec(v: np.ndarray) -> np.ndarray:
            u = self.X @ v
            r = 2.0 * ca * (u[ia] - u[ja])
            return self.lam * v + (self.X.T @ (np.bincount(ia, r, n) - np.bincount(ja, r, n))) / Q

        def diagonal() -> np.ndarray:
            return self.lam + pair_diagonal(self.X, ia, ja, ca) / Q

        return Curvature(self.lam / 2 * float(w @ w) + value / Q, self.lam * w + (self.X.T @ grad_s) / Q,
                         hessvec, diagonal)


def fit_click_ranksvm(train: Queries, clicks: Any, C: float, eps: float | None = None,
                      max_iter: int | None = None, context: FitContext | None = None,
                      pairs: ClickPairs | None = None) -> LinearModel:
    """RankSVM on the fold's click log ``clicks`` (a
    :class:`ltr_cli.learners.batch.click_data.ClickData`; ``pairs``: already aggregated from it)."""
    if pairs is None:
        pairs = clicks.pairs(max((len(y) for _, y in train), default=1), clicks.versus,
                             np.array([len(y) for _, y in train], dtype=np.int64))
    problem = WeightedPairProblem.from_pairs(train, pairs, C)
    w, conv = newton_ranksvm(problem, eps or 1e-6, max_iter or 200, warm_weights(context), progress_of(context))
    return LinearModel(w, {"iterations": conv.iterations, "objective": conv.objective, "pairs": int(len(problem.c)),
                           "convergence": conv.to_dict()})


def fit_target_blocks(train: Queries, targets: list[np.ndarray], C: float, eps: float | None = None,
                      max_iter: int | None = None, context: FitContext | None = None) -> LinearModel:
    """RankSVM on the pairs of per-document ``targets``, never made or stored: sums over each
    row's active pairs (:class:`ltr_cli.learners.batch.target_ranksvm.TargetPairProblem`)."""
    from ltr_cli.learners.batch.target_ranksvm import TargetPairProblem

    problem = TargetPairProblem.from_targets(train, targets, C)
    w, conv = newton_ranksvm(problem, eps or 1e-6, max_iter or 200, warm_weights(context), progress_of(context))
    return LinearModel(w, {"iterations": conv.iterations, "objective": conv.objective, "pairs": problem.pairs,
                           "pairs_stored": False, "convergence": conv.to_dict()})


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


def newton_ranksvm(problem: Problem, eps: float = 1e-6, max_iter: int = 200,
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
    clicks: ClickSignal | None = Field(None, description="train on each fold's click log instead of the labels, "
                                       "its clicks weighted by the estimator (naive, IPS, ...), or the pairs of a "
                                       "per-document estimator's targets (affine, dm, dr, ...; see docs/clicks.md)")
    id_defaults: ClassVar[dict[str, Any]] = {"clicks": None}

    @property
    def reads_clicks(self) -> str:
        """What it reads of its click estimator: per-position ``weights`` when the estimator
        gives them (weighted click pairs), else its per-document ``targets`` (the pairs of
        :mod:`ltr_cli.clicklog.target_pairs`)."""
        from ltr_cli.clicklog.estimators import estimator

        if self.clicks is None or estimator(self.clicks.correction).weights is not None:
            return "weights"
        return "targets"

    @model_validator(mode="after")
    def _click_loss(self) -> RankSVMSpec:
        if self.clicks is not None and self.loss != "squared-hinge":
            raise ValueError("clicks: trains the squared-hinge RankSVM (Newton); drop loss: hinge")
        if self.clicks is not None:
            from ltr_cli.clicklog.estimators import ESTIMATORS, estimator

            if estimator(self.clicks.correction).positions:
                takes = [n for n, e in ESTIMATORS.items() if not e.positions]
                raise ValueError(f"clicks.correction: {self.clicks.correction} models the displayed positions in the "
                                 f"learner (lambdamart's LightGBM); ranksvm takes {', '.join(takes)}")
            if self.reads_clicks == "targets":
                name = self.clicks.correction
                if self.clicks.pairs != "unclicked":
                    raise ValueError(f"clicks.pairs: {name} gives per-document targets, whose pairs are every two "
                                     "documents of a query with different targets; drop pairs")
                if self.clicks.propensity_draw:
                    raise ValueError(f"clicks.propensity_draw: drawn propensities are ips's per-position weights; "
                                     f"{name}'s per-document targets take the estimate as it is: drop propensity_draw")
        return self

    def paper_role(self) -> str:
        return "RankSVM"  # its row in the paper's tables

    def describe(self) -> dict[str, Any]:
        described = super().describe()
        if self.clicks is not None:
            described["training_signal"] = self.clicks.describe()
        return described

    def fit(self, train: Queries, params: dict[str, Any], context: FitContext | None = None) -> LinearModel:
        if context is not None and context.clicks is not None:
            from ltr_cli.clicklog.estimators import estimator

            if estimator(context.clicks.correction).pairwise:
                from ltr_cli.learners.batch.pair_debias import fit_pair_debias

                C, eps, cap = params["C"], self.eps or 1e-6, self.max_iter or 200

                def solve(pairs: ClickPairs, warm: np.ndarray | None, progress: Any) -> tuple[np.ndarray, Convergence]:
                    return newton_ranksvm(WeightedPairProblem.from_pairs(train, pairs, C), eps, cap, warm, progress)

                return fit_pair_debias(train, context.clicks, solve, context)
            if context.clicks.targets is not None:  # a per-document estimator: the pairs of its targets
                from ltr_cli.clicklog.target_pairs import MAX_PAIRS, pair_bound

                if pair_bound(context.clicks.targets) > MAX_PAIRS:  # too many to store: sums over active pairs
                    return fit_target_blocks(train, context.clicks.targets, params["C"], self.eps, self.max_iter,
                                             context)
                return fit_click_ranksvm(train, context.clicks, params["C"], self.eps, self.max_iter, context,
                                         context.clicks.target_pairs())
            return fit_click_ranksvm(train, context.clicks, params["C"], self.eps, self.max_iter, context)
        return fit_ranksvm(train, params["C"], self.loss, self.eps, self.max_iter, context)
