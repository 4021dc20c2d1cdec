"""Blocks of online rounds in one compiled call, for a group of learners of one family
that read the same stream: one generic driver around each family's round kernel
(reference: the per-round loop of :func:`ltr_cli.protocols.online.run_online`, which calls
the same round kernels one by one).

:func:`block_kernel` makes a family's block kernel from its round kernel (in the family's
kernel module: ``perceptron_block = block_kernel(perceptron_step, "perceptron_block")``).
Each round of the block reads query ``order[r]``, rows ``X[starts[q]:ends[q]]``, once for
the whole group; then, learner by learner (``i`` in ``0 .. L-1``), its rows are scored with
that learner's weights ``W[i]`` and ranked (:func:`~ltr_cli.kernels.core.score_rank_scratch`; the
exploit ranking), the shown ranking is that one or the learner's drawn permutation where
``explore[i, r]``, every measure is computed on the shown ranking and the full labels
(:func:`~ltr_cli.kernels.measures.round_measures`), the learner takes its step through the
family's round kernel, and its row is written into row ``r`` of its preallocated columns
(leading axis ``i``). A learner's arithmetic is exactly that of a group of one: a grouped
sweep point equals its separate run bit for bit. The rows are shared in the caches, not in
one matrix-matrix product: a product would sum each score in another order than a separate
run's matrix-vector product does. Python is entered only between blocks.

A round kernel is compiled code (``@njit``) with the signature
``step(Xq, yq, ranking, shown, s, w, p, t, gamma, eta, reverse, disc, out) -> (status,
mistake, ranking_loss)``: the query's rows and full labels (a family that learns from top-k
feedback reads only ``yq[shown[:k]]``), the exploit ranking and the shown one, the scores
``s`` (first m entries), the learner's weights (never written) and parameters ``p = P[i]``,
its round number ``t``, its draws' ``gamma`` and ``eta`` for the round, the tie direction,
the discount table and ``out`` (d,) for the new weights. ``status``: a code of
:mod:`ltr_cli.core.codes` (``UPDATED``: ``out`` holds the new weights; ``NOT_FINITE``:
the learner stops with its family's error).

``W`` (L, d) is updated in place; ``P`` (L, p) holds each learner's parameters and ``t0``
(L,) its round counter before the block. ``active`` (L,): learners that take part (a
learner that stops is switched off and the others go on). ``check_finite`` and
``nan_allowed`` (L,): whether to check the weights after an update (not once they have left
the reals under the authors' numerics) and whether non-finite weights are allowed.

Outputs, per learner: ``ran`` (rounds done: n, or the round index where it stopped),
``stop`` (``BLOCK_DONE``; ``BLOCK_NOT_FINITE_WEIGHTS`` when an update left the weights
non-finite and that is not allowed - that round is not recorded and ``W[i]`` holds the
weights before it; ``BLOCK_NOT_FINITE_STEP`` when a step was not finite, the same),
``nonfinite`` (index of the first round after which the weights became NaN or infinite
under the authors' numerics, -1: none).

The learners' random draws are made by the caller for the whole block in round order,
exactly as the per-round path draws them: ``explore`` (L, n), the permutations concatenated
in ``perms`` with round r of learner ``i`` at ``perms[perm_starts[i, r]:perm_starts[i, r + 1]]``,
``gammas`` and ``etas`` (L, n); a family that draws nothing gets zeros. The random
baseline's block (:data:`random_block`) shows its permutations every round and neither
scores nor learns.
"""

from __future__ import annotations

import numpy as np

import types as pytypes
from typing import Any

from ltr_cli.kernels._numba import _CACHE, _NAN, njit
from ltr_cli.core.codes import (BLOCK_DONE, BLOCK_NOT_FINITE_STEP, BLOCK_NOT_FINITE_WEIGHTS, NOT_FINITE,
                                   UNCHANGED, UPDATED)
from ltr_cli.kernels.core import all_finite, score_rank_scratch
from ltr_cli.kernels.measures import round_measures


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


def _driver(X, y, starts, ends, order, W, P, t0, active, reverse, spec, disc, check_finite, nan_allowed,
            values, mistake, updated, no_relevant, ranking_loss, m_out, ran, stop, nonfinite, s, out,
            explore, perms, perm_starts, gammas, etas):
    """The block (see the module docstring) around the round kernel ``_ROUND_KERNEL``;
    ``_SCORES``: whether the learners score their rows (the random baseline does not).
    Both are bound per family by :func:`block_kernel`."""
    _start(active, ran, stop, nonfinite, order.shape[0])
    longest = 0
    for r in range(order.shape[0]):
        longest = max(longest, ends[order[r]] - starts[order[r]])
    # the rankings and the sort's scratch, once for the block (a learner's round never
    # keeps its ranking)
    rankings = np.empty(longest, dtype=np.int64)
    scratch = np.empty(2 * longest + 1, dtype=np.int64)
    keys = np.empty(longest)
    for r in range(order.shape[0]):
        a, b = starts[order[r]], ends[order[r]]
        Xq, yq = X[a:b], y[a:b]
        m = b - a
        for i in range(W.shape[0]):
            if not active[i]:
                continue
            w = W[i]
            ranking = rankings[:m]
            if _SCORES:
                score_rank_scratch(Xq, w, reverse, s, ranking, scratch, keys)
            shown = perms[perm_starts[i, r]:perm_starts[i, r + 1]] if explore[i, r] else ranking
            meas = round_measures(shown, yq, spec, disc)
            status, is_mistake, loss = _ROUND_KERNEL(Xq, yq, ranking, shown, s, w, P[i], t0[i] + r + 1, gammas[i, r],
                                                     etas[i, r], reverse, disc, out)
            if status == NOT_FINITE:
                _stop(i, r, BLOCK_NOT_FINITE_STEP, active, ran, stop)
                continue
            if status == UPDATED and not _accept(i, w, out, check_finite, nonfinite, nan_allowed, r):
                _stop(i, r, BLOCK_NOT_FINITE_WEIGHTS, active, ran, stop)
                continue
            _row(i, r, meas, is_mistake, status == UPDATED, loss, m, values, mistake, updated, no_relevant,
                 ranking_loss, m_out)


_ROUND_KERNEL: Any = None  # bound per family by block_kernel
_SCORES = True


def block_kernel(round_kernel: Any, name: str, scores: bool = True) -> Any:
    """The block kernel of a family: the driver (:func:`_driver`) around ``round_kernel`` (a
    compiled round kernel, see the module docstring), compiled as ``name`` and kept in the
    kernel cache with the round kernel's module (whose digest covers this module too, which
    it imports). ``scores=False``: the learners show drawn permutations only, never scored.

    The driver's code is bound to the round kernel through its globals, not a closure:
    numba's cache keys a closure by its pickled cells, which differ in every process."""
    bound = dict(_driver.__globals__)
    bound.update(_ROUND_KERNEL=round_kernel, _SCORES=scores)
    driver = pytypes.FunctionType(_driver.__code__, bound, name, _driver.__defaults__)
    driver.__qualname__ = name
    driver.__module__ = round_kernel.py_func.__module__
    driver.__doc__ = f"The block driver around {round_kernel.py_func.__module__}.{round_kernel.__name__}."
    compiled = njit(cache=_CACHE)(driver)
    return compiled


@njit(cache=_CACHE)
def no_step(X, y, ranking, shown, s, w, P, t, gamma, eta, reverse, disc, out):
    """The random baseline's round: it shows its permutation and never learns."""
    return UNCHANGED, False, _NAN


# the random baseline: every round shows its drawn permutation
random_block = block_kernel(no_step, "random_block", scores=False)
