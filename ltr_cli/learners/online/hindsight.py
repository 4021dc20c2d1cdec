"""The comparator of Theorem 4.1 (top-k paper): the best fixed weight vector in hindsight.

    F(w) = sum_t phi(X_t w, R_t),   w* = argmin_{||w|| <= U} F(w)

over the rounds of a run, with phi the learner's surrogate (:class:`LossSpec`, its
function from :data:`ltr_cli.surrogates.SURROGATES`) and U its projection radius. The rounds
are given as :class:`QueryBlock` s: arrays of distinct queries with how many rounds showed
each, so a query read in several passes is scored once per evaluation (one matrix-vector
product per block for the scores and one for the gradient; the surrogate per query, or
once per block for the surrogates that are sums over documents, squared and KL, and for
ListNet and SmoothDCG, their softmax taken per query segment
(:mod:`ltr_cli.learners.online.hindsight_segments`); RankSVM's
hinge by a compiled kernel, :func:`ltr_cli.kernels.ranksvm.hinge_value_grad`, unless
``LTR_KERNELS=0``).

Minimisation over the ball, from w = 0 or a warm start (:func:`best_in_hindsight`):

* smooth convex surrogates (squared, KL, ListNet): scipy's L-BFGS-B with exact gradients
  over the ball (:mod:`ltr_cli.learners.online.hindsight_lbfgs`: the radial projection);
* RankSVM's hinge: the same on its Huber smoothing, the smoothing shrunk tenfold until the
  hinge's value is certified (continuation; the pairs enumerated, at most ``MAX_PAIRS``);
* when those end uncertified (an optimum inside the ball reached from the sphere, too many
  pairs, or the cap), and for the others, the first-order methods go on from the best point:
  for smooth surrogates (and SmoothDCG, not convex) accelerated projected gradient
  (FISTA) with a backtracking step, restarted whenever F goes up; for non-smooth ones
  (ordinal, preference, the hinge) projected subgradient steps with the parameter-free
  "distance over gradients" rule (Ivgi, Hinder and Carmon, 2023:
  ``eta_k = max_i ||w_i|| / sqrt(sum_i ||g_i||^2)``), keeping the best point.

For a convex surrogate each evaluated point w_k with (sub)gradient g_k gives a certified
lower bound on the minimum, the minimum over the ball of the linearisation
``F(w_k) + g_k . (w - w_k)``, i.e. ``F(w_k) - g_k . w_k - U ||g_k||``; so does any weighted
average of those linearisations. The best of them is ``lower_bound``, and
``gap = value - lower_bound`` bounds how far ``value`` may be above the true minimum. The
methods stop when the gap is at most ``RTOL * max(1, |value|)`` (converged, certified): the
value is then within that tolerance of the minimum. FISTA also when its step no longer moves w or its best value has stopped improving
(converged, stationary: the usual end for a minimum inside the ball, where the
linearisations' bound is loose); otherwise after ``MAX_EVALUATIONS`` evaluations of F (not
converged: its gap then says how close it got); all of them share ``MAX_EVALUATIONS``. SmoothDCG is not
convex: its ``value`` is the best point reached (a stationary point at best, not
necessarily the minimum) and there is no lower bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ltr_cli import kernels
from ltr_cli.learners.online.base import LossSpec
from ltr_cli.learners.online.hindsight_segments import Segments
from ltr_cli.learners.online.hindsight_lbfgs import MAX_PAIRS, SHRINK, SMOOTHING, STAGES, PairHinge, Search, ball_lbfgs
from ltr_cli.learners.online.ogd import project_to_ball
from ltr_cli.surrogates import SURROGATES

SMOOTH = ("squared", "kl", "listnet", "smoothdcg")
BY_DOCUMENT = ("squared", "kl")  # sums over documents: one call covers many queries
BY_SEGMENT = ("listnet", "smoothdcg")  # softmax per query: summed over a block at once (hindsight_segments)
RTOL = 1e-6
STALL = 1e-12  # a step shorter than this times U ends the smooth method
FLAT = (100, 1e-10)  # so does a best value that improved by less than this (relative) in 100 evaluations
MAX_EVALUATIONS = 2000
_CHUNK = 1 << 16  # rows converted to float64 at a time (float32 storage)
Progress = Callable[[int, "float | None"], None]


@dataclass(frozen=True)
class QueryBlock:
    """Queries ``j`` = rows ``starts[j]:ends[j]`` of ``X`` (N, d) and ``y`` (N,), each shown in
    ``counts[j]`` rounds (0: not in the stream)."""

    X: np.ndarray
    y: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    counts: np.ndarray
    row_counts: np.ndarray = field(init=False, repr=False)  # each row's query's count (0 elsewhere)

    def __post_init__(self) -> None:
        rows = np.zeros(self.X.shape[0], dtype=np.int64)
        for a, b, c in zip(self.starts.tolist(), self.ends.tolist(), self.counts.tolist()):
            rows[a:b] = c
        object.__setattr__(self, "row_counts", rows)

    @cached_property
    def segments(self) -> Segments:
        """The counted queries' rows, for the surrogates summed at once (ListNet, SmoothDCG)."""
        return Segments(self.starts, self.ends, self.counts)

    def scores(self, w: np.ndarray) -> np.ndarray:
        """``X w`` in float64 (float32 rows are converted a chunk at a time)."""
        if self.X.dtype == np.float64:
            return self.X @ w
        return np.concatenate([self.X[a:a + _CHUNK].astype(np.float64) @ w
                               for a in range(0, self.X.shape[0], _CHUNK)] or [np.zeros(0)])

    def backward(self, g: np.ndarray) -> np.ndarray:
        """``X^T g`` in float64."""
        if self.X.dtype == np.float64:
            return self.X.T @ g
        out = np.zeros(self.X.shape[1])
        for a in range(0, self.X.shape[0], _CHUNK):
            out += self.X[a:a + _CHUNK].astype(np.float64).T @ g[a:a + _CHUNK]
        return out


