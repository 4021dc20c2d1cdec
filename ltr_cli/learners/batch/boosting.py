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

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from ltr_cli import kernels
from ltr_cli.learners.batch.common import Queries, batch_measure, measure_fn, rank
from ltr_cli.learners.batch.convergence import FitContext
from ltr_cli.results.models import LinearModel, StumpModel
from ltr_cli.core.schema import BatchLearnerConfig, Grid


@dataclass
class _AdaRankState:
    """AdaRank's loop state after some rounds (:func:`adarank_reference`'s locals): what a fit
    of more rounds on the same training queries goes on from."""

    train: Queries
    settings: tuple[Any, ...]
    Eh: np.ndarray
    P: np.ndarray
    w: np.ndarray
    excluded: np.ndarray
    last_k: int
    repeats: int
    last_mean: float
    last_Ef: np.ndarray
    trace: list[dict[str, Any]]
    stopped: bool = False


class _QueryMeasure:
    """The training queries' measure of given scores, one value per query: ``E(rank(s), y)``
    of :func:`~ltr_cli.learners.batch.common.measure_fn`, and for AP the compiled count
    (:func:`ltr_cli.kernels.boosting.average_precisions`, the same values to the last bit)
    unless ``LTR_KERNELS=0``."""

    def __init__(self, train: Queries, measure: str, threshold: float):
        self.E = measure_fn(measure, threshold)
        self.labels = [y for _, y in train]
        self.compiled = kernels.ENABLED and measure in ("map", "ap")
        if self.compiled:
            self.rel = np.concatenate([np.asarray(y, dtype=np.float64) > threshold for y in self.labels])
            self.offsets = np.zeros(len(train) + 1, dtype=np.int64)
            np.cumsum([y.shape[0] for y in self.labels], out=self.offsets[1:])

    def each(self, scores: list[np.ndarray]) -> np.ndarray:
        if not self.compiled:
            return np.array([self.E(rank(s), y) for s, y in zip(scores, self.labels)])
        from ltr_cli.kernels import boosting as kb  # numba loads only when a fit runs

        out = np.empty(len(scores))
        kb.average_precisions(np.concatenate(scores).astype(np.float64, copy=False), self.rel, self.offsets, out)
        return out


def _adarank_rounds(st: _AdaRankState, E: _QueryMeasure, rounds: int, tol: float | None, alpha_cap: float,
                    max_consecutive: int) -> None:
    """Run AdaRank's rounds on ``st`` until it has ``rounds`` (the loop of :func:`adarank_reference`)."""
    train, d = st.train, st.w.shape[0]
    while len(st.trace) < rounds and not st.excluded.all():
        k = int(np.argmax(np.where(st.excluded, -np.inf, st.Eh @ st.P)))
        num, den = float(st.P @ (1 + st.Eh[k])), float(st.P @ (1 - st.Eh[k]))
        alpha = alpha_cap if den <= 0 else min(alpha_cap, 0.5 * np.log(num / den))
        Ef = E.each([X @ (st.w + alpha * np.eye(1, d, k)[0]) for X, _ in train])
        mean = float(Ef.mean())
        if tol is not None and mean < st.last_mean - tol:
            st.stopped = True
            return
        st.w[k] += alpha
        st.trace.append({"round": len(st.trace) + 1, "feature": k, "alpha": alpha, "mean": mean})
        if k == st.last_k and np.array_equal(Ef, st.last_Ef):
            st.repeats += 1
            if st.repeats >= max_consecutive:
                st.excluded[k] = True
                st.repeats = 0
        else:
            st.repeats = 1
            if not np.array_equal(Ef, st.last_Ef):
                st.excluded[:] = False
        st.last_k, st.last_mean, st.last_Ef = k, mean, Ef
        st.P = np.exp(-Ef) / np.exp(-Ef).sum()
    st.stopped = st.stopped or bool(st.excluded.all())


def _adarank_model(st: _AdaRankState, rounds: int) -> LinearModel:
    """The model after the first ``min(rounds, rounds run)`` rounds of ``st``: its weights
    rebuilt by adding the rounds' alphas in order, as the loop did."""
    trace = st.trace[:rounds]
    w = np.zeros(st.w.shape[0])
    for r in trace:
        w[r["feature"]] += r["alpha"]
    model = LinearModel(w, {"rounds": len(trace), "train_measure": trace[-1]["mean"] if trace else None,
                            "selected_features": [r["feature"] for r in trace], "trace": trace})
    if len(trace) == len(st.trace):
        object.__setattr__(model, "_resume", st)
    return model


