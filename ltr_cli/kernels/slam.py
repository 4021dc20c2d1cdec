"""SLAM surrogates (reference: :mod:`ltr_cli.surrogates.slam`): relevance levels, hinge terms, the NDCG and AP weight vectors, the surrogate's value and subgradient, and the max-pair surrogate of Alg. 3.

Conventions: see :mod:`ltr_cli.kernels`; slots and codes: :mod:`ltr_cli.core.codes`.
"""

from __future__ import annotations

import math

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit
from ltr_cli.core.codes import RANKED_INPUT_ORDER, RANKED_REVERSE_INPUT, RANKED_UNKNOWN
from ltr_cli.kernels.core import _dot, _sort_into
from ltr_cli.kernels.pairwise import _pairwise_sum
from ltr_cli.kernels.measures import _gain


# --- SLAM (reference: ltr_cli.surrogates.slam) -------------------------------------------------

@njit(cache=_CACHE)
def _levels(y):
    """The distinct labels: their number L, values (L,) ascending, sizes (L,), and each
    document's level index (m,). Integer labels in [-64, 64) are counted in a table;
    other labels go through np.unique."""
    m = y.shape[0]
    return _levels_into(y, np.empty(128, dtype=np.int64), np.empty(m, dtype=np.int64), np.empty(m),
                        np.empty(m, dtype=np.int64))


@njit(cache=_CACHE)
def _levels_into(y, table, lev, values_buf, sizes_buf):
    """:func:`_levels` written into scratch: ``table`` (128,) int64, ``lev`` (m,) int64,
    ``values_buf`` (m,) float64 and ``sizes_buf`` (m,) int64 (values and sizes are
    returned as their first L entries)."""
    m = y.shape[0]
    table[:] = 0
    small = True
    for i in range(m):
        v = y[i]
        if v >= -64.0 and v < 64.0 and v == math.floor(v):
            slot = int(v) + 64
            lev[i] = slot
            table[slot] += 1
        else:
            small = False
            break
    if not small:
        unique = np.unique(y)
        L = unique.shape[0]
        found = np.searchsorted(unique, y)
        values = values_buf[:L]
        sizes = sizes_buf[:L]
        values[:] = unique
        sizes[:] = 0
        for i in range(m):
            lev[i] = found[i]
            sizes[found[i]] += 1
        return L, values, sizes, lev
    L = 0
    for q in range(128):
        if table[q]:
            L += 1
    values = values_buf[:L]
    sizes = sizes_buf[:L]
    L = 0
    for q in range(128):
        if table[q]:
            values[L] = q - 64.0
            sizes[L] = table[q]
            table[q] = L
            L += 1
    for i in range(m):
        lev[i] = table[lev[i]]
    return L, values, sizes, lev


@njit(cache=_CACHE)
def _terms(s, y, lev, L, margin, delta, ties):
    """Hinge terms c (m,) and maximisers k (m,) of Eq. 14 given the label levels."""
    m = s.shape[0]
    return _terms_into(s, y, lev, L, margin, delta, ties, np.empty(L), np.empty(L, dtype=np.int64),
                       np.empty(m), np.empty(m, dtype=np.int64))


@njit(cache=_CACHE)
def _terms_into(s, y, lev, L, margin, delta, ties, best_a, best_k, c, k):
    """:func:`_terms` written into scratch: ``best_a`` (>= L,) float64, ``best_k`` (>= L,)
    int64, and the results ``c`` (m,) and ``k`` (m,), which it returns. ``ties`` 0 =
    first-index (smallest index among equal maxima), 1 = authors-code (the higher level,
    then the larger index)."""
    m = s.shape[0]
    constant = margin == 0
    authors = ties == 1
    # per level the best candidate: largest a, then smallest index (authors-code: largest;
    # NaN only if all are NaN)
    best_a[:L] = -np.inf
    best_k[:L] = -1
    for i in range(m):
        a = s[i] if constant else s[i] - delta * y[i]
        q = lev[i]
        cur = best_a[q]
        if best_k[q] < 0 or a > cur or (cur != cur and a == a) or (authors & (a == cur)):
            best_a[q] = a
            best_k[q] = i
    # in place: best_*[q] becomes the best over the levels below q (a running maximum); a
    # tie goes to the smaller index, or (authors-code) to the higher level
    run_a, run_k = -np.inf, -1
    for q in range(L):
        ca, cand = best_a[q], best_k[q]
        best_a[q], best_k[q] = run_a, run_k
        if ca > run_a or (ca == run_a and (authors or cand < run_k)):
            run_a, run_k = ca, cand
    for i in range(m):  # no branch on the level: without a lower document best_a is -inf
        q = lev[i]
        k[i] = best_k[q]
        b = delta - s[i] if constant else delta * y[i] - s[i]
        x = b + best_a[q]
        c[i] = x if (x > 0.0) | ((x != x) & (best_k[q] >= 0)) else 0.0  # a select, not branches
    return c, k


