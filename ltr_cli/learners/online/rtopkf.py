"""RTop-kF (top-k paper, Algorithm 1): online learning from the labels of the top-k
documents of the ranking that was shown.

Round t: exploit ranking ``sigma_t = argsort(X w)``; with probability gamma_t the learner
shows a uniformly random permutation instead (drawn from its own stream). The protocol
then reveals only the labels at the first k positions of the shown ranking (k = 1 for
squared, KL, SmoothDCG; 2 for RankSVM); the learner builds an unbiased estimate of the
surrogate's gradient (:mod:`ltr_cli.surrogates.topk_estimators`) and steps
``w <- Proj_U(w - eta_t X^T z)``.

Schedules: ``paper`` - fixed ``eta = c_eta T^(-2/3)``, ``gamma = c_gamma T^(-1/3)`` for the
planned number of rounds T (c = 1 in the paper); ``authors-code`` - decaying
``eta_t = c_eta t^(-2/3)``, ``gamma_t = c_gamma t^(-1/3)`` (c = 0.1 in the authors' code).
gamma is capped at 1/2, the range Alg. 1 allows (the decaying rule exceeds it only when
``c_gamma t^(-1/3) > 1/2``, e.g. at t = 1 with c_gamma = 1).

``short_lists="skip"`` (the authors' scripts): a list of fewer than 2 documents is shown in
file order without an exploration draw, and the learner does not update (its round still
counts for the schedules). ``numerics="authors-code"``: the authors' unshifted expressions;
a step that overflows to NaN is taken, as theirs was (the protocol reports the round).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, model_validator

from ltr_cli import kernels
from ltr_cli.errors import LtrError
from ltr_cli.core import codes
from ltr_cli.kernels import rtopkf_slots as slots
from ltr_cli.learners.online.family import BlockFamily
from ltr_cli.learners.online.family import register as register_family
from ltr_cli.learners.online.base import NO_UPDATE, Feedback, KernelScores, LossSpec, UpdateInfo, round_result
from ltr_cli.learners.online.ogd import NUMERICS_HELP, project_to_ball
from ltr_cli.measures.metrics import rank_from_scores
from ltr_cli.core.schema import OnlineLearnerConfig
from ltr_cli.surrogates.topk_estimators import FEEDBACK_K, estimate_score_gradient


class RTopKF(KernelScores):
    """Algorithm 1 of the top-k paper, configured by its :class:`RTopKFSpec`, which it keeps
    resolved for the run (:meth:`RTopKFSpec.resolved`: the horizon T, the rate constants and
    the short-list rule filled in) and reads its settings from. ``rng``: its own stream
    (exploration draws)."""

    def __init__(self, spec: "RTopKFSpec", n_features: int, rng: np.random.Generator, ties: str = "input-order",
                 planned_rounds: int | None = None, fidelity: str = "paper"):
        spec = spec.resolved(planned_rounds, fidelity)
        if spec.schedule == "paper" and not spec.horizon:
            raise LtrError(
                "rtopkf with schedule 'paper' needs the planned number of rounds T: set the "
                "learner's horizon, or protocol.max_rounds"
            )
        self.spec = spec
        self.w = np.zeros(n_features)
        self.t = 0
        self.rng = rng
        self.ties = ties
        self.surrogate = spec.surrogate
        self.feedback_k = FEEDBACK_K[spec.surrogate]
        self.numerics = spec.numerics
        self.skip_short = spec.short_lists == "skip"
        self._exploit: np.ndarray | None = None
        self._gamma = 0.0

    @property
    def weights(self) -> np.ndarray:
        return self.w

    def resolved_settings(self) -> dict[str, object]:
        """The schedule constants this run actually used (for the manifest)."""
        spec = self.spec
        return {"schedule": spec.schedule, "horizon": spec.horizon, "eta_scale": spec.eta_scale,
                "gamma_scale": spec.gamma_scale, "projection_radius": spec.radius,
                "feedback_k": self.feedback_k, "numerics": spec.numerics, "short_lists": spec.short_lists,
                **({"miss_scale": spec.miss_scale} if spec.fidelity == "authors-code" else {}),
                **({"direction": spec.direction} if spec.surrogate == "smoothdcg" else {})}

    def regret_surrogate(self) -> LossSpec:
        """The surrogate whose gradient it estimates (RankSVM's margin is 1, as in the
        estimator; SmoothDCG's loss is minus the smoothed DCG@1, not convex)."""
        spec = self.spec
        params = {"epsilon": spec.epsilon} if spec.surrogate == "smoothdcg" else {}
        return LossSpec(spec.surrogate, params, spec.radius, spec.surrogate != "smoothdcg")

    def rates(self, t: int) -> tuple[float, float]:
        """(eta_t, gamma_t) for round t (1-based)."""
        spec = self.spec
        assert spec.eta_scale is not None and spec.gamma_scale is not None  # resolved when built
        if spec.schedule == "paper":
            assert spec.horizon is not None  # checked when the learner is built
            T = float(spec.horizon)
            eta, gamma = spec.eta_scale * T ** (-2 / 3), spec.gamma_scale * T ** (-1 / 3)
        else:
            eta, gamma = spec.eta_scale * t ** (-2 / 3), spec.gamma_scale * t ** (-1 / 3)
        return eta, min(gamma, 0.5)

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.skip_short and X.shape[0] < 2:  # the authors skip the list: no draw
            self._exploit, self._gamma = np.arange(X.shape[0]), 0.0
            return self._exploit
        _, gamma = self.rates(self.t + 1)
        if self.use_kernels and kernels.ENABLED:
            exploit = self._rank_fast(X, rng)
        else:
            exploit = rank_from_scores(self._reference_scores(X), self.ties, rng)
        self._exploit, self._gamma = exploit, gamma
        if self.rng.random() < gamma:
            return self.rng.permutation(X.shape[0])
        return exploit

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        self.t += 1
        top = feedback.top_labels
        if top is None and feedback.labels is not None:  # full feedback: it reads the top k
            top = feedback.labels[feedback.ranking[:self.feedback_k]]
        if top is None or self._exploit is None:
            raise ValueError("RTop-kF learns from top-k feedback on the ranking it produced")
        m = X.shape[0]
        if m < self.feedback_k or (self.skip_short and m < 2):  # no pair to learn from, or skipped
            return NO_UPDATE
        eta, _ = self.rates(self.t)
        if self.use_kernels and kernels.ENABLED:
            return self._update_fast(X, feedback.ranking, top, eta)
        spec = self.spec
        with np.errstate(over="ignore", invalid="ignore"):
            z = estimate_score_gradient(self.surrogate, self._reference_scores(X), feedback.ranking,
                                        top, self._exploit, self._gamma,
                                        spec.fidelity, spec.epsilon, spec.miss_scale,
                                        self.numerics, spec.direction)
            step = X.T @ z
        finite = bool(np.all(np.isfinite(step)))
        if not finite and self.numerics != "authors-code":
            raise self._not_finite()
        if finite and not step.any():
            return UpdateInfo(mistake=False, updated=False)
        with np.errstate(over="ignore", invalid="ignore"):
            self.w = project_to_ball(self.w - eta * step, spec.radius)
        return UpdateInfo(mistake=False, updated=True)

    def block_kernel(self) -> tuple[BlockFamily, np.ndarray] | None:
        return (RTOPKF_FAMILY, self.kernel_params()) if self.fast else None

    def block_draws(self, t0: int, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                                                               np.ndarray]:
        """For rounds ``t0 + 1 ..`` of lists of ``sizes`` documents: whether each explores,
        the permutations shown (concatenated; round r's are ``perms[starts[r]:starts[r + 1]]``),
        gamma and eta: the draws :meth:`rank` makes from the learner's generator, in the
        same order (none for a list skipped as too short).

        The exploration coins are drawn many at a time (``random(k)`` gives the numbers that
        k calls of ``random()`` give); at the first coin that explores, the generator goes
        back to the state after that coin, draws the permutation and goes on, so every
        number comes from the generator in the per-round order."""
        n = sizes.shape[0]
        explore = np.zeros(n, dtype=np.bool_)
        gammas = np.zeros(n)
        etas, rates = self._block_rates(t0, n)
        lengths = sizes.tolist()
        drawn = [r for r, m in enumerate(lengths) if not (self.skip_short and m < 2)]
        gammas[drawn] = rates[drawn]
        coins = rates[drawn]  # each drawing round's gamma, in round order
        shown: list[np.ndarray] = []
        counts = np.zeros(n, dtype=np.int64)
        bits = self.rng.bit_generator
        i = 0
        while i < len(drawn):
            state = bits.state
            u = self.rng.random(len(drawn) - i)
            hits = np.flatnonzero(u < coins[i:])
            if hits.size == 0:
                break
            k = int(hits[0])
            if k + 1 < u.shape[0]:  # back to just after coin k
                bits.state = state
                self.rng.random(k + 1)
            r = drawn[i + k]
            explore[r] = True
            shown.append(self.rng.permutation(lengths[r]))
            counts[r] = lengths[r]
            i += k + 1
        starts = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=starts[1:])
        perms = np.concatenate(shown).astype(np.int64, copy=False) if shown else np.zeros(0, dtype=np.int64)
        return explore, perms, starts, gammas, etas

    def _block_rates(self, t0: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        """(eta_t, gamma_t) of :meth:`rates` for rounds ``t0 + 1 .. t0 + n``, as arrays (the
        same expressions, number by number)."""
        spec = self.spec
        if spec.schedule == "paper":
            eta, gamma = self.rates(t0 + 1)
            return np.full(n, eta), np.full(n, gamma)
        assert spec.eta_scale is not None and spec.gamma_scale is not None  # resolved when built
        es, gs = spec.eta_scale, spec.gamma_scale
        rounds = range(t0 + 1, t0 + n + 1)
        return (np.array([es * t ** (-2 / 3) for t in rounds], dtype=np.float64),
                np.array([min(gs * t ** (-1 / 3), 0.5) for t in rounds], dtype=np.float64))

    def _update_fast(self, X: np.ndarray, ranking: np.ndarray, top: np.ndarray, eta: float) -> UpdateInfo:
        """The same step in one compiled call (:func:`ltr_cli.kernels.rtopkf.rtopkf_round`);
        ``top`` the labels of the first shown documents."""
        if top.dtype != np.float64:
            top = np.asarray(top, dtype=np.float64)
        out = np.empty(self.w.shape[0])  # float64 like w; cheaper than empty_like
        status = (kernels.module or kernels.load()).rtopkf.rtopkf_round(
            X, self._scores_fast(X), ranking, top, self._exploit, self.w, self._gamma, eta,
            self.kernel_params(), out)
        if status == codes.NOT_FINITE:
            raise self._not_finite()
        if status == codes.UPDATED:
            self.w = out
        return round_result(status)

    def _not_finite(self) -> LtrError:
        return LtrError(f"round {self.t}: the {self.surrogate} gradient estimate is not finite")

    def _make_params(self) -> np.ndarray:
        spec = self.spec
        P = RTOPKF_FAMILY.parameters()
        P[slots.RT_SURROGATE] = codes.SURROGATE_CODES[spec.surrogate]
        P[slots.RT_FIDELITY] = 1.0 if spec.fidelity == "authors-code" else 0.0
        P[slots.RT_EPSILON] = float(spec.epsilon)
        P[slots.RT_RADIUS] = np.nan if spec.radius is None else float(spec.radius)
        P[slots.RT_MISS_SCALE] = float(spec.miss_scale)
        P[slots.RT_NUMERICS] = 1.0 if spec.numerics == "authors-code" else 0.0
        P[slots.RT_DESCEND] = 1.0 if spec.direction == "descend-gain" else 0.0
        P[slots.RT_FEEDBACK_K] = float(self.feedback_k)
        P[slots.RT_SKIP_SHORT] = 1.0 if self.skip_short else 0.0
        return P


# --- config ------------------------------------------------------------------------------

_LABELS = {"squared": "Squared", "ranksvm": "RankSVM", "kl": "KL", "smoothdcg": "SmoothDCG"}



RTOPKF_FAMILY = register_family(BlockFamily("rtopkf", "ltr_cli.kernels.rtopkf:rtopkf_step",
                                            "ltr_cli.kernels.rtopkf:rtopkf_block", slots,
                                            draws=lambda learner, t0, sizes: learner.block_draws(t0, sizes),
                                            not_finite=lambda learner: learner._not_finite()))


class RTopKFSpec(OnlineLearnerConfig):
    """RTop-kF (top-k paper, Alg. 1): learns from the labels of the top 1 (squared, KL,
    SmoothDCG) or top 2 (RankSVM) shown documents only."""

    type: Literal["rtopkf"]
    examples: ClassVar[tuple[dict[str, Any], ...]] = (
        {"surrogate": "squared", "schedule": "authors-code"},
        {"surrogate": "kl", "fidelity": "authors-code", "schedule": "authors-code"},
        {"surrogate": "smoothdcg", "direction": "ascend-gain", "gamma_scale": 3.0},
        {"surrogate": "ranksvm", "fidelity": "authors-code", "numerics": "authors-code", "short_lists": "skip",
         "schedule": "authors-code", "gamma_scale": 2.0},
        {"surrogate": "ranksvm", "radius": None},
    )
    summary: ClassVar[str] = "RTop-kF (top-k paper): learns from top-1/top-2 labels (squared, kl, smoothdcg, ranksvm)"
    bench_variants: ClassVar[tuple[dict[str, Any], ...]] = tuple(
        {"surrogate": s, "schedule": "authors-code"} for s in ("squared", "kl", "smoothdcg", "ranksvm"))
    surrogate: Literal["squared", "ranksvm", "kl", "smoothdcg"] = Field(
        description="squared, kl, smoothdcg (learn from the top 1 label) or ranksvm (the top 2)")
    schedule: Literal["paper", "authors-code"] = Field(
        "paper", description="paper: eta = c T^(-2/3), gamma = c T^(-1/3); authors-code: 0.1 t^(-2/3), 0.1 t^(-1/3)")
    horizon: int | None = Field(None, gt=0, description="planned rounds T (paper schedule); default: known stream length")
    eta_scale: float | None = Field(None, gt=0, description="c_eta (default 1 paper, 0.1 authors-code)")
    gamma_scale: float | None = Field(None, ge=0, description="c_gamma (default 1 paper, 0.1 authors-code; 0: no exploration)")
    radius: float | None = Field(1.0, gt=0, description="projection radius U")
    epsilon: float = Field(0.01, gt=0, description="SmoothDCG smoothing (authors' code: 0.001)")
    fidelity: Literal["exact", "authors-code"] = Field(
        "exact", description="estimator denominators: exact sampling law (unbiased) or the authors' c gamma/m (biased)")
    miss_scale: float = Field(
        0.001, gt=0, description="authors-code denominators: c in c gamma/m when the shown top is not the exploit "
        "top (0.001 RankingTopKF.m, 1 RankingTopKFYahooParam_1.m, 1000 RankingTopKFYandexParam_1.m)")
    numerics: Literal["stable", "authors-code"] = Field("stable", description=NUMERICS_HELP)
    direction: Literal["descend-gain", "ascend-gain"] = Field(
        "descend-gain", description="SmoothDCG: descend-gain steps w - eta z on the gain's gradient estimate, as the "
        "paper and the authors' code (it lowers DCG); ascend-gain is the corrected variant")
    short_lists: Literal["learn", "skip"] | None = Field(
        None, description="lists of fewer than 2 documents: skip (no draw, no update; the authors' scripts) | "
        "learn; default: skip under fidelity authors-code, else learn")

    @model_validator(mode="after")
    def _smoothdcg_only(self) -> "RTopKFSpec":
        if self.direction != "descend-gain" and self.surrogate != "smoothdcg":
            raise ValueError("direction applies to the smoothdcg surrogate only")
        return self

    def feedback_k(self) -> int | None:
        return FEEDBACK_K[self.surrogate]

    def needs_horizon(self) -> bool:
        return self.schedule == "paper" and not self.horizon

    def paper_role(self) -> str:
        return f"rtopkf-{self.surrogate}"

    def default_label(self) -> str:
        return self.label or f"{_LABELS[self.surrogate]} (top-{self.feedback_k()})"

    def describe(self) -> dict[str, Any]:
        out = {**super().describe(), "algorithm": "top-k paper Alg. 1 (RTop-kF)", "surrogate": self.surrogate,
               "feedback": f"top-{self.feedback_k()}", "schedule": self.schedule, "horizon": self.horizon,
               "eta_scale": self.eta_scale, "gamma_scale": self.gamma_scale, "projection_radius": self.radius,
               "epsilon": self.epsilon,
               "estimator": ("exact sampling law (unbiased)" if self.fidelity == "exact"
                             else f"authors' code denominators {self.miss_scale:g} gamma/m (BIASED)"),
               "numerics": self.numerics}
        if self.surrogate == "smoothdcg":
            out["direction"] = self.direction
        return out

    def resolved(self, planned_rounds: int | None = None, fidelity: str = "paper") -> "RTopKFSpec":
        """This config with its run-dependent defaults filled in: the horizon (the planned
        rounds), the rate constants (1 under the paper schedule, 0.1 under the authors'),
        and the short-list rule (skip under the experiment's ``authors-code`` fidelity)."""
        default = 1.0 if self.schedule == "paper" else 0.1
        return self.model_copy(update={
            "horizon": self.horizon or planned_rounds,
            "eta_scale": self.eta_scale or default,
            "gamma_scale": default if self.gamma_scale is None else self.gamma_scale,  # 0: no exploration
            "short_lists": self.short_lists or ("skip" if fidelity == "authors-code" else "learn")})

    def build(self, n_features: int, ties: str, rng: np.random.Generator,
              planned_rounds: int | None = None, fidelity: str = "paper") -> RTopKF:
        return RTopKF(self, n_features, rng, ties, planned_rounds, fidelity)
