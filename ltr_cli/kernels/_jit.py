"""numba kernels: one call per round for ranking, for each learner's update, and for the
protocol's measures. Each mirrors a slow reference implementation (named in its
docstring) operation by operation, so results agree exactly where the reference's own
arithmetic is reproducible (orderings, SLAM weights, hinge terms, AP, the subgradient)
and to rounding where the reference calls BLAS (``X @ w``, ``X.T @ g``, dot products).

Parameter arrays (float64) describe a learner's fixed configuration; their layouts are
built by the learners (``_kernel_params``) and documented at each kernel.
"""

from __future__ import annotations

import math

import numpy as np

from ltr_cli.numba_cache import ensure

_CACHE = ensure()  # before numba is imported: picks a writable cache directory

from numba import njit, types  # noqa: E402
from numba.extending import overload  # noqa: E402

_NAN = np.nan
_INF = np.inf
_EXP_CAP = 50.0


# --- scores and rankings -------------------------------------------------------------------

@njit(cache=_CACHE, fastmath={"reassoc", "contract"})
def _scores_loop_into(X, w, s):
    """``s[:m] = X @ w`` accumulated in float64 (for float32 X); the reduction is
    vectorised and uses fused multiply-adds (like BLAS), so its rounding differs from a
    sequential sum."""
    m, d = X.shape
    for i in range(m):
        acc = 0.0
        for j in range(d):
            acc += X[i, j] * w[j]
        s[i] = acc


@njit(cache=_CACHE)
def _scores_loop(X, w):
    s = np.empty(X.shape[0])
    _scores_loop_into(X, w, s)
    return s


@njit(cache=_CACHE, fastmath={"contract"})
def _rmatvec_loop(X, g):
    """``X.T @ g`` in float64, skipping documents with g = 0 (for float32 X), with fused
    multiply-adds like BLAS. (So for two equal rows ``c X[i] - c X[k]`` may leave a
    last-bit residue instead of cancelling: numpy's BLAS does that for some shapes, not
    others.)"""
    m, d = X.shape
    acc = np.zeros(d)
    for i in range(m):
        gi = g[i]
        if gi != 0.0:
            for j in range(d):
                acc[j] += gi * X[i, j]
    return acc


def _blas_ok(X):
    return X.dtype == types.float64 and X.layout in "CF"


# X @ w and X.T @ g: float64 contiguous X goes to BLAS (numba's np.dot calls the same
# dgemv as numpy's ``@``, so float64 results equal the reference's bit for bit); other X
# (float32 from the cache) is read by the loops above, accumulating in float64 with no copy.
def _matvec(X, w):
    raise NotImplementedError  # compiled through the overload below


def _rmatvec(X, g):
    raise NotImplementedError


@overload(_matvec)
def _matvec_impl(X, w):
    if _blas_ok(X):
        return lambda X, w: np.dot(X, w)
    return lambda X, w: _scores_loop(X, w)


def _matvec_into(X, w, s):
    raise NotImplementedError


@overload(_matvec_into)
def _matvec_into_impl(X, w, s):
    if _blas_ok(X):
        def blas(X, w, s):
            s[:X.shape[0]] = np.dot(X, w)
        return blas
    return lambda X, w, s: _scores_loop_into(X, w, s)


@overload(_rmatvec)
def _rmatvec_impl(X, g):
    if _blas_ok(X):
        return lambda X, g: np.dot(g, X)
    return lambda X, g: _rmatvec_loop(X, g)


@njit(cache=_CACHE, fastmath={"contract"})
def _rmatvec_loop_into(X, g, acc):
    """:func:`_rmatvec_loop` into ``acc`` (d,)."""
    m, d = X.shape
    acc[:] = 0.0
    for i in range(m):
        gi = g[i]
        if gi != 0.0:
            for j in range(d):
                acc[j] += gi * X[i, j]


def _rmatvec_into(X, g, acc):
    raise NotImplementedError


@overload(_rmatvec_into)
def _rmatvec_into_impl(X, g, acc):
    if _blas_ok(X):
        def blas(X, g, acc):
            acc[:] = np.dot(g, X)
        return blas
    return lambda X, g, acc: _rmatvec_loop_into(X, g, acc)


