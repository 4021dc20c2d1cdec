"""One round of online gradient descent on the squared, ListNet, KL and SmoothDCG surrogates with projection (reference: :class:`ltr_cli.learners.online.ogd.OGDLearner`, :mod:`ltr_cli.surrogates`), the authors' unshifted ListNet step, and the family's block kernel: the generic block driver (:mod:`ltr_cli.kernels.loop`) around :func:`ogd_step`.

Conventions: see :mod:`ltr_cli.kernels`; slots: :mod:`ltr_cli.kernels.ogd_slots`; codes: :mod:`ltr_cli.core.codes`.
"""

from __future__ import annotations

import math

import numpy as np

from ltr_cli.kernels._numba import _CACHE, _EXP_CAP, _NAN, njit
from ltr_cli.core.codes import KL, LISTNET, NOT_FINITE, SQUARED, UNCHANGED, UPDATED
from ltr_cli.kernels.core import _dot, _rmatvec
from ltr_cli.kernels.pairwise import _pairwise_sum
from ltr_cli.kernels.loop import block_kernel
from ltr_cli.kernels.measures import _gain
from ltr_cli.kernels.ogd_slots import (OGD_EPSILON, OGD_ETA, OGD_LOSS_SCALED, OGD_NUMERICS, OGD_RADIUS,
                                       OGD_STEP_RULE, OGD_SURROGATE)
from ltr_cli.kernels.steps import finite_nonzero, project, step_size


# --- online gradient descent (reference: ltr_cli.learners.online.ogd, ltr_cli.surrogates) ----------

# e^r of the integer labels -64..63, by the C library's exp (math.exp), which is what the
# kernels' np.exp calls: the same bits as computing them (reference: surrogates.libm)
_EXP_TABLE = np.array([math.exp(r) for r in range(-64, 64)])


@njit(cache=_CACHE)
def _exp_label(r):
    """``np.exp(r)`` of a label; integer labels from a table."""
    if r >= -64.0 and r < 64.0:
        i = int(r)
        if i == r:
            return _EXP_TABLE[i + 64]
    return np.exp(r)


@njit(cache=_CACHE)
def _log_softmax(v):
    m = v.shape[0]
    top = v.max()
    shifted = np.empty(m)
    for i in range(m):
        shifted[i] = v[i] - top
    e = np.empty(m)
    for i in range(m):
        e[i] = np.exp(shifted[i])
    lse = np.log(_pairwise_sum(e, 0, m))
    for i in range(m):
        shifted[i] -= lse
    return shifted


@njit(cache=_CACHE, error_model="numpy")  # x / 0 is inf or NaN, as in numpy and MATLAB
def listnet_authors_step(X, y, s):
    """The authors' ListNet gradient in weight space, in their expression order (reference
    :func:`ltr_cli.surrogates.listwise.listnet_authors_gradient`): ``-(X^T e^R) / sum e^R
    + (X^T e^s) / sum e^s`` with unshifted exponentials, so it overflows to inf and NaN
    where their MATLAB does."""
    m = y.shape[0]
    ey = np.empty(m)
    es = np.empty(m)
    for i in range(m):
        ey[i] = _exp_label(y[i])
        es[i] = np.exp(s[i])
    first = _rmatvec(X, ey)
    second = _rmatvec(X, es)
    den_y = _pairwise_sum(ey, 0, m)
    den_s = _pairwise_sum(es, 0, m)
    step = np.empty(first.shape[0])
    for j in range(step.shape[0]):
        step[j] = (-first[j]) / den_y + second[j] / den_s
    return step


@njit(cache=_CACHE, error_model="numpy")  # x / 0 is inf or NaN, as in numpy and MATLAB
def ogd_round(X, y, s, w, P, t, out):
    """One OGD step on a listwise/pointwise surrogate (reference ``OGDLearner.update``).

    ``P``: the ``OGD_*`` slots of :mod:`ltr_cli.kernels.ogd_slots` (surrogate, SmoothDCG epsilon,
    projection radius, step rule, eta, loss-scaled, numerics: authors-code is ListNet by
    :func:`listnet_authors_step`, and a non-finite step is taken). ``s``: the scores (first
    m entries). Returns ``(surrogate value, status)``: ``UPDATED`` (``out`` (d,) holds the
    new weights), ``UNCHANGED`` (zero step) or ``NOT_FINITE`` (the caller raises).
    """
    m = y.shape[0]
    s = s[:m]
    code = int(P[OGD_SURROGATE])
    if code == LISTNET and P[OGD_NUMERICS] == 1.0:
        step = listnet_authors_step(X, y, s)
        eta = step_size(int(P[OGD_STEP_RULE]), P[OGD_ETA], P[OGD_LOSS_SCALED] != 0.0, t, 1.0)
        for j in range(w.shape[0]):
            out[j] = w[j] - eta * step[j]
        project(out, P[OGD_RADIUS])
        return _NAN, UPDATED
    g = np.empty(m)
    if code == SQUARED:
        diff = np.empty(m)
        for i in range(m):
            diff[i] = s[i] - y[i]
            g[i] = 2.0 * diff[i]
        value = _dot(diff, diff)
    elif code == LISTNET:
        log_ps = _log_softmax(s)
        log_py = _log_softmax(y)
        py = np.empty(m)
        for i in range(m):
            py[i] = np.exp(log_py[i])
            g[i] = np.exp(log_ps[i]) - py[i]
        value = -_dot(py, log_ps)
    elif code == KL:
        yy = np.empty(m)
        ey = np.empty(m)
        sc = np.empty(m)
        es = np.empty(m)
        for i in range(m):
            yy[i] = y[i]
            ey[i] = np.exp(min(y[i], _EXP_CAP))
            sc[i] = min(s[i], _EXP_CAP)
            es[i] = np.exp(sc[i])
            g[i] = es[i] - ey[i]
        value = _dot(ey, yy) - _dot(ey, sc) - _pairwise_sum(ey, 0, m) + _pairwise_sum(es, 0, m)
    else:
        eps = P[OGD_EPSILON]
        scaled = np.empty(m)
        for i in range(m):
            scaled[i] = s[i] / eps
        p = _log_softmax(scaled)
        gains = np.empty(m)
        for i in range(m):
            p[i] = np.exp(p[i])
            gains[i] = _gain(y[i])
        gain = _dot(p, gains)
        for i in range(m):
            g[i] = -(p[i] * (gains[i] - gain)) / eps
        value = -gain
    step = _rmatvec(X, g)
    finite, nonzero = finite_nonzero(step)
    if not finite:
        return value, NOT_FINITE
    if not nonzero:
        return value, UNCHANGED
    eta = step_size(int(P[OGD_STEP_RULE]), P[OGD_ETA], P[OGD_LOSS_SCALED] != 0.0, t, 1.0)
    for j in range(w.shape[0]):
        out[j] = w[j] - eta * step[j]
    project(out, P[OGD_RADIUS])
    return value, UPDATED


@njit(cache=_CACHE)
def ogd_step(X, y, ranking, shown, s, w, P, t, gamma, eta, reverse, disc, out):
    """The family's round in the block driver (see :mod:`ltr_cli.kernels.loop`): one
    :func:`ogd_round`; returns ``(status, mistake, ranking loss)`` (no mistakes, no loss)."""
    value, status = ogd_round(X, y, s, w, P, t, out)
    return status, False, _NAN


ogd_block = block_kernel(ogd_step, "ogd_block")
