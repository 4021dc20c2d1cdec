"""The squared pairwise hinge of batch Ranking SVM by counting, in O(L m log m) per query of
m documents and L label levels (reference: :mod:`ltr_cli.learners.batch.ranksvm`, which enumerates
the pairs).

Layout: the queries' documents are stacked; query q owns rows ``offsets[q]:offsets[q+1]``.
``s`` (N,) scores, ``y`` (N,) labels, both float64. A pair is (i, j) in one query with
``y_i > y_j``; it is *active* when ``s_i - s_j < 1`` and then costs ``(1 - s_i + s_j)^2``.

Every query's scores are shifted by their mean first (the loss depends on differences
only), so prefix sums of scores do not lose precision to a large common offset.

For each query the documents are sorted by score once; per label level L, the documents
labelled L (the upper ends) and those below L (the lower ends) are two ascending lists,
and a two-pointer sweep finds every document's active partners as a contiguous run whose
counts and sums come from prefix sums.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit


@njit(cache=_CACHE)
def _centred(s, a, b):
    out = np.empty(b - a)
    mean = 0.0
    for t in range(a, b):
        mean += s[t]
    mean /= max(b - a, 1)
    for t in range(a, b):
        out[t - a] = s[t] - mean
    return out


@njit(cache=_CACHE)
def _query(s, y, offsets, order, q):
    """Query q's start, size, centred scores, score order, label levels and work arrays."""
    a = offsets[q]
    m = offsets[q + 1] - a
    return (a, m, _centred(s, a, a + m), order[a:a + m], np.unique(y[a:a + m]), np.empty(m, dtype=np.int64),
            np.empty(m, dtype=np.int64))


@njit(cache=_CACHE)
def _split_level(order, y, a, level, low, up):
    """Fill ``low`` (labels below ``level``) and ``up`` (labels equal to it) with the
    query's local indices in ascending score order; return their counts."""
    nl = 0
    nu = 0
    for t in range(order.shape[0]):
        i = order[t]
        if y[a + i] < level:
            low[nl] = i
            nl += 1
        elif y[a + i] == level:
            up[nu] = i
            nu += 1
    return nl, nu


@njit(cache=_CACHE)
def squared_hinge_value_grad(s, y, offsets, order):
    """Sum over queries of the squared pairwise hinge, and its gradient in the scores.

    ``order`` (N,) int64 is written: for each query, its local document indices by
    ascending (centred) score, the order :func:`squared_hinge_hessvec` reuses. Returns the
    value and the gradient (N,); a query without two distinct labels contributes nothing."""
    n = s.shape[0]
    grad = np.zeros(n)
    value = 0.0
    for q in range(offsets.shape[0] - 1):
        a = offsets[q]
        b = offsets[q + 1]
        m = b - a
        c = _centred(s, a, b)
        o = np.argsort(c, kind="mergesort")
        for t in range(m):
            order[a + t] = o[t]
        levels = np.unique(y[a:b])
        low = np.empty(m, dtype=np.int64)
        up = np.empty(m, dtype=np.int64)
        suf1 = np.empty(m + 1)
        suf2 = np.empty(m + 1)
        for li in range(1, levels.shape[0]):
            nl, nu = _split_level(o, y, a, levels[li], low, up)
            suf1[nl] = 0.0
            suf2[nl] = 0.0
            for k in range(nl - 1, -1, -1):
                sj = c[low[k]]
                suf1[k] = suf1[k + 1] + sj
                suf2[k] = suf2[k + 1] + sj * sj
            p = 0  # upper ends, ascending: the active lower ends are low[p:]
            for k in range(nu):
                u = up[k]
                while p < nl and c[u] - c[low[p]] >= 1.0:
                    p += 1
                cnt = nl - p
                r = 1.0 - c[u]
                value += cnt * r * r + 2.0 * r * suf1[p] + suf2[p]
                grad[a + u] -= 2.0 * (cnt * r + suf1[p])
            p = 0  # lower ends, ascending: the active upper ends are up[:p]
            pre = 0.0
            for k in range(nl):
                j = low[k]
                while p < nu and c[up[p]] - c[j] < 1.0:
                    pre += c[up[p]]
                    p += 1
                grad[a + j] += 2.0 * (p * (1.0 + c[j]) - pre)
    return value, grad