@njit(cache=_CACHE)
def _dot(a, b):
    """``a @ b`` of two float64 vectors, by BLAS ddot like numpy."""
    return np.dot(a, b)


@njit(cache=_CACHE)
def scores(X, w):
    """``X @ w`` (m,) as the learners compute it."""
    return _matvec(X, w)


@njit(cache=_CACHE)
def scores_into(X, w, s):
    """``s[:m] = X @ w`` (s a buffer of at least m entries)."""
    _matvec_into(X, w, s)


@njit(cache=_CACHE)
def _sorted_desc(s, reverse):
    """``np.argsort(-s, kind="stable")`` or, with ``reverse``, ``np.argsort(s,
    kind="stable")[::-1]``; see :func:`_sort_into`."""
    out = np.empty(s.shape[0], dtype=np.int64)
    _sort_into(s, reverse, out)
    return out


@njit(cache=_CACHE)
def _sort_into(s, reverse, out):
    """``out[:] = np.argsort(-s, kind="stable")`` (ties in index order) or, with ``reverse``,
    ``np.argsort(s, kind="stable")[::-1]`` (ties in reverse index order).

    A bucket sort: documents go to m equal-width buckets of [min s, max s] (descending; the
    bucket index is monotone in s, so buckets are ordered), in index order (reverse: in
    reverse index order), then each bucket is sorted stably - by insertion when small, by
    merge sort otherwise. About O(m) for the spread-out scores of a linear model, and it
    avoids the mispredicted branches of a comparison sort. Non-finite or all-equal scores
    use numpy's merge sort directly.
    """
    m = s.shape[0]
    hi = -np.inf
    lo = np.inf
    nan = False
    for i in range(m):
        x = s[i]
        if x > hi:
            hi = x
        if x < lo:
            lo = x
        nan |= x != x
    span = hi - lo
    scale = (m - 1) / span if span > 0.0 else 0.0
    # NaN, infinite scores, all equal, or a span so small that (m - 1) / span overflows
    if nan or m < 2 or not (np.isfinite(span) and span > 0.0 and np.isfinite(scale)):
        if reverse:
            out[:] = np.argsort(s, kind="mergesort")[::-1]
        else:
            out[:] = np.argsort(-s, kind="mergesort")
        return
    scratch = np.empty(3 * m + 1, dtype=np.int64)  # bucket (m), start (m + 1), fill (m)
    bucket = scratch[:m]
    start = scratch[m:2 * m + 1]
    start[:] = 0
    for i in range(m):
        q = max(0, min(int((hi - s[i]) * scale), m - 1))
        bucket[i] = q
        start[q + 1] += 1
    for q in range(m):
        start[q + 1] += start[q]
    fill = scratch[2 * m + 1:]
    fill[:] = start[:m]
    for r in range(m):
        i = m - 1 - r if reverse else r
        q = bucket[i]
        out[fill[q]] = i
        fill[q] += 1
    for q in range(m):
        a, b = start[q], start[q + 1]
        if b - a <= 16:
            for p in range(a + 1, b):
                x = out[p]
                v = s[x]
                r = p
                while r > a and s[out[r - 1]] < v:
                    out[r] = out[r - 1]
                    r -= 1
                out[r] = x
        else:  # a crowded bucket (heavy tails): stable merge sort of the segment
            seg = out[a:b].copy()
            keys = np.empty(b - a)
            for p in range(b - a):
                keys[p] = -s[seg[p]]
            out[a:b] = seg[np.argsort(keys, kind="mergesort")]


@njit(cache=_CACHE)
def score_rank(X, w, reverse, s, ranking):
    """Scores ``s[:m] = X @ w`` and ``ranking`` (m,) under the ``input-order`` tie policy
    (stable sort of -s; reference :func:`ltr_cli.metrics.rank_from_scores`) or, with
    ``reverse``, under ``reverse-input`` (stable ascending sort, reversed). Writes into the
    caller's arrays: returning new arrays to Python costs as much as the sort."""
    _matvec_into(X, w, s)
    _sort_into(s[:X.shape[0]], reverse, ranking)


