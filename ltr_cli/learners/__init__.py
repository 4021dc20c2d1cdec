"""Online and batch learners, built from their config specs by :func:`build_learner`."""

from __future__ import annotations

from ltr_cli.config import LearnerSpec, SlamPerceptronSpec
from ltr_cli.learners.base import OnlineLearner
from ltr_cli.learners.perceptron import SlamPerceptron
from ltr_cli.learners.schedules import StepSchedule

LEARNER_HELP = {
    "slam-perceptron": "Alg. 2 of the perceptron paper on the SLAM surrogate with NDCG weights",
}


def build_learner(spec: LearnerSpec, n_features: int, ties: str) -> OnlineLearner:
    if isinstance(spec, SlamPerceptronSpec):
        return SlamPerceptron(
            n_features,
            step=StepSchedule(spec.step.rule, spec.step.eta),
            margin=spec.margin,
            delta=spec.delta,
            weights=spec.weights,
            mistake_cutoff=spec.mistake_cutoff,
            ties=ties,
        )
    raise TypeError(f"no learner for spec {type(spec).__name__}")


def default_label(spec: LearnerSpec) -> str:
    """Legend label in the paper's style (``SLAM``, later ``ListNet``, ``Alg3``...)."""
    if spec.label:
        return spec.label
    return "SLAM"


def describe_learner(spec: LearnerSpec) -> dict[str, object]:
    """Conventions of a learner, for the manifest."""
    if isinstance(spec, SlamPerceptronSpec):
        step = StepSchedule(spec.step.rule, spec.step.eta)
        return {
            "algorithm": "perceptron paper Alg. 2 (SLAM, v^NDCG)",
            "weights": spec.weights,
            "margin": f"{spec.margin} (delta={spec.delta:g})",
            "mistake_condition": f"1 - NDCG@{spec.mistake_cutoff or 'm'} != 0",
            "step": step.describe(),
        }
    return {}
