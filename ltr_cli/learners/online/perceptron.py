"""The perceptron paper's two mistake-driven learners.

**Algorithm 2** (SLAM perceptron): round t, scores ``s = X w``, the shown ranking sorts s
under the run's tie policy; if the ranking-measure loss (RML) is non-zero,
``w <- w - eta_t X^T grad_s phi^v(s, R)`` with v = v^NDCG (Eq. 11), v^NDCG@k (Eq. 24) or
v^AP (Eq. 10; then R is binarised, labels > threshold relevant).

**Algorithm 3**: the same loop on the max-pair surrogate phi_C of Eq. 27 (subgradient
Eq. 29), which does not depend on the measure.

Step ``eta_t``: ``eta``, ``eta / sqrt(t)``, optionally times the round's RML (the authors'
Alg. 3 step). A query without relevant documents has RML 0, so it never causes an update.
"""

from __future__ import annotations

from typing import Any, Callable, ClassVar, Literal, cast

import numpy as np
from pydantic import Field, field_validator

from ltr_cli import kernels
from ltr_cli.kernels import codes
from ltr_cli.learners.online.family import BlockFamily, linear_call
from ltr_cli.learners.online.family import register as register_family
from ltr_cli.learners.online.base import (Feedback, LinearRanker, RankingMeasure, UpdateInfo, as_labels,
                                   round_result)
from ltr_cli.learners.online.base import parse_measure
from ltr_cli.learners.online.schedules import StepSchedule, StepSpec
from ltr_cli.config.schema import OnlineLearnerConfig
from ltr_cli.surrogates.slam import (
    MAXIMISER_TIES,
    Margin,
    MaximiserTies,
    max_pair_value_and_grad,
    slam_value_and_grad,
    slam_weights,
)


class _MistakeDriven(LinearRanker):
    """Shared loop: rank by X w; on a mistake round take a (sub)gradient step."""

    def __init__(self, n_features: int, step: StepSchedule, mistake: RankingMeasure, ties: str,
                 maximiser_ties: str = "first-index"):
        super().__init__(n_features, step, ties)
        self.mistake = mistake
        if maximiser_ties not in MAXIMISER_TIES:
            raise ValueError(f"unknown maximiser tie rule {maximiser_ties!r}")
        self.maximiser_ties = maximiser_ties

    def _surrogate(self, scores: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray]:
        raise NotImplementedError

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        self.t += 1
        ranking, y = feedback.ranking, feedback.labels
        if y is None:
            raise ValueError(f"{type(self).__name__} needs full-label feedback")
        if not (self.use_kernels and kernels.ENABLED):
            return self._update_reference(X, ranking, y)
        # the same update in one compiled call (ltr_cli.kernels.perceptron.perceptron_round)
        y = as_labels(y)
        w = self.w
        out = np.empty(w.shape[0])  # float64 like w; cheaper than empty_like
        loss, value, status = (kernels.module or kernels.load()).perceptron.perceptron_round(
            X, y, ranking, self._scores_fast(X), w, self.kernel_params(), self.t,
            kernels.discounts(y.shape[0]), out, self._ranked_code())
        if status == codes.UPDATED:
            self.w = out
        return round_result(status, value, loss, mistake_driven=True)

    def block_kernel(self) -> tuple[BlockFamily, np.ndarray] | None:
        return (PERCEPTRON_FAMILY, self.kernel_params()) if self.fast else None

    def _update_reference(self, X: np.ndarray, ranking: np.ndarray, y: np.ndarray) -> UpdateInfo:
        """The slow reference update (numpy and the functions of ltr_cli.surrogates)."""
        loss = self.mistake.loss(ranking, y)
        if loss <= 1e-12:  # exactly 0 for a perfect ranking; guard rounding only
            return UpdateInfo(mistake=False, updated=False, ranking_loss=0.0)
        value, grad_s = self._surrogate(X @ self.w, y)
        if not grad_s.any():
            return UpdateInfo(mistake=True, updated=False, surrogate=value, ranking_loss=loss)
        self.w = self.w - self.step(self.t, loss) * (X.T @ grad_s)
        return UpdateInfo(mistake=True, updated=True, surrogate=value, ranking_loss=loss)

    def _put_surrogate(self, P: np.ndarray) -> None:
        """The surrogate's slots: ``PC_SURROGATE``, the weights (``PC_WEIGHTS_*``), margin
        and delta."""
        raise NotImplementedError

    def _make_params(self) -> np.ndarray:
        m = self.mistake
        P = np.zeros(codes.PC_SIZE)
        P[codes.PC_MISTAKE_AP] = 1.0 if m.kind == "ap" else 0.0
        P[codes.PC_MISTAKE_K] = -1.0 if m.k is None else float(m.k)
        P[codes.PC_THRESHOLD] = float(m.threshold)
        self._put_surrogate(P)
        self._put_step(P, codes.PC_STEP_RULE, codes.PC_ETA, codes.PC_LOSS_SCALED)
        P[codes.PC_MAXIMISER_TIES] = float(MAXIMISER_TIES.index(self.maximiser_ties))
        return P


