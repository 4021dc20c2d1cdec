"""A block of online rounds in one compiled call (reference: the per-round loop of
:func:`ltr_cli.protocols.online.run_online`, which calls the very same kernels one by one).

Each round of the block: the query's rows ``X[starts[q]:ends[q]]`` are scored and ranked
(:func:`~ltr_cli.kernels.core.score_rank`), every measure is computed on the full labels
(:func:`~ltr_cli.kernels.measures.round_measures`), the learner takes its step
(:func:`~ltr_cli.kernels.perceptron.perceptron_round` for Alg. 2 / Alg. 3,
:func:`~ltr_cli.kernels.ogd.ogd_round` for OGD and ListNet,
:func:`~ltr_cli.kernels.rtopkf.rtopkf_round` for RTop-kF), and the round's row is written
into the caller's preallocated columns. Python is entered only between blocks.

RTop-kF shows a uniformly random permutation with probability gamma_t: those draws come
from the learner's own generator, drawn by the caller for the whole block in round order
exactly as the per-round path draws them (``explore`` (n,), the permutations concatenated
in ``perms`` with ``perm_starts`` (n + 1,), ``gammas`` and ``etas`` (n,)); the shown
ranking's top ``feedback_k`` labels are its feedback. ``skip_short``: lists shorter than 2 are shown
in input order, with no draw and no update (the authors' scripts).

The random baseline's permutations come the same way (every round "explores").

Family codes (:mod:`ltr_cli.kernels.codes`): ``BLOCK_PERCEPTRON``, ``BLOCK_OGD``,
``BLOCK_RTOPKF``, ``BLOCK_RANDOM``. The weights ``w`` are updated in place.

Returns ``(rounds done, stop, nonfinite)``: ``stop`` is ``BLOCK_DONE`` when every round of
the block ran, ``BLOCK_NOT_FINITE_WEIGHTS`` when an update left the weights non-finite and
that is not allowed (the round is not recorded, the weights are those before it), or
``BLOCK_NOT_FINITE_STEP`` when an OGD step was not finite (same); ``nonfinite`` is the index
in the block of the first round after which the weights became NaN or infinite under the
authors' numerics (-1: none).
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit
from ltr_cli.kernels.codes import BLOCK_DONE, BLOCK_NOT_FINITE_STEP, BLOCK_NOT_FINITE_WEIGHTS, NOT_FINITE, UNCHANGED, UPDATED
from ltr_cli.kernels.core import all_finite, score_rank
from ltr_cli.kernels.measures import round_measures
from ltr_cli.kernels.ogd import ogd_round
from ltr_cli.kernels.perceptron import perceptron_round
from ltr_cli.kernels.rtopkf import rtopkf_round


@njit(cache=_CACHE)
def _accept(w, out, check_finite, nonfinite, nan_allowed, r):
    """Take the new weights ``out`` into ``w`` after round index ``r``; returns (False, ..)
    when they are not finite and that is not allowed (``w`` unchanged), else (True, the
    index of the first round that left the reals, -1 if none)."""
    if check_finite and nonfinite < 0 and not all_finite(out):
        if not nan_allowed:
            return False, nonfinite
        nonfinite = r
    for j in range(w.shape[0]):
        w[j] = out[j]
    return True, nonfinite


@njit(cache=_CACHE)
def _row(r, meas, is_mistake, moved, row_loss, m, values, mistake, updated, no_relevant, ranking_loss, m_out):
    """Round index ``r``'s row into the output columns (``meas``: the measures, then the
    has-relevant flag)."""
    k = values.shape[1]
    for c in range(k):
        values[r, c] = meas[c]
    no_relevant[r] = meas[k] == 0.0
    mistake[r] = is_mistake
    updated[r] = moved
    ranking_loss[r] = row_loss
    m_out[r] = m


@njit(cache=_CACHE)
def _ranked(Xq, yq, w, reverse, s, spec, disc):
    """A query's rows and labels, its ranking by ``Xq @ w`` (scores into ``s``) and the
    round's measures on it."""
    ranking = np.empty(Xq.shape[0], dtype=np.int64)
    score_rank(Xq, w, reverse, s, ranking)
    return Xq, yq, ranking, round_measures(ranking, yq, spec, disc)


# one compiled function per learner family: a first run compiles only the families its
# learners use (one function with every family took about 20 s more to compile)