@njit(cache=_CACHE)
def slam_terms(s, y, margin, delta, ties=0):
    """Hinge terms c (m,) and maximisers k (m,) of Eq. 14 (reference ``slam_terms``):
    ``margin`` 0 = constant, 1 = label-difference; ``ties`` 0 = first-index, 1 =
    authors-code; k = -1 where no label is lower."""
    L, values, sizes, lev = _levels(y)
    return _terms(s, y, lev, L, margin, delta, ties)


@njit(cache=_CACHE)
def _ap_weights(y, threshold):
    return _ap_weights_into(y, threshold, np.empty(y.shape[0]))


@njit(cache=_CACHE)
def _ap_weights_into(y, threshold, v):
    """v^AP into ``v`` (m,): 1 / (number relevant) on relevant documents, else 0."""
    m = y.shape[0]
    v[:] = 0.0
    r = 0
    for i in range(m):
        r += y[i] > threshold
    if r:
        inv = 1.0 / r
        for i in range(m):
            v[i] = inv if y[i] > threshold else 0.0
    return v


@njit(cache=_CACHE)
def _ndcg_weights(s, levels, k, mode, disc):
    """v^NDCG(@k) given the label levels (L, values, sizes, lev); ``mode`` as in
    :func:`slam_weights`. The ideal ordering puts level blocks in descending order; the
    reference's per-position contributions ``G(R) D(p)`` (summed pairwise for Z) depend
    only on the block, the within-level order decides which document gets which."""
    m = levels[3].shape[0]
    by = np.empty(m, dtype=np.int64)
    return _ndcg_weights_into(s, levels, k, mode, disc, np.empty(m), np.empty(levels[0] + 1, dtype=np.int64),
                              np.empty(m), np.empty(levels[0]), by, RANKED_UNKNOWN, by)


@njit(cache=_CACHE)
def _score_order(s, ranking, ranked, by):
    """``np.argsort(-s, kind="stable")`` (documents by descending score, ties in index order)
    into ``by`` (m,) int64, taken from ``ranking`` when ``ranked`` says how it was sorted from
    ``s``: as is (``RANKED_INPUT_ORDER``), or with every run of equal scores reversed
    (``RANKED_REVERSE_INPUT``: the stable ascending sort reversed puts equal scores in reverse
    index order). The claim is checked first, in O(m): a ranking that is not exactly that
    sort of ``s`` (changed by its caller, from other scores, NaN scores, which the two sorts
    place at opposite ends) or ``RANKED_UNKNOWN`` sorts ``s`` again."""
    m = s.shape[0]
    if ranked != RANKED_UNKNOWN and _sorted_as(s, ranking, ranked == RANKED_REVERSE_INPUT):
        if ranked == RANKED_INPUT_ORDER:
            return ranking
        a = 0
        while a < m:
            b = a + 1
            x = s[ranking[a]]
            while b < m and s[ranking[b]] == x:
                b += 1
            for p in range(a, b):
                by[p] = ranking[a + b - 1 - p]
            a = b
        return by
    _sort_into(s, False, by)
    return by


@njit(cache=_CACHE)
def _sorted_as(s, ranking, reverse):
    """Whether ``ranking`` (m,) lists the documents 0..m-1 by descending score with ties in
    index order (``reverse``: in reverse index order): what :func:`_sort_into` gives for
    non-NaN scores. Strict order within ties means no index repeats, so it is a permutation."""
    m = s.shape[0]
    if ranking.shape[0] != m or m == 0:
        return ranking.shape[0] == m
    i = ranking[0]
    if i < 0 or i >= m:
        return False
    for p in range(1, m):  # one pass: each next index in range, and after i in the order
        j = ranking[p]
        if j < 0 or j >= m:
            return False
        x, y = s[i], s[j]
        if not (x > y or (x == y and ((i > j) if reverse else (i < j)))):
            return False
        i = j
    return True


