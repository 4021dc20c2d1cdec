"""What the online families' round kernels share: the step-size rule (reference
:class:`ltr_cli.learners.online.schedules.StepSchedule`), the projection onto a ball
(reference :func:`ltr_cli.learners.online.ogd.project_to_ball`) and a step's finiteness.

Conventions: see :mod:`ltr_cli.kernels`.
"""

from __future__ import annotations

import math

import numpy as np

from ltr_cli.kernels._numba import _CACHE, njit
from ltr_cli.kernels.core import _dot


@njit(cache=_CACHE)
def step_size(rule, eta, loss_scaled, t, loss):
    """Reference :class:`ltr_cli.learners.online.schedules.StepSchedule` (rule 0 = constant)."""
    step = eta if rule == 0 else eta / math.sqrt(t)
    return step * loss if loss_scaled else step


@njit(cache=_CACHE)
def project(w, radius):
    """Reference ``project_to_ball``, in place (radius NaN: no projection; a NaN norm leaves
    w as it is, as MATLAB's ``min(1, U / norm(w))`` does)."""
    if radius != radius:
        return
    norm = math.sqrt(_dot(w, w))  # np.linalg.norm of a real vector
    if norm <= radius or norm != norm:
        return
    scale = radius / norm
    for j in range(w.shape[0]):
        w[j] = w[j] * scale


@njit(cache=_CACHE)
def finite_nonzero(step):
    """(all entries finite, some entry non-zero)."""
    nonzero = False
    for j in range(step.shape[0]):
        x = step[j]
        if not np.isfinite(x):
            return False, True
        if x != 0.0:
            nonzero = True
    return True, nonzero