@njit(cache=_CACHE)
def all_finite(w):
    for j in range(w.shape[0]):
        if not np.isfinite(w[j]):
            return False
    return True


# --- numpy's summation, reproduced -----------------------------------------------------------

@njit(cache=_CACHE)
def _pairwise_leaf(a, lo, n):
    """numpy's pairwise sum of at most 128 values: 8 accumulators, then the rest."""
    if n < 8:
        res = 0.0
        for i in range(lo, lo + n):
            res += a[i]
        return res
    r0, r1, r2, r3 = a[lo], a[lo + 1], a[lo + 2], a[lo + 3]
    r4, r5, r6, r7 = a[lo + 4], a[lo + 5], a[lo + 6], a[lo + 7]
    i = 8
    stop = n - n % 8
    while i < stop:
        r0 += a[lo + i]
        r1 += a[lo + i + 1]
        r2 += a[lo + i + 2]
        r3 += a[lo + i + 3]
        r4 += a[lo + i + 4]
        r5 += a[lo + i + 5]
        r6 += a[lo + i + 6]
        r7 += a[lo + i + 7]
        i += 8
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < n:
        res += a[lo + i]
        i += 1
    return res


@njit(cache=_CACHE)
def _pairwise_sum(a, lo, n):
    """``a[lo:lo + n].sum()`` exactly as numpy computes it: blocks of at most 128 values
    summed by :func:`_pairwise_leaf`, longer runs split in two (n/2 rounded down to a
    multiple of 8) and the halves added. numpy recurses; this walks the same tree with an
    explicit stack (numba's on-disk cache does not support recursive functions)."""
    if n <= 128:
        return _pairwise_leaf(a, lo, n)
    node_lo = np.empty(128, dtype=np.int64)
    node_n = np.empty(128, dtype=np.int64)
    node_state = np.empty(128, dtype=np.int64)
    values = np.empty(128)
    top = 0
    nv = 0
    node_lo[0], node_n[0], node_state[0] = lo, n, 0
    while top >= 0:
        cur_lo, cur_n = node_lo[top], node_n[top]
        if cur_n <= 128:
            values[nv] = _pairwise_leaf(a, cur_lo, cur_n)
            nv += 1
            top -= 1
            continue
        half = cur_n // 2
        half -= half % 8
        state = node_state[top]
        if state == 0:
            node_state[top] = 1
            top += 1
            node_lo[top], node_n[top], node_state[top] = cur_lo, half, 0
        elif state == 1:
            node_state[top] = 2
            top += 1
            node_lo[top], node_n[top], node_state[top] = cur_lo + half, cur_n - half, 0
        else:
            nv -= 1
            values[nv - 1] = values[nv - 1] + values[nv]
            top -= 1
    return values[0]


@njit(cache=_CACHE)
def pairwise_sum(a):
    return _pairwise_sum(a, 0, a.shape[0])


# --- measures (reference: ltr_cli.metrics) ----------------------------------------------------

# gains 2^r - 1 of the integer labels -64..63 (by numpy, like the reference exp2_gain)
_GAIN_TABLE = np.maximum(np.exp2(np.arange(-64.0, 64.0)) - 1.0, 0.0)


@njit(cache=_CACHE)
def _gain(r):
    """``max(2^r - 1, 0)`` (reference ``exp2_gain``); integer labels from a table."""
    if r >= -64.0 and r < 64.0:
        i = int(r)
        if i == r:
            return _GAIN_TABLE[i + 64]
    g = np.exp2(r) - 1.0
    return g if g > 0.0 or g != g else 0.0


@njit(cache=_CACHE)
def _ideal_dcg(y, n, disc):
    """DCG of the n largest labels, best first (reference ``ideal_dcg_at_k``)."""
    m = y.shape[0]
    top = np.empty(n)
    if n == m:
        ys = np.sort(y)
        for p in range(n):
            top[p] = ys[m - 1 - p]
    else:  # keep the n largest labels, descending, by insertion
        cnt = 0
        for i in range(m):
            v = y[i]
            if cnt == n:
                if not v > top[n - 1]:
                    continue
                cnt -= 1
            j = cnt
            while j > 0 and top[j - 1] < v:
                top[j] = top[j - 1]
                j -= 1
            top[j] = v
            cnt += 1
    for p in range(n):
        top[p] = _gain(top[p])
    return _dot(top, disc[:n])


