"""The boosting learners of the direct-optimisation paper's comparison:

* AdaRank (Xu & Li 2007), the paper's update as rueycheng/AdaRank implements it: single
  features as weak rankers, query weights ``P_q ~ exp(-E(f_t, q))`` from the combined model,
  with RankLib's guard against re-choosing a feature that no longer changes anything;
  measure ``map`` (AP on labels > threshold) or ``ndcg@k`` (paper gains, a query without
  relevant documents scores 0 in the averages).
* RankBoost (Freund et al. 2003), "RB-c": threshold stumps ``1[x_f > theta]`` at midpoints
  between distinct feature values, the stump with the largest |r|, ``alpha = 1/2 ln((1+r)/(1-r))``.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from ltr_cli.learners.batch.common import Queries, batch_measure, measure_fn, rank
from ltr_cli.learners.batch.convergence import FitContext
from ltr_cli.results.models import LinearModel, StumpModel
from ltr_cli.config.schema import BatchLearnerConfig, Grid


def fit_adarank(train: Queries, measure: str = "map", rounds: int = 500, tol: float | None = None,
                threshold: float = 0.0, alpha_cap: float = 10.0, max_consecutive: int = 5) -> LinearModel:
    """AdaRank for ``rounds`` rounds; returns the combined model of the last round, as the
    paper's Algorithm 1 outputs f_T (the number of rounds is the hyper-parameter the CV
    grid tunes).

    Two guards from RankLib's AdaRank: a feature chosen ``max_consecutive`` times in a row
    without changing any query's measure (so the query weights, and with them the next
    choice, stay the same) leaves the pool of weak rankers until a query's measure changes
    again; and with ``tol`` set, training stops when the mean training measure falls by
    more than ``tol`` from one round to the next, and that round is undone. None (the
    default, the paper): all rounds. ``info["selected_features"]`` is the sequence of
    chosen features, one per kept round."""
    E = measure_fn(measure, threshold)
    d = train[0][0].shape[1]
    m = len(train)
    Eh = np.array([[E(rank(X[:, k]), y) for X, y in train] for k in range(d)])  # (d, m)
    P = np.full(m, 1.0 / m)
    w = np.zeros(d)
    excluded = np.zeros(d, dtype=bool)
    last_k, repeats, last_mean, last_Ef = -1, 0, -np.inf, np.full(m, np.nan)
    trace: list[dict[str, Any]] = []
    while len(trace) < rounds and not excluded.all():
        k = int(np.argmax(np.where(excluded, -np.inf, Eh @ P)))
        num, den = float(P @ (1 + Eh[k])), float(P @ (1 - Eh[k]))
        alpha = alpha_cap if den <= 0 else min(alpha_cap, 0.5 * np.log(num / den))
        Ef = np.array([E(rank(X @ (w + alpha * np.eye(1, d, k)[0])), y) for X, y in train])
        mean = float(Ef.mean())
        if tol is not None and mean < last_mean - tol:
            break
        w[k] += alpha
        trace.append({"round": len(trace) + 1, "feature": k, "alpha": alpha, "mean": mean})
        if k == last_k and np.array_equal(Ef, last_Ef):
            repeats += 1
            if repeats >= max_consecutive:
                excluded[k] = True
                repeats = 0
        else:
            repeats = 1
            if not np.array_equal(Ef, last_Ef):
                excluded[:] = False
        last_k, last_mean, last_Ef = k, mean, Ef
        P = np.exp(-Ef) / np.exp(-Ef).sum()
    return LinearModel(w, {"rounds": len(trace), "train_measure": last_mean if trace else None,
                           "selected_features": [r["feature"] for r in trace], "trace": trace})


def _pairs(train: Queries) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All within-query (lower, higher) document index pairs, over stacked documents."""
    lows, highs = [], []
    offset = 0
    for _, y in train:
        lo, hi = np.nonzero(y[:, None] < y[None, :])
        lows.append(lo + offset)
        highs.append(hi + offset)
        offset += y.shape[0]
    X = np.vstack([X for X, _ in train])
    return X, np.concatenate(lows), np.concatenate(highs)


