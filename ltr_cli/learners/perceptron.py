"""Algorithm 2 of the perceptron paper: online gradient steps on a SLAM surrogate, taken
only in rounds where the ranking measure's loss (RML) is non-zero.

Round t: scores ``s = X w``; the shown ranking sorts s under the run's tie policy; if
``1 - NDCG@k(ranking, R) != 0`` (k = m by default, or a cut-off such as 10), then
``w <- w - eta_t X^T grad_s phi^v(s, R)`` with v = v^NDCG (Eq. 11) and
``eta_t = eta`` or ``eta / sqrt(t)``. A query without relevant documents has RML 0 (its
weights v are all zero, so no step would change w anyway).
"""

from __future__ import annotations

import numpy as np

from ltr_cli.learners.base import Feedback, UpdateInfo
from ltr_cli.learners.schedules import StepSchedule
from ltr_cli.metrics import has_relevant, ndcg_at_k, rank_from_scores
from ltr_cli.surrogates.slam import ndcg_weights, slam_value_and_grad


class SlamPerceptron:
    """SLAM perceptron with NDCG weights (Alg. 2).

    Parameters: ``n_features`` d; ``step`` schedule; ``margin`` ``constant`` (paper Eq. 8)
    or ``label-difference`` (authors' code) with ``delta``; ``weights`` ``paper`` (Eq. 11)
    or ``level-averaged`` (authors' code); ``mistake_cutoff`` k of the NDCG whose loss
    triggers an update (None = m); ``ties`` the tie policy of the shown ranking.
    """

    def __init__(
        self,
        n_features: int,
        step: StepSchedule = StepSchedule(),
        margin: str = "constant",
        delta: float = 1.0,
        weights: str = "paper",
        mistake_cutoff: int | None = None,
        ties: str = "input-order",
    ):
        self.w = np.zeros(n_features)
        self.t = 0
        self.step = step
        self.margin = margin
        self.delta = delta
        self.level_average = weights == "level-averaged"
        self.mistake_cutoff = mistake_cutoff
        self.ties = ties

    @property
    def weights(self) -> np.ndarray:
        return self.w

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return rank_from_scores(X @ self.w, self.ties, rng)

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        self.t += 1
        y = feedback.labels
        if y is None:
            raise ValueError("the SLAM perceptron needs full-label feedback")
        if not has_relevant(y):
            return UpdateInfo(mistake=False, updated=False, surrogate=0.0)
        loss = 1.0 - ndcg_at_k(feedback.ranking, y, self.mistake_cutoff)
        if loss <= 1e-12:  # exact 1.0 for a perfect ranking; guard rounding only
            return UpdateInfo(mistake=False, updated=False, surrogate=float("nan"))
        v = ndcg_weights(y, self.level_average)
        value, grad_s = slam_value_and_grad(X @ self.w, y, v, self.margin, self.delta)
        if not grad_s.any():
            return UpdateInfo(mistake=True, updated=False, surrogate=value)
        self.w = self.w - self.step(self.t) * (X.T @ grad_s)
        return UpdateInfo(mistake=True, updated=True, surrogate=value)
