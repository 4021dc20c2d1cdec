"""BMRM (Teo, Vishwanathan, Smola, Le, JMLR 2010): minimise
``J(w) = lambda/2 ||w||^2 + R_emp(w)`` for a convex, possibly non-smooth risk given by value
and subgradient.

Each iteration adds the cut ``a.w + b`` (a = subgradient at w_t, b = R(w_t) - a.w_t) to a
piecewise-linear model of R_emp and minimises the regularised model through its dual on
the simplex: ``max b.alpha - 1/(2 lambda) alpha'(A'A)alpha``, ``w = -(1/lambda) A alpha``.
The gap ``eps_t = min_i J(w_i) - J_t(w_t)`` (best objective minus the model's lower bound)
stops the loop once it is at most ``eps`` times the best objective (relative, so the same
tolerance serves raw and normalised features); the best w seen is returned, not the last.

The cut set stays small: a cut with zero dual weight for ``max_age`` iterations in a row
is dropped, and when more than ``max_cuts`` remain they are replaced by their
dual-weighted average (a convex combination of lower bounds of R_emp is one, so the
model's minimum stays a lower bound of J and the gap stays a certificate).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ltr_cli.learners.batch.common import Queries, column_scale
from ltr_cli.learners.batch.convergence import Convergence, FitContext, converged, progress_of, warm_weights
from ltr_cli.learners.batch.losses import QueryLoss, mean_risk
from ltr_cli.learners.batch.qp import solve_dual_qp
from ltr_cli.results.models import LinearModel

Risk = Callable[[np.ndarray], tuple[float, np.ndarray]]
Progress = Callable[[int, float], None]


@dataclass
class BMRMResult:
    w: np.ndarray
    objective: float
    lower_bound: float
    iterations: int
    convergence: Convergence
    trace: list[dict[str, float]] = field(default_factory=list)


def bmrm(
    risk: Risk,
    dim: int,
    lam: float,
    eps: float = 1e-3,
    max_iter: int = 1000,
    warm: np.ndarray | None = None,
    progress: Progress | None = None,
    max_cuts: int = 100,
    max_age: int = 10,
) -> BMRMResult:
    """Minimise ``lam/2 ||w||^2 + risk(w)`` from ``warm`` (else 0); stop when the duality
    gap is at most ``eps * |best objective|``. ``progress(iteration, relative gap)`` is
    called after every iteration."""
    if lam <= 0:
        raise ValueError("BMRM needs lambda > 0")
    start = time.perf_counter()
    w = np.zeros(dim) if warm is None else np.asarray(warm, dtype=np.float64).copy()
    r, g = risk(w)
    A = np.asarray(g, dtype=np.float64)[None, :]
    B = np.array([r - float(g @ w)])
    age = np.zeros(1, dtype=np.int64)
    best_w, best_J = w.copy(), lam / 2 * float(w @ w) + r
    alpha: np.ndarray | None = None
    trace = []
    lower = -np.inf
    gap = np.inf
    it = 0
    while it < max_iter:
        it += 1
        Q = (A @ A.T) / lam
        start_alpha = None if alpha is None else np.append(alpha, np.zeros(B.shape[0] - alpha.shape[0]))
        # the dual need only be solved to a fraction of the stopping tolerance: an inexact
        # QP under-states the lower bound, which can only delay the stop, never fake it
        alpha, lower = solve_dual_qp(Q, B, "simplex", start=start_alpha,
                                     abs_tol=eps * abs(best_J) / 10, max_iter=5000)
        w = -(A.T @ alpha) / lam
        r, g = risk(w)
        J = lam / 2 * float(w @ w) + r
        if J < best_J:
            best_w, best_J = w.copy(), J
        gap = best_J - lower
        trace.append({"iteration": it, "J": J, "best_J": best_J, "lower_bound": lower, "gap": gap})
        if progress is not None:
            progress(it, gap / max(abs(best_J), 1e-300))
        if converged(gap, best_J, eps):
            break
        age = np.where(alpha > 1e-12, 0, age + 1)
        keep = age < max_age
        A, B, age, alpha = A[keep], B[keep], age[keep], alpha[keep]
        if B.shape[0] >= max_cuts:  # one aggregated cut, weighted by the dual
            total = float(alpha.sum())
            A = (alpha @ A)[None, :] / total
            B = np.array([float(alpha @ B) / total])
            age = np.zeros(1, dtype=np.int64)
            alpha = np.ones(1)
        A = np.vstack((A, np.asarray(g, dtype=np.float64)[None, :]))
        B = np.append(B, r - float(g @ w))
        age = np.append(age, 0)
    done = converged(gap, best_J, eps)
    conv = Convergence("BMRM", it, best_J, float(gap), eps, done, not done and it >= max_iter,
                       time.perf_counter() - start)
    return BMRMResult(best_w, best_J, lower, it, conv, trace)


def fit_bmrm(train: Queries, loss: QueryLoss, C: float, eps: float, max_iter: int,
             context: FitContext | None, feature_scale: str = "none") -> LinearModel:
    """A linear model by BMRM with lambda = 1/C on the mean of ``loss`` over the training
    queries; its ``info`` keeps the convergence record.

    ``feature_scale`` (:func:`~ltr_cli.learners.batch.common.column_scale`): when it
    applies, the problem is solved on the columns divided by ``s`` (d,) and the weights
    are mapped back (``w = u / s``), so the model scores raw rows; a warm start is mapped
    into the scaled problem (``u = w * s``). BMRM's iteration count grows with the squared
    size of the subgradients over lambda, so on raw features with values in the
    thousands it ends at its cap long before it leaves w = 0."""
    scale = column_scale(train, feature_scale)
    warm = warm_weights(context)
    if scale is not None:
        train = [(X / scale, y) for X, y in train]
        warm = None if warm is None else np.asarray(warm, dtype=np.float64) * scale
    risk_of = getattr(loss, "mean_risk", None)  # a loss that builds its own risk (SVMmap's: cached, compiled)
    risk = risk_of(train) if risk_of is not None else mean_risk(train, loss)
    res = bmrm(risk, train[0][0].shape[1], 1.0 / C, eps, max_iter, warm, progress_of(context))
    info: dict = {"iterations": res.iterations, "objective": res.objective,
                  "convergence": res.convergence.to_dict()}
    if scale is not None:
        info["feature_scale"] = "max-abs"
        return LinearModel(res.w / scale, info)
    return LinearModel(res.w, info)
