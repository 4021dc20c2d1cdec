"""Pointwise surrogate: squared loss ``||s - R||^2`` (gradient ``2 (s - R)``)."""

from __future__ import annotations

import numpy as np


def squared_value_and_grad(scores: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray]:
    """Squared loss of the top-k paper (Cossock and Zhang): value () and gradient (m,)."""
    diff = np.asarray(scores, dtype=np.float64) - np.asarray(labels, dtype=np.float64)
    return float(diff @ diff), 2.0 * diff