@njit(cache=_CACHE)
def squared_hinge_hessvec(s, y, offsets, order, v):
    """The (generalised) Hessian of the squared pairwise hinge in the scores, times ``v``
    (N,): ``sum over active pairs of 2 (e_i - e_j)(e_i - e_j)' v``; ``order`` as written by
    :func:`squared_hinge_value_grad` for the same ``s``."""
    n = s.shape[0]
    out = np.zeros(n)
    for q in range(offsets.shape[0] - 1):
        a, m, c, o, levels, low, up = _query(s, y, offsets, order, q)
        suf = np.empty(m + 1)
        for li in range(1, levels.shape[0]):
            nl, nu = _split_level(o, y, a, levels[li], low, up)
            suf[nl] = 0.0
            for k in range(nl - 1, -1, -1):
                suf[k] = suf[k + 1] + v[a + low[k]]
            p = 0
            for k in range(nu):
                u = up[k]
                while p < nl and c[u] - c[low[p]] >= 1.0:
                    p += 1
                out[a + u] += 2.0 * ((nl - p) * v[a + u] - suf[p])
            p = 0
            pre = 0.0
            for k in range(nl):
                j = low[k]
                while p < nu and c[up[p]] - c[j] < 1.0:
                    pre += v[a + up[p]]
                    p += 1
                out[a + j] += 2.0 * (p * v[a + j] - pre)
    return out


@njit(cache=_CACHE)
def squared_hinge_hess_diag(X, s, y, offsets, order):
    """The diagonal (d,) of ``X' H X`` for the generalised Hessian H of the squared pairwise
    hinge in the scores: ``sum over active pairs of 2 (x_i - x_j)^2`` per feature (the
    Jacobi preconditioner of the Newton solver); ``order`` as for
    :func:`squared_hinge_hessvec`."""
    d = X.shape[1]
    out = np.zeros(d)
    for q in range(offsets.shape[0] - 1):
        a, m, c, o, levels, low, up = _query(s, y, offsets, order, q)
        suf1 = np.empty((m + 1, d))
        suf2 = np.empty((m + 1, d))
        for li in range(1, levels.shape[0]):
            nl, nu = _split_level(o, y, a, levels[li], low, up)
            suf1[nl, :] = 0.0
            suf2[nl, :] = 0.0
            for k in range(nl - 1, -1, -1):
                row = a + low[k]
                for f in range(d):
                    x = X[row, f]
                    suf1[k, f] = suf1[k + 1, f] + x
                    suf2[k, f] = suf2[k + 1, f] + x * x
            p = 0
            for k in range(nu):
                u = up[k]
                while p < nl and c[u] - c[low[p]] >= 1.0:
                    p += 1
                cnt = nl - p
                if cnt == 0:
                    continue
                row = a + u
                for f in range(d):
                    x = X[row, f]
                    out[f] += 2.0 * (cnt * x * x - 2.0 * x * suf1[p, f] + suf2[p, f])
    return out


@njit(cache=_CACHE)
def hinge_value_grad(s, y, starts, ends, counts, delta, grad):
    """The plain pairwise hinge of RankSVM (reference:
    :func:`ltr_cli.surrogates.pairwise.ranksvm_value_and_grad`) summed over queries with
    weights: ``sum_q counts[q] sum_{i, j in q: y_i > y_j} max(0, delta - (s_i - s_j))``, query
    q being rows ``starts[q]:ends[q]``. Writes the gradient w.r.t. the scores into ``grad``
    (N,) (rows of no query: 0) and returns the value. O(m^2) per query, by enumeration: for
    the comparator of a regret (:mod:`ltr_cli.learners.online.hindsight`), where each
    evaluation visits every query."""
    for t in range(grad.shape[0]):
        grad[t] = 0.0
    value = 0.0
    for q in range(starts.shape[0]):
        c = counts[q]
        if c == 0:
            continue
        a, b = starts[q], ends[q]
        for i in range(a, b):
            for j in range(a, b):
                if y[i] > y[j]:
                    h = delta - (s[i] - s[j])
                    if h > 0.0:
                        value += c * h
                        grad[i] -= c
                        grad[j] += c
    return value
