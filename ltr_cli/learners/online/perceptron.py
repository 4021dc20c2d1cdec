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

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from ltr_cli import kernels
from ltr_cli.core import codes
from ltr_cli.kernels import perceptron_slots as slots
from ltr_cli.learners.online.family import BlockFamily
from ltr_cli.learners.online.family import register as register_family
from ltr_cli.learners.online.base import (Feedback, LinearRanker, RankingMeasure, UpdateInfo, as_labels,
                                   round_result)
from ltr_cli.learners.online.base import parse_measure
from ltr_cli.learners.online.schedules import StepSpec
from ltr_cli.core.schema import OnlineLearnerConfig
from ltr_cli.surrogates.slam import (
    MAXIMISER_TIES,
    authors_feature_gradient,
    max_pair_value_and_grad,
    slam_terms,
    slam_value_and_grad,
    slam_weights,
)


class _MistakeDriven(LinearRanker):
    """Shared loop: rank by X w; on a mistake round take a (sub)gradient step.

    The learner keeps its validated config (``spec``: :class:`SlamPerceptronSpec` or
    :class:`MaxPairPerceptronSpec`) and reads its settings from it; ``mistake`` is the
    measure whose loss triggers updates."""

    spec: "_PerceptronConfig"

    def __init__(self, spec: "_PerceptronConfig", n_features: int, ties: str = "input-order"):
        super().__init__(n_features, spec.step.schedule(), ties)
        self.spec = spec
        self.mistake = RankingMeasure(spec.mistake_measure(), spec.relevance_threshold)

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
        scores = self._reference_scores(X)
        value, grad_s = self._surrogate(scores, y)
        if not grad_s.any():
            return UpdateInfo(mistake=True, updated=False, surrogate=value, ranking_loss=loss)
        self.w = self.w - self.step(self.t, loss) * self._feature_step(X, scores, y, grad_s)
        return UpdateInfo(mistake=True, updated=True, surrogate=value, ranking_loss=loss)

    def _feature_step(self, X: np.ndarray, scores: np.ndarray, y: np.ndarray, grad_s: np.ndarray) -> np.ndarray:
        """The subgradient in weight space, ``X.T @ grad_s`` (d,)."""
        return X.T @ grad_s

    def _put_surrogate(self, P: np.ndarray) -> None:
        """The surrogate's slots: ``PC_SURROGATE``, the weights (``PC_WEIGHTS_*``), margin
        and delta."""
        raise NotImplementedError

    def _make_params(self) -> np.ndarray:
        m, spec = self.mistake, self.spec
        P = PERCEPTRON_FAMILY.parameters()
        P[slots.PC_MISTAKE_AP] = 1.0 if m.kind == "ap" else 0.0
        P[slots.PC_MISTAKE_K] = -1.0 if m.k is None else float(m.k)
        P[slots.PC_THRESHOLD] = float(m.threshold)
        self._put_surrogate(P)
        P[slots.PC_MARGIN] = codes.MARGINS[spec.margin]
        P[slots.PC_DELTA] = float(spec.delta)
        self._put_step(P, slots.PC_STEP_RULE, slots.PC_ETA, slots.PC_LOSS_SCALED)
        P[slots.PC_MAXIMISER_TIES] = float(MAXIMISER_TIES.index(spec.maximiser_ties))
        return P

    @staticmethod
    def _surrogate_labels(labels: np.ndarray, measure: RankingMeasure) -> np.ndarray:
        """Labels as the surrogate sees them: binarised at the threshold when ``measure`` is AP."""
        if measure.kind == "ap":
            return (labels > measure.threshold).astype(np.float64)
        return labels


PERCEPTRON_FAMILY = register_family(BlockFamily(
    "perceptron", "ltr_cli.kernels.perceptron:perceptron_step", "ltr_cli.kernels.perceptron:perceptron_block",
    slots))