@njit(cache=_CACHE)
def ndcg(ranking, y, k, none_value, disc):
    """NDCG@k (k < 0: whole list); ``none_value`` when the ideal DCG is 0."""
    m = ranking.shape[0]
    if m == 0:
        return none_value
    n = m if k < 0 else min(k, m)
    ideal = _ideal_dcg(y, n, disc)
    if ideal <= 0.0:
        return none_value
    gains = np.empty(n)
    for p in range(n):
        gains[p] = _gain(y[ranking[p]])
    return _dot(gains, disc[:n]) / ideal


@njit(cache=_CACHE)
def _ndcg_levels(ranking, y, levels, k, none_value, disc):
    """:func:`ndcg` when the label levels are known: the ideal DCG takes the top labels
    level by level instead of selecting them."""
    return _ndcg_levels_into(ranking, y, levels, k, none_value, disc, np.empty(ranking.shape[0]))


@njit(cache=_CACHE)
def _ndcg_levels_into(ranking, y, levels, k, none_value, disc, buf):
    """:func:`_ndcg_levels` with a scratch buffer ``buf`` of at least m entries."""
    L, values, sizes, lev = levels
    m = ranking.shape[0]
    if m == 0:
        return none_value
    n = m if k < 0 else min(k, m)
    top = buf[:n]
    p = 0
    for q in range(L - 1, -1, -1):
        gain = _gain(values[q])
        for _ in range(min(sizes[q], n - p)):
            top[p] = gain
            p += 1
        if p == n:
            break
    ideal = _dot(top, disc[:n])
    if ideal <= 0.0:
        return none_value
    for p in range(n):
        top[p] = _gain(y[ranking[p]])
    return _dot(top, disc[:n]) / ideal


@njit(cache=_CACHE)
def average_precision(ranking, y, threshold, none_value):
    """AP on ``label > threshold`` (reference ``average_precision``; summed as numpy does)."""
    m = ranking.shape[0]
    prec = np.empty(m + 1)
    r = 0
    for p in range(m):  # written every time, kept (r advances) only for relevant documents
        prec[r] = (r + 1) / (p + 1)
        r += y[ranking[p]] > threshold
    if r == 0:
        return none_value
    return _pairwise_sum(prec, 0, r) / r


@njit(cache=_CACHE)
def precision_at_k(ranking, y, k, threshold):
    n = min(k, ranking.shape[0])
    hits = 0
    for p in range(n):
        if y[ranking[p]] > threshold:
            hits += 1
    return hits / k


@njit(cache=_CACHE)
def round_measures(ranking, y, spec, disc):
    """Every measure of a round in one call. ``spec`` rows: (kind, k, threshold, none_value)
    with kind 0 = NDCG (k < 0: whole list), 1 = AP, 2 = precision@k. The extra last entry is
    1.0 when some label is above 0 (reference ``has_relevant``), else 0.0."""
    n = spec.shape[0]
    out = np.empty(n + 1)
    for q in range(n):
        kind = spec[q, 0]
        if kind == 0.0:
            out[q] = ndcg(ranking, y, int(spec[q, 1]), spec[q, 3], disc)
        elif kind == 1.0:
            out[q] = average_precision(ranking, y, spec[q, 2], spec[q, 3])
        else:
            out[q] = precision_at_k(ranking, y, int(spec[q, 1]), spec[q, 2])
    relevant = False
    for i in range(y.shape[0]):
        if y[i] > 0.0:
            relevant = True
            break
    out[n] = 1.0 if relevant else 0.0
    return out


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
    return _ndcg_weights_into(s, levels, k, mode, disc, np.empty(m), np.empty(levels[0] + 1, dtype=np.int64),
                              np.empty(m), np.empty(levels[0]))


