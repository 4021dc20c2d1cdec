"""PDGD's update direction in one compiled call (reference:
:func:`ltr_cli.learners.online.pdgd.pdgd_gradient`, the test oracle).

The same pairs, in the same order (each clicked position, then each unclicked one seen),
the same pair weights (the score gradient of P(i before j) times the reversed-pair ratio
over the positions after the higher of the pair up to the lower) and the same
accumulation of the per-position coefficients; the final sum over the shown documents'
features runs in document order, so it may differ from the reference's BLAS product in the
last bits.

Conventions: see :mod:`ltr_cli.kernels`.
"""

from __future__ import annotations

import math

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit


@njit(cache=_CACHE)
def pdgd_gradient(X, scores, ranking, clicks, out):
    """``out`` (d,) = the PDGD ascent direction for ``clicks`` (n,) on the shown list
    ``ranking[:n]`` of a query with features ``X`` (m, d) and ``scores`` (m,); returns
    False (``out`` untouched) when the clicks give no pair."""
    n = clicks.shape[0]
    m = scores.shape[0]
    last = -1
    for p in range(n):
        if clicks[p] > 0:
            last = p
    if last < 0:
        return False
    neg = 0
    for p in range(min(n, last + 2)):
        if not clicks[p] > 0:
            neg += 1
    if neg == 0:
        return False
    top = scores[0]
    for i in range(1, m):
        if scores[i] > top:
            top = scores[i]
    es = np.empty(n)
    for p in range(n):
        es[p] = math.exp(scores[ranking[p]] - top)
    unshown = 0.0
    for r in range(n, m):
        unshown += math.exp(scores[ranking[r]] - top)
    # D[k]: the exp-scores not yet shown above position k (accumulated from the end)
    logD = np.empty(n)
    acc = 0.0
    for k in range(n - 1, -1, -1):
        acc += es[k]
        logD[k] = math.log(unshown + acc)
    coef = np.zeros(n)
    for i in range(n):
        if not clicks[i] > 0:
            continue
        for j in range(min(n, last + 2)):
            if clicks[j] > 0:
                continue
            a, b = min(i, j), max(i, j)
            # the same suffix sums with a and b swapped; only positions a < k <= b differ
            acc = 0.0
            log_ratio = 0.0
            for k in range(n - 1, a, -1):
                acc += es[a] if k == b else es[k]
                if k <= b:
                    log_ratio += logD[k] - math.log(unshown + acc)
            rho = 0.5 * (1.0 + math.tanh(0.5 * log_ratio))
            q = math.exp(-abs(scores[ranking[i]] - scores[ranking[j]]))
            weight = q / (1.0 + q) ** 2 * rho
            coef[i] += weight
            coef[j] -= weight
    d = X.shape[1]
    for f in range(d):
        out[f] = 0.0
    for p in range(n):
        c = coef[p]
        if c != 0.0:
            row = ranking[p]
            for f in range(d):
                out[f] += c * X[row, f]
    return True
