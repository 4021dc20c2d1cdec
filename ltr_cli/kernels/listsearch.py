"""Coordinate Ascent's line search, compiled (reference: ``Lists._values``, ``Lists.along``
and ``Lists.scores`` of :mod:`ltr_cli.learners.batch.coordinate_ascent`, the same keys
sorted by numpy).

A bucket holds ``q`` queries padded to ``M`` documents. For candidate step ``t`` the
scores of a row are ``s0 + t * x`` (padding: ``s0 = -inf``, ``x = 0``); each score becomes
the reference's integer sort key: ``0.0 - score`` as ordered integer bits, its ``low``
lowest bits replaced by the document's ``code`` (index and level). Keys are distinct, so a
document's rank is the number of keys below its own.

* AP (:func:`ap_along`): only the relevant documents' ranks matter. They are found by
  counting, not sorting: a relevant document's rank is one more than the number of keys
  below its key, and its hits one more than the number of relevant keys below it. The
  reference sums a row of ``M`` values, 0 but for the contributions ``hits / rank`` at the
  relevant documents' ranks, with numpy's pairwise summation;
  :func:`~ltr_cli.kernels.pairwise.sparse_pairwise_sum`
  makes the same additions but those of a zero, so the values are the reference's to the
  last bit.
* NDCG (:func:`levels_along`): the levels of the first ``n`` ranks, from the sorted keys;
  the caller takes the gains' dot product with the discounts as the reference does.
* Scores (:func:`linear_scores`): ``w_k x_k`` added feature by feature from 0.0, as the
  reference's numpy loop adds them.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit
from ltr_cli.kernels.pairwise import sparse_pairwise_sum

_MAGNITUDE = np.int64(0x7FFFFFFFFFFFFFFF)


@njit(cache=_CACHE)
def _keys_into(s0, x, t, moving, code, m, clear, fk, keys):
    """The reference's sort keys of a row's first ``m`` documents at step ``t`` (at ``s0``
    itself unless ``moving``) into ``keys`` (int64), which is ``fk`` (float64) viewed as
    integers; ``clear`` is ~((1 << low) - 1)."""
    if moving:
        for p in range(m):
            fk[p] = 0.0 - (s0[p] + t * x[p])
    else:
        for p in range(m):
            fk[p] = 0.0 - s0[p]
    for p in range(m):
        b = keys[p]
        b ^= (b >> 63) & _MAGNITUDE
        keys[p] = (b & clear) | code[p]


@njit(cache=_CACHE)
def ap_along(S, Xj, moving, rows, steps, code, rel_index, n_rel, length, low, norm, out):
    """AP of the bucket's rows ``rows`` (k,) for each step (C): ``out`` (C, k) is written.

    ``S`` (q, M) the bucket's scores (padding -inf), ``Xj`` (q, M) feature j's values (padding
    0), ``moving``: False to rank ``S`` itself (``steps`` then holds one 0); ``code`` (q, M)
    int64; ``rel_index`` (q, R) the relevant documents' positions in each row, ``n_rel`` (q,)
    how many; ``length`` (q,) each row's documents before its padding (a padding key,
    ``0.0 - -inf``, is above every other, so it is never counted); ``norm`` (q,) the number
    relevant (the reference's divisor)."""
    M = S.shape[1]
    clear = ~np.int64((np.int64(1) << low) - 1)
    R = rel_index.shape[1]
    for i in range(rows.shape[0]):
        r = rows[i]
        m = length[r]
        nr = n_rel[r]
        fk = np.empty(m)
        keys = fk.view(np.int64)
        rk = np.empty(R, dtype=np.int64)
        pos = np.empty(R, dtype=np.int64)  # at hits - 1: the relevant documents in ranked order
        val = np.empty(R)
        for c in range(steps.shape[0]):
            _keys_into(S[r], Xj[r], steps[c], moving, code[r], m, clear, fk, keys)
            for u in range(nr):
                rk[u] = keys[rel_index[r, u]]
            for u in range(nr):  # rank = 1 + the number of keys below (a branch-free count)
                k = rk[u]
                below = 0
                for p in range(m):
                    below += keys[p] < k
                hits = 1
                for v in range(nr):
                    hits += rk[v] < k
                pos[hits - 1] = below
                val[hits - 1] = hits / (below + 1)
            out[c, i] = sparse_pairwise_sum(pos, val, nr, M) / norm[r]


@njit(cache=_CACHE)
def linear_scores(w, X, pad, out):
    """``out`` (q, M) = sum_k w[k] X[k] (X (d, q, M)) added feature by feature in order
    from 0.0; -inf where ``pad``."""
    q, M = pad.shape
    for r in range(q):
        row = out[r]
        row[:] = 0.0
        for k in range(w.shape[0]):
            wk = w[k]
            x = X[k, r]
            for p in range(M):
                row[p] += wk * x[p]
        for p in range(M):
            if pad[r, p]:
                row[p] = -np.inf


@njit(cache=_CACHE)
def levels_along(s0, x, steps, code, low, level_bits, n, out):
    """The levels of the first ``n`` ranks of each row for each step: ``out`` (C, q, n)."""
    q, M = s0.shape
    clear = ~np.int64((np.int64(1) << low) - 1)
    mask = np.int64((np.int64(1) << level_bits) - 1)
    fk = np.empty(M)
    keys = fk.view(np.int64)
    for c in range(steps.shape[0]):
        t = steps[c]
        for r in range(q):
            _keys_into(s0[r], x[r], t, True, code[r], M, clear, fk, keys)
            keys.sort()
            for p in range(n):
                out[c, r, p] = keys[p] & mask
