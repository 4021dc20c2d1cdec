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
  relevant documents' ranks, with numpy's pairwise summation; :func:`sparse_pairwise_sum`
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
def _leaf_of_few(pos, val, a, b, lo, n):
    """numpy's pairwise leaf (:func:`ltr_cli.kernels.core._pairwise_leaf`) over ``n <= 128``
    values from ``lo`` that are 0 but at the positions ``pos[a:b]`` (ascending), which hold
    ``val[a:b]``: its additions, less those of a zero (``x + 0.0`` is ``x`` for the
    non-negative values summed here)."""
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
def sparse_pairwise_sum(pos, val, count, n):
    """numpy's sum of a length-``n`` row that is 0 but at the ``count`` ascending positions
    ``pos`` (values ``val``, non-negative): :func:`ltr_cli.kernels.core._pairwise_sum`'s tree
    of blocks and halves, a part holding no value taken as 0.0 without adding its zeros."""
    if count == 0:
        return 0.0
    if n <= 128:
        return _leaf_of_few(pos, val, 0, count, 0, n)
    node_lo = np.empty(64, dtype=np.int64)
    node_n = np.empty(64, dtype=np.int64)
    node_a = np.empty(64, dtype=np.int64)
    node_b = np.empty(64, dtype=np.int64)
    node_state = np.empty(64, dtype=np.int64)
    values = np.empty(64)
    top = 0
    nv = 0
    node_lo[0], node_n[0], node_a[0], node_b[0], node_state[0] = 0, n, 0, count, 0
    while top >= 0:
        cur_lo, cur_n, a, b = node_lo[top], node_n[top], node_a[top], node_b[top]
        if a == b or cur_n <= 128:
            values[nv] = 0.0 if a == b else _leaf_of_few(pos, val, a, b, cur_lo, cur_n)
            nv += 1
            top -= 1
            continue
        half = cur_n // 2
        half -= half % 8
        state = node_state[top]
        if state == 2:
            nv -= 1
            values[nv - 1] = values[nv - 1] + values[nv]
            top -= 1
            continue
        split = a
        while split < b and pos[split] < cur_lo + half:
            split += 1
        node_state[top] = state + 1
        top += 1
        if state == 0:
            node_lo[top], node_n[top], node_a[top], node_b[top] = cur_lo, half, a, split
        else:
            node_lo[top], node_n[top], node_a[top], node_b[top] = cur_lo + half, cur_n - half, split, b
        node_state[top] = 0
    return values[0]


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
