"""One round of the perceptron paper's Alg. 2 / Alg. 3 (reference: :class:`ltr_cli.learners.online.perceptron._MistakeDriven`), and the family's block kernel: the generic block driver (:mod:`ltr_cli.kernels.loop`) around :func:`perceptron_step`.

Conventions: see :mod:`ltr_cli.kernels`; slots: :mod:`ltr_cli.kernels.perceptron_slots`; codes: :mod:`ltr_cli.core.codes`.
"""

from __future__ import annotations


import numpy as np

from ltr_cli.kernels._numba import _CACHE, _NAN, njit
from ltr_cli.core.codes import RANKED_INPUT_ORDER, RANKED_REVERSE_INPUT, UNCHANGED, UPDATED, ZERO_STEP
from ltr_cli.kernels.core import _rmatvec_into
from ltr_cli.kernels.loop import block_kernel
from ltr_cli.kernels.measures import _ndcg_levels_into, average_precision
from ltr_cli.kernels.perceptron_slots import (PC_DELTA, PC_ETA, PC_LOSS_SCALED, PC_MARGIN, PC_MAXIMISER_TIES,
                                              PC_MISTAKE_AP, PC_MISTAKE_K, PC_STEP_RULE, PC_SURROGATE, PC_THRESHOLD,
                                              PC_WEIGHT_MODE, PC_WEIGHTS_AP, PC_WEIGHTS_K)
from ltr_cli.kernels.slam import _ap_weights_into, _argmax_authors, _argmax_first, _levels_into, _ndcg_weights_into, _slam_grad_into, _terms_into
from ltr_cli.kernels.steps import step_size


@njit(cache=_CACHE)
def perceptron_round(X, y, ranking, s, w, P, t, disc, out, ranked):
    """One update of Alg. 2 / Alg. 3 (reference ``_MistakeDriven.update``).

    ``ranked``: how ``ranking`` was sorted from ``s`` (``RANKED_*`` of
    :mod:`ltr_cli.core.codes`); the ``paper`` NDCG weights then read the score order
    from it instead of sorting the scores again.

    ``P``: the ``PC_*`` slots of :mod:`ltr_cli.kernels.perceptron_slots` (surrogate, mistake measure
    and cut-off, relevance threshold, SLAM weights, cut-off and mode, margin, delta, step
    rule, eta, loss-scaled, maximiser ties).

    ``s``: the scores (first m entries). Returns ``(ranking loss, surrogate value,
    status)``: ``UNCHANGED`` (no mistake), ``ZERO_STEP`` (a mistake with a zero
    subgradient) or ``UPDATED`` (``out`` (d,) holds the new weights).
    """
    m = y.shape[0]
    s = s[:m]
    # one float and one int scratch array for the whole round, carved into the buffers of
    # the steps below (each would otherwise allocate its own: a tenth of the round's time)
    fs = np.empty(8 * m + w.shape[0] + 1)
    ks = np.empty(128 + 8 * m + 2, dtype=np.int64)
    binarise = (P[PC_MISTAKE_AP] == 1.0) if P[PC_SURROGATE] == 1.0 else (P[PC_WEIGHTS_AP] == 1.0)  # AP: hinge on R > threshold
    if P[PC_MISTAKE_AP] == 1.0:
        loss = 1.0 - average_precision(ranking, y, P[PC_THRESHOLD], 1.0)
        if loss <= 1e-12:
            return 0.0, _NAN, UNCHANGED
        if not binarise:
            return _perceptron_step(X, y, y, _round_levels(y, fs, ks), s, w, P, t, disc, loss, out, fs, ks, ranking, ranked)
    else:  # the levels serve the ideal DCG, and then the hinge and the weights
        levels = _round_levels(y, fs, ks)
        loss = 1.0 - _ndcg_levels_into(ranking, y, levels, int(P[PC_MISTAKE_K]), 1.0, disc, fs[m:2 * m])
        if loss <= 1e-12:
            return 0.0, _NAN, UNCHANGED
        if not binarise:
            return _perceptron_step(X, y, y, levels, s, w, P, t, disc, loss, out, fs, ks, ranking, ranked)
    yb = fs[7 * m:8 * m]
    for i in range(m):
        yb[i] = 1.0 if y[i] > P[PC_THRESHOLD] else 0.0
    return _perceptron_step(X, y, yb, _round_levels(yb, fs, ks), s, w, P, t, disc, loss, out, fs, ks, ranking,
                            ranked)