@njit(cache=_CACHE)
def _ndcg_weights_into(s, levels, k, mode, disc, v, start, contrib, means):
    """:func:`_ndcg_weights` written into scratch: the result ``v`` (m,), ``start``
    (>= L + 1,) int64, ``contrib`` (m,) and ``means`` (>= L,); returns v."""
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
        by = _sorted_desc(s, False)
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


@njit(cache=_CACHE)
def _step_size(rule, eta, loss_scaled, t, loss):
    """Reference :class:`ltr_cli.learners.schedules.StepSchedule` (rule 0 = constant)."""
    step = eta if rule == 0 else eta / math.sqrt(t)
    return step * loss if loss_scaled else step


@njit(cache=_CACHE)
def perceptron_round(X, y, ranking, s, w, P, t, disc, out):
    """One update of Alg. 2 / Alg. 3 (reference ``_MistakeDriven.update``).

    ``P``: [0] surrogate (0 SLAM, 1 max-pair), [1] mistake measure (0 NDCG, 1 AP),
    [2] its cut-off (< 0: whole list), [3] relevance threshold, [4] SLAM weights (0 NDCG,
    1 AP), [5] their cut-off, [6] weight mode (see :func:`slam_weights`), [7] margin
    (0 constant, 1 label-difference), [8] delta, [9] step rule (0 constant, 1 inv-sqrt),
    [10] eta, [11] loss-scaled (0/1), [12] maximiser ties (0 first-index, 1 authors-code).

    ``s``: the scores (first m entries). Returns ``(ranking loss, surrogate value,
    status)``, status 0 = no mistake, 1 = a mistake with a zero subgradient, 2 = updated:
    then ``out`` (d,) holds the new weights.
    """
    m = y.shape[0]
    s = s[:m]
    # one float and one int scratch array for the whole round, carved into the buffers of
    # the steps below (each would otherwise allocate its own: a tenth of the round's time)
    fs = np.empty(8 * m + w.shape[0] + 1)
    ks = np.empty(128 + 5 * m + 1, dtype=np.int64)
    binarise = (P[1] == 1.0) if P[0] == 1.0 else (P[4] == 1.0)  # AP: hinge on R > threshold
    if P[1] == 1.0:
        loss = 1.0 - average_precision(ranking, y, P[3], 1.0)
        if loss <= 1e-12:
            return 0.0, _NAN, 0
        if not binarise:
            return _perceptron_step(X, y, y, _round_levels(y, fs, ks), s, w, P, t, disc, loss, out, fs, ks)
    else:  # the levels serve the ideal DCG, and then the hinge and the weights
        levels = _round_levels(y, fs, ks)
        loss = 1.0 - _ndcg_levels_into(ranking, y, levels, int(P[2]), 1.0, disc, fs[m:2 * m])
        if loss <= 1e-12:
            return 0.0, _NAN, 0
        if not binarise:
            return _perceptron_step(X, y, y, levels, s, w, P, t, disc, loss, out, fs, ks)
    yb = fs[7 * m:8 * m]
    for i in range(m):
        yb[i] = 1.0 if y[i] > P[3] else 0.0
    return _perceptron_step(X, y, yb, _round_levels(yb, fs, ks), s, w, P, t, disc, loss, out, fs, ks)


@njit(cache=_CACHE)
def _round_levels(y, fs, ks):
    """:func:`_levels` in the round's scratch (float ``fs[:m]``, int ``ks[:128 + 2m]``)."""
    m = y.shape[0]
    return _levels_into(y, ks[:128], ks[128:128 + m], fs[:m], ks[128 + m:128 + 2 * m])


