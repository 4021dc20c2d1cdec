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
from ltr_cli.kernels.codes import (BLOCK_DONE, BLOCK_NOT_FINITE_STEP, BLOCK_NOT_FINITE_WEIGHTS, BLOCK_OGD,
                                   BLOCK_PERCEPTRON, BLOCK_RANDOM, NOT_FINITE, UNCHANGED, UPDATED)
from ltr_cli.kernels.core import all_finite, score_rank
from ltr_cli.kernels.measures import round_measures
from ltr_cli.kernels.ogd import ogd_round
from ltr_cli.kernels.perceptron import perceptron_round
from ltr_cli.kernels.rtopkf import rtopkf_round


@njit(cache=_CACHE)
def run_block(family, X, y, starts, ends, order, w, P, t0, reverse, spec, disc, check_finite, nan_allowed,
              values, mistake, updated, no_relevant, ranking_loss, m_out, s, out,
              feedback_k, skip_short, explore, perms, perm_starts, gammas, etas):
    """Rounds ``t0 + 1 .. t0 + len(order)`` of one learner over the queries ``order`` (indices
    into ``starts``/``ends``) of one unit (``X`` (N, d), ``y`` (N,) float64). ``values``
    (len(order), measures), the other outputs (len(order),). ``s``: a score buffer of at
    least the longest query; ``out``: (d,) scratch. ``check_finite``: whether the weights
    are still checked for finiteness (False once they left the reals)."""
    n = order.shape[0]
    k = spec.shape[0]
    nonfinite = -1
    for r in range(n):
        q = order[r]
        a = starts[q]
        b = ends[q]
        Xq = X[a:b]
        yq = y[a:b]
        m = b - a
        ranking = np.empty(m, dtype=np.int64)
        t = t0 + r + 1
        if family == BLOCK_PERCEPTRON:
            score_rank(Xq, w, reverse, s, ranking)
            meas = round_measures(ranking, yq, spec, disc)
            loss, value, status = perceptron_round(Xq, yq, ranking, s, w, P, t, disc, out)
            is_mistake = status != UNCHANGED
            row_loss = loss if is_mistake else 0.0
        elif family == BLOCK_OGD:
            score_rank(Xq, w, reverse, s, ranking)
            meas = round_measures(ranking, yq, spec, disc)
            value, status = ogd_round(Xq, yq, s, w, P, t, out)
            if status == NOT_FINITE:
                return r, BLOCK_NOT_FINITE_STEP, nonfinite
            is_mistake = False
            row_loss = np.nan
        elif family == BLOCK_RANDOM:  # a drawn permutation every round, no learning
            meas = round_measures(perms[perm_starts[r]:perm_starts[r + 1]], yq, spec, disc)
            status = UNCHANGED
            is_mistake = False
            row_loss = np.nan
        else:  # RTop-kF: ranking is the exploit ranking, shown what the user sees
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
            is_mistake = False
            row_loss = np.nan
        moved = status == UPDATED
        if moved:
            if check_finite and nonfinite < 0 and not all_finite(out):
                if not nan_allowed:
                    return r, BLOCK_NOT_FINITE_WEIGHTS, nonfinite
                nonfinite = r
            for j in range(w.shape[0]):
                w[j] = out[j]
        for c in range(k):
            values[r, c] = meas[c]
        no_relevant[r] = meas[k] == 0.0
        mistake[r] = is_mistake
        updated[r] = moved
        ranking_loss[r] = row_loss
        m_out[r] = m
    return n, BLOCK_DONE, nonfinite