@njit(cache=_CACHE)
def _ndcg_weights_into(s, levels, k, mode, disc, v, start, contrib, means, ranking, ranked, by):
    """:func:`_ndcg_weights` written into scratch: the result ``v`` (m,), ``start``
    (>= L + 1,) int64, ``contrib`` (m,), ``means`` (>= L,) and ``by`` (m,) int64; returns
    v. The ``paper`` mode reads the documents in score order from ``ranking`` when
    ``ranked`` allows (:func:`_score_order`)."""
    L, values, sizes, lev = levels
    m = lev.shape[0]
    n = m if k < 0 else min(k, m)
    at = 0
    for q in range(L - 1, -1, -1):
        start[q] = at
        at += sizes[q]
    # in position order; the level blocks tile [0, m), so the loop below writes [0, n)
    contrib[n:] = 0.0
    for q in range(L):
        gain = _gain(values[q])
        for p in range(start[q], min(start[q] + sizes[q], n)):
            contrib[p] = gain * disc[p]
    z = _pairwise_sum(contrib, 0, m)
    if z <= 0.0:
        v[:] = 0.0
        return v
    if mode == 2:  # level means: a level's documents hold its block in index order, and
        # np.bincount sums them in index order, i.e. in block order
        for q in range(L):
            acc = 0.0
            for p in range(start[q], start[q] + sizes[q]):
                acc += contrib[p] / z
            means[q] = acc / sizes[q]
        for i in range(m):
            v[i] = means[lev[i]]
        return v
    fill = start[:L].copy()
    if mode == 0:  # documents of a level in score order
        by = _score_order(s, ranking, ranked, by)
        for p in range(m):
            i = by[p]
            q = lev[i]
            v[i] = contrib[fill[q]] / z
            fill[q] += 1
    else:  # in index order
        for i in range(m):
            q = lev[i]
            v[i] = contrib[fill[q]] / z
            fill[q] += 1
    return v


@njit(cache=_CACHE)
def slam_weights(y, s, kind, k, mode, threshold, disc):
    """SLAM weight vector (reference ``slam_weights``): ``kind`` 0 = NDCG (k < 0: all m
    positions), 1 = AP; ``mode`` 0 = documents of a level in score order (``paper``), 1 =
    input order (``paper-fixed``), 2 = input order, then level means (``level-averaged``)."""
    if kind == 1:
        return _ap_weights(y, threshold)
    return _ndcg_weights(s, _levels(y), k, mode, disc)


@njit(cache=_CACHE)
def _slam_grad(c, k, v):
    """SLAM value ``v @ c`` and subgradient (reference ``slam_value_and_grad``):
    ``np.subtract.at(g, active, v[active])`` then ``np.add.at(g, k[active], v[active])``;
    an inactive document adds 0.0 (exact) instead of branching."""
    return _slam_grad_into(c, k, v, np.empty(c.shape[0]))


@njit(cache=_CACHE)
def _slam_grad_into(c, k, v, g):
    """:func:`_slam_grad` with the subgradient written into ``g`` (m,)."""
    m = c.shape[0]
    # "&", not "and": a select instead of a branch that about half the documents mispredict
    for i in range(m):  # g starts at 0.0: 0.0 - x, as the reference's subtract.at
        g[i] = 0.0 - (v[i] if (c[i] > 0.0) & (v[i] > 0.0) else 0.0)
    for i in range(m):
        g[max(k[i], 0)] += v[i] if (c[i] > 0.0) & (v[i] > 0.0) else 0.0
    return _dot(v, c), g


@njit(cache=_CACHE)
def slam_value_and_grad(s, y, v, margin, delta, ties=0):
    """Reference ``slam_value_and_grad`` (margin 0 = constant, 1 = label-difference; ties
    as :func:`slam_terms`)."""
    levels = _levels(y)
    c, k = _terms(s, y, levels[3], levels[0], margin, delta, ties)
    return _slam_grad(c, k, v)


@njit(cache=_CACHE)
def _argmax_first(c):
    """np.argmax: the first maximum (the first NaN, if any); -1 when empty."""
    if c.shape[0] == 0:
        return -1
    best = 0
    for i in range(1, c.shape[0]):
        if c[best] != c[best]:
            break
        if c[i] > c[best] or c[i] != c[i]:
            best = i
    return best


@njit(cache=_CACHE)
def _argmax_authors(c, y):
    """The authors' choice of Alg. 3's violating document: the largest term, ties to the
    highest label, then the largest index (a NaN term, if any, as :func:`_argmax_first`)."""
    best = _argmax_first(c)
    if best < 0 or c[best] != c[best]:
        return best
    for i in range(best + 1, c.shape[0]):
        if c[i] == c[best] and y[i] >= y[best]:
            best = i
    return best


@njit(cache=_CACHE)
def max_pair_value_and_grad(s, y, margin, delta, ties=0):
    """Reference ``max_pair_value_and_grad`` (ties 0 = first-index, 1 = authors-code)."""
    levels = _levels(y)
    c, k = _terms(s, y, levels[3], levels[0], margin, delta, ties)
    g = np.zeros(s.shape[0])
    i = _argmax_authors(c, y) if ties == 1 else _argmax_first(c)
    if i < 0 or c[i] <= 0.0:
        return 0.0, g
    g[i] -= 1.0
    g[k[i]] += 1.0
    return c[i], g
