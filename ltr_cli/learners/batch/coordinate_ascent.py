"""Coordinate Ascent (Metzler & Croft 2007) as RankLib's ``CoorAscent`` runs it: a linear
model that climbs a ranking measure of the training queries directly, one feature at a time.

Each of ``restarts`` restarts begins from the uniform weights ``1/d`` and makes passes over
the features in an order shuffled afresh every pass (restart ``r`` draws its orders from
``seed`` and ``r``). For feature j with weight ``w_j`` it tries, in turn:

* increasing: ``w_j + t_k`` for ``k = 0..iterations-1``, where the step starts at 0.001
  (or at ``0.05 |w_j|`` when 0.001 exceeds half of a non-zero ``|w_j|``) and doubles each
  time, ``t_k = step (2^(k+1) - 1)``;
* decreasing: the same steps negated;
* removing the feature: ``w_j = 0``;

and keeps the first candidate with the best mean measure over the training queries if
that mean is strictly higher than the best so far; a direction that improves ends the
search for that feature. After an accepted step the weights are divided by their L1
norm (rankings do not change; the next steps are relative to that scale). A restart ends
after a pass once the measure has gained less than ``tol`` since the restart began, or
when ``d - 1`` features in a row found nothing (checked after each pass). The model is the
best restart's weights (the first on ties). With ``reg`` (RankLib's ``-reg``), every
candidate's measure is lowered by ``reg`` times the Euclidean distance between its
L1-normalised weights and the uniform start.

Two differences from RankLib: its step for a small non-zero weight loses the direction's
sign (both directions then search upwards; here decreasing searches downwards), and it
may remove a feature whose weight is the only non-zero one (its L1 normalisation then
resets every weight to ``1/d``; here that candidate is not tried). RankLib's feature
orders come from an unseeded shuffle; here they are seeded.

The line search is vectorised: a candidate changes every score by ``t x_j``, so all of a
direction's candidates are ranked in one sort over the queries in which feature j varies
(padded to the length of their length class); other queries keep their values. That numpy
sort is the reference; the fit runs its compiled twin (:mod:`ltr_cli.kernels.listsearch`,
the same keys and sums, so the same values to the last bit) unless ``LTR_KERNELS=0``. A
document's score is its products ``w_k x_k`` added in feature order from 0.0 (RankLib's
sum). A feature whose search failed is not searched again until a step is accepted: from
the same weights and best measure it would fail again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator

from ltr_cli import kernels
from ltr_cli.core.schema import BatchLearnerConfig, Grid
from ltr_cli.learners.batch.common import Queries, batch_measure
from ltr_cli.learners.batch.convergence import FitContext
from ltr_cli.measures.metrics import exp2_gain, log2_discount, parse_cutoff
from ltr_cli.results.models import LinearModel

SKIP_REPEATS = True  # a feature's search is not run again while nothing was accepted since it failed
CELLS = 1 << 21  # candidate x document cells ranked in one sort (16 MB a array)
_MAGNITUDE = np.int64(0x7FFFFFFFFFFFFFFF)


@dataclass
class _Bucket:
    """Queries of similar length, padded to the longest ``M``: features ``X`` (d, q, M)
    (padding 0); ``code`` (q, M), each document's index and level (AP: relevant 1 or 0;
    NDCG: the index of its gain in ``table``) packed into the ``low`` bits of a sort key;
    each query's index among all queries and its normaliser (AP: the number relevant;
    NDCG: the ideal DCG); ``pad`` (q, M), True on padding; ``varies`` (d, q): whether
    feature j takes two values in query q (else it cannot change q's ranking)."""

    X: np.ndarray
    code: np.ndarray
    low: int
    level_bits: int
    table: np.ndarray
    index: np.ndarray
    norm: np.ndarray
    pad: np.ndarray
    varies: np.ndarray
    rel_index: np.ndarray  # AP: (q, R) each row's relevant positions (first n_rel of them)
    n_rel: np.ndarray
    length: np.ndarray  # (q,) each row's documents before its padding


class Lists:
    """The training queries for a measure: each query's value of ``measure`` (``map`` /
    ``ap``: AP on labels > ``threshold``; ``ndcg`` / ``ndcg@K``: the paper's gain and
    discount, :func:`ltr_cli.learners.batch.common.measure_fn`), computed for many
    candidate score vectors at once. A query whose value no ranking changes (no relevant
    document, or all alike) is kept as a constant.

    Rankings sort scores descending, ties by document index, as
    :func:`ltr_cli.learners.batch.common.rank`, through one integer sort: each score is
    mapped to an integer of the same order, its lowest bits (about 10 of its 52 bits of
    precision) are replaced by the document's index and level, and the sorted keys give
    the levels in ranked order. Scores that agree to about 40 significant bits therefore
    count as equal."""

    def __init__(self, train: Queries, measure: str, threshold: float = 0.0, compiled: bool | None = None):
        from ltr_cli.learners.batch.common import measure_fn, rank

        self.compiled = kernels.ENABLED if compiled is None else compiled
        kind, at, cut = measure.partition("@")
        self.ap = measure in ("map", "ap")
        self.k = parse_cutoff(cut) if at else None
        if not self.ap and (kind != "ndcg" or (at and self.k is None)):
            raise ValueError(f"unknown measure {measure!r}; expected map, ndcg or ndcg@K")
        E = measure_fn(measure, threshold)
        self.d = train[0][0].shape[1]
        self.n = len(train)
        self.constant = np.zeros(self.n)  # the value of a query no ranking changes
        by_class: dict[int, list[tuple[int, np.ndarray, np.ndarray, float]]] = {}
        for i, (X, y) in enumerate(train):
            y = np.asarray(y, dtype=np.float64)
            rel = (y > threshold).astype(np.float64) if self.ap else exp2_gain(y)
            norm = float(rel.sum()) if self.ap else self._ideal(rel)
            if norm <= 0 or np.all(rel == rel[0]):
                self.constant[i] = E(rank(np.zeros(y.shape[0])), y)
                continue
            by_class.setdefault(int(np.ceil(np.log(len(y)) / np.log(1.25))), []).append(
                (i, np.asarray(X, dtype=np.float64), rel, norm))
        self.buckets = [self._bucket(members) for _, members in sorted(by_class.items())]

    def _bucket(self, members: list[tuple[int, np.ndarray, np.ndarray, float]]) -> _Bucket:
        M, q = max(X.shape[0] for _, X, _, _ in members), len(members)
        table = np.array([0.0, 1.0]) if self.ap else np.unique(np.concatenate([[0.0]] + [r for _, _, r, _ in members]))
        level_bits = max(1, int(table.shape[0] - 1).bit_length())
        low = level_bits + max(1, int(M - 1).bit_length())
        X = np.zeros((self.d, q, M))
        code = np.zeros((q, M), dtype=np.int64)
        pad = np.ones((q, M), dtype=bool)
        for r, (_, Xq, rel, _) in enumerate(members):
            m = Xq.shape[0]
            X[:, r, :m] = Xq.T
            code[r, :m] = (np.arange(m, dtype=np.int64) << level_bits) | np.searchsorted(table, rel)
            pad[r, :m] = False
        lo = np.where(pad[None], np.inf, X).min(axis=2)
        hi = np.where(pad[None], -np.inf, X).max(axis=2)
        relevant = [np.flatnonzero(rel) for _, _, rel, _ in members] if self.ap else [np.zeros(0, np.int64)]
        n_rel = np.array([r.shape[0] for r in relevant], dtype=np.int64)
        rel_index = np.zeros((q, max(1, int(n_rel.max()))), dtype=np.int64)
        for r, positions in enumerate(relevant if self.ap else []):
            rel_index[r, :positions.shape[0]] = positions
        return _Bucket(X, code, low, level_bits, table, np.array([i for i, _, _, _ in members]),
                       np.array([nm for _, _, _, nm in members], dtype=np.float64), pad, hi > lo, rel_index, n_rel,
                       np.array([Xq.shape[0] for _, Xq, _, _ in members], dtype=np.int64))

    def _ideal(self, gains: np.ndarray) -> float:
        top = -np.sort(-gains)
        n = top.shape[0] if self.k is None else min(self.k, top.shape[0])
        return float(top[:n] @ log2_discount(n))

    def _values(self, b: _Bucket, rows: np.ndarray | slice, scores: np.ndarray) -> np.ndarray:
        """The measure (C, q) of the bucket's queries ``rows`` for candidate scores (C, q, M)
        (padding at -inf)."""
        keys = 0.0 - scores  # ascending keys; -0.0 becomes 0.0
        bits = keys.view(np.int64)
        bits ^= (bits >> 63) & _MAGNITUDE  # the integers' order is the floats' order
        bits &= ~np.int64((1 << b.low) - 1)
        bits |= b.code[rows]
        bits.sort(axis=-1)
        levels = bits & np.int64((1 << b.level_bits) - 1)
        if self.ap:
            hits = np.cumsum(levels, axis=-1)
            return ((levels * hits) / np.arange(1, levels.shape[-1] + 1)).sum(axis=-1) / b.norm[rows]
        n = levels.shape[-1] if self.k is None else min(self.k, levels.shape[-1])
        return (b.table[levels[..., :n]] @ log2_discount(n)) / b.norm[rows]

    def _values_along(self, b: _Bucket, rows: np.ndarray, S: np.ndarray, j: int | None,
                      steps: np.ndarray) -> np.ndarray:
        """The measure (C, k) of the bucket's queries ``rows`` (k,) at scores ``S[rows] + t
        X[j][rows]`` for each step t of ``steps`` (C,), ``S`` (q, M) the bucket's scores; ``j``
        None: at ``S[rows]`` itself (C = 1). Compiled (:mod:`ltr_cli.kernels.listsearch`)
        unless ``LTR_KERNELS=0``, else :meth:`_values`."""
        if not self.compiled:
            s0 = S[rows]
            if j is None:
                return self._values(b, rows, s0[None])
            x = b.X[j][rows]
            out = np.empty((steps.shape[0], s0.shape[0]))
            chunk = max(1, CELLS // s0.size)
            for c in range(0, steps.shape[0], chunk):
                out[c:c + chunk] = self._values(b, rows, s0[None] + steps[c:c + chunk, None, None] * x[None])
            return out
        from ltr_cli.kernels import listsearch  # numba loads only when a fit runs compiled

        out = np.empty((steps.shape[0], rows.shape[0]))
        if self.ap:
            listsearch.ap_along(S, b.X[0 if j is None else j], j is not None, rows, steps, b.code, b.rel_index,
                                b.n_rel, b.length, b.low, b.norm, out)
            return out
        s0 = np.ascontiguousarray(S[rows])
        x = np.zeros_like(s0) if j is None else np.ascontiguousarray(b.X[j][rows])
        code = np.ascontiguousarray(b.code[rows])
        M = s0.shape[-1]
        n = M if self.k is None else min(self.k, M)
        chunk = max(1, CELLS // s0.size)  # the reference's chunks: the same products below
        disc = log2_discount(n)
        for c in range(0, steps.shape[0], chunk):
            part = steps[c:c + chunk]
            levels = np.empty((part.shape[0], s0.shape[0], n), dtype=np.int64)
            listsearch.levels_along(s0, x, part, code, b.low, b.level_bits, n, levels)
            out[c:c + chunk] = (b.table[levels] @ disc) / b.norm[rows]
        return out

    def scores(self, w: np.ndarray) -> list[np.ndarray]:
        """Each bucket's scores (q, M) under weights ``w``, padding at -inf: each document's
        products ``w_k x_k`` added in feature order from 0.0, as RankLib sums them."""
        if self.compiled:
            from ltr_cli.kernels import listsearch

            out = [np.empty(b.pad.shape) for b in self.buckets]
            for b, s in zip(self.buckets, out):
                listsearch.linear_scores(np.asarray(w, dtype=np.float64), b.X, b.pad, s)
            return out
        out = []
        for b in self.buckets:
            s = np.zeros(b.pad.shape)
            for k in range(self.d):
                s += w[k] * b.X[k]
            out.append(np.where(b.pad, -np.inf, s))
        return out

    def values(self, S: list[np.ndarray]) -> np.ndarray:
        """Every query's measure (n,) for the bucket scores ``S``."""
        out = self.constant.copy()
        for b, s in zip(self.buckets, S):
            out[b.index] = self._values_along(b, np.arange(b.index.shape[0]), s, None, np.zeros(1))[0]
        return out

    def along(self, S: list[np.ndarray], v: np.ndarray, j: int, steps: np.ndarray) -> np.ndarray:
        """Every query's measure (C, n) when feature j's weight moves by each of ``steps``
        (C,) from the weights that gave the scores ``S`` and the values ``v``."""
        out = np.broadcast_to(v, (steps.shape[0], self.n)).copy()
        for b, s in zip(self.buckets, S):
            rows = np.flatnonzero(b.varies[j])
            if not rows.size:
                continue
            out[:, b.index[rows]] = self._values_along(b, rows, s, j, steps)
        return out


def _distance(W: np.ndarray, u: np.ndarray) -> np.ndarray:
    """RankLib's regulariser: the Euclidean distance between each row of ``W`` and ``u``,
    both divided by their L1 norms."""
    return np.sqrt((((W / np.abs(W).sum(axis=1, keepdims=True)) - u / np.abs(u).sum()) ** 2).sum(axis=1))


def _candidates(orig: float, direction: int, iterations: int, step_base: float, scale: float) -> np.ndarray:
    """The total steps RankLib's line search tries in one direction."""
    step = 0.001 * direction
    if orig != 0.0 and abs(step) > 0.5 * abs(orig):
        step = direction * step_base * abs(orig)
    return step * np.cumsum(scale ** np.arange(iterations))


def _restart(lists: Lists, rng: np.random.Generator, iterations: int, tol: float, reg: float | None,
             step_base: float, scale: float, trace: list[dict[str, Any]], number: int) -> tuple[float, np.ndarray]:
    """One restart from the uniform weights; its best (penalised) mean measure and weights."""
    d = lists.d
    w = np.full(d, 1.0 / d)
    u = w.copy()
    S = lists.scores(w)
    v = lists.values(S)
    start = best = float(v.sum()) / lists.n
    fails, passes = 0, 0
    accepted_steps = 0
    failed_at = np.full(d, -1)  # the accepted steps counted when feature j's search last failed
    while (d > 1 and fails < d - 1) or (d == 1 and fails == 0):
        passes += 1
        for j in rng.permutation(d):
            if SKIP_REPEATS and failed_at[j] == accepted_steps:
                fails += 1  # the same search from the same weights and best: it fails again
                continue
            orig = float(w[j])
            accepted = None
            for direction in (1, -1, 0):
                if direction == 0:
                    if orig == 0.0 or not np.any(np.delete(w, j)):
                        continue
                    steps = np.array([-orig])
                else:
                    steps = _candidates(orig, direction, iterations, step_base, scale)
                means = lists.along(S, v, j, steps).sum(axis=1) / lists.n
                if reg is not None:
                    W = np.broadcast_to(w, (steps.shape[0], d)).copy()
                    W[:, j] += steps
                    means = means - reg * _distance(W, u)
                k = int(np.argmax(means))
                if means[k] > best:
                    accepted = float(steps[k])
                    break
            if accepted is None:
                fails += 1
                failed_at[j] = accepted_steps
                continue
            fails = 0
            accepted_steps += 1
            w[j] = orig + accepted
            w /= np.abs(w).sum()
            S = lists.scores(w)
            v = lists.values(S)
            best = float(v.sum()) / lists.n - (0.0 if reg is None else float(reg * _distance(w[None], u)[0]))
            trace.append({"restart": number, "pass": passes, "feature": int(j), "weight": float(w[j]),
                          "measure": best})
        if best - start < tol:
            break
    return best, w


def fit_coordinate_ascent(train: Queries, measure: str = "map", restarts: int = 5, iterations: int = 25,
                          tol: float = 0.001, reg: float | None = None, seed: int = 0, threshold: float = 0.0,
                          step_base: float = 0.05, step_scale: float = 2.0) -> LinearModel:
    """Coordinate ascent on the mean ``measure`` of the training queries (module docstring)."""
    lists = Lists(train, measure, threshold)
    trace: list[dict[str, Any]] = []
    results = [_restart(lists, np.random.default_rng([seed, r]), iterations, tol, reg, step_base, step_scale,
                        trace, r + 1) for r in range(restarts)]
    scores = [score for score, _ in results]
    best = int(np.argmax(scores))
    return LinearModel(results[best][1], {"train_measure": scores[best], "restart_measures": scores,
                                          "restart": best + 1, "trace": trace})


def _grid(**values: list[int | float]) -> Grid:
    """A default grid (RankLib's defaults: 5 restarts, 25 steps per direction)."""
    return dict(values)


class CoordinateAscentSpec(BatchLearnerConfig):
    """Coordinate Ascent, linear, on a ranking measure of the training queries (RankLib's)."""

    type: Literal["coordinate-ascent"]
    summary: ClassVar[str] = ("batch (cv:): Coordinate Ascent (Metzler & Croft 2007) as RankLib runs it: "
                              "linear, restarts, a line search per feature (not in the papers)")
    hyper_parameters: ClassVar[tuple[str, ...]] = ("restarts", "iterations", "reg")
    integer_parameters: ClassVar[tuple[str, ...]] = ("restarts", "iterations")
    grid: Grid = Field(default_factory=lambda: _grid(restarts=[5], iterations=[25]))
    measure: str = Field("map", description="the training measure: map or ndcg@K (RankLib's -metric2t)")
    tol: float = Field(0.001, ge=0, description="a restart ends after a pass once it has gained less than this "
                       "(RankLib's -tolerance)")
    seed: int = Field(0, ge=0, description="seeds the feature orders of every restart")
    relevance_threshold: float = Field(0.0, description="relevant (MAP, AP) = label > this")

    _m = field_validator("measure")(batch_measure)

    def paper_role(self) -> str:
        return "CoordinateAscent"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "measure": self.measure,
                "line_search": "RankLib's: steps from 0.001 (or 5% of |w_j|) doubling, up, down, then w_j = 0",
                "ties": "descending score, then document index"}

    def fit(self, train: Queries, params: dict[str, Any], context: FitContext | None = None) -> LinearModel:
        return fit_coordinate_ascent(train, self.measure, int(params.get("restarts", 5)),
                                     int(params.get("iterations", 25)), self.tol, params.get("reg"), self.seed,
                                     self.relevance_threshold)
