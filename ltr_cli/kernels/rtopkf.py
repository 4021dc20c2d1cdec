"""One round of RTop-kF (reference: :class:`ltr_cli.learners.online.rtopkf.RTopKF`, :mod:`ltr_cli.surrogates.topk_estimators`), and the family's block kernel: the generic block driver (:mod:`ltr_cli.kernels.loop`) around :func:`rtopkf_step`.

Conventions: see :mod:`ltr_cli.kernels`; slots: :mod:`ltr_cli.kernels.rtopkf_slots`; codes: :mod:`ltr_cli.core.codes`.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels._numba import _CACHE, _EXP_CAP, _NAN, njit
from ltr_cli.core.codes import KL, NOT_FINITE, RANKSVM, SQUARED, UNCHANGED, UPDATED
from ltr_cli.kernels.core import _rmatvec
from ltr_cli.kernels.pairwise import _pairwise_sum
from ltr_cli.kernels.loop import block_kernel
from ltr_cli.kernels.measures import _gain
from ltr_cli.kernels.rtopkf_slots import (RT_DESCEND, RT_EPSILON, RT_FEEDBACK_K, RT_FIDELITY, RT_MISS_SCALE,
                                          RT_NUMERICS, RT_RADIUS, RT_SKIP_SHORT, RT_SURROGATE)
from ltr_cli.kernels.steps import finite_nonzero, project


# --- RTop-kF (reference: ltr_cli.learners.online.rtopkf, ltr_cli.surrogates.topk_estimators) -------

@njit(cache=_CACHE, error_model="numpy")  # x / 0 is inf or NaN, as in numpy and MATLAB
def rtopkf_round(X, s, shown, top, exploit, w, gamma, eta, P, out):
    """One RTop-kF step from top-k feedback (reference ``RTopKF.update`` with
    ``estimate_score_gradient``). ``P``: the ``RT_*`` slots of
    :mod:`ltr_cli.kernels.rtopkf_slots` (surrogate, fidelity, epsilon, radius, the authors' miss
    scale c of the denominator ``c gamma / m``, numerics: authors-code takes a non-finite
    step, SmoothDCG direction). Needs m >= the surrogate's k. Returns a status code
    (``UPDATED``: ``out`` holds the new weights; ``UNCHANGED``; ``NOT_FINITE``)."""
    m = X.shape[0]
    s = s[:m]
    code = int(P[RT_SURROGATE])
    authors = P[RT_FIDELITY] == 1.0
    miss = P[RT_MISS_SCALE]
    raw = P[RT_NUMERICS] == 1.0
    z = np.zeros(m)
    if code == RANKSVM:
        a, b = shown[0], shown[1]
        ra, rb = top[0], top[1]
        if ra > rb:
            hi, lo = a, b
        else:
            hi, lo = b, a
        if ra != rb and 1.0 + s[lo] > s[hi]:
            z[lo] += 1.0
            z[hi] -= 1.0
        pairs = m * (m - 1)
        if authors:
            if shown[0] == exploit[0] and shown[1] == exploit[1]:
                den = 1.0 - gamma + gamma / pairs
            else:
                den = miss * gamma / pairs
        else:
            hit_ab = 1.0 if (exploit[0] == a and exploit[1] == b) else 0.0
            hit_ba = 1.0 if (exploit[0] == b and exploit[1] == a) else 0.0
            den = ((1.0 - gamma) * hit_ab + gamma / pairs) + ((1.0 - gamma) * hit_ba + gamma / pairs)
        for i in range(m):
            z[i] = z[i] / den
    else:
        j = shown[0]
        r = top[0]
        if authors:
            p = 1.0 - gamma + gamma / m if shown[0] == exploit[0] else miss * gamma / m
        else:
            p = (1.0 - gamma) * (1.0 if exploit[0] == j else 0.0) + gamma / m
        if code == SQUARED:
            for i in range(m):
                z[i] = 2.0 * s[i]
            z[j] -= 2.0 * r / p
        elif code == KL:
            if raw:
                z[j] = (np.exp(s[j]) - np.exp(r)) / p
            else:
                z[j] = (np.exp(min(s[j], _EXP_CAP)) - np.exp(min(r, _EXP_CAP))) / p
        elif raw:  # the authors' SmoothDCG expression, unshifted (overflows to NaN)
            eps = P[RT_EPSILON]
            e = np.empty(m)
            for i in range(m):
                e[i] = np.exp(s[i] / eps)
            den = _pairwise_sum(e, 0, m)
            ej = np.exp(s[j] / eps)
            coef = (2.0 ** r - 1.0) / p
            for i in range(m):
                z[i] = -1.0 * (ej * e[i]) / (eps * den ** 2)
            z[j] = z[j] + ej / (eps * den)
            sign = 1.0 if P[RT_DESCEND] == 1.0 else -1.0
            for i in range(m):
                z[i] = sign * (z[i] * coef)
        else:
            eps = P[RT_EPSILON]
            top_s = -np.inf
            for i in range(m):
                x = s[i] / eps
                if x > top_s:
                    top_s = x
            e = np.empty(m)
            for i in range(m):
                e[i] = np.exp(s[i] / eps - top_s)
            total = _pairwise_sum(e, 0, m)
            q = np.empty(m)
            for i in range(m):
                q[i] = e[i] / total
            # the gain's gradient estimate; the papers step w - eta z on it (descend-gain),
            # ascend-gain steps on its negative
            coef = (_gain(r) / p) if P[RT_DESCEND] == 1.0 else -(_gain(r) / p)
            qj = q[j]
            for i in range(m):
                gg = -qj * q[i]
                if i == j:
                    gg += qj
                z[i] = coef * gg / eps
    if code == KL:  # one non-zero: X.T @ z is z_j X[j] exactly
        step = np.empty(w.shape[0])
        j = shown[0]
        for i in range(w.shape[0]):
            step[i] = z[j] * np.float64(X[j, i])
    else:
        step = _rmatvec(X, z)
    finite, nonzero = finite_nonzero(step)
    if not finite and not raw:
        return NOT_FINITE
    if finite and not nonzero:
        return UNCHANGED
    for i in range(w.shape[0]):
        out[i] = w[i] - eta * step[i]
    project(out, P[RT_RADIUS])
    return UPDATED


@njit(cache=_CACHE)
def rtopkf_step(X, y, ranking, shown, s, w, P, t, gamma, eta, reverse, disc, out):
    """The family's round in the block driver (see :mod:`ltr_cli.kernels.loop`): the labels
    of the top ``P[RT_FEEDBACK_K]`` shown documents are the feedback; a list too short for
    them, or skipped as too short (``P[RT_SKIP_SHORT]``), is not learnt from. ``ranking``
    is the exploit ranking. Returns ``(status, mistake, ranking loss)`` (no mistakes, no loss)."""
    m = X.shape[0]
    k = int(P[RT_FEEDBACK_K])
    if m < k or (P[RT_SKIP_SHORT] == 1.0 and m < 2):
        return UNCHANGED, False, _NAN
    top = np.empty(k)
    for j in range(k):
        top[j] = y[shown[j]]
    return rtopkf_round(X, s, shown, top, ranking, w, gamma, eta, P, out), False, _NAN


rtopkf_block = block_kernel(rtopkf_step, "rtopkf_block")
