"""Coordinate Ascent's line search, compiled (reference: ``Lists._values`` and ``Lists.along``
of :mod:`ltr_cli.learners.batch.coordinate_ascent`, the same keys sorted by numpy).

A bucket holds ``q`` queries padded to ``M`` documents. For candidate step ``t`` the
scores of a row are ``s0 + t * x`` (padding: ``s0 = -inf``, ``x = 0``); each score becomes
the reference's integer sort key: ``0.0 - score`` as ordered integer bits, its ``low``
lowest bits replaced by the document's ``code`` (index and level). Keys are distinct, so a
document's rank is the number of keys below its own.

* AP (:func:`ap_along`): only the relevant documents' ranks matter. They are found by
  counting, not sorting: a relevant document's rank is one more than the number of keys
  below its key, and its hits one more than the number of relevant keys below it. The
  contributions ``hits / rank`` are written at their ranks into a row of zeros and summed
  as numpy sums the reference's row (:func:`ltr_cli.kernels.core._pairwise_sum`), so the
  values are the reference's to the last bit.
* NDCG (:func:`levels_along`): the levels of the first ``n`` ranks, from the sorted keys;
  the caller takes the gains' dot product with the discounts as the reference does.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit
from ltr_cli.kernels.core import _pairwise_sum

_MAGNITUDE = np.int64(0x7FFFFFFFFFFFFFFF)


@njit(cache=_CACHE)
def _keys_into(s0, x, t, code, clear, fk, keys):
    """The reference's sort keys of one row at step ``t`` into ``keys`` (int64), which is
    ``fk`` (float64) viewed as integers; ``clear`` is ~((1 << low) - 1)."""
    for p in range(fk.shape[0]):
        fk[p] = 0.0 - (s0[p] + t * x[p])
    for p in range(fk.shape[0]):
        b = keys[p]
        b ^= (b >> 63) & _MAGNITUDE
        keys[p] = (b & clear) | code[p]


@njit(cache=_CACHE)
def ap_along(s0, x, steps, code, rel_index, n_rel, low, norm, out):
    """AP of each row (q) of a bucket for each step (C): ``out`` (C, q) is written.

    ``s0``, ``x`` (q, M) float64; ``code`` (q, M) int64; ``rel_index`` (q, R) the relevant
    documents' positions in each row, ``n_rel`` (q,) how many; ``norm`` (q,) the number
    relevant (the reference's divisor)."""
    q, M = s0.shape
    clear = ~np.int64((np.int64(1) << low) - 1)
    fk = np.empty(M)
    keys = fk.view(np.int64)
    buf = np.zeros(M)
    R = rel_index.shape[1]
    rk = np.empty(R, dtype=np.int64)
    pos = np.empty(R, dtype=np.int64)
    for c in range(steps.shape[0]):
        t = steps[c]
        for r in range(q):
            _keys_into(s0[r], x[r], t, code[r], clear, fk, keys)
            nr = n_rel[r]
            for u in range(nr):
                rk[u] = keys[rel_index[r, u]]
            for u in range(nr):  # rank = 1 + the number of keys below (a branch-free count)
                k = rk[u]
                below = 0
                for p in range(M):
                    below += keys[p] < k
                pos[u] = below
                hits = 1
                for v in range(nr):
                    hits += rk[v] < k
                buf[below] = hits / (below + 1)
            out[c, r] = _pairwise_sum(buf, 0, M) / norm[r]
            for u in range(nr):
                buf[pos[u]] = 0.0


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
            _keys_into(s0[r], x[r], t, code[r], clear, fk, keys)
            keys.sort()
            for p in range(n):
                out[c, r, p] = keys[p] & mask
