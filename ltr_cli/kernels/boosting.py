"""RankBoost's round, compiled (reference: ``rankboost_reference`` in
:mod:`ltr_cli.learners.batch.boosting`, the same sums in numpy).

``hi``, ``lo`` (P,) the stacked documents of each pair (higher, lower label), ``D`` (P,)
the pair weights. A document's potential is the weight of its pairs as the higher end
minus that as the lower end, accumulated in pair order as ``np.add.at`` then
``np.subtract.at`` do. For each feature, ``order`` (d, n) lists the documents by
descending value (stable) and ``xs`` (d, n) their values; the stump between ranks i and i + 1
(where the value falls) has ``r`` = the running sum of potentials up to i, summed in that
order as ``np.cumsum`` does.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit
from ltr_cli.kernels.pairwise import _pairwise_sum


@njit(cache=_CACHE)
def potential(hi, lo, D, n):
    """Each document's potential (n,)."""
    pot = np.zeros(n)
    for k in range(hi.shape[0]):
        pot[hi[k]] += D[k]
    for k in range(lo.shape[0]):
        pot[lo[k]] -= D[k]
    return pot


@njit(cache=_CACHE)
def best_stump(order, xs, pot):
    """The stump the reference's search keeps: per feature the cut with the largest |r|
    (the first on ties), over features the first whose |r| beats the best so far by more
    than 1e-15. Returns (r, feature or -1, threshold)."""
    d, n = order.shape
    best_r = 0.0
    best_f = -1
    best_theta = 0.0
    for f in range(d):
        cum = 0.0
        top = -1.0
        r_f = 0.0
        at = -1
        for i in range(n - 1):
            cum += pot[order[f, i]]
            if xs[f, i] > xs[f, i + 1]:
                a = abs(cum)
                if a > top:
                    top = a
                    r_f = cum
                    at = i
        if at >= 0 and abs(r_f) > abs(best_r) + 1e-15:
            best_r = r_f
            best_f = f
            best_theta = (xs[f, at] + xs[f, at + 1]) / 2
    return best_r, best_f, best_theta


@njit(cache=_CACHE)
def reweight(D, above, lo, hi, factor):
    """The pair weights after a round, before normalising: ``D * exp(alpha (h_lo - h_hi))``
    with ``h = above`` (the stump's 0/1 values) and ``factor`` the three values
    ``exp(alpha * (-1, 0, 1))`` numpy's exp gives (the exponent takes no others)."""
    out = np.empty(D.shape[0])
    for k in range(D.shape[0]):
        out[k] = D[k] * factor[above[lo[k]] - above[hi[k]] + 1]
    return out


@njit(cache=_CACHE)
def average_precisions(s, rel, offsets, out):
    """AdaRank.MAP's measure of each query (reference:
    :func:`ltr_cli.measures.metrics.average_precision` of ``rank(s)``, no relevant document
    scoring 0): ``s`` (N,) stacked scores, ``rel`` (N,) relevant or not, query q the rows
    ``offsets[q]:offsets[q+1]``; ``out`` (Q,) is written.

    A relevant document's rank under ``rank`` (descending score, ties by index) is one
    more than the documents scoring higher plus those scoring the same that come before it;
    its hits one more than the relevant documents ranked above it. The values ``hits / rank``
    in rank order are summed as numpy sums them."""
    for q in range(offsets.shape[0] - 1):
        a, b = offsets[q], offsets[q + 1]
        idx = np.flatnonzero(rel[a:b]) + a
        R = idx.shape[0]
        if R == 0:
            out[q] = 0.0
            continue
        pos = np.empty(R, dtype=np.int64)
        for u in range(R):
            i = idx[u]
            si = s[i]
            above = 0
            for j in range(a, b):
                sj = s[j]
                above += (sj > si) | ((sj == si) & (j < i))
            pos[u] = above + 1
        pos.sort()
        vals = np.empty(R)
        for u in range(R):
            vals[u] = (u + 1) / pos[u]
        out[q] = _pairwise_sum(vals, 0, R) / R