@njit(cache=_CACHE)
def _perceptron_step(X, y, yy, levels, s, w, P, t, disc, loss, out, fs, ks):
    """The subgradient step of a mistake round; ``yy`` the labels the hinge sees and
    ``levels`` theirs. Scratch: ``fs[:m]`` and ``ks[:128 + 2m]`` hold the levels,
    ``fs[7m:8m]`` may hold ``yy``; the rest is free."""
    m = y.shape[0]
    ties = int(P[12])
    c, kk = _terms_into(s, yy, levels[3], levels[0], int(P[7]), P[8], ties, fs[m:2 * m],
                        ks[128 + 2 * m:128 + 3 * m], fs[2 * m:3 * m], ks[128 + 3 * m:128 + 4 * m])
    if P[0] == 1.0:  # Alg. 3: the largest hinge term
        best = _argmax_authors(c, yy) if ties == 1 else _argmax_first(c)
        if best < 0 or c[best] <= 0.0:
            return loss, 0.0, 1
        # X.T @ (e_k - e_i) is X[k] - X[i] exactly, in any summation order
        step = _step_size(int(P[9]), P[10], P[11] != 0.0, t, loss)
        i, k = best, kk[best]
        for j in range(w.shape[0]):
            out[j] = w[j] - step * (np.float64(X[k, j]) - np.float64(X[i, j]))
        return loss, c[best], 2
    if P[4] == 1.0:
        v = _ap_weights_into(y, P[3], fs[3 * m:4 * m])
    else:  # NDCG weights: yy is y
        v = _ndcg_weights_into(s, levels, int(P[5]), int(P[6]), disc, fs[3 * m:4 * m],
                               ks[128 + 4 * m:128 + 5 * m + 1], fs[4 * m:5 * m], fs[5 * m:6 * m])
    value, g = _slam_grad_into(c, kk, v, fs[6 * m:7 * m])
    nonzero = False
    for i in range(m):
        if g[i] != 0.0:
            nonzero = True
            break
    if not nonzero:
        return loss, value, 1
    step = _step_size(int(P[9]), P[10], P[11] != 0.0, t, loss)
    acc = fs[8 * m:8 * m + w.shape[0]]
    _rmatvec_into(X, g, acc)
    for j in range(w.shape[0]):
        out[j] = w[j] - step * acc[j]
    return loss, value, 2


# --- online gradient descent (reference: ltr_cli.learners.ogd, ltr_cli.surrogates) ----------

@njit(cache=_CACHE)
def _log_softmax(v):
    m = v.shape[0]
    top = v.max()
    shifted = np.empty(m)
    for i in range(m):
        shifted[i] = v[i] - top
    e = np.empty(m)
    for i in range(m):
        e[i] = np.exp(shifted[i])
    lse = np.log(_pairwise_sum(e, 0, m))
    for i in range(m):
        shifted[i] -= lse
    return shifted


@njit(cache=_CACHE)
def _project(w, radius):
    """Reference ``project_to_ball``, in place (radius NaN: no projection; a NaN norm leaves
    w as it is, as MATLAB's ``min(1, U / norm(w))`` does)."""
    if radius != radius:
        return
    norm = math.sqrt(_dot(w, w))  # np.linalg.norm of a real vector
    if norm <= radius or norm != norm:
        return
    scale = radius / norm
    for j in range(w.shape[0]):
        w[j] = w[j] * scale


@njit(cache=_CACHE)
def _finite_nonzero(step):
    """(all entries finite, some entry non-zero)."""
    nonzero = False
    for j in range(step.shape[0]):
        x = step[j]
        if not np.isfinite(x):
            return False, True
        if x != 0.0:
            nonzero = True
    return True, nonzero


@njit(cache=_CACHE, error_model="numpy")  # x / 0 is inf or NaN, as in numpy and MATLAB
def listnet_authors_step(X, y, s):
    """The authors' ListNet gradient in weight space, in their expression order (reference
    :func:`ltr_cli.surrogates.listwise.listnet_authors_gradient`): ``-(X^T e^R) / sum e^R
    + (X^T e^s) / sum e^s`` with unshifted exponentials, so it overflows to inf and NaN
    where their MATLAB does."""
    m = y.shape[0]
    ey = np.empty(m)
    es = np.empty(m)
    for i in range(m):
        ey[i] = np.exp(y[i])
        es[i] = np.exp(s[i])
    first = _rmatvec(X, ey)
    second = _rmatvec(X, es)
    den_y = _pairwise_sum(ey, 0, m)
    den_s = _pairwise_sum(es, 0, m)
    step = np.empty(first.shape[0])
    for j in range(step.shape[0]):
        step[j] = (-first[j]) / den_y + second[j] / den_s
    return step


