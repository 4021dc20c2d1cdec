"""Unbiased gradient estimators from top-k feedback (top-k paper, Alg. 1 and Section 4).

The shown ranking sigma is drawn from ``P_t = (1 - gamma) [sigma = sigma_t] + gamma / m!``:
the exploit ranking sigma_t with probability 1 - gamma, else a uniformly random
permutation. Exact marginals (REPRODUCTION-NOTES.md):

* ``p(j first) = (1 - gamma) [sigma_t(1) = j] + gamma / m``
* ``p(i first, j second) = (1 - gamma) [sigma_t(1) = i, sigma_t(2) = j] + gamma / (m (m - 1))``

Estimators of ``grad_s phi(s, R)`` (Lemma 1), with sigma the shown ranking:

* squared (top-1): ``2 (s - R_s1 e_s1 / p(s1))``
* KL (top-1): ``(exp(s_s1) - exp(R_s1)) e_s1 / p(s1)``
* SmoothDCG (top-1): the paper's estimator of the gradient of the smoothed DCG@1 *gain*,
  ``z = G(R_s1)/p(s1) (1/eps) q_s1 (e_s1 - q)`` with ``q = softmax(s / eps)``. The papers'
  text and the authors' code both step ``w - eta z`` (``direction="descend-gain"``), which
  lowers DCG; ``"ascend-gain"`` negates z (the corrected variant: descent on -SmoothDCG).
* RankSVM (top-2): ``(h(s1, s2) + h(s2, s1)) / (p(s1, s2) + p(s2, s1))`` with
  ``h(i, j) = [R_i > R_j] [1 + s_j > s_i] (e_j - e_i)``; zero when m < 2.

``fidelity="authors-code"`` swaps the denominators for the authors' MATLAB ones:
``1 - gamma + gamma/m`` if the shown top document is the exploit ranking's, else the
hard-coded ``c gamma / m`` (top-2: ``1 - gamma + gamma/(m(m-1))`` if both top documents
match, else ``c gamma / (m(m-1))``), with ``c = miss_scale``: 0.001 in ``RankingTopKF.m``,
1 in ``RankingTopKFYahooParam_1.m`` (top-1: the exact law; top-2: the probability of the
ordered pair only), 1000 in ``RankingTopKFYandexParam_1.m``. Unless c = 1 the top-1
estimators are **biased**; the top-2 one is, for every c.

``numerics="stable"`` takes exponentials of ``min(x, EXP_CAP)`` (KL) or shifted (SmoothDCG)
so extreme scores cannot overflow; ``"authors-code"`` evaluates the authors' expressions
unshifted, so they overflow to inf and NaN where theirs did.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.measures.metrics import exp2_gain
from ltr_cli.surrogates.libm import exp1, libm_exp

EXP_CAP = 50.0  # exp(50) ~ 5e21: far above any sensible score, far below overflow
FEEDBACK_K = {"squared": 1, "kl": 1, "smoothdcg": 1, "ranksvm": 2}


def safe_exp(x: np.ndarray | float) -> np.ndarray:
    """``exp(min(x, EXP_CAP))``: never overflows."""
    if np.ndim(x) == 0:
        return np.float64(exp1(min(float(x), EXP_CAP)))  # type: ignore[return-value]
    return libm_exp(np.minimum(x, EXP_CAP))


def p_first(j: int, exploit: np.ndarray, gamma: float) -> float:
    """Exact probability that document j is shown first."""
    m = exploit.shape[0]
    return (1.0 - gamma) * float(exploit[0] == j) + gamma / m


def p_first_two(i: int, j: int, exploit: np.ndarray, gamma: float) -> float:
    """Exact probability that documents i, j are shown first and second, in that order."""
    m = exploit.shape[0]
    hit = exploit[0] == i and exploit[1] == j
    return (1.0 - gamma) * float(hit) + gamma / (m * (m - 1))


def _top1_denominator(shown: np.ndarray, exploit: np.ndarray, gamma: float, fidelity: str,
                      miss_scale: float = 0.001) -> float:
    m = exploit.shape[0]
    if fidelity == "authors-code":
        return 1.0 - gamma + gamma / m if shown[0] == exploit[0] else miss_scale * gamma / m
    return p_first(int(shown[0]), exploit, gamma)


def _top2_denominator(shown: np.ndarray, exploit: np.ndarray, gamma: float, fidelity: str,
                      miss_scale: float = 0.001) -> float:
    m = exploit.shape[0]
    a, b = int(shown[0]), int(shown[1])
    if fidelity == "authors-code":
        match = shown[0] == exploit[0] and shown[1] == exploit[1]
        return 1.0 - gamma + gamma / (m * (m - 1)) if match else miss_scale * gamma / (m * (m - 1))
    return p_first_two(a, b, exploit, gamma) + p_first_two(b, a, exploit, gamma)


def estimate_score_gradient(
    surrogate: str,
    scores: np.ndarray,
    shown: np.ndarray,
    top_labels: np.ndarray,
    exploit: np.ndarray,
    gamma: float,
    fidelity: str = "exact",
    epsilon: float = 0.01,
    miss_scale: float = 0.001,
    numerics: str = "stable",
    direction: str = "descend-gain",
) -> np.ndarray:
    """Estimate ``grad_s phi(s, R)`` (m,) from the shown ranking and its top-k labels.

    ``top_labels[i]`` is the label of ``shown[i]``; only the first ``FEEDBACK_K[surrogate]``
    are read. ``exploit`` is the exploit ranking sigma_t the sampling law is built on.
    ``miss_scale``, ``numerics``, ``direction``: see the module docstring.
    """
    s = np.asarray(scores, dtype=np.float64)
    m = s.shape[0]
    z = np.zeros(m)
    if surrogate == "ranksvm":
        if m < 2:
            return z
        a, b = int(shown[0]), int(shown[1])
        ra, rb = float(top_labels[0]), float(top_labels[1])
        hi, lo = (a, b) if ra > rb else (b, a)
        if ra != rb and 1.0 + s[lo] > s[hi]:
            z[lo] += 1.0
            z[hi] -= 1.0
        return z / _top2_denominator(shown, exploit, gamma, fidelity, miss_scale)
    j = int(shown[0])
    r = float(top_labels[0])
    p = _top1_denominator(shown, exploit, gamma, fidelity, miss_scale)
    raw = numerics == "authors-code"
    if surrogate == "squared":
        z = 2.0 * s
        z[j] -= 2.0 * r / p
        return z
    if surrogate == "kl":
        z[j] = ((np.float64(exp1(float(s[j]))) - exp1(r)) if raw else (safe_exp(s[j]) - safe_exp(r))) / p
        return z
    if surrogate == "smoothdcg":
        sign = 1.0 if direction == "descend-gain" else -1.0
        if raw:  # the authors' expression, term by term, unshifted
            e = libm_exp(s / epsilon)
            den = e.sum()
            ej = np.float64(exp1(float(s[j] / epsilon)))
            z = -1.0 * (ej * e) / (epsilon * den ** 2)
            z[j] = z[j] + ej / (epsilon * den)
            return sign * (z * ((2.0 ** r - 1.0) / p))
        shifted = s / epsilon - (s / epsilon).max()
        e = libm_exp(shifted)
        q = e / e.sum()
        gain_grad = -q[j] * q
        gain_grad[j] += q[j]
        return sign * (float(exp2_gain(np.asarray(r, dtype=np.float64))) / p) * gain_grad / epsilon
    raise ValueError(f"no top-k estimator for surrogate {surrogate!r}; expected {', '.join(FEEDBACK_K)}")
