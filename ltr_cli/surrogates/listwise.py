"""Listwise surrogates on softmax / exponential transforms of scores and labels.

* ListNet (top-1 cross entropy): ``-sum_i P_i(R) log P_i(s)`` with ``P(v) = softmax(v)``;
  gradient ``softmax(s) - softmax(R)``.
* KL, the un-normalised ListNet of the top-k paper:
  ``sum e^R_i R_i - sum e^R_i s_i - sum e^R_i + sum e^s_i``; gradient ``e^s - e^R``
  (minimised at s = R). Scores are capped at 50 before exp (exp(50) ~ 5e21), so the value
  and gradient never overflow; beyond the cap the gradient saturates.
* SmoothDCG@1 (Chapelle and Wu; top-k paper): the smoothed DCG@1
  ``sum_i G(R_i) softmax(s / eps)_i`` is a gain, so the loss is its negative; gradient
  ``-(1/eps) p * (G - p . G)`` with ``p = softmax(s / eps)``. Non-convex.
"""

from __future__ import annotations

import math

import numpy as np

from ltr_cli.measures.metrics import exp2_gain
from ltr_cli.surrogates.libm import libm_exp


_EXP_CAP = 50.0


def _log_softmax(v: np.ndarray) -> np.ndarray:
    """``log softmax(v)`` (m,), exp and log by the C library as the kernel takes them."""
    shifted = v - v.max()
    return shifted - math.log(float(libm_exp(shifted).sum()))


def listnet_value_and_grad(scores: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    log_ps = _log_softmax(s)
    py = libm_exp(_log_softmax(y))
    return float(-(py @ log_ps)), libm_exp(log_ps) - py


def listnet_authors_gradient(X: np.ndarray, labels: np.ndarray, w: np.ndarray,
                             scores: np.ndarray | None = None) -> np.ndarray:
    """ListNet's gradient w.r.t. the weights (d,) as the authors' MATLAB computes it, for
    ``X`` (m, d), labels (m,) and weights (d,): ``-(X^T e^R) / sum e^R + (X^T e^s) / sum
    e^s`` with ``s = X w`` and **unshifted** exponentials. Large scores overflow ``e^s`` to
    inf and the gradient to NaN, as theirs did on raw MSLR features (REPRODUCTION-NOTES.md,
    "Verified by running the authors' code", item 3). Mathematically equal to
    ``X^T (softmax(s) - softmax(R))``. ``scores``: s when the caller has it (default ``X @ w``)."""
    X64 = np.asarray(X, dtype=np.float64)
    with np.errstate(over="ignore", invalid="ignore"):
        ey = libm_exp(np.asarray(labels, dtype=np.float64))
        es = libm_exp(X64 @ w if scores is None else np.asarray(scores, dtype=np.float64))
        return (-(X64.T @ ey)) / ey.sum() + (X64.T @ es) / es.sum()



def kl_value_and_grad(scores: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray]:
    from ltr_cli.surrogates.topk_estimators import safe_exp

    s = np.minimum(np.asarray(scores, dtype=np.float64), _EXP_CAP)
    y = np.asarray(labels, dtype=np.float64)
    ey, es = safe_exp(y), safe_exp(s)
    value = ey @ y - ey @ s - ey.sum() + es.sum()
    return float(value), es - ey


def smoothdcg_value_and_grad(
    scores: np.ndarray, labels: np.ndarray, epsilon: float = 0.01
) -> tuple[float, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64)
    g = exp2_gain(labels)
    p = libm_exp(_log_softmax(s / epsilon))
    gain = float(p @ g)
    return -gain, -(p * (g - gain)) / epsilon
