"""BMRM (Teo, Vishwanathan, Smola, Le, JMLR 2010): minimise
``J(w) = lambda/2 ||w||^2 + R_emp(w)`` for a convex, possibly non-smooth risk given by value
and subgradient.

Each iteration adds the cut ``a.w + b`` (a = subgradient at w_t, b = R(w_t) - a.w_t) to a
piecewise-linear model of R_emp and minimises the regularised model through its dual on
the simplex: ``max b.alpha - 1/(2 lambda) alpha'(A'A)alpha``, ``w = -(1/lambda) A alpha``.
The gap ``eps_t = min_i J(w_i) - J_t(w_t)`` (best objective minus the model's lower bound)
stops the loop; the best w seen is returned, not the last.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ltr_cli.batch.qp import solve_dual_qp

Risk = Callable[[np.ndarray], tuple[float, np.ndarray]]


@dataclass
class BMRMResult:
    w: np.ndarray
    objective: float
    lower_bound: float
    iterations: int
    trace: list[dict[str, float]] = field(default_factory=list)


def bmrm(
    risk: Risk,
    dim: int,
    lam: float,
    eps: float = 1e-4,
    max_iter: int = 1000,
) -> BMRMResult:
    """Minimise ``lam/2 ||w||^2 + risk(w)``; stop when the duality gap is below ``eps``."""
    if lam <= 0:
        raise ValueError("BMRM needs lambda > 0")
    w = np.zeros(dim)
    r, g = risk(w)
    A = [np.asarray(g, dtype=np.float64)]
    B = [r - float(g @ w)]
    best_w, best_J = w.copy(), lam / 2 * float(w @ w) + r
    alpha = None
    trace = []
    lower = -np.inf
    for it in range(1, max_iter + 1):
        Am = np.vstack(A)  # cuts x dim
        Q = (Am @ Am.T) / lam
        start: np.ndarray | None = None if alpha is None else np.append(alpha, 0.0)
        # the dual need only be solved to a fraction of the stopping tolerance: an inexact
        # QP under-states the lower bound, which can only delay the stop, never fake it
        alpha, lower = solve_dual_qp(Q, np.asarray(B), "simplex", start=start, abs_tol=eps / 10)
        w = -(Am.T @ alpha) / lam
        r, g = risk(w)
        J = lam / 2 * float(w @ w) + r
        if J < best_J:
            best_w, best_J = w.copy(), J
        gap = best_J - lower
        trace.append({"iteration": it, "J": J, "best_J": best_J, "lower_bound": lower, "gap": gap})
        if gap < eps:
            return BMRMResult(best_w, best_J, lower, it, trace)
        A.append(np.asarray(g, dtype=np.float64))
        B.append(r - float(g @ w))
    return BMRMResult(best_w, best_J, lower, max_iter, trace)