def _put_margin(P: np.ndarray, margin: str, delta: float) -> None:
    if margin not in codes.MARGINS:
        raise ValueError(f"unknown SLAM margin {margin!r}")
    P[codes.PC_MARGIN] = codes.MARGINS[margin]
    P[codes.PC_DELTA] = float(delta)



def _perceptron_block() -> Callable[..., None]:
    return kernels.load().loop.perceptron_block


PERCEPTRON_FAMILY = register_family(BlockFamily(codes.BLOCK_PERCEPTRON, "perceptron", _perceptron_block, linear_call))


class SlamPerceptron(_MistakeDriven):
    """Algorithm 2 on a SLAM surrogate.

    ``measure``: which weight vector (``ndcg``, ``ndcg@K``, ``ap``); ``mistake``: the RML
    measure (default: the same); ``weights``: ``paper`` (documents of a level in score
    order, as in the proof of Theorem 8), ``paper-fixed`` (in input order: phi convex) or
    ``level-averaged`` (authors' code); ``margin``: ``constant`` (Eq. 8, Delta = ``delta``)
    or ``label-difference`` (authors' code); ``threshold``: AP's relevance threshold.
    """

    def __init__(
        self,
        n_features: int,
        step: StepSchedule = StepSchedule(),
        measure: str = "ndcg",
        mistake: str | None = None,
        weights: str = "paper",
        margin: str = "constant",
        delta: float = 1.0,
        threshold: float = 0.0,
        ties: str = "input-order",
        maximiser_ties: str = "first-index",
    ):
        super().__init__(n_features, step, RankingMeasure(mistake or measure, threshold), ties, maximiser_ties)
        self.measure = RankingMeasure(measure, threshold)
        self.level_average = weights == "level-averaged"
        self.score_ordered = weights == "paper"
        self.margin = margin
        self.delta = delta

    def weight_vector(self, labels: np.ndarray, scores: np.ndarray | None = None) -> np.ndarray:
        m = self.measure
        order_by = scores if self.score_ordered else None
        return slam_weights(labels, order_by, m.kind, m.k, self.level_average, m.threshold)

    def _put_surrogate(self, P: np.ndarray) -> None:
        m = self.measure
        P[codes.PC_SURROGATE] = 0.0  # SLAM
        P[codes.PC_WEIGHTS_AP] = 1.0 if m.kind == "ap" else 0.0
        P[codes.PC_WEIGHTS_K] = -1.0 if m.k is None else float(m.k)
        P[codes.PC_WEIGHT_MODE] = 0.0 if self.score_ordered else (2.0 if self.level_average else 1.0)
        _put_margin(P, self.margin, self.delta)

    def _surrogate(self, scores: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray]:
        v = self.weight_vector(labels, scores)
        if self.measure.kind == "ap":
            labels = (labels > self.measure.threshold).astype(np.float64)
        return slam_value_and_grad(scores, labels, v, cast(Margin, self.margin), self.delta,
                                   cast(MaximiserTies, self.maximiser_ties))


class MaxPairPerceptron(_MistakeDriven):
    """Algorithm 3: the perceptron on phi_C (Eq. 27), the largest violated pair."""

    def __init__(
        self,
        n_features: int,
        step: StepSchedule = StepSchedule(),
        mistake: str = "ndcg",
        margin: str = "constant",
        delta: float = 1.0,
        threshold: float = 0.0,
        ties: str = "input-order",
        maximiser_ties: str = "first-index",
    ):
        super().__init__(n_features, step, RankingMeasure(mistake, threshold), ties, maximiser_ties)
        self.margin = margin
        self.delta = delta

    def _put_surrogate(self, P: np.ndarray) -> None:
        P[codes.PC_SURROGATE] = 1.0  # max-pair
        P[codes.PC_WEIGHTS_AP], P[codes.PC_WEIGHTS_K], P[codes.PC_WEIGHT_MODE] = 0.0, -1.0, 1.0  # unused
        _put_margin(P, self.margin, self.delta)

    def _surrogate(self, scores: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray]:
        if self.mistake.kind == "ap":
            labels = (labels > self.mistake.threshold).astype(np.float64)
        return max_pair_value_and_grad(scores, labels, cast(Margin, self.margin), self.delta,
                                       cast(MaximiserTies, self.maximiser_ties))


# --- config ------------------------------------------------------------------------------

_MAXIMISER_TIES_HELP = ("equal hinge terms inside the surrogate: first-index (smallest document "
                        "index) | authors-code (higher relevance level, then the later document)")


