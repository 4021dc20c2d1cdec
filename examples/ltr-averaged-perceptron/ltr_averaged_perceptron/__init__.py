"""An averaged pairwise perceptron for ltr-cli, written against ``ltr_cli.api`` only."""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from ltr_cli import api


class AveragedPerceptron:
    """Shows the ranking of the averaged weights; learns from mis-ordered pairs.

    ``spec``: its validated config, kept as is (settings are read from it). State: ``w`` (d,)
    the perceptron's weights, ``w_sum`` (d,) their sum over the rounds so far, ``t`` the
    rounds seen. ``weights`` (the saved model) is ``w_sum / t``.
    """

    feedback_k: int | None = None  # needs every label
    numerics = "stable"
    state_fields = ("w", "w_sum", "t")

    def __init__(self, spec: "AveragedPerceptronSpec", n_features: int, ties: str):
        self.spec = spec
        self.w = np.zeros(n_features)
        self.w_sum = np.zeros(n_features)
        self.t = 0
        self.ties = ties

    @property
    def weights(self) -> np.ndarray:
        return self.w_sum / self.t if self.t else self.w

    def resolved_settings(self) -> dict[str, object]:
        return {"eta": self.spec.eta}

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return api.rank_from_scores(X @ self.weights, self.ties, rng)

    def update(self, X: np.ndarray, feedback: api.Feedback) -> api.UpdateInfo:
        y = feedback.labels
        assert y is not None  # full feedback (feedback_k is None)
        s = X @ self.w
        wrong = (y[:, None] > y[None, :]) & (s[:, None] <= s[None, :])
        pairs = int(wrong.sum())
        if pairs:
            i, j = np.nonzero(wrong)
            self.w = self.w + self.spec.eta * (X[i].sum(axis=0) - X[j].sum(axis=0)) / pairs
        self.t += 1
        self.w_sum = self.w_sum + self.w
        shown = api.ndcg_at_k(feedback.ranking, y, None, "one")
        return api.UpdateInfo(mistake=pairs > 0, updated=pairs > 0, surrogate=float(pairs),
                              ranking_loss=1.0 - shown)


class AveragedPerceptronSpec(api.OnlineLearnerConfig):
    """``{type: averaged-perceptron, eta: 1.0}``."""

    type: Literal["averaged-perceptron"]
    summary: ClassVar[str] = "averaged pairwise perceptron (example plugin)"
    eta: float = Field(1.0, gt=0, description="step size of a perceptron update")

    def default_label(self) -> str:
        return self.label or "AvgPerceptron"

    def build(self, n_features: int, ties: str, rng: np.random.Generator,
              planned_rounds: int | None = None, fidelity: str = "paper") -> AveragedPerceptron:
        return AveragedPerceptron(self, n_features, ties)
