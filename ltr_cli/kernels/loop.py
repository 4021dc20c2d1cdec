"""Blocks of online rounds in one compiled call, for a group of learners of one family
that read the same stream (reference: the per-round loop of
:func:`ltr_cli.protocols.online.run_online`, which calls the very same kernels one by one).

Each round of the block reads query ``order[r]``, rows ``X[starts[q]:ends[q]]``, once for
the whole group; then, learner by learner (``i`` in ``0 .. L-1``), its rows are scored with
that learner's weights ``W[i]`` and ranked (:func:`~ltr_cli.kernels.core.score_rank`), every
measure is computed on the full labels (:func:`~ltr_cli.kernels.measures.round_measures`),
the learner takes its step (:func:`~ltr_cli.kernels.perceptron.perceptron_round` for Alg. 2 /
Alg. 3, :func:`~ltr_cli.kernels.ogd.ogd_round` for OGD and ListNet,
:func:`~ltr_cli.kernels.rtopkf.rtopkf_round` for RTop-kF), and its row is written into row
``r`` of its preallocated columns (leading axis ``i``). A learner's arithmetic is exactly
that of a group of one: a grouped sweep point equals its separate run bit for bit. The
rows are shared in the caches, not in one matrix-matrix product: a product would sum each
score in another order than a separate run's matrix-vector product does. Python is entered
only between blocks.

``W`` (L, d) is updated in place; ``P`` (L, p) holds each learner's ``*_round`` parameters
and ``t0`` (L,) its round counter before the block. ``active`` (L,): learners that take part
(a learner that stops is switched off and the others go on). ``check_finite`` and
``nan_allowed`` (L,): whether to check the weights after an update (not once they have left
the reals under the authors' numerics) and whether non-finite weights are allowed.

Outputs, per learner: ``ran`` (rounds done: n, or the round index where it stopped),
``stop`` (``BLOCK_DONE``; ``BLOCK_NOT_FINITE_WEIGHTS`` when an update left the weights
non-finite and that is not allowed - that round is not recorded and ``W[i]`` holds the
weights before it; ``BLOCK_NOT_FINITE_STEP`` when an OGD or RTop-kF step was not finite, the
same), ``nonfinite`` (index of the first round after which the weights became NaN or
infinite under the authors' numerics, -1: none).

RTop-kF shows a uniformly random permutation with probability gamma_t: those draws come
from each learner's own generator, drawn by the caller for the whole block in round order
exactly as the per-round path draws them (``explore`` (L, n), the permutations concatenated
in ``perms`` with round r of learner ``i`` at ``perms[perm_starts[i, r]:perm_starts[i, r + 1]]``,
``gammas`` and ``etas`` (L, n)); the shown ranking's top ``feedback_k[i]`` labels are its
feedback. ``skip_short[i]``: lists shorter than 2 are shown in input order, with no draw
and no update (the authors' scripts). The random baseline's permutations come the same way
(every round "explores").
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit
from ltr_cli.kernels.codes import (BLOCK_DONE, BLOCK_NOT_FINITE_STEP, BLOCK_NOT_FINITE_WEIGHTS, NOT_FINITE,
                                   RANKED_INPUT_ORDER, RANKED_REVERSE_INPUT, UNCHANGED, UPDATED)
from ltr_cli.kernels.core import all_finite, score_rank
from ltr_cli.kernels.measures import round_measures
from ltr_cli.kernels.ogd import ogd_round
from ltr_cli.kernels.perceptron import perceptron_round
from ltr_cli.kernels.rtopkf import rtopkf_round


@njit(cache=_CACHE)
def _start(active, ran, stop, nonfinite, n):
    for i in range(active.shape[0]):
        ran[i] = n if active[i] else 0
        stop[i] = BLOCK_DONE
        nonfinite[i] = -1


@njit(cache=_CACHE)
def _stop(i, r, code, active, ran, stop):
    """Learner ``l`` stops at round index ``r`` of the block (the others go on)."""
    active[i] = False
    ran[i] = r
    stop[i] = code


@njit(cache=_CACHE)
def _accept(i, w, out, check_finite, nonfinite, nan_allowed, r):
    """Take the new weights ``out`` into ``w`` (learner ``l``'s) after round index ``r``;
    False when they are not finite and that is not allowed (``w`` unchanged). Records in
    ``nonfinite[i]`` the first round that left the reals."""
    if check_finite[i] and nonfinite[i] < 0 and not all_finite(out):
        if not nan_allowed[i]:
            return False
        nonfinite[i] = r
    for j in range(w.shape[0]):
        w[j] = out[j]
    return True


@njit(cache=_CACHE)
def _row(i, r, meas, is_mistake, moved, row_loss, m, values, mistake, updated, no_relevant, ranking_loss, m_out):
    """Learner ``l``'s row ``r`` into the output columns (``meas``: the measures, then the
    has-relevant flag)."""
    k = values.shape[2]
    for c in range(k):
        values[i, r, c] = meas[c]
    no_relevant[i, r] = meas[k] == 0.0
    mistake[i, r] = is_mistake
    updated[i, r] = moved
    ranking_loss[i, r] = row_loss
    m_out[i, r] = m


@njit(cache=_CACHE)
def _ranked(Xq, yq, w, reverse, s, spec, disc):
    """The ranking of a query's rows by ``Xq @ w`` (scores into ``s``) and the round's
    measures on it."""
    ranking = np.empty(Xq.shape[0], dtype=np.int64)
    score_rank(Xq, w, reverse, s, ranking)
    return ranking, round_measures(ranking, yq, spec, disc)


# one compiled function per learner family: a first run compiles only the families its
# learners use (one function with every family took about 20 s more to compile)

@njit(cache=_CACHE)
def perceptron_block(X, y, starts, ends, order, W, P, t0, active, reverse, spec, disc, check_finite, nan_allowed,
                     values, mistake, updated, no_relevant, ranking_loss, m_out, ran, stop, nonfinite, s, out):
    """Alg. 2 / Alg. 3 (``perceptron_round``) over the block (see the module docstring)."""
    _start(active, ran, stop, nonfinite, order.shape[0])
    for r in range(order.shape[0]):
        a, b = starts[order[r]], ends[order[r]]
        Xq, yq = X[a:b], y[a:b]
        for i in range(W.shape[0]):
            if not active[i]:
                continue
            w = W[i]
            ranking, meas = _ranked(Xq, yq, w, reverse, s, spec, disc)
            loss, value, status = perceptron_round(Xq, yq, ranking, s, w, P[i], t0[i] + r + 1, disc, out,
                                                   RANKED_REVERSE_INPUT if reverse else RANKED_INPUT_ORDER)
            if status == UPDATED and not _accept(i, w, out, check_finite, nonfinite, nan_allowed, r):
                _stop(i, r, BLOCK_NOT_FINITE_WEIGHTS, active, ran, stop)
                continue
            is_mistake = status != UNCHANGED
            _row(i, r, meas, is_mistake, status == UPDATED, loss if is_mistake else 0.0, b - a, values, mistake,
                 updated, no_relevant, ranking_loss, m_out)


@njit(cache=_CACHE)
def ogd_block(X, y, starts, ends, order, W, P, t0, active, reverse, spec, disc, check_finite, nan_allowed,
              values, mistake, updated, no_relevant, ranking_loss, m_out, ran, stop, nonfinite, s, out):
    """OGD and online ListNet (``ogd_round``) over the block."""
    _start(active, ran, stop, nonfinite, order.shape[0])
    for r in range(order.shape[0]):
        a, b = starts[order[r]], ends[order[r]]
        Xq, yq = X[a:b], y[a:b]
        for i in range(W.shape[0]):
            if not active[i]:
                continue
            w = W[i]
            ranking, meas = _ranked(Xq, yq, w, reverse, s, spec, disc)
            value, status = ogd_round(Xq, yq, s, w, P[i], t0[i] + r + 1, out)
            if status == NOT_FINITE:
                _stop(i, r, BLOCK_NOT_FINITE_STEP, active, ran, stop)
                continue
            if status == UPDATED and not _accept(i, w, out, check_finite, nonfinite, nan_allowed, r):
                _stop(i, r, BLOCK_NOT_FINITE_WEIGHTS, active, ran, stop)
                continue
            _row(i, r, meas, False, status == UPDATED, np.nan, b - a, values, mistake, updated, no_relevant,
                 ranking_loss, m_out)


@njit(cache=_CACHE)
def rtopkf_block(X, y, starts, ends, order, W, P, t0, active, reverse, spec, disc, check_finite, nan_allowed,
                 values, mistake, updated, no_relevant, ranking_loss, m_out, ran, stop, nonfinite, s, out,
                 feedback_k, skip_short, explore, perms, perm_starts, gammas, etas):
    """RTop-kF (``rtopkf_round``) over the block: ``ranking`` is the exploit ranking, the
    shown one a drawn permutation where ``explore``."""
    _start(active, ran, stop, nonfinite, order.shape[0])
    for r in range(order.shape[0]):
        a, b = starts[order[r]], ends[order[r]]
        Xq, yq = X[a:b], y[a:b]
        m = b - a
        for i in range(W.shape[0]):
            if not active[i]:
                continue
            w = W[i]
            k = feedback_k[i]
            ranking = np.empty(m, dtype=np.int64)
            skip = skip_short[i] and m < 2
            if skip:
                for j in range(m):
                    ranking[j] = j
            else:
                score_rank(Xq, w, reverse, s, ranking)
            shown = perms[perm_starts[i, r]:perm_starts[i, r + 1]] if explore[i, r] else ranking
            meas = round_measures(shown, yq, spec, disc)
            status = UNCHANGED
            if m >= k and not skip:
                top = np.empty(k)
                for j in range(k):
                    top[j] = yq[shown[j]]
                status = rtopkf_round(Xq, s, shown, top, ranking, w, gammas[i, r], etas[i, r], P[i], out)
                if status == NOT_FINITE:
                    _stop(i, r, BLOCK_NOT_FINITE_STEP, active, ran, stop)
                    continue
                if status == UPDATED and not _accept(i, w, out, check_finite, nonfinite, nan_allowed, r):
                    _stop(i, r, BLOCK_NOT_FINITE_WEIGHTS, active, ran, stop)
                    continue
            _row(i, r, meas, False, status == UPDATED, np.nan, m, values, mistake, updated, no_relevant,
                 ranking_loss, m_out)


@njit(cache=_CACHE)
def random_block(y, starts, ends, order, active, spec, disc, values, mistake, updated, no_relevant, ranking_loss,
                 m_out, ran, stop, nonfinite, perms, perm_starts):
    """The random baseline over the block: each round shows its drawn permutation."""
    _start(active, ran, stop, nonfinite, order.shape[0])
    for r in range(order.shape[0]):
        a, b = starts[order[r]], ends[order[r]]
        for i in range(active.shape[0]):
            if active[i]:
                meas = round_measures(perms[perm_starts[i, r]:perm_starts[i, r + 1]], y[a:b], spec, disc)
                _row(i, r, meas, False, False, np.nan, b - a, values, mistake, updated, no_relevant, ranking_loss,
                     m_out)