def fit_adarank(train: Queries, measure: str = "map", rounds: int = 500, tol: float | None = None,
                threshold: float = 0.0, alpha_cap: float = 10.0, max_consecutive: int = 5,
                warm: Any = None) -> LinearModel:
    """AdaRank (:func:`adarank_reference`, whose docstring says what it does).

    A fit's first k rounds do not depend on how many follow, so with ``warm`` a model this
    function fitted on the very same training queries with the same settings (the previous
    grid point's), a fit of more rounds continues from its state and a fit of fewer keeps
    its first rounds: the same model as a fit from scratch."""
    E = _QueryMeasure(train, measure, threshold)
    settings = (measure, tol, threshold, alpha_cap, max_consecutive)
    st = getattr(warm, "_resume", None)
    if not (isinstance(st, _AdaRankState) and st.settings == settings and len(st.train) == len(train)
            and all(a is c and b is e for (a, b), (c, e) in zip(st.train, train))):
        d, m = train[0][0].shape[1], len(train)
        Eh = np.array([E.each([X[:, k] for X, _ in train]) for k in range(d)])  # (d, m)
        st = _AdaRankState(train, settings, Eh, np.full(m, 1.0 / m), np.zeros(d), np.zeros(d, dtype=bool),
                           -1, 0, -np.inf, np.full(m, np.nan), [])
    elif len(st.trace) < rounds and not st.stopped:  # go on from a copy: the warm model keeps its own
        st = _AdaRankState(st.train, settings, st.Eh, st.P, st.w.copy(), st.excluded.copy(), st.last_k,
                           st.repeats, st.last_mean, st.last_Ef, list(st.trace), st.stopped)
    if len(st.trace) < rounds and not st.stopped:
        _adarank_rounds(st, E, rounds, tol, alpha_cap, max_consecutive)
    return _adarank_model(st, rounds)


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


_STEPS = np.array([-1.0, 0.0, 1.0])  # h_lo - h_hi


@dataclass
class _Resume:
    """Where a RankBoost fit ended, so a fit with more rounds on the same training queries
    (the next grid point's, handed the model as its warm start) goes on from there: the
    pair weights after the last round, and whether the fit stopped before its rounds ran out."""

    train: Queries
    D: np.ndarray
    stopped: bool
    prepared: tuple[np.ndarray, ...]  # the stacked rows, pairs and per-feature orders (see fit_rankboost)


def _resumable(warm: Any, train: Queries) -> _Resume | None:
    state = getattr(warm, "_resume", None)
    if not isinstance(state, _Resume) or len(state.train) != len(train):
        return None
    same = all(a is c and b is e for (a, b), (c, e) in zip(state.train, train))
    return state if same else None


def fit_rankboost(train: Queries, rounds: int = 300, warm: Any = None) -> StumpModel:
    """RankBoost RB-c with threshold stumps at midpoints between distinct values
    (:func:`rankboost_reference`, with its stump search compiled unless ``LTR_KERNELS=0``).

    A fit's first k rounds do not depend on how many follow, so with ``warm`` a model this
    function fitted on the very same training queries (the previous grid point's), a fit of
    more rounds continues it and a fit of fewer takes its first rounds: the same model
    as a fit from scratch."""
    state = _resumable(warm, train)
    if state is not None and (state.stopped or len(warm.alphas) >= rounds):
        k = min(rounds, len(warm.alphas))
        model = StumpModel(warm.features[:k], warm.thresholds[:k], warm.alphas[:k], {"rounds": k},
                           n_features=warm.n_features)
        if k == len(warm.alphas):
            object.__setattr__(model, "_resume", state)
        return model
    if not kernels.ENABLED:
        return rankboost_reference(train, rounds)
    from ltr_cli.kernels import boosting as kb  # numba loads only when a fit runs

    if state is not None:
        X, lo, hi, order, xs = state.prepared
    else:
        X, lo, hi = _pairs(train)
        if lo.size == 0:
            return StumpModel([], [], [], {"rounds": 0}, n_features=X.shape[1])
        order = np.ascontiguousarray(np.argsort(-X, axis=0, kind="stable").T)  # (d, n), each column's argsort
        xs = np.take_along_axis(X.T, order, axis=1)
    n, d = X.shape
    if state is None:
        D = np.full(lo.size, 1.0 / lo.size)
        model = StumpModel([], [], [], n_features=d)
    else:
        D = state.D
        model = StumpModel(list(warm.features), list(warm.thresholds), list(warm.alphas), n_features=d)
    stopped = False
    while len(model.alphas) < rounds:
        r_best, f, theta = kb.best_stump(order, xs, kb.potential(hi, lo, D, n))
        if f < 0 or abs(r_best) >= 1 - 1e-12:
            if f >= 0:  # a perfect stump: take it with a capped weight and stop
                model.features.append(f)
                model.thresholds.append(theta)
                model.alphas.append(float(np.sign(r_best) * 10.0))
            stopped = True
            break
        alpha = 0.5 * np.log((1 + r_best) / (1 - r_best))
        D = kb.reweight(D, (X[:, f] > theta).astype(np.int64), lo, hi, np.exp(alpha * _STEPS))
        D /= D.sum()
        model.features.append(f)
        model.thresholds.append(theta)
        model.alphas.append(float(alpha))
    model.info["rounds"] = len(model.alphas)
    object.__setattr__(model, "_resume", _Resume(train, D, stopped, (X, lo, hi, order, xs)))
    return model


def rankboost_reference(train: Queries, rounds: int = 300) -> StumpModel:
    """RankBoost RB-c with threshold stumps at midpoints between distinct values: the
    straightforward loop :func:`fit_rankboost` (and :mod:`ltr_cli.kernels.boosting`) must
    reproduce."""
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


def adarank_reference(train: Queries, measure: str = "map", rounds: int = 500, tol: float | None = None,
                threshold: float = 0.0, alpha_cap: float = 10.0, max_consecutive: int = 5) -> LinearModel:
    """The straightforward AdaRank loop :func:`fit_adarank` reproduces. AdaRank for
    ``rounds`` rounds; returns the combined model of the last round, as the
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
                           self.relevance_threshold, max_consecutive=self.max_consecutive,
                           warm=None if context is None else context.warm)


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
        return fit_rankboost(train, int(params.get("rounds", 300)), None if context is None else context.warm)
