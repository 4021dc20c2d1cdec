"""The parameter slots of the OGD family's round kernel (:func:`ltr_cli.kernels.ogd.ogd_round`):
``P[OGD_*]``. numba-free: the learners pack a parameter vector with them, the kernel reads
them as compile-time constants."""

from __future__ import annotations

OGD_SURROGATE = 0  # codes.SURROGATE_CODES
OGD_EPSILON = 1  # SmoothDCG smoothing
OGD_RADIUS = 2  # projection radius (NaN: none)
OGD_STEP_RULE, OGD_ETA, OGD_LOSS_SCALED = 3, 4, 5
OGD_NUMERICS = 6  # 0 stable, 1 authors-code
SIZE = 7
