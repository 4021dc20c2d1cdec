"""Core primitives: scores ``X w`` and ``X^T g`` (BLAS where numba's matmul applies, loops otherwise), the stable descending sort and ranking of scores under the input-order / reverse-input tie rules, and the finiteness check (references: ``numpy`` itself, :func:`ltr_cli.measures.metrics.rank_from_scores`); numpy's pairwise summation is :mod:`ltr_cli.kernels.pairwise`'s.

Conventions: see :mod:`ltr_cli.kernels`; slots and codes: :mod:`ltr_cli.core.codes`.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit, overload, types
from ltr_cli.kernels.simd import rows_dot4


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


# numpy's ``@`` takes ddot, not dgemv, where the product is one dot product: ``X @ w`` of a
# single row and ``X.T @ g`` of a single column. dgemv sums in another order, so these
# shapes go to ddot here too (C-contiguous X: a row or column is then one contiguous run).
@overload(_matvec)
def _matvec_impl(X, w):
    if _blas_ok(X) and X.layout == "C":
        def blas_c(X, w):
            if X.shape[0] == 1:
                return np.full(1, np.dot(X[0], w))
            return np.dot(X, w)
        return blas_c
    if _blas_ok(X):
        return lambda X, w: np.dot(X, w)
    return lambda X, w: _scores_loop(X, w)


@overload(_rmatvec)
def _rmatvec_impl(X, g):
    if _blas_ok(X) and X.layout == "C":
        def blas_c(X, g):
            if X.shape[1] == 1:
                return np.full(1, np.dot(g, X.reshape(X.shape[0])))
            return np.dot(g, X)
        return blas_c
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
    if _blas_ok(X) and X.layout == "C":
        def blas_c(X, g, acc):
            if X.shape[1] == 1:
                acc[0] = np.dot(g, X.reshape(X.shape[0]))
            else:
                acc[:] = np.dot(g, X)
        return blas_c
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
def _row_scores_scalar(X, w, s):
    """:func:`row_scores_into` row by row, in scalar registers (any layout)."""
    m, d = X.shape
    for i in range(m):
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        j = 0
        while j + 4 <= d:
            a0 += X[i, j] * w[j]
            a1 += X[i, j + 1] * w[j + 1]
            a2 += X[i, j + 2] * w[j + 2]
            a3 += X[i, j + 3] * w[j + 3]
            j += 4
        if j < d:
            a0 += X[i, j] * w[j]
        if j + 1 < d:
            a1 += X[i, j + 1] * w[j + 1]
        if j + 2 < d:
            a2 += X[i, j + 2] * w[j + 2]
        s[i] = (a0 + a1) + (a2 + a3)


def _row_scores(X, w, s):
    raise NotImplementedError  # compiled through the overload below


@overload(_row_scores)
def _row_scores_impl(X, w, s):
    """C-contiguous float rows and weights: four rows at a time in vector registers
    (:func:`ltr_cli.kernels.simd.rows_dot4`, the same sums); anything else row by row."""
    if not (X.layout == "C" and X.dtype in (types.float64, types.float32) and w.layout == "C"
            and w.dtype == types.float64):
        return lambda X, w, s: _row_scores_scalar(X, w, s)

    def vector(X, w, s):
        m, d = X.shape
        if d == 0:
            _row_scores_scalar(X, w, s)
            return
        i = 0
        while i + 4 <= m:
            s[i], s[i + 1], s[i + 2], s[i + 3] = rows_dot4(X, i, w, 4)
            i += 4
        if i < m:
            r0, r1, r2, r3 = rows_dot4(X, i, w, m - i)
            s[i] = r0
            if i + 1 < m:
                s[i + 1] = r1
            if i + 2 < m:
                s[i + 2] = r2
    return vector


@njit(cache=_CACHE)
def row_scores_into(X, w, s):
    """``s[:m] = X @ w`` with one fixed summation order for every row: four partial sums
    (column j goes to sum j mod 4, products rounded, no fused multiply-add), combined as
    ``(a0 + a1) + (a2 + a3)``, so identical rows always get bit-identical scores. BLAS's
    dgemv does not promise that: it runs a query's last m mod 4 rows through another kernel,
    whose last bit can differ, so equal documents stop being tied. The authors' tie rule
    (``reverse-input``) needs them tied, as their MATLAB's product left them (reference:
    :func:`ltr_cli.measures.metrics.row_scores`). C-contiguous rows and weights are summed
    four rows at a time in vector registers (:mod:`ltr_cli.kernels.simd`), lane by lane
    the same arithmetic."""
    _row_scores(X, w, s)


@njit(cache=_CACHE)
def scores(X, w):
    """``X @ w`` (m,) as the learners compute it."""
    return _matvec(X, w)


@njit(cache=_CACHE)
def scores_into(X, w, s, rowwise=True):
    """``s[:m] = X @ w`` (s a buffer of at least m entries) by :func:`row_scores_into`, so
    equal rows score equal under every tie rule (``rowwise`` is kept for callers' signatures;
    a ranking is never scored by BLAS)."""
    row_scores_into(X, w, s)


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
    ``np.argsort(s, kind="stable")[::-1]`` (ties in reverse index order); see
    :func:`_sort_scratch`, here with scratch of its own."""
    m = s.shape[0]
    _sort_scratch(s, reverse, out, np.empty(2 * m + 1, dtype=np.int64), np.empty(m))


