"""numpy's pairwise summation reproduced (reference: ``numpy.add.reduce`` itself), written
once: the blocked tree of sums over a run of values (:func:`_pairwise_sum`), or over a row
that is 0 but at a few positions, without adding its zeros (:func:`sparse_pairwise_sum`).

numpy sums at most 128 values in a leaf (8 accumulators, then the rest) and splits a longer
run in two, the first half ``n / 2`` rounded down to a multiple of 8, adding the halves'
sums. numpy recurses; :func:`_blocked_sum` walks the same tree with an explicit stack
(numba's on-disk cache does not support recursive functions), the one walk both sums take.

Conventions: see :mod:`ltr_cli.kernels`.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit

_DEPTH = 64  # stack entries: the tree of n < 2^63 values is at most 57 levels deep
_NO_POSITIONS = np.zeros(0, dtype=np.int64)
_NO_VALUES = np.zeros(0)


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
def _leaf_of_few(pos, val, a, b, lo, n):
    """:func:`_pairwise_leaf` over ``n <= 128`` values from ``lo`` that are 0 but at the
    positions ``pos[a:b]`` (ascending), which hold ``val[a:b]``: its additions, less those
    of a zero (``x + 0.0`` is ``x`` for the non-negative values summed here)."""
    if n < 8:
        res = 0.0
        for i in range(a, b):
            res += val[i]
        return res
    r0 = r1 = r2 = r3 = r4 = r5 = r6 = r7 = 0.0
    stop = n - n % 8
    i = a
    while i < b and pos[i] - lo < stop:
        lane = (pos[i] - lo) % 8
        if lane == 0:
            r0 += val[i]
        elif lane == 1:
            r1 += val[i]
        elif lane == 2:
            r2 += val[i]
        elif lane == 3:
            r3 += val[i]
        elif lane == 4:
            r4 += val[i]
        elif lane == 5:
            r5 += val[i]
        elif lane == 6:
            r6 += val[i]
        else:
            r7 += val[i]
        i += 1
    res = ((r0 + r1) + (r2 + r3)) + ((r4 + r5) + (r6 + r7))
    while i < b:
        res += val[i]
        i += 1
    return res


@njit(cache=_CACHE)
def _leaf(a, pos, val, sparse, first, last, lo, n):
    """One leaf of the tree: of ``a[lo:lo + n]``, or (``sparse``) of the row's values at
    ``pos[first:last]`` (0.0 when it holds none)."""
    if not sparse:
        return _pairwise_leaf(a, lo, n)
    if first == last:
        return 0.0
    return _leaf_of_few(pos, val, first, last, lo, n)


@njit(cache=_CACHE)
def _blocked_sum(a, pos, val, sparse, lo, n, count):
    """numpy's pairwise sum of ``n`` values from ``lo``: those of ``a`` or, ``sparse``, a
    row that is 0 but at the ``count`` ascending positions ``pos`` (values ``val``), each
    part that holds no value taken as 0.0. Each node of the tree is a run (its start, its
    length and, sparse, the positions it holds) and a state: 0, its first half next; 1, its
    second; 2, both summed, to be added."""
    if n <= 128:
        return _leaf(a, pos, val, sparse, 0, count, lo, n)
    node = np.empty((5, _DEPTH), dtype=np.int64)  # start, length, first, last position, state
    values = np.empty(_DEPTH)
    top = 0
    nv = 0
    node[0, 0], node[1, 0], node[2, 0], node[3, 0], node[4, 0] = lo, n, 0, count, 0
    while top >= 0:
        cur_lo, cur_n, first, last = node[0, top], node[1, top], node[2, top], node[3, top]
        if cur_n <= 128 or (sparse and first == last):
            values[nv] = _leaf(a, pos, val, sparse, first, last, cur_lo, cur_n)
            nv += 1
            top -= 1
            continue
        half = cur_n // 2
        half -= half % 8
        state = node[4, top]
        if state == 2:
            nv -= 1
            values[nv - 1] = values[nv - 1] + values[nv]
            top -= 1
            continue
        split = first
        while sparse and split < last and pos[split] < cur_lo + half:
            split += 1
        node[4, top] = state + 1
        top += 1
        if state == 0:
            node[0, top], node[1, top], node[2, top], node[3, top] = cur_lo, half, first, split
        else:
            node[0, top], node[1, top], node[2, top], node[3, top] = cur_lo + half, cur_n - half, split, last
        node[4, top] = 0
    return values[0]


@njit(cache=_CACHE)
def _pairwise_sum(a, lo, n):
    """``a[lo:lo + n].sum()`` exactly as numpy computes it."""
    return _blocked_sum(a, _NO_POSITIONS, _NO_VALUES, False, lo, n, 0)


@njit(cache=_CACHE)
def pairwise_sum(a):
    return _pairwise_sum(a, 0, a.shape[0])


@njit(cache=_CACHE)
def sparse_pairwise_sum(pos, val, count, n):
    """numpy's sum of a length-``n`` row that is 0 but at the ``count`` ascending positions
    ``pos`` (values ``val``, non-negative): the tree of :func:`_pairwise_sum`, a part holding
    no value taken as 0.0 without adding its zeros."""
    if count == 0:
        return 0.0
    return _blocked_sum(val, pos, val, True, 0, n, count)
