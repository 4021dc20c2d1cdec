"""A linear dual learning algorithm (DLA; Ai, Bi, Luo, Guo and Croft, SIGIR 2018): a linear
ranker and the examination propensities of the positions learnt together from a click log.

Each session's shown documents get a softmax distribution from the ranker's scores s (the
relevance estimate R) and the positions a softmax from the propensity logits theta (the
examination estimate P); the two are fitted in turns (``rounds`` alternations), each by
L-BFGS with the other fixed, starting from equal propensities:

    ranker:     (1/N) sum_sessions sum_clicked min(P_1 / P_k, clip) (-log softmax(s)_i) + 1/(2C) ||w||^2
    propensity: (1/N) sum_sessions sum_clicked min(R_top / R_i, clip) (-log softmax(theta)_k)

with k the clicked document's position, R_top the relevance estimate of the document the
session showed first, and N the number of sessions. The inverse-propensity weights of the
ranker's loss and the inverse-relevance weights of the propensity's are each normalised by
position 1, as in the paper. Sessions without a click add nothing and are left out;
sessions alike (same query, list and clicks) are one row weighing their count. The learnt
relative propensities P_k / P_1 are kept in the model's info.

With a ``scorer:`` block (a per-document neural scorer of :mod:`ltr_cli.neural.scorers`,
an MLP, as in the DLA paper's DNN ranker), the ranker is that scorer: s = f_theta(x), its
flat parameters theta (P,) fitted by the same L-BFGS steps, the loss's gradient in the
scores carried to theta by the scorer's vector-Jacobian product (JAX,
:class:`~ltr_cli.neural.query_scorer.QueryScorer`; scores in float32), with the penalty
``||theta||^2 / (2C)`` on every parameter, from the scorer's own initialisation (seeded by
the run's seed). The model is a neural model (``ltr score`` and ``ltr eval`` read it as
the neural learner's). The loss is no longer convex in theta: a rerun is byte-identical,
another seed another local optimum.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from ltr_cli.clicklog.signal import ClickSignal
from ltr_cli.core.schema import BatchLearnerConfig, Grid
from ltr_cli.errors import LtrError
from ltr_cli.learners.batch.common import Queries
from ltr_cli.learners.batch.convergence import Convergence, FitContext
from ltr_cli.results.models import LinearModel


@dataclass
class Sessions:
    """Distinct sessions with a click, padded to ``K`` positions: ``rows`` (G, K) indices
    into ``X`` (-1: no document), ``click`` (G, K), ``count`` (G,); ``N`` all sessions."""

    X: np.ndarray
    rows: np.ndarray
    click: np.ndarray
    count: np.ndarray
    N: int


def distinct_sessions(train: Queries, clicks: Any) -> Sessions:
    s = clicks.sessions
    n = len(s.session)
    d = train[0][0].shape[1] if train else 0
    if not n or not s.click.any():
        return Sessions(np.zeros((0, d)), np.zeros((0, 1), np.int64), np.zeros((0, 1), bool), np.zeros(0), max(n, 1))
    starts = np.flatnonzero(np.r_[True, s.session[1:] != s.session[:-1]])
    lengths = np.diff(np.r_[starts, n])
    K = int(lengths.max())
    width = max(len(y) for _, y in train)
    keys, clicked, counts = [], [], []
    for k in np.unique(lengths):
        rows = starts[lengths == k][:, None] + np.arange(k)
        rows = rows[s.click[rows].any(axis=1)]
        if not len(rows):
            continue
        doc = s.query[rows[:, :1]].astype(np.int64) * width + s.doc[rows]  # one id per (query, document)
        key = np.column_stack((doc, s.click[rows]))
        uniq, count = np.unique(key, axis=0, return_counts=True)
        pad = np.full((len(uniq), K), -1, dtype=np.int64)
        pad[:, :k] = uniq[:, :k]
        cpad = np.zeros((len(uniq), K), dtype=bool)
        cpad[:, :k] = uniq[:, k:].astype(bool)
        keys.append(pad)
        clicked.append(cpad)
        counts.append(count)
    ids = np.concatenate(keys)
    used, inv = np.unique(ids[ids >= 0], return_inverse=True)
    rows_of = np.full(ids.shape, -1, dtype=np.int64)
    rows_of[ids >= 0] = inv.reshape(-1)
    X = np.vstack([np.asarray(train[int(u // width)][0], dtype=np.float64)[int(u % width)] for u in used]) \
        if len(used) else np.zeros((0, d))
    return Sessions(X, rows_of, np.concatenate(clicked), np.concatenate(counts).astype(float), n)


def _log_softmax(S: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Row-wise log-softmax over the ``mask``ed entries (0 elsewhere: never used)."""
    S = np.where(mask, S, -np.inf)
    top = S.max(axis=1, keepdims=True)
    return np.where(mask, S - top - np.log(np.exp(S - top).sum(axis=1, keepdims=True)), 0.0)


