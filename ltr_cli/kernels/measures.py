"""Measures of a ranking (reference: :mod:`ltr_cli.measures.registry` under the ``paper``
convention): the paper's gain ``2^r - 1``, ideal DCG, NDCG@k, AP, precision@k, ERR@k, RR, and
every measure of a round in one call (``round_measures``).

Conventions: see :mod:`ltr_cli.kernels`; slots and codes: :mod:`ltr_cli.core.codes`.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit
from ltr_cli.core.codes import MEASURE_AP, MEASURE_ERR, MEASURE_NDCG, MEASURE_RR
from ltr_cli.kernels.core import _dot
from ltr_cli.kernels.pairwise import _pairwise_sum


# --- measures (reference: ltr_cli.measures.metrics) ----------------------------------------------------

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
def _ndcg_levels_into(ranking, y, levels, k, none_value, disc, buf):
    """:func:`ndcg` when the label levels are known (the ideal DCG takes the top labels level
    by level instead of selecting them), with a scratch buffer ``buf`` of at least m entries."""
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
def expected_reciprocal_rank(ranking, stop, k, none_value):
    """ERR@k (k < 0: whole list) from each document's stop probability ``stop`` (reference
    ``measures.registry.err``, summed position by position as it is); ``none_value`` when no
    stop probability is positive."""
    positive = False
    for i in range(stop.shape[0]):
        if stop[i] > 0.0:
            positive = True
            break
    if not positive:
        return none_value
    m = ranking.shape[0]
    n = m if k < 0 else min(k, m)
    total = 0.0
    keep = 1.0
    for i in range(n):
        r = stop[ranking[i]]
        total += keep * r / (i + 1)
        keep *= 1.0 - r
    return total


@njit(cache=_CACHE)
def reciprocal_rank(ranking, relevant, k, none_value):
    """1 / position of the first document with ``relevant > 0`` (reference
    ``measures.registry.rr``); 0 beyond the cut-off k (k < 0: none); ``none_value`` without any."""
    for i in range(ranking.shape[0]):
        if relevant[ranking[i]] > 0.0:
            return 0.0 if 0 <= k <= i else 1.0 / (i + 1)
    return none_value


@njit(cache=_CACHE)
def round_measures(ranking, y, spec, disc):
    """Every measure of a round in one call (the ``paper`` convention). ``spec`` rows:
    (kind, k, threshold, none_value, 2^gmax) with kind a ``MEASURE_*`` code of
    :mod:`ltr_cli.core.codes` (k < 0: whole list). The extra last entry is 1.0 when some
    label is above 0 (reference ``has_relevant``), else 0.0."""
    n = spec.shape[0]
    m = y.shape[0]
    out = np.empty(n + 1)
    for q in range(n):
        kind = int(spec[q, 0])
        k = int(spec[q, 1])
        if kind == MEASURE_NDCG:
            out[q] = ndcg(ranking, y, k, spec[q, 3], disc)
        elif kind == MEASURE_AP:
            out[q] = average_precision(ranking, y, spec[q, 2], spec[q, 3])
        elif kind == MEASURE_ERR:
            scale = spec[q, 4]
            stop = np.empty(m)
            for i in range(m):
                stop[i] = min(_gain(y[i]), scale - 1.0) / scale
            out[q] = expected_reciprocal_rank(ranking, stop, k, spec[q, 3])
        elif kind == MEASURE_RR:
            flags = np.empty(m)
            for i in range(m):
                flags[i] = 1.0 if y[i] > spec[q, 2] else 0.0
            out[q] = reciprocal_rank(ranking, flags, k, spec[q, 3])
        else:  # MEASURE_PRECISION
            out[q] = precision_at_k(ranking, y, k, spec[q, 2])
    relevant = False
    for i in range(m):
        if y[i] > 0.0:
            relevant = True
            break
    out[n] = 1.0 if relevant else 0.0
    return out
