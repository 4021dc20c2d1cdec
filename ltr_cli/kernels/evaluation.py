"""Every query's evaluation measures in one compiled call (reference:
:func:`ltr_cli.measures.conventions.evaluate_query`, one query at a time in numpy).

Layout: documents stacked by query, query q owns ``offsets[q]:offsets[q+1]``; ``s`` (N,)
scores, ``y`` (N,) labels, ``gain`` (N,) each document's gain and ``rel`` (N,) whether it
is relevant, both computed beforehand by the convention (numpy), as are the discount
tables ``disc`` (1/log2(i+1), paper) and ``letor_disc`` (LETOR's), so every gain and
discount is the reference's very number; and every sum is the reference's: the paper's
DCG one BLAS dot product (numpy's ``@``), the scripts' DCG a running sum (``cumsum``),
AP's precisions and MeanNDCG's values numpy's pairwise sum, so both paths give the same
bits.

Output ``values`` (Q, 2P+1[+1]) in the reference's key order: ndcg@1..P, ap, p@1..P,
[mean_ndcg]; ``defined`` marks the values the convention defines (False: the reference's
None, a LETOR-3 cut-off beyond the list). NaN is the ``skip`` policy's "no value".

``stacked_measures`` computes other registry metrics that have a kernel (ERR, RR) for
every query, from per-document values the convention computed beforehand.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit
from ltr_cli.core.codes import MEASURE_ERR, MEASURE_RR
from ltr_cli.kernels.core import _dot
from ltr_cli.kernels.pairwise import _pairwise_sum
from ltr_cli.kernels.measures import expected_reciprocal_rank, reciprocal_rank

INPUT_ORDER = 0
REVERSE_INPUT = 1
PESSIMISTIC = 2


@njit(cache=_CACHE)
def _ranking(s, y, ties):
    """Document indices by descending score under a deterministic tie policy."""
    m = s.shape[0]
    if ties == INPUT_ORDER:
        return np.argsort(-s, kind="mergesort")
    if ties == REVERSE_INPUT:
        return np.argsort(s, kind="mergesort")[::-1].copy()
    # pessimistic: score descending, then label ascending, then index
    order = np.argsort(y, kind="mergesort")
    by_score = np.argsort(-s[order], kind="mergesort")
    out = np.empty(m, dtype=np.int64)
    for i in range(m):
        out[i] = order[by_score[i]]
    return out


@njit(cache=_CACHE)
def evaluate_queries(s, y, gain, rel, offsets, P, ties, letor, disc, letor_disc, no_rel_value, zero_value,
                     beyond_omit, mean_ndcg):
    Q = offsets.shape[0] - 1
    cols = 2 * P + 1 + (1 if mean_ndcg else 0)
    values = np.zeros((Q, cols))
    defined = np.ones((Q, cols), dtype=np.bool_)
    for q in range(Q):
        a = offsets[q]
        b = offsets[q + 1]
        m = b - a
        r = _ranking(s[a:b], y[a:b], ties)
        g = gain[a:b]
        rl = rel[a:b]
        ideal_gain = -np.sort(-g)
        ranked_gain = np.empty(m)
        for i in range(m):
            ranked_gain[i] = g[r[i]]
        buf = np.empty(m + 1)  # NDCG@1..m (MeanNDCG), then AP's precisions
        if not letor:  # the paper's DCG: one dot product, as the reference's ``@``
            for k in range(1, P + 1):
                n = min(k, m)
                ideal = _dot(ideal_gain[:n], disc[:n])
                if ideal <= 0.0:
                    values[q, k - 1] = no_rel_value
                else:
                    values[q, k - 1] = _dot(ranked_gain[:n], disc[:n]) / ideal
        else:  # the scripts' running sums, as the reference's ``cumsum``
            n_pos = max(m, P)
            dcg = 0.0
            ideal = 0.0
            for i in range(n_pos):
                if i < m:
                    dcg += ranked_gain[i] * letor_disc[i]
                    ideal += ideal_gain[i] * letor_disc[i]
                value = dcg / ideal if ideal > 0 else zero_value
                if i < m:
                    buf[i] = value
                if i < P:
                    if i < m:
                        values[q, i] = value
                    elif beyond_omit:
                        defined[q, i] = False
                    else:
                        values[q, i] = 0.0
            if mean_ndcg:  # numpy's mean: its pairwise sum, divided
                values[q, 2 * P + 1] = _pairwise_sum(buf, 0, m) / m if m else 0.0
        hits = 0
        for i in range(m):
            if rl[r[i]]:
                buf[hits] = (hits + 1) / (i + 1)
                hits += 1
            if i < P:
                values[q, P + 1 + i] = hits / (i + 1)
        if hits:  # summed as numpy sums the reference's precisions
            values[q, P] = _pairwise_sum(buf, 0, hits) / hits
        else:
            values[q, P] = zero_value if letor else no_rel_value
        for k in range(m + 1, P + 1):
            if letor and beyond_omit:
                defined[q, P + k] = False
            else:
                values[q, P + k] = hits / k
    return values, defined


@njit(cache=_CACHE)
def stacked_measures(s, y, offsets, ties, spec, doc):
    """The registry's kernel measures beside the table: ``values`` (Q, K) for the K rows of
    ``spec`` (kind, k, threshold, none_value, 2^gmax; kinds ``MEASURE_ERR`` and ``MEASURE_RR``)
    on each query's ranking under ``ties``. ``doc`` (K, N): what row j's kernel reads per
    document, computed by the convention (ERR: stop probabilities; RR: 1.0 if relevant)."""
    Q = offsets.shape[0] - 1
    values = np.zeros((Q, spec.shape[0]))
    for q in range(Q):
        a = offsets[q]
        b = offsets[q + 1]
        r = _ranking(s[a:b], y[a:b], ties)
        for j in range(spec.shape[0]):
            kind = int(spec[j, 0])
            k = int(spec[j, 1])
            if kind == MEASURE_ERR:
                values[q, j] = expected_reciprocal_rank(r, doc[j, a:b], k, spec[j, 3])
            elif kind == MEASURE_RR:
                values[q, j] = reciprocal_rank(r, doc[j, a:b], k, spec[j, 3])
            else:
                values[q, j] = np.nan
    return values
