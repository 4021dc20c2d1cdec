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

from typing import Any, ClassVar, Literal, Union

import numpy as np
from pydantic import Field, field_validator

from ltr_cli import kernels
from ltr_cli.errors import LtrError
from ltr_cli.core import codes
from ltr_cli.kernels import ogd_slots as slots
from ltr_cli.learners.online.family import BlockFamily
from ltr_cli.learners.online.family import register as register_family
from ltr_cli.learners.online.base import (NO_UPDATE, Feedback, LinearRanker, LossSpec, UpdateInfo, as_labels,
                                          round_result)
from ltr_cli.learners.online.schedules import StepSpec, reject_loss_scaled
from ltr_cli.core.schema import OnlineLearnerConfig
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
    """OGD on one surrogate, configured by its validated :class:`OGDSpec` or
    :class:`ListNetSpec` (``spec``), which it keeps and reads its settings from."""

    def __init__(self, spec: "_GradientConfig", n_features: int, ties: str = "input-order"):
        super().__init__(n_features, spec.step.schedule(), ties)
        self.spec = spec
        self.surrogate = spec.surrogate_name()
        self.numerics = spec.numerics_rule()
        self.params = spec.surrogate_params()
        self._fn = SURROGATES[self.surrogate]

    def regret_surrogate(self) -> LossSpec:
        """The surrogate it descends, on the ball of its projection radius."""
        return LossSpec(self.surrogate, dict(self.params), self.spec.radius, self.surrogate != "smoothdcg")

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        self.t += 1
        if feedback.labels is None:
            raise ValueError("the OGD learner needs full-label feedback")
        if self.use_kernels and kernels.ENABLED:
            if self.surrogate in _KERNEL_SURROGATES:
                return self._update_fast(X, as_labels(feedback.labels))
            scores = self._scores_fast(X)[:X.shape[0]]  # pairwise surrogates: in Python
        elif self.numerics == "authors-code":
            grad = listnet_authors_gradient(X, feedback.labels, self.w, self._reference_scores(X))
            with np.errstate(over="ignore", invalid="ignore"):
                self.w = project_to_ball(self.w - self.step(self.t) * grad, self.spec.radius)
            return UpdateInfo(mistake=False, updated=True)
        else:
            scores = self._reference_scores(X)
        with np.errstate(over="ignore", invalid="ignore"):
            value, grad_s = self._fn(scores, feedback.labels, **self.params)
            step = X.T @ grad_s
        if not np.all(np.isfinite(step)):
            raise self._not_finite()
        if not step.any():
            return UpdateInfo(mistake=False, updated=False, surrogate=value)
        with np.errstate(over="ignore", invalid="ignore"):  # the protocol checks w is finite
            self.w = project_to_ball(self.w - self.step(self.t) * step, self.spec.radius)
        return UpdateInfo(mistake=False, updated=True, surrogate=value)

    def block_kernel(self) -> tuple[BlockFamily, np.ndarray] | None:
        fast = self.fast and self.surrogate in _KERNEL_SURROGATES
        return (OGD_FAMILY, self.kernel_params()) if fast else None

    def _update_fast(self, X: np.ndarray, y: np.ndarray) -> UpdateInfo:
        """The same step in one compiled call (:func:`ltr_cli.kernels.ogd.ogd_round`)."""
        out = np.empty(self.w.shape[0])  # float64 like w; cheaper than empty_like
        value, status = (kernels.module or kernels.load()).ogd.ogd_round(
            X, y, self._scores_fast(X), self.w, self.kernel_params(), self.t, out)
        if status == codes.NOT_FINITE:
            raise self._not_finite()
        if status == codes.UPDATED:
            self.w = out
        return round_result(status, value)

    def _not_finite(self) -> LtrError:
        return LtrError(f"round {self.t}: the {self.surrogate} gradient step is not finite (features or "
                        "scores too large); rescale the features or use a smaller step or radius")

    def _make_params(self) -> np.ndarray:
        epsilon = float(self.params["epsilon"]) if self.surrogate == "smoothdcg" else 0.0
        radius = np.nan if self.spec.radius is None else float(self.spec.radius)
        P = OGD_FAMILY.parameters()
        P[slots.OGD_SURROGATE] = codes.SURROGATE_CODES[self.surrogate]
        P[slots.OGD_EPSILON] = epsilon
        P[slots.OGD_RADIUS] = radius
        self._put_step(P, slots.OGD_STEP_RULE, slots.OGD_ETA, slots.OGD_LOSS_SCALED)
        P[slots.OGD_NUMERICS] = float(NUMERICS.index(self.numerics))
        return P