def surrogate_value(loss: LossSpec, scores: np.ndarray, labels: np.ndarray) -> float:
    """The surrogate of ``loss`` at ``scores`` on the full ``labels``."""
    return float(SURROGATES[loss.surrogate](np.asarray(scores, dtype=np.float64), labels, **loss.params)[0])


def query_values(loss: LossSpec, block: QueryBlock, w: np.ndarray) -> np.ndarray:
    """The surrogate of every query of the block at ``w`` (one count each), (n_queries,)."""
    fn = SURROGATES[loss.surrogate]
    s = block.scores(w)
    return np.array([float(fn(s[a:b], block.y[a:b], **loss.params)[0])
                     for a, b in zip(block.starts.tolist(), block.ends.tolist())])


def cumulative(loss: LossSpec, blocks: list[QueryBlock], w: np.ndarray) -> tuple[float, np.ndarray]:
    """``F(w)`` and a (sub)gradient, summed over the blocks' queries with their counts."""
    fn = SURROGATES[loss.surrogate]
    value = 0.0
    grad = np.zeros(w.shape[0])
    for block in blocks:
        s = block.scores(w)
        g = np.zeros(s.shape[0])
        if loss.surrogate == "ranksvm" and kernels.ENABLED:  # the same hinge, compiled
            from ltr_cli.kernels import ranksvm

            value += ranksvm.hinge_value_grad(s, block.y, block.starts, block.ends, block.counts,
                                              float(loss.params.get("delta", 1.0)), g)
        elif loss.surrogate in BY_SEGMENT:
            v, g = getattr(block.segments, loss.surrogate)(s, block.y, s.shape[0], **loss.params)
            value += v
        elif loss.surrogate in BY_DOCUMENT:
            for c in np.unique(block.row_counts[block.row_counts > 0]).tolist():
                rows = block.row_counts == c
                v, gc = fn(s[rows], block.y[rows], **loss.params)
                value += c * float(v)
                g[rows] = c * gc
        else:
            for a, b, c in zip(block.starts.tolist(), block.ends.tolist(), block.counts.tolist()):
                if c:
                    v, gq = fn(s[a:b], block.y[a:b], **loss.params)
                    value += c * float(v)
                    g[a:b] = c * gq
        grad += block.backward(g)
    return value, grad