@njit(cache=_CACHE)
def _authors_feature_step(X, y, levels, c, k, v, acc, order, offsets):
    """``acc`` (d,) = the sum of ``v_i (X[k_i] - X[i])`` over documents with ``c_i > 0`` and
    ``v_i > 0``, in the authors' loop order (labels descending, equal labels later document
    first) and their arithmetic: the row difference first, then scaled, then added (reference
    :func:`ltr_cli.surrogates.slam.authors_feature_gradient`). Equal rows cancel exactly;
    ``X.T @ g`` can leave a last-bit residue there.

    The loop order is the reversed stable sort of the labels: read off their levels
    (``levels`` of ``y``: the top level first, each level's documents from the last),
    with scratch ``order`` (m,) and ``offsets`` (>= L,) int64; labels with a NaN are
    sorted instead."""
    acc[:] = 0.0
    L, values, sizes, lev = levels
    m = y.shape[0]
    nan = False
    for i in range(m):
        nan |= y[i] != y[i]
    if nan:
        order = np.argsort(y, kind="mergesort")[::-1]
    else:
        at = 0
        for q in range(L - 1, -1, -1):
            offsets[q] = at
            at += sizes[q]
        for i in range(m - 1, -1, -1):
            q = lev[i]
            order[offsets[q]] = i
            offsets[q] += 1
    for r in range(m):
        i = order[r]
        if c[i] > 0.0 and v[i] > 0.0:
            kk = k[i]
            for j in range(acc.shape[0]):
                acc[j] += v[i] * (np.float64(X[kk, j]) - np.float64(X[i, j]))


@njit(cache=_CACHE)
def _round_levels(y, fs, ks):
    """:func:`_levels` in the round's scratch (float ``fs[:m]``, int ``ks[:128 + 2m]``)."""
    m = y.shape[0]
    return _levels_into(y, ks[:128], ks[128:128 + m], fs[:m], ks[128 + m:128 + 2 * m])


@njit(cache=_CACHE)
def _perceptron_step(X, y, yy, levels, s, w, P, t, disc, loss, out, fs, ks, ranking, ranked):
    """The subgradient step of a mistake round; ``yy`` the labels the hinge sees and
    ``levels`` theirs. Scratch: ``fs[:m]`` and ``ks[:128 + 2m]`` hold the levels,
    ``fs[7m:8m]`` may hold ``yy``; the rest is free (``ks`` has 128 + 8m + 2 entries)."""
    m = y.shape[0]
    ties = int(P[PC_MAXIMISER_TIES])
    c, kk = _terms_into(s, yy, levels[3], levels[0], int(P[PC_MARGIN]), P[PC_DELTA], ties, fs[m:2 * m],
                        ks[128 + 2 * m:128 + 3 * m], fs[2 * m:3 * m], ks[128 + 3 * m:128 + 4 * m])
    if P[PC_SURROGATE] == 1.0:  # Alg. 3: the largest hinge term
        best = _argmax_authors(c, yy) if ties == 1 else _argmax_first(c)
        if best < 0 or c[best] <= 0.0:
            return loss, 0.0, ZERO_STEP
        # X.T @ (e_k - e_i) is X[k] - X[i] exactly, in any summation order
        step = step_size(int(P[PC_STEP_RULE]), P[PC_ETA], P[PC_LOSS_SCALED] != 0.0, t, loss)
        i, k = best, kk[best]
        for j in range(w.shape[0]):
            out[j] = w[j] - step * (np.float64(X[k, j]) - np.float64(X[i, j]))
        return loss, c[best], UPDATED
    if P[PC_WEIGHTS_AP] == 1.0:
        v = _ap_weights_into(y, P[PC_THRESHOLD], fs[3 * m:4 * m])
    else:  # NDCG weights: yy is y
        v = _ndcg_weights_into(s, levels, int(P[PC_WEIGHTS_K]), int(P[PC_WEIGHT_MODE]), disc, fs[3 * m:4 * m],
                               ks[128 + 4 * m:128 + 5 * m + 1], fs[4 * m:5 * m], fs[5 * m:6 * m], ranking, ranked,
                               ks[128 + 5 * m + 1:128 + 6 * m + 1])
    value, g = _slam_grad_into(c, kk, v, fs[6 * m:7 * m])
    nonzero = False
    for i in range(m):
        if g[i] != 0.0:
            nonzero = True
            break
    if not nonzero:
        return loss, value, ZERO_STEP
    step = step_size(int(P[PC_STEP_RULE]), P[PC_ETA], P[PC_LOSS_SCALED] != 0.0, t, loss)
    acc = fs[8 * m:8 * m + w.shape[0]]
    if ties == 1:
        _authors_feature_step(X, yy, levels, c, kk, v, acc, ks[128 + 6 * m + 1:128 + 7 * m + 1],
                              ks[128 + 7 * m + 1:128 + 8 * m + 2])
    else:
        _rmatvec_into(X, g, acc)
    for j in range(w.shape[0]):
        out[j] = w[j] - step * acc[j]
    return loss, value, UPDATED


@njit(cache=_CACHE)
def perceptron_step(X, y, ranking, shown, s, w, P, t, gamma, eta, reverse, disc, out):
    """The family's round in the block driver (see :mod:`ltr_cli.kernels.loop`): ``ranking``
    was sorted from ``s`` by the ranking kernel; returns ``(status, mistake, ranking loss)``."""
    loss, value, status = perceptron_round(X, y, ranking, s, w, P, t, disc, out,
                                           RANKED_REVERSE_INPUT if reverse else RANKED_INPUT_ORDER)
    mistake = status != UNCHANGED
    return status, mistake, loss if mistake else 0.0


perceptron_block = block_kernel(perceptron_step, "perceptron_block")