@dataclass
class LinearRanker:
    """The linear ranker of :func:`fit_dla`: scores ``X @ w``, from ``w = 0``."""

    X: np.ndarray

    def start(self) -> np.ndarray:
        return np.zeros(self.X.shape[1])

    def scores(self, w: np.ndarray) -> np.ndarray:
        return self.X @ w

    def pullback(self, w: np.ndarray, g: np.ndarray) -> np.ndarray:
        """The gradient in ``w`` of ``g @ scores(w)``."""
        return self.X.T @ g


@dataclass
class ScorerRanker:
    """A neural scorer as :func:`fit_dla`'s ranker: ``scorer`` a
    :class:`~ltr_cli.neural.query_scorer.QueryScorer`, the distinct documents ``X`` scored
    as one list (a per-document scorer scores each from its own features)."""

    X: np.ndarray
    scorer: Any

    def start(self) -> np.ndarray:
        return np.array(self.scorer.theta0)

    def scores(self, theta: np.ndarray) -> np.ndarray:
        return self.scorer.scores(theta, self.X) if len(self.X) else np.zeros(0)

    def pullback(self, theta: np.ndarray, g: np.ndarray) -> np.ndarray:
        return self.scorer.vjp(theta, self.X, g) if len(self.X) else np.zeros_like(theta)


def fit_dla(train: Queries, clicks: Any, C: float, rounds: int = 10, clip: float | None = 10.0,
            sessions: Sessions | None = None, ranker_of: Any = None) -> tuple[np.ndarray, dict[str, Any]]:
    """Alternate the ranker's and the propensities' L-BFGS fits ``rounds`` times: the
    ranker's parameters (``ranker_of(X)``'s, default :class:`LinearRanker`) and the model
    info (the relative propensities, the convergence record)."""
    from scipy.optimize import minimize

    data = sessions if sessions is not None else distinct_sessions(train, clicks)
    model = (ranker_of or LinearRanker)(data.X)
    K = data.rows.shape[1]
    mask = data.rows >= 0
    safe = np.where(mask, data.rows, 0)
    weight = data.count[:, None] * data.click / data.N  # each click's share of the mean over sessions
    positions = np.broadcast_to(np.arange(K), data.rows.shape)
    cap = np.inf if clip is None else clip
    w, theta = model.start(), np.zeros(K)
    total = float("nan")

    def ranker(w: np.ndarray, ipw: np.ndarray) -> tuple[float, np.ndarray]:
        S = model.scores(w)[safe]
        logp = _log_softmax(S, mask)
        cw = weight * ipw[positions]
        value = -float(np.sum(np.where(data.click, cw * logp, 0.0))) + float(w @ w) / (2 * C)
        grad_s = np.where(mask, np.exp(logp), 0.0) * cw.sum(axis=1, keepdims=True) - cw
        g = np.bincount(safe[mask], grad_s[mask], len(data.X)) if len(data.X) else np.zeros(0)
        return value, model.pullback(w, g) + w / C

    def propensity(theta: np.ndarray, irw: np.ndarray) -> tuple[float, np.ndarray]:
        logp = _log_softmax(np.broadcast_to(theta, data.rows.shape), mask)
        cw = weight * irw
        value = -float(np.sum(np.where(data.click, cw * logp, 0.0)))
        grad = np.where(mask, np.exp(logp), 0.0) * cw.sum(axis=1, keepdims=True) - cw
        return value, grad.sum(axis=0)

    for _ in range(rounds):
        P = np.exp(theta - theta.max())
        ipw = np.minimum(P[0] / P, cap)
        fit = minimize(ranker, w, args=(ipw,), jac=True, method="L-BFGS-B")
        w, total = fit.x, float(fit.fun)
        R = np.exp(_log_softmax(model.scores(w)[safe], mask))
        irw = np.minimum(R[:, :1] / np.where(mask, R, 1.0), cap)
        theta = minimize(propensity, theta, args=(irw,), jac=True, method="L-BFGS-B").x
    P = np.exp(theta - theta.max())
    relative = (P / P[0]).tolist()
    conv = Convergence("DLA (alternating L-BFGS)", rounds, total, float("nan"), 0.0, False, False, 0.0,
                       {"propensity": [float(f"{v:.6g}") for v in relative]})
    return w, {"propensity": relative, "convergence": conv.to_dict()}