def fit_rankboost(train: Queries, rounds: int = 300) -> StumpModel:
    """RankBoost RB-c with threshold stumps at midpoints between distinct values."""
    X, lo, hi = _pairs(train)
    n, d = X.shape
    if lo.size == 0:
        return StumpModel([], [], [], {"rounds": 0}, n_features=d)
    D = np.full(lo.size, 1.0 / lo.size)
    order = [np.argsort(-X[:, f], kind="stable") for f in range(d)]
    model = StumpModel([], [], [], n_features=d)
    for _ in range(rounds):
        pot = np.zeros(n)
        np.add.at(pot, hi, D)
        np.subtract.at(pot, lo, D)
        best = (0.0, -1, 0.0)
        for f in range(d):
            xs = X[order[f], f]
            cum = np.cumsum(pot[order[f]])
            cuts = np.flatnonzero(xs[:-1] > xs[1:])  # between distinct values
            if cuts.size == 0:
                continue
            r = cum[cuts]
            i = int(np.argmax(np.abs(r)))
            if abs(r[i]) > abs(best[0]) + 1e-15:
                best = (float(r[i]), f, float((xs[cuts[i]] + xs[cuts[i] + 1]) / 2))
        r_best, f, theta = best
        if f < 0 or abs(r_best) >= 1 - 1e-12:
            if f >= 0:  # a perfect stump: take it with a capped weight and stop
                model.features.append(f)
                model.thresholds.append(theta)
                model.alphas.append(float(np.sign(r_best) * 10.0))
            break
        alpha = 0.5 * np.log((1 + r_best) / (1 - r_best))
        h = (X[:, f] > theta).astype(np.float64)
        D = D * np.exp(alpha * (h[lo] - h[hi]))
        D /= D.sum()
        model.features.append(f)
        model.thresholds.append(theta)
        model.alphas.append(float(alpha))
    model.info["rounds"] = len(model.alphas)
    return model


# --- config ------------------------------------------------------------------------------

def _rounds(*values: int) -> Grid:
    """A default grid of round counts (kept as written: the run id hashes it)."""
    return {"rounds": list(values)}


class AdaRankSpec(BatchLearnerConfig):
    """AdaRank with single features as weak rankers (AdaRank.MAP / AdaRank.NDCG)."""

    type: Literal["adarank"]
    summary: ClassVar[str] = "batch (cv:): AdaRank.MAP / AdaRank.NDCG with single-feature weak rankers"
    hyper_parameters: ClassVar[tuple[str, ...]] = ("rounds",)
    integer_parameters: ClassVar[tuple[str, ...]] = ("rounds",)
    measure: str = Field("map", description="map or ndcg@K")
    grid: Grid = Field(default_factory=lambda: _rounds(100, 500))
    tol: float | None = Field(None, ge=0, description="stop when the training measure falls by more than tol "
                              "(RankLib's 0.002); null: all rounds, as the paper")
    max_consecutive: int = Field(5, gt=0, description="a feature chosen this many times in a row without changing "
                                 "the training measure leaves the pool until it changes (RankLib's maxSelCount)")
    relevance_threshold: float = Field(0.0, description="relevant (MAP, AP) = label > this")

    _m = field_validator("measure")(batch_measure)

    def paper_role(self) -> str:
        return "AdaRank"  # its row in the paper's tables

    def fit(self, train: Queries, params: dict[str, Any], context: FitContext | None = None) -> LinearModel:
        return fit_adarank(train, self.measure, int(params.get("rounds", 500)), self.tol,
                           self.relevance_threshold, max_consecutive=self.max_consecutive)


class RankBoostSpec(BatchLearnerConfig):
    """RankBoost with threshold stumps on single features (RB-c)."""

    type: Literal["rankboost"]
    summary: ClassVar[str] = "batch (cv:): RankBoost with threshold stumps (RB-c)"
    hyper_parameters: ClassVar[tuple[str, ...]] = ("rounds",)
    integer_parameters: ClassVar[tuple[str, ...]] = ("rounds",)
    grid: Grid = Field(default_factory=lambda: _rounds(100, 300))

    def paper_role(self) -> str:
        return "RankBoost"  # its row in the paper's tables

    def fit(self, train: Queries, params: dict[str, Any], context: FitContext | None = None) -> StumpModel:
        return fit_rankboost(train, int(params.get("rounds", 300)))
