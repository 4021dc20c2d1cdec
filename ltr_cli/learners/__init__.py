"""Online learners, built from their config specs by :func:`build_learner`."""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.config import (
    LearnerSpec,
    ListNetSpec,
    MaxPairPerceptronSpec,
    OGDSpec,
    RandomSpec,
    RTopKFSpec,
    SlamPerceptronSpec,
)
from ltr_cli.learners.base import OnlineLearner
from ltr_cli.learners.ogd import OGDLearner, RandomRanker
from ltr_cli.learners.perceptron import MaxPairPerceptron, SlamPerceptron
from ltr_cli.learners.rtopkf import RTopKF
from ltr_cli.learners.schedules import StepSchedule

LEARNER_HELP = {
    "slam-perceptron": "Alg. 2 of the perceptron paper on a SLAM surrogate (measure ndcg | ndcg@K | ap)",
    "alg3": "Alg. 3 of the perceptron paper (max-pair surrogate, Eq. 27)",
    "listnet": "online ListNet: OGD on the top-1 cross entropy every round",
    "ogd": "OGD on any surrogate (squared, ranksvm, ordinal, preference, listnet, kl, smoothdcg)",
    "rtopkf": "RTop-kF (top-k paper): learns from top-1/top-2 labels (squared, kl, smoothdcg, ranksvm)",
    "random": "a uniformly random ranking every round",
    "svmmap": "batch (cv:): SVMmap, structural SVM on 1 - AP (BMRM)",
    "ranksvm": "batch (cv:): Ranking SVM, pairwise hinge (BMRM)",
    "bmrm-ndcg": "batch (cv:): BMRM on the NDCG structural loss (linear assignment)",
    "bmrm": "batch (cv:): BMRM on the supplement's ordinal or preference loss",
    "adarank": "batch (cv:): AdaRank.MAP / AdaRank.NDCG with single-feature weak rankers",
    "rankboost": "batch (cv:): RankBoost with threshold stumps (RB-c)",
    "permurank": "batch (cv:): PermuRank.MAP (reconstructed working-set method)",
}


def _step(spec: Any) -> StepSchedule:
    return StepSchedule(spec.step.rule, spec.step.eta, spec.step.loss_scaled)


def build_learner(
    spec: LearnerSpec, n_features: int, ties: str, rng: np.random.Generator,
    planned_rounds: int | None = None, fidelity: str = "paper",
) -> OnlineLearner:
    """The learner a spec describes; ``rng`` is its own random stream; ``planned_rounds``
    is the stream's length when known (RTop-kF's paper schedule needs T); ``fidelity``
    the experiment's (it sets RTop-kF's default for short lists)."""
    if isinstance(spec, RTopKFSpec):
        default = 1.0 if spec.schedule == "paper" else 0.1
        gamma_scale = default if spec.gamma_scale is None else spec.gamma_scale  # 0: no exploration
        short = spec.short_lists or ("skip" if fidelity == "authors-code" else "learn")
        return RTopKF(n_features, spec.surrogate, rng, spec.schedule, spec.horizon or planned_rounds,
                      spec.eta_scale or default, gamma_scale, spec.radius, spec.epsilon, spec.fidelity,
                      ties, spec.miss_scale, spec.numerics, spec.direction, short)
    if isinstance(spec, SlamPerceptronSpec):
        return SlamPerceptron(n_features, _step(spec), spec.measure, spec.mistake, spec.weights,
                              spec.margin, spec.delta, spec.relevance_threshold, ties, spec.maximiser_ties)
    if isinstance(spec, MaxPairPerceptronSpec):
        return MaxPairPerceptron(n_features, _step(spec), spec.mistake, spec.margin, spec.delta,
                                 spec.relevance_threshold, ties, spec.maximiser_ties)
    if isinstance(spec, ListNetSpec):
        return OGDLearner(n_features, "listnet", _step(spec), spec.radius, ties=ties, numerics=spec.numerics)
    if isinstance(spec, OGDSpec):
        return OGDLearner(n_features, spec.surrogate, _step(spec), spec.radius,
                          spec.surrogate_params(), ties)
    if isinstance(spec, RandomSpec):
        return RandomRanker(n_features, rng)
    raise TypeError(f"no learner for spec {type(spec).__name__}")