class DLASpec(BatchLearnerConfig):
    """Linear DLA: a linear ranker and position propensities learnt jointly from a click log."""

    type: Literal["dla"]
    summary: ClassVar[str] = ("batch (cv:): linear DLA (Ai et al. 2018), ranker and propensities learnt jointly "
                              "from a click log (needs clicks:)")
    grid: Grid = Field(default_factory=lambda: {"C": [1.0, 10.0, 100.0]})
    rounds: int = Field(10, gt=0, le=1000, description="alternations of the ranker's and the propensities' fits")
    clicks: ClickSignal = Field(description="the click log of each fold (generate or log; correction: naive, the "
                                "raw clicks: DLA learns the propensities; clip bounds both weights)")
    scorer: dict[str, Any] | None = Field(
        None, description="a per-document neural scorer ({kind: mlp, hidden: [64], ...}, without dropout or "
        "noise) as the ranker instead of the linear one: DLA with a DNN (JAX; pip install -e '.[neural]')")
    id_defaults: ClassVar[dict[str, Any]] = {"scorer": None}  # added later: unset, run ids stay

    @field_validator("scorer")
    @classmethod
    def _scorer(cls, block: dict[str, Any] | None) -> dict[str, Any] | None:
        from ltr_cli.neural.query_scorer import checked_block

        return checked_block(block, "DLA's ranker (fitted by L-BFGS)", per_document=True)

    @model_validator(mode="after")
    def _raw_clicks(self) -> DLASpec:
        from ltr_cli.clicklog.estimators import ESTIMATORS, estimator

        chosen = estimator(self.clicks.correction)
        if chosen.weighs or chosen.positions or chosen.pairwise:
            raw = [n for n, e in ESTIMATORS.items() if not (e.weighs or e.positions or e.pairwise)]
            raise ValueError(f"clicks.correction: DLA learns the propensities from the raw clicks; give "
                             f"correction: {' or '.join(raw)}")
        if self.clicks.pairs != "unclicked":
            raise ValueError("clicks.pairs: DLA learns from each session's clicks; pairs: query is RankSVM's "
                             "(type: ranksvm)")
        return self

    def paper_role(self) -> str:
        return "DLA"

    def missing(self) -> str | None:
        if self.scorer is None:
            return None
        from ltr_cli.neural import jaxenv

        return jaxenv.missing()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "training_signal": "raw clicks, propensities learnt jointly (DLA)"}

    def fit(self, train: Queries, params: dict[str, Any], context: FitContext | None = None) -> Any:
        """A :class:`LinearModel`, or with ``scorer`` a neural model."""
        if context is None or context.clicks is None:
            raise LtrError("dla trains on a click log: run it under cv: with its clicks block")
        cache = context.clicks.cache
        if "dla" not in cache:
            cache["dla"] = distinct_sessions(train, context.clicks)
        if self.scorer is None:
            w, info = fit_dla(train, context.clicks, params["C"], self.rounds, self.clicks.clip, cache["dla"])
            return LinearModel(w, info)
        from ltr_cli.neural.model import NeuralModel
        from ltr_cli.neural.query_scorer import QueryScorer
        from ltr_cli.neural.transforms import Transform

        d = train[0][0].shape[1] if train else 0
        scorer = QueryScorer(self.scorer, d, int(context.seed))
        theta, info = fit_dla(train, context.clicks, params["C"], self.rounds, self.clicks.clip, cache["dla"],
                              lambda X: ScorerRanker(X, scorer))
        return NeuralModel(dict(self.scorer), 1, Transform([], d), scorer.named(theta), d, info=info)
