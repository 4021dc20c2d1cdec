"""BMRM on the NERU structural loss (ranking-losses supplement, s.1.4).

Expected Rank Utility ranks like NDCG with other position and document weights, so the
NDCG structural loss applies to it directly with

    a_i = 2^(-(i-1)/(alpha-1))   (i = 1..k, 0 beyond the cut-off k; half-life alpha)
    b_j = max(y_j - d, 0) / ERU*  (neutral vote d; ERU* the ERU of the label-sorted order)

so that ``sum_i a_i b_{pi(i)}`` is NERU@k of the ranking pi. The per-query loss is
``max_pi 1 - NERU@k(pi) + <c, f_pi - f_pi*>`` over assignments (linear assignment, see
:func:`ltr_cli.learners.batch.losses.assignment_structural_hinge`), with the score weights c of the
NDCG method (``bmrm``: 1/log2(p + 2) in the top k; ``cofirank``: (p + 1)^-0.25). A query
where no label exceeds d has ERU* = 0 and is left out of the risk. The risk is the mean over
queries; BMRM minimises ``1/(2C) ||w||^2 + risk(w)``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ltr_cli.learners.batch.bmrm import fit_bmrm
from ltr_cli.learners.batch.common import Queries
from ltr_cli.learners.batch.convergence import FitContext
from ltr_cli.learners.batch.losses import position_measure_hinge
from ltr_cli.learners.batch.common import FEATURE_SCALE_HELP
from ltr_cli.learners.batch.structural import EPS_HELP, MAX_ITER_HELP, FeatureScale
from ltr_cli.measures.metrics import eru_weights
from ltr_cli.results.models import LinearModel
from ltr_cli.core.schema import BatchLearnerConfig, Grid


def neru_structural_hinge(
    X: np.ndarray, y: np.ndarray, w: np.ndarray, d: float = 0.0, alpha: float = 5.0, k: int = 10,
    weights: str = "bmrm",
) -> tuple[float, np.ndarray] | None:
    """One query's NERU structural hinge and its subgradient in w; None when no label
    exceeds the neutral vote ``d``. ``X`` (n, dims), ``y`` (n,), ``w`` (dims,)."""
    yv = np.asarray(y, dtype=np.float64)
    return position_measure_hinge(X, yv, w, eru_weights(yv.shape[0], alpha), np.maximum(yv - d, 0.0), k,
                                  weights)


def fit_bmrm_neru(train: Queries, C: float, d: float = 0.0, alpha: float = 5.0, k: int = 10,
                  weights: str = "bmrm", eps: float = 1e-3, max_iter: int = 1000,
                  context: FitContext | None = None, feature_scale: str = "none") -> LinearModel:
    """BMRM with lambda = 1/C on the mean NERU structural hinge of the training queries."""
    return fit_bmrm(train, lambda X, y, w: neru_structural_hinge(X, y, w, d, alpha, k, weights), C, eps,
                    max_iter, context, feature_scale)


class BMRMNERUSpec(BatchLearnerConfig):
    """BMRM on the NERU structural loss (ranking-losses supplement s.1.4)."""

    type: Literal["bmrm-neru"]
    summary: ClassVar[str] = "batch (cv:): BMRM on the NERU structural loss (supplement s.1.4)"
    grid: Grid = Field(default_factory=lambda: {"C": [0.1, 1.0, 10.0]})
    k: int = Field(10, gt=0, description="cut-off: NERU@k")
    d: float = Field(0.0, description="neutral vote: labels at or below d have no utility")
    alpha: float = Field(5.0, gt=1, description="viewing half-life (the position of weight 1/2)")
    weights: Literal["bmrm", "cofirank"] = Field("bmrm", description="score weights c of the NDCG method")
    eps: float = Field(1e-3, gt=0, description=EPS_HELP)
    max_iter: int = Field(1000, gt=0, description=MAX_ITER_HELP)
    feature_scale: FeatureScale = Field("auto", description=FEATURE_SCALE_HELP)
    id_defaults: ClassVar[dict[str, Any]] = {"feature_scale": "auto"}

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "measure": f"NERU@{self.k} (d={self.d:g}, alpha={self.alpha:g})",
                "score_weights": self.weights}

    def fit(self, train: Queries, params: dict[str, Any], context: FitContext | None = None) -> LinearModel:
        return fit_bmrm_neru(train, params["C"], self.d, self.alpha, self.k, self.weights, self.eps,
                             self.max_iter, context, self.feature_scale)