def _measure_name(value: str | None) -> str | None:
    return None if value is None else parse_measure(value)


class _PerceptronConfig(OnlineLearnerConfig):
    step: StepSpec = StepSpec()
    margin: Literal["constant", "label-difference"] = "constant"
    delta: float = Field(1.0, gt=0)
    relevance_threshold: float = Field(0.0, description="AP: relevant = label > this")
    maximiser_ties: Literal["first-index", "authors-code"] = Field(
        "first-index", description=_MAXIMISER_TIES_HELP)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "step": self.step.schedule().describe(),
                "margin": f"{self.margin} (delta={self.delta:g})",
                "mistake_condition": f"1 - {self._mistake()} != 0", "maximiser_ties": self.maximiser_ties}

    def _mistake(self) -> str:
        raise NotImplementedError


class SlamPerceptronSpec(_PerceptronConfig):
    """Algorithm 2 (perceptron paper) on a SLAM surrogate."""

    type: Literal["slam-perceptron"]
    examples: ClassVar[tuple[dict[str, Any], ...]] = (
        {"measure": "ndcg", "mistake": "ndcg@10", "weights": "level-averaged", "margin": "label-difference",
         "maximiser_ties": "authors-code"},
        {"measure": "ndcg@5", "weights": "paper", "step": {"rule": "constant", "eta": 0.5}},
        {"measure": "ndcg", "weights": "paper-fixed"},
        {"measure": "ap", "mistake": "ndcg@10", "relevance_threshold": 1},
        {"measure": "ap", "mistake": "ap"},
    )
    summary: ClassVar[str] = "Alg. 2 of the perceptron paper on a SLAM surrogate (measure ndcg | ndcg@K | ap)"
    bench_variants: ClassVar[tuple[dict[str, Any], ...]] = (
        {"measure": "ndcg", "mistake": "ndcg@10", "weights": "level-averaged", "margin": "label-difference"},
        {"measure": "ap", "weights": "level-averaged"},
    )
    measure: str = Field("ndcg", description="weight vector: ndcg (Eq. 11), ndcg@K (Eq. 24), ap (Eq. 10)")
    mistake: str | None = Field(None, description="measure whose loss triggers updates; default: measure")
    weights: Literal["paper", "paper-fixed", "level-averaged"] = Field(
        "paper", description="paper: score order within a level (exchangeable); paper-fixed: "
        "input order (convex); level-averaged: the authors' code")

    _measures = field_validator("measure", "mistake")(_measure_name)

    def _mistake(self) -> str:
        return self.mistake or self.measure

    def paper_role(self) -> str:
        return "slam-ap" if self.measure == "ap" else "slam-ndcg"

    def default_label(self) -> str:
        return self.label or "SLAM"

    def describe(self) -> dict[str, Any]:
        order = {"paper": "score order (proof of Thm 8)", "paper-fixed": "input order",
                 "level-averaged": "level mean"}[self.weights]
        return {**super().describe(), "algorithm": "perceptron paper Alg. 2",
                "weights": f"v^{self.measure} ({self.weights})", "within_level_order": order}

    def build(self, n_features: int, ties: str, rng: np.random.Generator,
              planned_rounds: int | None = None, fidelity: str = "paper") -> SlamPerceptron:
        return SlamPerceptron(n_features, self.step.schedule(), self.measure, self.mistake, self.weights,
                              self.margin, self.delta, self.relevance_threshold, ties, self.maximiser_ties)


class MaxPairPerceptronSpec(_PerceptronConfig):
    """Algorithm 3 (perceptron paper): the max-pair surrogate of Eq. 27."""

    type: Literal["alg3"]
    examples: ClassVar[tuple[dict[str, Any], ...]] = (
        {"mistake": "ndcg@10", "step": {"rule": "constant", "eta": 1.0, "loss_scaled": True}},
        {"maximiser_ties": "first-index"},
    )
    summary: ClassVar[str] = "Alg. 3 of the perceptron paper (max-pair surrogate, Eq. 27)"
    bench_variants: ClassVar[tuple[dict[str, Any], ...]] = (
        {"mistake": "ndcg@10", "step": {"rule": "constant", "eta": 1.0, "loss_scaled": True}},)
    mistake: str = Field("ndcg", description="measure whose loss triggers updates")

    _measures = field_validator("mistake")(_measure_name)

    def _mistake(self) -> str:
        return self.mistake

    def default_label(self) -> str:
        return self.label or "Alg3"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "algorithm": "perceptron paper Alg. 3 (Eq. 27/29)"}

    def build(self, n_features: int, ties: str, rng: np.random.Generator,
              planned_rounds: int | None = None, fidelity: str = "paper") -> MaxPairPerceptron:
        return MaxPairPerceptron(n_features, self.step.schedule(), self.mistake, self.margin, self.delta,
                                 self.relevance_threshold, ties, self.maximiser_ties)