def paper_role(spec: LearnerSpec) -> str:
    """Which curve of the papers a learner is: slam-ndcg, slam-ap, alg3, listnet, ogd-*, random."""
    if isinstance(spec, SlamPerceptronSpec):
        return "slam-ap" if spec.measure == "ap" else "slam-ndcg"
    if isinstance(spec, MaxPairPerceptronSpec):
        return "alg3"
    if isinstance(spec, ListNetSpec) or (isinstance(spec, OGDSpec) and spec.surrogate == "listnet"):
        return "listnet"
    if isinstance(spec, OGDSpec):
        return f"ogd-{spec.surrogate}"
    if isinstance(spec, RTopKFSpec):
        return f"rtopkf-{spec.surrogate}"
    return "random"


_DEFAULT_LABELS = {"slam-ndcg": "SLAM", "slam-ap": "SLAM", "alg3": "Alg3", "listnet": "ListNet",
                   "random": "Random"}


def default_label(spec: LearnerSpec) -> str:
    """Legend label in the paper's style (``SLAM``, ``Alg3``, ``ListNet``, ``OGD-squared``...)."""
    if spec.label:
        return spec.label
    role = paper_role(spec)
    if isinstance(spec, RTopKFSpec):
        names = {"squared": "Squared", "ranksvm": "RankSVM", "kl": "KL", "smoothdcg": "SmoothDCG"}
        return f"{names[spec.surrogate]} (top-{2 if spec.surrogate == 'ranksvm' else 1})"
    return _DEFAULT_LABELS.get(role, role.upper() if role.startswith("ogd") else role)


def describe_learner(spec: LearnerSpec) -> dict[str, object]:
    """Conventions of a learner, for the manifest."""
    out: dict[str, object] = {"type": spec.type, "role": paper_role(spec)}
    if isinstance(spec, RTopKFSpec):
        out.update(algorithm="top-k paper Alg. 1 (RTop-kF)", surrogate=spec.surrogate,
                   feedback=f"top-{2 if spec.surrogate == 'ranksvm' else 1}", schedule=spec.schedule,
                   horizon=spec.horizon, eta_scale=spec.eta_scale, gamma_scale=spec.gamma_scale,
                   projection_radius=spec.radius, epsilon=spec.epsilon,
                   estimator=("exact sampling law (unbiased)" if spec.fidelity == "exact"
                              else f"authors' code denominators {spec.miss_scale:g} gamma/m (BIASED)"),
                   numerics=spec.numerics)
        if spec.surrogate == "smoothdcg":
            out["direction"] = spec.direction
        return out
    if not isinstance(spec, RandomSpec):
        out["step"] = _step(spec).describe()
    if isinstance(spec, SlamPerceptronSpec):
        out.update(algorithm="perceptron paper Alg. 2", weights=f"v^{spec.measure} ({spec.weights})",
                   margin=f"{spec.margin} (delta={spec.delta:g})",
                   mistake_condition=f"1 - {spec.mistake or spec.measure} != 0",
                   maximiser_ties=spec.maximiser_ties,
                   within_level_order={"paper": "score order (proof of Thm 8)", "paper-fixed": "input order",
                                       "level-averaged": "level mean"}[spec.weights])
    elif isinstance(spec, MaxPairPerceptronSpec):
        out.update(algorithm="perceptron paper Alg. 3 (Eq. 27/29)",
                   margin=f"{spec.margin} (delta={spec.delta:g})",
                   mistake_condition=f"1 - {spec.mistake} != 0", maximiser_ties=spec.maximiser_ties)
    elif isinstance(spec, (ListNetSpec, OGDSpec)):
        surrogate = "listnet" if isinstance(spec, ListNetSpec) else spec.surrogate
        out.update(algorithm="online gradient descent every round", surrogate=surrogate,
                   projection_radius=spec.radius,
                   numerics=getattr(spec, "numerics", "stable"))
    return out
