"""Online gradient descent on any surrogate, every round, with optional projection.

``w <- Proj_U(w - eta_t X^T grad_s phi(X w, R))`` where ``Proj_U`` rescales w onto the
Euclidean ball of radius U when it leaves it (no projection when ``radius`` is None).
Online ListNet (the perceptron paper's baseline) is this learner with the ``listnet``
surrogate. A non-finite gradient (e.g. KL's exp overflowing) raises instead of poisoning w,
except under ``numerics="authors-code"`` (ListNet only): then the gradient is the authors'
unshifted expression (:func:`ltr_cli.surrogates.listwise.listnet_authors_gradient`) and the
step is taken even when it is NaN, as their MATLAB did; the protocol reports the round.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli import kernels
from ltr_cli.errors import LtrError
from ltr_cli.learners.base import NO_UPDATE, Feedback, LinearRanker, UpdateInfo, as_labels
from ltr_cli.learners.schedules import StepSchedule
from ltr_cli.surrogates import SURROGATES
from ltr_cli.surrogates.listwise import listnet_authors_gradient

NUMERICS = ("stable", "authors-code")


def project_to_ball(w: np.ndarray, radius: float | None) -> np.ndarray:
    """Euclidean projection onto ``{w : ||w|| <= radius}`` (identity when radius is None, and
    when the norm is NaN, as MATLAB's ``min(1, U / norm(w)) * w``)."""
    if radius is None:
        return w
    norm = float(np.linalg.norm(w))
    return w if (norm <= radius or norm != norm) else w * (radius / norm)


class OGDLearner(LinearRanker):
    def __init__(
        self,
        n_features: int,
        surrogate: str,
        step: StepSchedule = StepSchedule(),
        radius: float | None = None,
        params: dict[str, Any] | None = None,
        ties: str = "input-order",
        numerics: str = "stable",
    ):
        if surrogate not in SURROGATES:
            raise ValueError(f"unknown surrogate {surrogate!r}; known: {', '.join(SURROGATES)}")
        if numerics not in NUMERICS or (numerics == "authors-code" and surrogate != "listnet"):
            raise ValueError(f"numerics {numerics!r} is not available for the {surrogate} surrogate")
        super().__init__(n_features, step, ties)
        self.numerics = numerics
        self.surrogate = surrogate
        self._fn = SURROGATES[surrogate]
        self.params = dict(params or {})
        self.radius = radius

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        self.t += 1
        if feedback.labels is None:
            raise ValueError("the OGD learner needs full-label feedback")
        if self.use_kernels and kernels.ENABLED:
            if self.surrogate in _KERNEL_SURROGATES:
                return self._update_fast(X, as_labels(feedback.labels))
            scores = self._scores_fast(X)[:X.shape[0]]  # pairwise surrogates: in Python
        elif self.numerics == "authors-code":
            grad = listnet_authors_gradient(X, feedback.labels, self.w)
            with np.errstate(over="ignore", invalid="ignore"):
                self.w = project_to_ball(self.w - self.step(self.t) * grad, self.radius)
            return UpdateInfo(mistake=False, updated=True)
        else:
            scores = X @ self.w
        with np.errstate(over="ignore", invalid="ignore"):
            value, grad_s = self._fn(scores, feedback.labels, **self.params)
            step = X.T @ grad_s
        if not np.all(np.isfinite(step)):
            raise self._not_finite()
        if not step.any():
            return UpdateInfo(mistake=False, updated=False, surrogate=value)
        with np.errstate(over="ignore", invalid="ignore"):  # the protocol checks w is finite
            self.w = project_to_ball(self.w - self.step(self.t) * step, self.radius)
        return UpdateInfo(mistake=False, updated=True, surrogate=value)

    def _update_fast(self, X: np.ndarray, y: np.ndarray) -> UpdateInfo:
        """The same step in one compiled call (:func:`ltr_cli.kernels._jit.ogd_round`)."""
        out = np.empty(self.w.shape[0])  # float64 like w; cheaper than empty_like
        value, status = (kernels.module or kernels.load()).ogd_round(
            X, y, self._scores_fast(X), self.w, self.kernel_params(), self.t, out)
        if status < 0:
            raise self._not_finite()
        if status == 0:
            return UpdateInfo(mistake=False, updated=False, surrogate=value)
        self.w = out
        return UpdateInfo(mistake=False, updated=True, surrogate=value)

    def _not_finite(self) -> LtrError:
        return LtrError(f"round {self.t}: the {self.surrogate} gradient step is not finite (features or "
                        "scores too large); rescale the features or use a smaller step or radius")

    def _make_params(self) -> np.ndarray:
        epsilon = float(self.params.get("epsilon", 0.01)) if self.surrogate == "smoothdcg" else 0.0
        radius = np.nan if self.radius is None else float(self.radius)
        return np.array([_KERNEL_SURROGATES[self.surrogate], epsilon, radius, *self._step_params(),
                         float(NUMERICS.index(self.numerics))], dtype=np.float64)


# surrogates with a compiled OGD step (codes of ogd_round); the pairwise ones run in Python
_KERNEL_SURROGATES = {"squared": 0.0, "listnet": 1.0, "kl": 2.0, "smoothdcg": 3.0}


class RandomRanker:
    """Shows a uniformly random permutation every round (its own seeded stream); never learns."""

    def __init__(self, n_features: int, rng: np.random.Generator):
        self.w = np.zeros(n_features)
        self.rng = rng

    @property
    def weights(self) -> np.ndarray:
        return self.w

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        return self.rng.permutation(X.shape[0])

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        return NO_UPDATE
