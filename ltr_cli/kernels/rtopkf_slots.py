"""The parameter slots of the RTop-kF family's round kernel
(:func:`ltr_cli.kernels.rtopkf.rtopkf_round`): ``P[RT_*]``. numba-free: the learner packs a
parameter vector with them, the kernel reads them as compile-time constants."""

from __future__ import annotations

RT_SURROGATE = 0  # codes.SURROGATE_CODES
RT_FIDELITY = 1  # 0 exact, 1 authors-code denominators
RT_EPSILON = 2
RT_RADIUS = 3  # NaN: none
RT_MISS_SCALE = 4
RT_NUMERICS = 5  # 0 stable, 1 authors-code
RT_DESCEND = 6  # SmoothDCG: 1 descend-gain, 0 ascend-gain
RT_FEEDBACK_K = 7  # labels revealed per round (1, or 2 for RankSVM)
RT_SKIP_SHORT = 8  # 1: lists of fewer than 2 documents are shown in input order, not learnt from
SIZE = 9
