"""What the truncated-Newton RankSVM solver reads of its objective at one w
(:class:`Curvature`), shared by the stored-pair and the target-sum problems
(:mod:`ltr_cli.learners.batch.ranksvm`, :mod:`ltr_cli.learners.batch.target_ranksvm`), and
the Hessian diagonal of stored weighted pairs."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: pairs whose feature differences are formed at once for the Hessian's diagonal
DIAG_CHUNK = 20_000


@dataclass
class Curvature:
    """The objective at one w: value, gradient (d,), ``hessvec(v)`` and ``diagonal()``."""

    J: float
    g: np.ndarray
    hessvec: Callable[[np.ndarray], np.ndarray]
    diagonal: Callable[[], np.ndarray]


def pair_diagonal(X: np.ndarray, i: np.ndarray, j: np.ndarray, c: np.ndarray) -> np.ndarray:
    """sum over the pairs of 2 c (x_i - x_j)^2, per feature (d,), for rows ``X`` (n, d) and
    active pairs ``i``, ``j`` with weights ``c`` (P,): the squared hinge's generalised
    Hessian diagonal before the regulariser and the averaging, :data:`DIAG_CHUNK` pairs at a
    time."""
    out = np.zeros(X.shape[1])
    for lo in range(0, len(i), DIAG_CHUNK):
        D = X[i[lo:lo + DIAG_CHUNK]] - X[j[lo:lo + DIAG_CHUNK]]
        out += (2.0 * c[lo:lo + DIAG_CHUNK]) @ (D * D)
    return out