@dataclass(frozen=True)
class Hindsight:
    """The comparator found: ``w``, ``value = F(w)``, the certified ``lower_bound`` on the
    minimum (None for a non-convex surrogate), the method, its evaluations of F and whether
    it met its tolerance (for SmoothDCG: reached a stationary point)."""

    w: np.ndarray
    value: float
    lower_bound: float | None
    method: str
    evaluations: int
    converged: bool

    @property
    def gap(self) -> float | None:
        return None if self.lower_bound is None else max(self.value - self.lower_bound, 0.0)

    def describe(self) -> dict[str, Any]:
        return {"value": self.value, "lower_bound": self.lower_bound, "gap": self.gap, "method": self.method,
                "evaluations": self.evaluations, "converged": self.converged,
                "w_norm": float(np.linalg.norm(self.w))}


def best_in_hindsight(loss: LossSpec, blocks: list[QueryBlock], n_features: int, start: np.ndarray | None = None,
                      progress: Progress | None = None) -> Hindsight:
    """``argmin_{||w|| <= U} F(w)`` by the method the surrogate calls for (module docstring),
    from ``start`` (projected onto the ball; default 0): a warm start, e.g. the comparator of
    another run on the same data. ``progress(evaluations, relative gap)`` is told after every
    evaluation of F (the gap None while there is no bound)."""
    if loss.radius is None:
        raise ValueError("a comparator needs the learner's projection radius U")
    U = float(loss.radius)
    w0 = np.zeros(n_features) if start is None else project_to_ball(np.asarray(start, dtype=np.float64), U)
    tick = _ticker(progress)
    used, bound = 0, -math.inf
    if loss.convex and (loss.surrogate in SMOOTH or loss.surrogate == "ranksvm"):
        search = Search(U, MAX_EVALUATIONS, _done, tick)
        method = _quasi_newton(loss, blocks, search, w0)
        if method is not None and search.best_w is not None:
            if _done(search.best, search.bound) or search.evaluations >= MAX_EVALUATIONS:
                return Hindsight(search.best_w, search.best, search.bound, method, search.evaluations,
                                 _done(search.best, search.bound))
            w0, used, bound = search.best_w, search.evaluations, search.bound  # the first-order method goes on
    if loss.surrogate in SMOOTH:
        return _accelerated(loss, blocks, w0, U, used, bound, tick)
    return _subgradient(loss, blocks, w0, U, used, bound, tick)


def _ticker(progress: Progress | None) -> Callable[[int, float, float | None], None]:
    def tick(evaluations: int, best: float, bound: float | None) -> None:
        if progress is None:
            return
        if bound is None or not (math.isfinite(bound) and math.isfinite(best)):
            progress(evaluations, None)
        else:
            progress(evaluations, max(best - bound, 0.0) / max(1.0, abs(best)))

    return tick


def _quasi_newton(loss: LossSpec, blocks: list[QueryBlock], search: Search, w0: np.ndarray) -> str | None:
    """L-BFGS-B over the ball (:mod:`ltr_cli.learners.online.hindsight_lbfgs`): on F for the
    smooth convex surrogates, on the smoothed hinge (continuation) for RankSVM; the method's
    name, or None when it does not apply (too many pairs to enumerate)."""
    if loss.surrogate != "ranksvm":
        def exact(w: np.ndarray) -> tuple[float, np.ndarray, float]:
            value, grad = cumulative(loss, blocks, w)
            return value, grad, value

        ball_lbfgs(search, exact, w0)
        return "L-BFGS-B over the ball (radial projection), exact gradients"
    if PairHinge.count(blocks) > MAX_PAIRS:
        return None
    delta = float(loss.params.get("delta", 1.0))
    hinge, mu, point = PairHinge(blocks, delta), SMOOTHING * delta, w0

    def solved(value: float, linear: float) -> bool:  # the smoothed problem, well within the tolerance
        return value - linear <= 0.1 * RTOL * max(1.0, abs(value))

    for _ in range(STAGES):
        ball_lbfgs(search, hinge.objective(mu), point, solved)
        if _done(search.best, search.bound) or search.evaluations >= search.budget or search.best_w is None:
            break
        point, mu = search.best_w, mu * SHRINK
    return "smoothed hinge (Huber, continuation) by L-BFGS-B over the ball (radial projection)"


def _linear_bound(value: float, grad: np.ndarray, w: np.ndarray, radius: float) -> float:
    """The minimum over the ball of the linearisation of F at w (a lower bound on min F for a
    convex F)."""
    return value - float(grad @ w) - radius * float(np.linalg.norm(grad))


