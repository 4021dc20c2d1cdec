"""The parameter slots of the perceptron family's round kernel (Alg. 2 / Alg. 3,
:func:`ltr_cli.kernels.perceptron.perceptron_round`): ``P[PC_*]``. numba-free: the learners
pack a parameter vector with them, the kernel reads them as compile-time constants."""

from __future__ import annotations

PC_SURROGATE = 0  # 0 SLAM, 1 max-pair (Alg. 3)
PC_MISTAKE_AP = 1  # mistake measure: 0 NDCG, 1 AP
PC_MISTAKE_K = 2  # its cut-off (< 0: whole list)
PC_THRESHOLD = 3  # relevance threshold
PC_WEIGHTS_AP = 4  # SLAM weights: 0 NDCG, 1 AP
PC_WEIGHTS_K = 5  # their cut-off
PC_WEIGHT_MODE = 6  # 0 score order (paper), 1 input order, 2 level mean (authors' code)
PC_MARGIN = 7  # codes.MARGINS
PC_DELTA = 8
PC_STEP_RULE, PC_ETA, PC_LOSS_SCALED = 9, 10, 11
PC_MAXIMISER_TIES = 12  # 0 first-index, 1 authors-code
SIZE = 13
