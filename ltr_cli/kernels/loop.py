"""A block of online rounds in one compiled call (reference: the per-round loop of
:func:`ltr_cli.protocols.online.run_online`, which calls the very same kernels one by one).

Each round of the block: the query's rows ``X[starts[q]:ends[q]]`` are scored and ranked
(:func:`~ltr_cli.kernels.core.score_rank`), every measure is computed on the full labels
(:func:`~ltr_cli.kernels.measures.round_measures`), the learner takes its step
(:func:`~ltr_cli.kernels.perceptron.perceptron_round` for Alg. 2 / Alg. 3,
:func:`~ltr_cli.kernels.ogd.ogd_round` for OGD and ListNet), and the round's row is written
into the caller's preallocated columns. Python is entered only between blocks.

Family codes (:mod:`ltr_cli.kernels.codes`): ``BLOCK_PERCEPTRON``, ``BLOCK_OGD``. The
weights ``w`` are updated in place.

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
from ltr_cli.kernels.codes import (BLOCK_DONE, BLOCK_NOT_FINITE_STEP, BLOCK_NOT_FINITE_WEIGHTS, BLOCK_PERCEPTRON,
                                   NOT_FINITE, UNCHANGED, UPDATED)
from ltr_cli.kernels.core import all_finite, score_rank
from ltr_cli.kernels.measures import round_measures
from ltr_cli.kernels.ogd import ogd_round
from ltr_cli.kernels.perceptron import perceptron_round


@njit(cache=_CACHE)
def run_block(family, X, y, starts, ends, order, w, P, t0, reverse, spec, disc, check_finite, nan_allowed,
              values, mistake, updated, no_relevant, ranking_loss, m_out, s, out):
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
        score_rank(Xq, w, reverse, s, ranking)
        meas = round_measures(ranking, yq, spec, disc)
        t = t0 + r + 1
        if family == BLOCK_PERCEPTRON:
            loss, value, status = perceptron_round(Xq, yq, ranking, s, w, P, t, disc, out)
            is_mistake = status != UNCHANGED
            row_loss = loss if is_mistake else 0.0
        else:
            value, status = ogd_round(Xq, yq, s, w, P, t, out)
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