def _done(value: float, bound: float | None) -> bool:
    return bound is not None and value - bound <= RTOL * max(1.0, abs(value))


def _flat(history: list[float]) -> bool:
    """The best value improved by less than ``FLAT`` over its last evaluations."""
    span, rtol = FLAT
    return len(history) > span and history[-span - 1] - history[-1] <= rtol * max(1.0, abs(history[-1]))


def _accelerated(loss: LossSpec, blocks: list[QueryBlock], x: np.ndarray, U: float, used: int, bound0: float,
                 tick: Callable[[int, float, float | None], None]) -> Hindsight:
    fx, gx = cumulative(loss, blocks, x)
    best = (fx, x)
    bound = max(bound0, _linear_bound(fx, gx, x, U)) if loss.convex else None
    y, fy, gy, momentum = x, fx, gx, 1.0
    lipschitz = 1.0
    evaluations, stalled, history = used + 1, False, [fx]
    tick(evaluations, best[0], bound)
    while evaluations < MAX_EVALUATIONS and not _done(best[0], bound):
        while True:  # backtracking: the quadratic model at y must bound F at the step
            step = project_to_ball(y - gy / lipschitz, U)
            fs, gs = cumulative(loss, blocks, step)
            evaluations += 1
            tick(evaluations, min(best[0], fs), bound)
            diff = step - y
            model = fy + float(gy @ diff) + 0.5 * lipschitz * float(diff @ diff)
            if fs <= model + 1e-12 * abs(fy) or evaluations >= MAX_EVALUATIONS:
                break
            lipschitz *= 2.0
        if bound is not None:
            bound = max(bound, _linear_bound(fs, gs, step, U))
        if fs < best[0]:
            best = (fs, step)
        history.append(best[0])
        if _flat(history):
            stalled = True
            break
        if fs > fx:  # restart the momentum from the last point
            momentum, y, fy, gy = 1.0, x, fx, gx
            continue
        moved = float(np.linalg.norm(step - x))
        following = (1.0 + math.sqrt(1.0 + 4.0 * momentum * momentum)) / 2.0
        y = project_to_ball(step + ((momentum - 1.0) / following) * (step - x), U)
        momentum = following
        x, fx, gx = step, fs, gs
        if moved <= STALL * U:  # stationary at this precision
            stalled = True
            break
        fy, gy = cumulative(loss, blocks, y)
        evaluations += 1
        tick(evaluations, best[0], bound)
        lipschitz = max(lipschitz / 1.5, 1e-12)  # let the step grow again
    return Hindsight(best[1], best[0], bound, "accelerated projected gradient (FISTA, backtracking)",
                     evaluations, _done(best[0], bound) or stalled)


def _subgradient(loss: LossSpec, blocks: list[QueryBlock], w: np.ndarray, U: float, used: int, bound0: float,
                 tick: Callable[[int, float, float | None], None]) -> Hindsight:
    d = w.shape[0]
    best_value, best_w = math.inf, w
    bound = bound0
    reach, squares = 1e-4 * U, 0.0  # DoG: the distance travelled, the sum of squared gradient norms
    weight, avg_g, avg_b = 0.0, np.zeros(d), 0.0  # the weighted average linearisation
    evaluations = used
    while evaluations < MAX_EVALUATIONS:
        value, g = cumulative(loss, blocks, w)
        evaluations += 1
        if value < best_value:
            best_value, best_w = value, w
        tick(evaluations, best_value, bound if loss.convex else None)
        norm = float(np.linalg.norm(g))
        if norm == 0.0:  # a minimum of a convex function
            bound = value
            break
        reach = max(reach, float(np.linalg.norm(w)))
        squares += norm * norm
        bound = max(bound, _linear_bound(value, g, w, U))
        weight += reach
        avg_g += reach * g
        avg_b += reach * (value - float(g @ w))
        bound = max(bound, (avg_b - U * float(np.linalg.norm(avg_g))) / weight)
        if _done(best_value, bound):
            break
        w = project_to_ball(w - (reach / math.sqrt(squares)) * g, U)
    lower = bound if loss.convex else None
    return Hindsight(best_w, best_value, lower, "projected subgradient (distance-over-gradients steps)",
                     evaluations, _done(best_value, lower))