@njit(cache=_CACHE, error_model="numpy")  # x / 0 is inf or NaN, as in numpy and MATLAB
def ogd_round(X, y, s, w, P, t, out):
    """One OGD step on a listwise/pointwise surrogate (reference ``OGDLearner.update``).

    ``P``: [0] surrogate (0 squared, 1 listnet, 2 kl, 3 smoothdcg), [1] epsilon (smoothdcg),
    [2] projection radius (NaN: none), [3] step rule, [4] eta, [5] loss-scaled, [6]
    numerics (0 stable, 1 authors-code: ListNet by :func:`listnet_authors_step`, and a
    non-finite step is taken).
    ``s``: the scores (first m entries). Returns ``(surrogate value, status)``, status
    1 = updated (``out`` (d,) holds the new weights), 0 = zero step, -1 = the step is not
    finite (the caller raises).
    """
    m = y.shape[0]
    s = s[:m]
    code = int(P[0])
    if code == 1 and P[6] == 1.0:
        step = listnet_authors_step(X, y, s)
        eta = _step_size(int(P[3]), P[4], P[5] != 0.0, t, 1.0)
        for j in range(w.shape[0]):
            out[j] = w[j] - eta * step[j]
        _project(out, P[2])
        return _NAN, 1
    g = np.empty(m)
    if code == 0:
        diff = np.empty(m)
        for i in range(m):
            diff[i] = s[i] - y[i]
            g[i] = 2.0 * diff[i]
        value = _dot(diff, diff)
    elif code == 1:
        log_ps = _log_softmax(s)
        log_py = _log_softmax(y)
        py = np.empty(m)
        for i in range(m):
            py[i] = np.exp(log_py[i])
            g[i] = np.exp(log_ps[i]) - py[i]
        value = -_dot(py, log_ps)
    elif code == 2:
        yy = np.empty(m)
        ey = np.empty(m)
        sc = np.empty(m)
        es = np.empty(m)
        for i in range(m):
            yy[i] = y[i]
            ey[i] = np.exp(min(y[i], _EXP_CAP))
            sc[i] = min(s[i], _EXP_CAP)
            es[i] = np.exp(sc[i])
            g[i] = es[i] - ey[i]
        value = _dot(ey, yy) - _dot(ey, sc) - _pairwise_sum(ey, 0, m) + _pairwise_sum(es, 0, m)
    else:
        eps = P[1]
        scaled = np.empty(m)
        for i in range(m):
            scaled[i] = s[i] / eps
        p = _log_softmax(scaled)
        gains = np.empty(m)
        for i in range(m):
            p[i] = np.exp(p[i])
            gains[i] = _gain(y[i])
        gain = _dot(p, gains)
        for i in range(m):
            g[i] = -(p[i] * (gains[i] - gain)) / eps
        value = -gain
    step = _rmatvec(X, g)
    finite, nonzero = _finite_nonzero(step)
    if not finite:
        return value, -1
    if not nonzero:
        return value, 0
    eta = _step_size(int(P[3]), P[4], P[5] != 0.0, t, 1.0)
    for j in range(w.shape[0]):
        out[j] = w[j] - eta * step[j]
    _project(out, P[2])
    return value, 1


# --- RTop-kF (reference: ltr_cli.learners.rtopkf, ltr_cli.surrogates.topk_estimators) -------

