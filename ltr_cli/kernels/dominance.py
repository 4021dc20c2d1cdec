"""Sums over a query's active target pairs without making the pairs: for each row, the sum of
a value over the rows it is paired with, in O(m log m) per query of m rows (a Fenwick tree
over the score order, the rows taken in target order).

The pairs are those of :func:`ltr_cli.clicklog.target_pairs.target_pairs` (i over j where
``t_i > t_j``) that are active for RankSVM's squared hinge at scores ``s``:
``1 - (s_i - s_j) > 0``, i.e. ``s_j > s_i - 1``. For row i as the better one,
``below[i] = sum over j with t_j < t_i and s_j > s_i - 1 of V[j]``; for row j as the worse
one, ``above[j] = sum over i with t_i > t_j and s_i < s_j + 1 of V[i]`` (the rows of the
same query only). The reference is the pairs themselves
(:class:`ltr_cli.learners.batch.ranksvm.WeightedPairProblem`, and the pairs made block by
block, :func:`ltr_cli.clicklog.target_pairs.block_pairs`); tests compare the two.

Conventions: see :mod:`ltr_cli.kernels`.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit


@njit(cache=_CACHE)
def _add(tree, r, v):
    """Add the row ``v`` (p,) at 0-based place ``r`` of the Fenwick tree ``tree`` (m + 1, p)."""
    k = r + 1
    n = tree.shape[0]
    while k < n:
        tree[k] += v
        k += k & (-k)


@njit(cache=_CACHE)
def _prefix(tree, r, out):
    """Add to ``out`` (p,) the sum of the places ``0 .. r - 1`` of ``tree``."""
    k = r
    while k > 0:
        out += tree[k]
        k -= k & (-k)


@njit(cache=_CACHE)
def pair_sums(t, s, starts, V, better):
    """``below`` (``better`` True) or ``above`` (False) of the module's docstring, (n, p), for
    the targets ``t`` (n,), scores ``s`` (n,), the queries' first rows ``starts`` (Q + 1,) and
    the values ``V`` (n, p), all float64 but ``starts`` (int64)."""
    n, p = V.shape
    out = np.zeros((n, p))
    for q in range(len(starts) - 1):
        lo = starts[q]
        m = starts[q + 1] - lo
        if m < 2:
            continue
        sq = s[lo:lo + m]
        tq = t[lo:lo + m]
        s_order = np.argsort(sq, kind="mergesort")
        sorted_s = sq[s_order]
        place = np.empty(m, dtype=np.int64)
        for k in range(m):
            place[s_order[k]] = k
        t_order = np.argsort(tq, kind="mergesort")
        if not better:
            t_order = t_order[::-1]
        tree = np.zeros((m + 1, p))
        total = np.zeros(p)
        g = 0
        while g < m:
            h = g
            while h < m and tq[t_order[h]] == tq[t_order[g]]:
                h += 1
            for k in range(g, h):  # the rows inserted so far have strictly smaller (larger) targets
                i = t_order[k]
                row = out[lo + i]
                if better:  # places >= first: s_j > s_i - 1
                    first = np.searchsorted(sorted_s, sq[i] - 1.0, side="right")
                    row += total
                    acc = np.zeros(p)
                    _prefix(tree, first, acc)
                    row -= acc
                else:  # places < end: s_i < s_j + 1
                    end = np.searchsorted(sorted_s, sq[i] + 1.0, side="left")
                    _prefix(tree, end, row)
            for k in range(g, h):
                i = t_order[k]
                _add(tree, place[i], V[lo + i])
                total += V[lo + i]
            g = h
    return out
