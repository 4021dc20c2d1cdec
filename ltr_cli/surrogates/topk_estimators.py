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
  ``G(R_s1)/p(s1) (1/eps) q_s1 (e_s1 - q)`` with ``q = softmax(s / eps)``, negated: the
  learner descends on the loss -SmoothDCG (descending on the gain would lower DCG).
* RankSVM (top-2): ``(h(s1, s2) + h(s2, s1)) / (p(s1, s2) + p(s2, s1))`` with
  ``h(i, j) = [R_i > R_j] [1 + s_j > s_i] (e_j - e_i)``; zero when m < 2.

``fidelity="authors-code"`` swaps the denominators for the authors' MATLAB ones:
``1 - gamma + gamma/m`` if the shown top document is the exploit ranking's, else the
hard-coded ``0.001 gamma / m`` (top-2: ``1 - gamma + gamma/(m(m-1))`` if both top
documents match, else ``0.001 gamma / (m(m-1))``). That estimator is **biased**.

Exponentials are taken of ``min(x, EXP_CAP)`` so extreme scores cannot overflow; beyond
the cap the KL gradient saturates.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.metrics import exp2_gain

EXP_CAP = 50.0  # exp(50) ~ 5e21: far above any sensible score, far below overflow
FEEDBACK_K = {"squared": 1, "kl": 1, "smoothdcg": 1, "ranksvm": 2}


def safe_exp(x: np.ndarray | float) -> np.ndarray:
    """``exp(min(x, EXP_CAP))``: never overflows."""
    return np.exp(np.minimum(x, EXP_CAP))


def p_first(j: int, exploit: np.ndarray, gamma: float) -> float:
    """Exact probability that document j is shown first."""
    m = exploit.shape[0]
    return (1.0 - gamma) * float(exploit[0] == j) + gamma / m


def p_first_two(i: int, j: int, exploit: np.ndarray, gamma: float) -> float:
    """Exact probability that documents i, j are shown first and second, in that order."""
    m = exploit.shape[0]
    hit = exploit[0] == i and exploit[1] == j
    return (1.0 - gamma) * float(hit) + gamma / (m * (m - 1))


def _top1_denominator(shown: np.ndarray, exploit: np.ndarray, gamma: float, fidelity: str) -> float:
    m = exploit.shape[0]
    if fidelity == "authors-code":
        return 1.0 - gamma + gamma / m if shown[0] == exploit[0] else 0.001 * gamma / m
    return p_first(int(shown[0]), exploit, gamma)


def _top2_denominator(shown: np.ndarray, exploit: np.ndarray, gamma: float, fidelity: str) -> float:
    m = exploit.shape[0]
    a, b = int(shown[0]), int(shown[1])
    if fidelity == "authors-code":
        match = shown[0] == exploit[0] and shown[1] == exploit[1]
        return 1.0 - gamma + gamma / (m * (m - 1)) if match else 0.001 * gamma / (m * (m - 1))
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
) -> np.ndarray:
    """Estimate ``grad_s phi(s, R)`` (m,) from the shown ranking and its top-k labels.

    ``top_labels[i]`` is the label of ``shown[i]``; only the first ``FEEDBACK_K[surrogate]``
    are read. ``exploit`` is the exploit ranking sigma_t the sampling law is built on.
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
        return z / _top2_denominator(shown, exploit, gamma, fidelity)
    j = int(shown[0])
    r = float(top_labels[0])
    p = _top1_denominator(shown, exploit, gamma, fidelity)
    if surrogate == "squared":
        z = 2.0 * s
        z[j] -= 2.0 * r / p
        return z
    if surrogate == "kl":
        z[j] = (safe_exp(s[j]) - safe_exp(r)) / p
        return z
    if surrogate == "smoothdcg":
        shifted = s / epsilon - (s / epsilon).max()
        q = np.exp(shifted) / np.exp(shifted).sum()
        gain_grad = -q[j] * q
        gain_grad[j] += q[j]
        return -(float(exp2_gain(r)) / p) * gain_grad / epsilon
    raise ValueError(f"no top-k estimator for surrogate {surrogate!r}; expected {', '.join(FEEDBACK_K)}")