@njit(cache=_CACHE, error_model="numpy")  # x / 0 is inf or NaN, as in numpy and MATLAB
def rtopkf_round(X, s, shown, top, exploit, w, gamma, eta, P, out):
    """One RTop-kF step from top-k feedback (reference ``RTopKF.update`` with
    ``estimate_score_gradient``). ``P``: [0] surrogate (0 squared, 1 kl, 2 smoothdcg,
    3 ranksvm), [1] fidelity (0 exact, 1 authors-code), [2] epsilon, [3] radius (NaN: none),
    [4] the authors' miss scale c (denominator ``c gamma / m``), [5] numerics (0 stable,
    1 authors-code: unshifted exponentials, a non-finite step is taken), [6] SmoothDCG
    direction (0 ascend-gain, 1 descend-gain: the papers' ``w - eta z``).
    Needs m >= the surrogate's k. Returns the status of :func:`ogd_round`."""
    m = X.shape[0]
    s = s[:m]
    code = int(P[0])
    authors = P[1] == 1.0
    miss = P[4]
    raw = P[5] == 1.0
    z = np.zeros(m)
    if code == 3:
        a, b = shown[0], shown[1]
        ra, rb = top[0], top[1]
        if ra > rb:
            hi, lo = a, b
        else:
            hi, lo = b, a
        if ra != rb and 1.0 + s[lo] > s[hi]:
            z[lo] += 1.0
            z[hi] -= 1.0
        pairs = m * (m - 1)
        if authors:
            if shown[0] == exploit[0] and shown[1] == exploit[1]:
                den = 1.0 - gamma + gamma / pairs
            else:
                den = miss * gamma / pairs
        else:
            hit_ab = 1.0 if (exploit[0] == a and exploit[1] == b) else 0.0
            hit_ba = 1.0 if (exploit[0] == b and exploit[1] == a) else 0.0
            den = ((1.0 - gamma) * hit_ab + gamma / pairs) + ((1.0 - gamma) * hit_ba + gamma / pairs)
        for i in range(m):
            z[i] = z[i] / den
    else:
        j = shown[0]
        r = top[0]
        if authors:
            p = 1.0 - gamma + gamma / m if shown[0] == exploit[0] else miss * gamma / m
        else:
            p = (1.0 - gamma) * (1.0 if exploit[0] == j else 0.0) + gamma / m
        if code == 0:
            for i in range(m):
                z[i] = 2.0 * s[i]
            z[j] -= 2.0 * r / p
        elif code == 1:
            if raw:
                z[j] = (np.exp(s[j]) - np.exp(r)) / p
            else:
                z[j] = (np.exp(min(s[j], _EXP_CAP)) - np.exp(min(r, _EXP_CAP))) / p
        elif raw:  # the authors' SmoothDCG expression, unshifted (overflows to NaN)
            eps = P[2]
            e = np.empty(m)
            for i in range(m):
                e[i] = np.exp(s[i] / eps)
            den = _pairwise_sum(e, 0, m)
            ej = np.exp(s[j] / eps)
            coef = (2.0 ** r - 1.0) / p
            for i in range(m):
                z[i] = -1.0 * (ej * e[i]) / (eps * den ** 2)
            z[j] = z[j] + ej / (eps * den)
            sign = 1.0 if P[6] == 1.0 else -1.0
            for i in range(m):
                z[i] = sign * (z[i] * coef)
        else:
            eps = P[2]
            top_s = -np.inf
            for i in range(m):
                x = s[i] / eps
                if x > top_s:
                    top_s = x
            e = np.empty(m)
            for i in range(m):
                e[i] = np.exp(s[i] / eps - top_s)
            total = _pairwise_sum(e, 0, m)
            q = np.empty(m)
            for i in range(m):
                q[i] = e[i] / total
            # the gain's gradient estimate; the papers step w - eta z on it (descend-gain),
            # ascend-gain steps on its negative
            coef = (_gain(r) / p) if P[6] == 1.0 else -(_gain(r) / p)
            qj = q[j]
            for i in range(m):
                gg = -qj * q[i]
                if i == j:
                    gg += qj
                z[i] = coef * gg / eps
    if code == 1:  # one non-zero: X.T @ z is z_j X[j] exactly
        step = np.empty(w.shape[0])
        j = shown[0]
        for i in range(w.shape[0]):
            step[i] = z[j] * np.float64(X[j, i])
    else:
        step = _rmatvec(X, z)
    finite, nonzero = _finite_nonzero(step)
    if not finite and not raw:
        return -1
    if finite and not nonzero:
        return 0
    for i in range(w.shape[0]):
        out[i] = w[i] - eta * step[i]
    _project(out, P[3])
    return 1