@njit(cache=_CACHE)
def perceptron_block(X, y, starts, ends, order, w, P, t0, reverse, spec, disc, check_finite, nan_allowed,
                     values, mistake, updated, no_relevant, ranking_loss, m_out, s, out):
    """Alg. 2 / Alg. 3 (``perceptron_round``) over the block (see the module docstring)."""
    nonfinite = -1
    for r in range(order.shape[0]):
        a, b = starts[order[r]], ends[order[r]]
        Xq, yq, ranking, meas = _ranked(X[a:b], y[a:b], w, reverse, s, spec, disc)
        loss, value, status = perceptron_round(Xq, yq, ranking, s, w, P, t0 + r + 1, disc, out)
        if status == UPDATED:
            ok, nonfinite = _accept(w, out, check_finite, nonfinite, nan_allowed, r)
            if not ok:
                return r, BLOCK_NOT_FINITE_WEIGHTS, nonfinite
        is_mistake = status != UNCHANGED
        _row(r, meas, is_mistake, status == UPDATED, loss if is_mistake else 0.0, b - a, values, mistake, updated,
             no_relevant, ranking_loss, m_out)
    return order.shape[0], BLOCK_DONE, nonfinite


@njit(cache=_CACHE)
def ogd_block(X, y, starts, ends, order, w, P, t0, reverse, spec, disc, check_finite, nan_allowed,
              values, mistake, updated, no_relevant, ranking_loss, m_out, s, out):
    """OGD and online ListNet (``ogd_round``) over the block."""
    nonfinite = -1
    for r in range(order.shape[0]):
        a, b = starts[order[r]], ends[order[r]]
        Xq, yq, ranking, meas = _ranked(X[a:b], y[a:b], w, reverse, s, spec, disc)
        value, status = ogd_round(Xq, yq, s, w, P, t0 + r + 1, out)
        if status == NOT_FINITE:
            return r, BLOCK_NOT_FINITE_STEP, nonfinite
        if status == UPDATED:
            ok, nonfinite = _accept(w, out, check_finite, nonfinite, nan_allowed, r)
            if not ok:
                return r, BLOCK_NOT_FINITE_WEIGHTS, nonfinite
        _row(r, meas, False, status == UPDATED, np.nan, b - a, values, mistake, updated, no_relevant,
             ranking_loss, m_out)
    return order.shape[0], BLOCK_DONE, nonfinite


@njit(cache=_CACHE)
def rtopkf_block(X, y, starts, ends, order, w, P, t0, reverse, spec, disc, check_finite, nan_allowed,
                 values, mistake, updated, no_relevant, ranking_loss, m_out, s, out,
                 feedback_k, skip_short, explore, perms, perm_starts, gammas, etas):
    """RTop-kF (``rtopkf_round``) over the block: ``ranking`` is the exploit ranking, the
    shown one a drawn permutation where ``explore``."""
    nonfinite = -1
    for r in range(order.shape[0]):
        a, b = starts[order[r]], ends[order[r]]
        Xq, yq = X[a:b], y[a:b]
        m = b - a
        ranking = np.empty(m, dtype=np.int64)
        skip = skip_short and m < 2
        if skip:
            for i in range(m):
                ranking[i] = i
        else:
            score_rank(Xq, w, reverse, s, ranking)
        shown = perms[perm_starts[r]:perm_starts[r + 1]] if explore[r] else ranking
        meas = round_measures(shown, yq, spec, disc)
        status = UNCHANGED
        if m >= feedback_k and not skip:
            top = np.empty(feedback_k)
            for i in range(feedback_k):
                top[i] = yq[shown[i]]
            status = rtopkf_round(Xq, s, shown, top, ranking, w, gammas[r], etas[r], P, out)
            if status == NOT_FINITE:
                return r, BLOCK_NOT_FINITE_STEP, nonfinite
            if status == UPDATED:
                ok, nonfinite = _accept(w, out, check_finite, nonfinite, nan_allowed, r)
                if not ok:
                    return r, BLOCK_NOT_FINITE_WEIGHTS, nonfinite
        _row(r, meas, False, status == UPDATED, np.nan, m, values, mistake, updated, no_relevant, ranking_loss,
             m_out)
    return order.shape[0], BLOCK_DONE, nonfinite


@njit(cache=_CACHE)
def random_block(y, starts, ends, order, spec, disc, values, mistake, updated, no_relevant, ranking_loss, m_out,
                 perms, perm_starts):
    """The random baseline over the block: each round shows its drawn permutation."""
    for r in range(order.shape[0]):
        a, b = starts[order[r]], ends[order[r]]
        meas = round_measures(perms[perm_starts[r]:perm_starts[r + 1]], y[a:b], spec, disc)
        _row(r, meas, False, False, np.nan, b - a, values, mistake, updated, no_relevant, ranking_loss, m_out)
    return order.shape[0], BLOCK_DONE, -1
