"""SVMmap's most violated ranking, compiled (reference:
:func:`ltr_cli.learners.batch.losses.ap_most_violated` and ``psi``, the same arithmetic in
numpy, so the same ranking and hinge to the last bit).

Relevant and non-relevant documents each keep descending score order (stable); the j-th
non-relevant document goes below the first ``k_j`` relevant ones, k_j the smallest maximiser
of ``g_j(k) = sum_{i > k} d_j(i)`` (suffix sums from the right, as ``np.cumsum`` on the
reversed row adds them); the hinge is the sum of the maxima in numpy's pairwise order.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit
from ltr_cli.kernels.pairwise import _pairwise_sum


@njit(cache=_CACHE)
def ap_most_violated(s, rel):
    """(ranking (n,) int64, hinge, coef (n,)): the most violated ranking, its hinge, and
    the joint feature map's coefficient of each ranked document (``psi`` before the
    product with the rows and the division by R M)."""
    n = s.shape[0]
    P = np.flatnonzero(rel)
    N = np.flatnonzero(~rel)
    R, M = P.shape[0], N.shape[0]
    P = P[np.argsort(-s[P], kind="mergesort")]
    N = N[np.argsort(-s[N], kind="mergesort")]
    inv = 1.0 / R
    RM = float(R * M)
    best = np.empty(M)
    k = np.empty(M, dtype=np.int64)
    g = np.empty(R + 1)
    for j in range(M):
        jj = j + 1
        sn = s[N[j]]
        g[R] = 0.0
        acc = 0.0
        for i in range(R - 1, -1, -1):
            ii = i + 1
            d = inv * ii / float((ii + jj - 1) * (ii + jj)) - 2.0 * (s[P[i]] - sn) / RM
            acc = d if i == R - 1 else acc + d
            g[i] = acc
        top = g[0]
        for i in range(1, R + 1):
            if g[i] > top:
                top = g[i]
        best[j] = top
        for i in range(R + 1):
            if g[i] >= top - 1e-12:
                k[j] = i
                break
    ranking = np.empty(n, dtype=np.int64)
    coef = np.empty(n)
    count = np.zeros(R + 2, dtype=np.int64)
    for j in range(M):
        count[k[j] + 1] += 1
    start = np.zeros(R + 1, dtype=np.int64)  # where the non-relevant documents of bucket r start
    for r in range(1, R + 1):
        start[r] = start[r - 1] + count[r] + 1
    fill = start.copy()
    for j in range(M):
        ranking[fill[k[j]]] = N[j]
        fill[k[j]] += 1
    for r in range(R):
        ranking[start[r] + count[r + 1]] = P[r]
    rel_above = 0
    nonrel_above = 0
    for t in range(n):
        if rel[ranking[t]]:
            coef[t] = M - 2 * nonrel_above
            rel_above += 1
        else:
            coef[t] = R - 2 * rel_above
            nonrel_above += 1
    return ranking, _pairwise_sum(best, 0, M), coef
