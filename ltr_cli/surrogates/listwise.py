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

import numpy as np

from ltr_cli.metrics import exp2_gain


_EXP_CAP = 50.0


def _log_softmax(v: np.ndarray) -> np.ndarray:
    shifted = v - v.max()
    return shifted - np.log(np.exp(shifted).sum())


def listnet_value_and_grad(scores: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray]:
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    log_ps = _log_softmax(s)
    py = np.exp(_log_softmax(y))
    return float(-(py @ log_ps)), np.exp(log_ps) - py


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
    p = np.exp(_log_softmax(s / epsilon))
    gain = float(p @ g)
    return -gain, -(p * (g - gain)) / epsilon
