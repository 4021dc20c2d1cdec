"""The direct-optimisation paper's type two bounds (Section 4.2, Figure 1): the loss (6) of
one pair of a perfect permutation pi* and an imperfect one pi, and its convex upper bounds,
as functions of the score difference ``x = F(q, d, pi*) - F(q, d, pi)`` for a fixed
measure gap ``gap = E(pi*, y) - E(pi, y)`` in (0, 1] (the figure uses 0.5):

* ``loss``: gap * I[x <= 0], the pair's term of Eq. (6);
* ``exponential``: gap * exp(-x);
* ``logistic``: gap * log2(1 + exp(-x));
* ``hinge``: gap * [1 - x]_+, the pair's term of Eq. (7) (PermuRank's bound);
* ``svmmap``: [gap - x]_+, the pair's term of Eq. (9) (SVMmap's bound).

Each is at least ``loss`` for every x (the paper's Theorem 2 and the remark after Eq. 9),
and none is below all the others everywhere: the paper's point that no bound is the
tightest. Pure functions of numpy arrays (x (n,) -> (n,)).
"""

from __future__ import annotations

import numpy as np

BOUNDS = ("exponential", "logistic", "hinge", "svmmap")


def pair_loss(x: np.ndarray, gap: float) -> np.ndarray:
    return gap * (np.asarray(x, dtype=np.float64) <= 0)


def bound(name: str, x: np.ndarray, gap: float) -> np.ndarray:
    """Bound ``name`` (one of :data:`BOUNDS`) at score differences ``x`` for measure gap ``gap``."""
    x = np.asarray(x, dtype=np.float64)
    if name == "exponential":
        return gap * np.exp(-x)
    if name == "logistic":
        return gap * (np.logaddexp(0.0, -x) / np.log(2.0))
    if name == "hinge":
        return gap * np.maximum(0.0, 1.0 - x)
    if name == "svmmap":
        return np.maximum(0.0, gap - x)
    raise ValueError(f"unknown bound {name!r}; expected one of {', '.join(BOUNDS)}")


def curves(gap: float = 0.5, low: float = -2.0, high: float = 2.0, points: int = 401) -> dict[str, np.ndarray]:
    """Figure 1's curves on ``points`` score differences from ``low`` to ``high``: ``x``,
    ``loss`` and every bound."""
    if not 0 < gap <= 1:
        raise ValueError("the measure gap E(pi*) - E(pi) must be in (0, 1]")
    x = np.linspace(low, high, points)
    return {"x": x, "loss": pair_loss(x, gap), **{name: bound(name, x, gap) for name in BOUNDS}}