# surrogates with a compiled OGD step; the pairwise ones run in Python
_KERNEL_SURROGATES = ("squared", "listnet", "kl", "smoothdcg")



OGD_FAMILY = register_family(BlockFamily("ogd", "ltr_cli.kernels.ogd:ogd_step", "ltr_cli.kernels.ogd:ogd_block", slots,
                                         not_finite=lambda learner: learner._not_finite()))


class RandomRanker:
    """Shows a uniformly random permutation every round (its own seeded stream); never learns."""

    feedback_k: int | None = None
    numerics = "stable"

    def resolved_settings(self) -> dict[str, object]:
        return {}

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

    def block_kernel(self) -> tuple[BlockFamily, np.ndarray] | None:
        return (RANDOM_FAMILY, np.zeros(1)) if kernels.ENABLED else None

    def block_draws(self, t0: int, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                               np.ndarray]:
        """The permutations :meth:`rank` would draw for lists of ``sizes`` documents, in
        round order (concatenated; round r's are ``perms[starts[r]:starts[r + 1]]``)."""
        n = sizes.shape[0]
        shown = [self.rng.permutation(m) for m in sizes.tolist()]
        starts = np.zeros(n + 1, dtype=np.int64)
        starts[1:] = np.cumsum(sizes)
        perms = np.concatenate(shown).astype(np.int64, copy=False) if shown else np.zeros(0, dtype=np.int64)
        return np.ones(n, dtype=np.bool_), perms, starts, np.zeros(n), np.zeros(n)


# --- config ------------------------------------------------------------------------------

NUMERICS_HELP = ("stable: shifted exponentials, a non-finite step is an error | authors-code: the "
                  "authors' unshifted expressions; weights may become NaN (reported, not an error)")
NumericsField = Literal["stable", "authors-code"]


class _GradientConfig(OnlineLearnerConfig):
    step: StepSpec = Field(StepSpec(), description="step size")
    radius: float | None = Field(None, gt=0, description="project w onto the ball of this radius (null: never)")

    _no_loss_scaling = field_validator("step")(lambda v: reject_loss_scaled(v))

    def surrogate_name(self) -> str:
        """The surrogate this learner descends (a key of :data:`ltr_cli.surrogates.SURROGATES`)."""
        raise NotImplementedError

    def surrogate_params(self) -> dict[str, Any]:
        """Keyword arguments of the surrogate function."""
        return {}

    def paper_role(self) -> str:
        return "listnet" if self.surrogate_name() == "listnet" else f"ogd-{self.surrogate_name()}"

    def default_label(self) -> str:
        return self.label or ("ListNet" if self.paper_role() == "listnet" else self.paper_role().upper())

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "step": self.step.schedule().describe(),
                "algorithm": "online gradient descent every round", "surrogate": self.surrogate_name(),
                "projection_radius": self.radius, "numerics": self.numerics_rule()}

    def numerics_rule(self) -> str:
        """``stable`` or ``authors-code`` (:data:`NUMERICS`)."""
        return "stable"


