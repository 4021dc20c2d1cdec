"""The batch learners fitted by BMRM (Teo et al.) on a structural or pairwise risk,
lambda = 1/C (the risk is the mean over queries of each query's loss):

* SVMmap: the mean AP structural hinge;
* BMRM with the NDCG structural loss (Le & Smola / CofiRank);
* BMRM on the ranking-losses supplement's ordinal or preference loss.

Each module-level ``fit_*`` function fits one C; the config models at the end are the
learners' entries in the registry (their ``fit`` calls these).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, Union

import numpy as np
from pydantic import Field

from ltr_cli.learners.batch.bmrm import fit_bmrm
from ltr_cli.learners.batch.common import FEATURE_SCALE_HELP, Queries
from ltr_cli.learners.batch.convergence import FitContext
from ltr_cli.learners.batch.losses import APHinge, ndcg_structural_hinge
from ltr_cli.results.models import LinearModel
from ltr_cli.core.schema import BatchLearnerConfig, Grid
from ltr_cli.surrogates import SURROGATES


def fit_svmmap(train: Queries, C: float, threshold: float = 0.0, eps: float = 1e-3,
               max_iter: int = 1000, context: FitContext | None = None, feature_scale: str = "none") -> LinearModel:
    return fit_bmrm(train, APHinge(threshold), C, eps, max_iter, context, feature_scale)


def fit_bmrm_ndcg(train: Queries, C: float, k: int = 10, weights: str = "bmrm", eps: float = 1e-3,
                  max_iter: int = 1000, context: FitContext | None = None, feature_scale: str = "none") -> LinearModel:
    return fit_bmrm(train, lambda X, y, w: ndcg_structural_hinge(X, y, w, k, weights), C, eps, max_iter,
                    context, feature_scale)


def fit_bmrm_surrogate(train: Queries, C: float, loss: str, cost: Any = "uniform", eps: float = 1e-3,
                       max_iter: int = 1000, context: FitContext | None = None,
                       feature_scale: str = "none") -> LinearModel:
    """BMRM on a score-space surrogate of the ranking-losses supplement (``ordinal`` by its
    Algorithm 1, ``preference`` by its Algorithm 2), mean over queries, lambda = 1/C."""
    fn = SURROGATES[loss]

    def per_query(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray] | None:
        if np.unique(y).shape[0] < 2:
            return None
        value, grad_s = fn(X @ w, y, cost=cost)
        return value, X.T @ grad_s

    return fit_bmrm(train, per_query, C, eps, max_iter, context, feature_scale)


# --- config ------------------------------------------------------------------------------

FeatureScale = Literal["auto", "max-abs", "none"]
EPS_HELP = "stop when the duality gap is at most eps x the objective (relative)"
MAX_ITER_HELP = "iteration cap; a fit that reaches it without converging prints a warning"


class SVMmapSpec(BatchLearnerConfig):
    """SVMmap: structural SVM on 1 - AP (BMRM, lambda = 1/C)."""

    type: Literal["svmmap"]
    summary: ClassVar[str] = "batch (cv:): SVMmap, structural SVM on 1 - AP (BMRM)"
    grid: Grid = Field(default_factory=lambda: {"C": [0.1, 1.0, 10.0, 100.0]})
    relevance_threshold: float = Field(0.0, description="relevant (MAP, AP) = label > this")
    eps: float = Field(1e-3, gt=0, description=EPS_HELP)
    max_iter: int = Field(1000, gt=0, description=MAX_ITER_HELP)
    feature_scale: FeatureScale = Field("auto", description=FEATURE_SCALE_HELP)
    id_defaults: ClassVar[dict[str, Any]] = {"feature_scale": "auto"}

    def paper_role(self) -> str:
        return "SVMmap"  # its row in the paper's tables

    def fit(self, train: Queries, params: dict[str, Any], context: FitContext | None = None) -> LinearModel:
        return fit_svmmap(train, params["C"], self.relevance_threshold, self.eps, self.max_iter, context,
                          self.feature_scale)


class BMRMNDCGSpec(BatchLearnerConfig):
    """BMRM on the NDCG structural loss (Le & Smola / CofiRank)."""

    type: Literal["bmrm-ndcg"]
    summary: ClassVar[str] = "batch (cv:): BMRM on the NDCG structural loss (linear assignment)"
    grid: Grid = Field(default_factory=lambda: {"C": [0.1, 1.0, 10.0]})
    k: int = Field(10, gt=0, description="cut-off: NDCG@k")
    weights: Literal["bmrm", "cofirank"] = Field(
        "bmrm", description="score weights c: bmrm 1/log2(p + 2) in the top k; cofirank (p + 1)^-0.25")
    eps: float = Field(1e-3, gt=0, description=EPS_HELP)
    max_iter: int = Field(1000, gt=0, description=MAX_ITER_HELP)
    feature_scale: FeatureScale = Field("auto", description=FEATURE_SCALE_HELP)
    id_defaults: ClassVar[dict[str, Any]] = {"feature_scale": "auto"}

    def fit(self, train: Queries, params: dict[str, Any], context: FitContext | None = None) -> LinearModel:
        return fit_bmrm_ndcg(train, params["C"], self.k, self.weights, self.eps, self.max_iter, context,
                             self.feature_scale)


class BMRMSpec(BatchLearnerConfig):
    """BMRM on the ranking-losses supplement's ordinal-regression or preference loss."""

    type: Literal["bmrm"]
    summary: ClassVar[str] = "batch (cv:): BMRM on the supplement's ordinal or preference loss"
    loss: Literal["ordinal", "preference"] = Field(description="ordinal regression or preference pairs")
    cost: Union[Literal["uniform", "difference"], list[list[float]]] = Field(
        "uniform", description="pair costs: uniform, the label difference, or a matrix indexed by integer labels")
    grid: Grid = Field(default_factory=lambda: {"C": [0.1, 1.0, 10.0]})
    eps: float = Field(1e-3, gt=0, description=EPS_HELP)
    max_iter: int = Field(1000, gt=0, description=MAX_ITER_HELP)
    feature_scale: FeatureScale = Field("auto", description=FEATURE_SCALE_HELP)
    id_defaults: ClassVar[dict[str, Any]] = {"feature_scale": "auto"}

    def fit(self, train: Queries, params: dict[str, Any], context: FitContext | None = None) -> LinearModel:
        return fit_bmrm_surrogate(train, params["C"], self.loss, self.cost, self.eps, self.max_iter, context,
                                  self.feature_scale)