@njit(cache=_CACHE)
def _sort_scratch(s, reverse, out, scratch, keys):
    """:func:`_sort_into` with the caller's scratch: ``scratch`` (>= 2m + 1,) int64 and
    ``keys`` (>= m,) float64.

    A bucket sort: documents go to m equal-width buckets of [min s, max s] (descending; the
    bucket index is monotone in s, so buckets are ordered and a score in one bucket is
    above every score in the next), in index order (reverse: in reverse index order), each
    with its score beside it in ``keys``. A crowded bucket (more than 16: heavy tails) is
    then bucketed again over its own range (:func:`_rebucket`); one insertion pass over the
    whole list sorts the rest, each score moving within its bucket only. About O(m) for the spread-out scores of
    a linear model, and it avoids the mispredicted branches of a comparison sort. The
    result is the one stable order, whatever sorts it. Non-finite or all-equal scores use
    numpy's merge sort directly, except all-NaN scores, which numpy's sort leaves in index
    order.
    """
    m = s.shape[0]
    hi = -np.inf
    lo = np.inf
    nans = 0
    for i in range(m):
        x = s[i]
        if x > hi:
            hi = x
        if x < lo:
            lo = x
        nans += x != x
    if nans == m:  # every score NaN (weights gone NaN under the authors' numerics): all tied
        for r in range(m):
            out[r] = m - 1 - r if reverse else r
        return
    span = hi - lo
    scale = (m - 1) / span if span > 0.0 else 0.0
    # NaN, infinite scores, all equal, or a span so small that (m - 1) / span overflows
    if nans or m < 2 or not (np.isfinite(span) and span > 0.0 and np.isfinite(scale)):
        if reverse:
            out[:] = np.argsort(s, kind="mergesort")[::-1]
        else:
            out[:] = np.argsort(-s, kind="mergesort")
        return
    bucket = scratch[:m]
    start = scratch[m:2 * m + 1]  # counts, then each bucket's start, then (placed) its end
    start[:] = 0
    for i in range(m):
        q = max(0, min(int((hi - s[i]) * scale), m - 1))
        bucket[i] = q
        start[q + 1] += 1
    for q in range(m):
        start[q + 1] += start[q]
    for r in range(m):
        i = m - 1 - r if reverse else r
        q = bucket[i]
        p = start[q]
        out[p] = i
        keys[p] = s[i]
        start[q] = p + 1
    a = 0
    for q in range(m):  # bucket q is [a, start[q])
        b = start[q]
        if b - a > 16:  # a crowded bucket (heavy tails): its own buckets, once
            _rebucket(out, keys, a, b)
        a = b
    for p in range(1, m):
        v = keys[p]
        if keys[p - 1] < v:
            x = out[p]
            r = p
            while r > 0 and keys[r - 1] < v:
                keys[r] = keys[r - 1]
                out[r] = out[r - 1]
                r -= 1
            keys[r] = v
            out[r] = x


@njit(cache=_CACHE)
def _merge_segment(out, keys, a, b):
    """Stable merge sort of ``out[a:b]`` by descending ``keys[a:b]`` (moved along)."""
    perm = np.argsort(-keys[a:b], kind="mergesort")
    out[a:b] = out[a:b][perm]
    keys[a:b] = keys[a:b][perm]


@njit(cache=_CACHE)
def _rebucket(out, keys, a, b):
    """A crowded bucket ``[a, b)`` of :func:`_sort_scratch` (its scores in ``keys``, equal
    ones in the stable order) spread over b - a buckets of its own range, in its order, so
    the insertion pass can finish it; a bucket still crowded is merge-sorted, and scores
    too close to split are merge-sorted at once. Real features' outliers stretch the
    first range and crowd the rest of the scores into one bucket: this spreads them."""
    n = b - a
    hi = -np.inf
    lo = np.inf
    for p in range(a, b):
        x = keys[p]
        if x > hi:
            hi = x
        if x < lo:
            lo = x
    span = hi - lo
    if span == 0.0:  # all equal: already in the stable order
        return
    scale = (n - 1) / span
    if not (np.isfinite(span) and np.isfinite(scale)):
        _merge_segment(out, keys, a, b)
        return
    bucket = np.empty(n, dtype=np.int64)
    start = np.zeros(n + 1, dtype=np.int64)
    for p in range(n):
        q = max(0, min(int((hi - keys[a + p]) * scale), n - 1))
        bucket[p] = q
        start[q + 1] += 1
    for q in range(n):
        start[q + 1] += start[q]
    idx = out[a:b].copy()
    val = keys[a:b].copy()
    for p in range(n):
        q = bucket[p]
        r = a + start[q]
        out[r] = idx[p]
        keys[r] = val[p]
        start[q] += 1
    c = a
    for q in range(n):
        d = a + start[q]
        if d - c > 16:
            _merge_segment(out, keys, c, d)
        c = d


@njit(cache=_CACHE)
def score_rank(X, w, reverse, s, ranking):
    """Scores ``s[:m] = X @ w`` and ``ranking`` (m,) under the ``input-order`` tie policy
    (stable sort of -s; reference :func:`ltr_cli.measures.metrics.rank_from_scores`) or, with
    ``reverse``, under ``reverse-input`` (stable ascending sort, reversed). The scores are
    summed by :func:`row_scores_into` under either rule, so equal rows tie and the tie rule,
    not rounding noise, orders them. Writes into the caller's arrays: returning new arrays
    to Python costs as much as the sort."""
    row_scores_into(X, w, s)
    _sort_into(s[:X.shape[0]], reverse, ranking)


@njit(cache=_CACHE)
def score_rank_scratch(X, w, reverse, s, ranking, scratch, keys):
    """:func:`score_rank` with the sort's scratch from the caller (see :func:`_sort_scratch`)."""
    row_scores_into(X, w, s)
    _sort_scratch(s[:X.shape[0]], reverse, ranking, scratch, keys)


@njit(cache=_CACHE)
def all_finite(w):
    for j in range(w.shape[0]):
        if not np.isfinite(w[j]):
            return False
    return True