class SlamPerceptron(_MistakeDriven):
    """Algorithm 2 on a SLAM surrogate, configured by a :class:`SlamPerceptronSpec`:
    ``measure`` picks the weight vector (``ndcg``, ``ndcg@K``, ``ap``), ``mistake`` the RML
    measure (default: the same); ``weights``: ``paper`` (documents of a level in score
    order, as in the proof of Theorem 8), ``paper-fixed`` (in input order: phi convex) or
    ``level-averaged`` (authors' code); ``margin``: ``constant`` (Eq. 8, Delta = ``delta``)
    or ``label-difference`` (authors' code); ``relevance_threshold``: AP's threshold.
    """

    spec: "SlamPerceptronSpec"

    def __init__(self, spec: "SlamPerceptronSpec", n_features: int, ties: str = "input-order"):
        super().__init__(spec, n_features, ties)
        self.measure = RankingMeasure(spec.measure, spec.relevance_threshold)

    def weight_vector(self, labels: np.ndarray, scores: np.ndarray | None = None) -> np.ndarray:
        m, weights = self.measure, self.spec.weights
        order_by = scores if weights == "paper" else None
        return slam_weights(labels, order_by, m.kind, m.k, weights == "level-averaged", m.threshold)

    def _feature_step(self, X: np.ndarray, scores: np.ndarray, y: np.ndarray, grad_s: np.ndarray) -> np.ndarray:
        """``X.T @ grad_s``; under ``maximiser_ties: authors-code`` formed as the authors' code
        forms it (:func:`~ltr_cli.surrogates.slam.authors_feature_gradient`)."""
        spec = self.spec
        if spec.maximiser_ties != "authors-code":
            return X.T @ grad_s
        yy = self._surrogate_labels(y, self.measure)
        c, k = slam_terms(scores, yy, spec.margin, spec.delta, "authors-code")
        return authors_feature_gradient(X, yy, c, k, self.weight_vector(y, scores))

    def _put_surrogate(self, P: np.ndarray) -> None:
        m, weights = self.measure, self.spec.weights
        P[slots.PC_SURROGATE] = 0.0  # SLAM
        P[slots.PC_WEIGHTS_AP] = 1.0 if m.kind == "ap" else 0.0
        P[slots.PC_WEIGHTS_K] = -1.0 if m.k is None else float(m.k)
        P[slots.PC_WEIGHT_MODE] = {"paper": 0.0, "paper-fixed": 1.0, "level-averaged": 2.0}[weights]

    def _surrogate(self, scores: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray]:
        spec = self.spec
        v = self.weight_vector(labels, scores)
        return slam_value_and_grad(scores, self._surrogate_labels(labels, self.measure), v,
                                   spec.margin, spec.delta, spec.maximiser_ties)


class MaxPairPerceptron(_MistakeDriven):
    """Algorithm 3: the perceptron on phi_C (Eq. 27), the largest violated pair, configured
    by a :class:`MaxPairPerceptronSpec`."""

    def _put_surrogate(self, P: np.ndarray) -> None:
        P[slots.PC_SURROGATE] = 1.0  # max-pair
        P[slots.PC_WEIGHTS_AP], P[slots.PC_WEIGHTS_K], P[slots.PC_WEIGHT_MODE] = 0.0, -1.0, 1.0  # unused

    def _surrogate(self, scores: np.ndarray, labels: np.ndarray) -> tuple[float, np.ndarray]:
        spec = self.spec
        return max_pair_value_and_grad(scores, self._surrogate_labels(labels, self.mistake), spec.margin,
                                       spec.delta, spec.maximiser_ties)


# --- config ------------------------------------------------------------------------------

_MAXIMISER_TIES_HELP = ("equal hinge terms inside the surrogate: first-index (smallest document "
                        "index) | authors-code (higher relevance level, then the later document)")


def _measure_name(value: str | None) -> str | None:
    return None if value is None else parse_measure(value)


class _PerceptronConfig(OnlineLearnerConfig):
    step: StepSpec = Field(StepSpec(), description="step size")
    margin: Literal["constant", "label-difference"] = Field(
        "constant", description="hinge margin: constant delta (Eq. 8) or (R_i - R_j) delta (the authors' code)")
    delta: float = Field(1.0, gt=0, description="margin scale")
    relevance_threshold: float = Field(0.0, description="AP: relevant = label > this")
    maximiser_ties: Literal["first-index", "authors-code"] = Field(
        "first-index", description=_MAXIMISER_TIES_HELP)

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "step": self.step.schedule().describe(),
                "margin": f"{self.margin} (delta={self.delta:g})",
                "mistake_condition": f"1 - {self.mistake_measure()} != 0", "maximiser_ties": self.maximiser_ties}

    def mistake_measure(self) -> str:
        """The measure whose loss triggers updates."""
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

    def mistake_measure(self) -> str:
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
        return SlamPerceptron(self, n_features, ties)


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

    def mistake_measure(self) -> str:
        return self.mistake

    def default_label(self) -> str:
        return self.label or "Alg3"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "algorithm": "perceptron paper Alg. 3 (Eq. 27/29)"}

    def build(self, n_features: int, ties: str, rng: np.random.Generator,
              planned_rounds: int | None = None, fidelity: str = "paper") -> MaxPairPerceptron:
        return MaxPairPerceptron(self, n_features, ties)