class OGDSpec(_GradientConfig):
    """Online gradient descent on a surrogate, every round, optional projection radius."""

    type: Literal["ogd"]
    examples: ClassVar[tuple[dict[str, Any], ...]] = (
        {"surrogate": "squared", "step": {"rule": "inv-sqrt", "eta": 0.01}},
        {"surrogate": "kl", "step": {"rule": "constant", "eta": 0.1}},
        {"surrogate": "smoothdcg", "epsilon": 0.1},
    )
    summary: ClassVar[str] = "OGD on any surrogate (squared, ranksvm, ordinal, preference, listnet, kl, smoothdcg)"
    surrogate: Literal["squared", "ranksvm", "ordinal", "preference", "listnet", "kl", "smoothdcg"] = Field(
        description="the surrogate descended")
    delta: float = Field(1.0, gt=0, description="ranksvm margin")
    cost: Union[Literal["uniform", "difference"], list[list[float]]] = Field(
        "uniform", description="ordinal/preference pair costs (matrix indexed by integer labels)")
    epsilon: float = Field(0.01, gt=0, description="smoothdcg smoothing")

    @field_validator("cost")
    @classmethod
    def _square_cost(cls, v: Any) -> Any:
        if isinstance(v, list):
            n = len(v)
            if n < 2 or any(len(row) != n for row in v):
                raise ValueError("the cost matrix must be square, at least 2 x 2 (one row per label 0..n-1)")
            if any(x < 0 for row in v for x in row):
                raise ValueError("cost matrix entries must be >= 0")
        return v

    def surrogate_name(self) -> str:
        return self.surrogate

    def surrogate_params(self) -> dict[str, Any]:
        params: dict[str, dict[str, Any]] = {"ranksvm": {"delta": self.delta}, "ordinal": {"cost": self.cost},
                "preference": {"cost": self.cost}, "smoothdcg": {"epsilon": self.epsilon}}
        return params.get(self.surrogate, {})

    def build(self, n_features: int, ties: str, rng: np.random.Generator,
              planned_rounds: int | None = None, fidelity: str = "paper") -> OGDLearner:
        return OGDLearner(self, n_features, ties)


class ListNetSpec(_GradientConfig):
    """Online ListNet (top-1 cross entropy, target softmax(R)), updated every round."""

    type: Literal["listnet"]
    examples: ClassVar[tuple[dict[str, Any], ...]] = (
        {"step": {"rule": "inv-sqrt", "eta": 0.5}, "radius": 3.0},
        {"numerics": "authors-code", "step": {"rule": "constant", "eta": 10000.0}},
    )
    summary: ClassVar[str] = "online ListNet: OGD on the top-1 cross entropy every round"
    bench_variants: ClassVar[tuple[dict[str, Any], ...]] = ({},)
    radius: float | None = Field(None, gt=0, description="project w onto the ball of this radius (null: never)")
    numerics: NumericsField = Field("stable", description=NUMERICS_HELP)

    def surrogate_name(self) -> str:
        return "listnet"

    def numerics_rule(self) -> str:
        return self.numerics

    def build(self, n_features: int, ties: str, rng: np.random.Generator,
              planned_rounds: int | None = None, fidelity: str = "paper") -> OGDLearner:
        return OGDLearner(self, n_features, ties)



# the random baseline keeps no round counter: its rounds are the run's
RANDOM_FAMILY = register_family(BlockFamily("random", "ltr_cli.kernels.loop:no_step", "ltr_cli.kernels.loop:random_block",
                                            draws=lambda learner, t0, sizes: learner.block_draws(t0, sizes),
                                            counts_rounds=False))


class RandomSpec(OnlineLearnerConfig):
    """A uniformly random ranking every round (a baseline that never learns)."""

    type: Literal["random"]
    summary: ClassVar[str] = "a uniformly random ranking every round"

    def default_label(self) -> str:
        return self.label or "Random"

    def build(self, n_features: int, ties: str, rng: np.random.Generator,
              planned_rounds: int | None = None, fidelity: str = "paper") -> RandomRanker:
        return RandomRanker(n_features, rng)
