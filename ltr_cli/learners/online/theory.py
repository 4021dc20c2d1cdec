"""Constants of a margin-separable stream and the perceptron paper's loss bounds.

For a stream generated with a known ranker u (the separable generators):

* ``gamma`` (Eq. 21) is the margin of the unit-norm ranker ``u / ||u||``:
  ``min_t min_{i,j: R_ti > R_tj} u.(x_ti - x_tj) / ||u||``;
* ``R_X`` is the largest document norm, ``m`` the largest number of documents per query;
* Corollary 7 (Alg. 2): cumulative RML <= ``4 m R_X^2 v_max / gamma^2``, with v_max the
  largest ratio of positive weights in one query (Lemma 5); for v^NDCG@k, Theorem 8 puts
  k in place of m; Corollary 11 (Alg. 3): ``4 R_X^2 / gamma^2``.

Theorem 9 (Section 6.1) is a lower bound instead: for any deterministic online algorithm
there is a stream separable with margin gamma on which it suffers Omega(R_X^2 / gamma^2)
NDCG/AP induced loss. Its proof builds the stream (Eq. 25) adaptively; the matrices, the
relevance rule and the separating w* are here (:func:`adversary_matrix`,
:func:`adversary_labels`, :func:`separating_weights`), the game that plays them against a
learner is :mod:`ltr_cli.protocols.adversary`.

The upper bounds are proved for the paper's surrogate (constant margin 1, Eq. 8), a convex
surrogate (fixed weights, Lemma 3) and the constant learning rate that optimises the regret
bound, ``eta = 1 / (4 m R_X^2 v_max)`` (Alg. 2) or ``1 / (4 R_X^2)`` (Alg. 3). Each
condition is recorded under ``assumptions``; ``applies`` is their conjunction. When it is
false the bound is a reference line, not a guarantee.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from ltr_cli.data.query import Query
from ltr_cli.learners.online.base import RankingMeasure
from ltr_cli.learners.online.perceptron import MaxPairPerceptronSpec, SlamPerceptronSpec
from ltr_cli.core.schema import LearnerConfig
from ltr_cli.surrogates.slam import slam_weights, weight_ratio


@dataclass(frozen=True)
class StreamConstants:
    gamma: float
    R_X: float
    m: int
    queries: int


def query_margin(scores: np.ndarray, labels: np.ndarray) -> float:
    """``min_{i,j: R_i > R_j} s_i - s_j`` (inf when all labels are equal)."""
    levels = np.unique(labels)
    worst = np.inf
    below_max = -np.inf
    for level in levels:
        in_level = scores[labels == level]
        if np.isfinite(below_max):
            worst = min(worst, float(in_level.min()) - below_max)
        below_max = max(below_max, float(in_level.max()))
    return worst


def stream_constants(queries: Iterable[Query], u: np.ndarray) -> StreamConstants:
    unit = np.asarray(u, dtype=np.float64) / np.linalg.norm(u)
    gamma, r_x, m, n = np.inf, 0.0, 0, 0
    for q in queries:
        gamma = min(gamma, query_margin(q.X @ unit, q.y))
        r_x = max(r_x, float(np.sqrt((q.X**2).sum(axis=1)).max()))
        m = max(m, q.m)
        n += 1
    return StreamConstants(float(gamma), r_x, m, n)


def learner_bound(
    spec: LearnerConfig, constants: StreamConstants, queries: Iterable[Query]
) -> dict[str, Any] | None:
    """The bound on a learner's cumulative ranking loss, or None for other learners."""
    c = constants
    if c.gamma <= 0 or not np.isfinite(c.gamma):
        return None
    if isinstance(spec, SlamPerceptronSpec):
        measure = RankingMeasure(spec.measure, spec.relevance_threshold)
        level_average = spec.weights == "level-averaged"
        v_max = max(
            weight_ratio(slam_weights(q.y, None, measure.kind, measure.k, level_average,
                                      measure.threshold))
            for q in queries
        )
        size = min(measure.k, c.m) if measure.k else c.m
        name = "Theorem 8" if measure.k else "Corollary 7"
        scale = 4.0 * size * c.R_X**2 * v_max
        assumptions = {
            "margin_constant_1": spec.margin == "constant" and spec.delta == 1.0,
            "mistake_measure_matches_weights": (spec.mistake or spec.measure) == spec.measure,
            # score-ordered weights make phi non-convex when a level holds several documents
            "convex_surrogate": spec.weights != "paper",
            "step_is_the_proofs": _is_step(spec, 1.0 / scale),
        }
        return {"name": name, "bound": scale / c.gamma**2, "v_max": v_max, "size": size,
                "formula": ("4 min(k, m) R_X^2 v_max / gamma^2" if measure.k else "4 m R_X^2 v_max / gamma^2"),
                "eta_for_bound": 1.0 / scale,
                "assumptions": assumptions, "applies": all(assumptions.values())}
    if isinstance(spec, MaxPairPerceptronSpec):
        scale = 4.0 * c.R_X**2
        assumptions = {
            "margin_constant_1": spec.margin == "constant" and spec.delta == 1.0,
            "step_is_the_proofs": _is_step(spec, 1.0 / scale),
        }
        return {"name": "Corollary 11", "bound": scale / c.gamma**2,
                "formula": "4 R_X^2 / gamma^2", "eta_for_bound": 1.0 / scale,
                "assumptions": assumptions, "applies": all(assumptions.values())}
    return None


def _is_step(spec: SlamPerceptronSpec | MaxPairPerceptronSpec, eta: float) -> bool:
    """True when the learner steps by the constant eta the proof optimises (1% tolerance)."""
    step = spec.step
    return step.rule == "constant" and not step.loss_scaled and abs(step.eta - eta) <= 0.01 * eta


def theory_block(spec: LearnerConfig, constants: StreamConstants, queries: Iterable[Query]) -> dict[str, Any]:
    return {"stream": asdict(constants), "bound": learner_bound(spec, constants, queries)}


# --- Theorem 9: the adversary of the lower bound ---------------------------------------------

NDCG_ROUND_LOSS = 1.0 - 1.0 / math.log2(3.0)  # least NDCG-induced loss of a round with a mistake
AP_ROUND_LOSS = 0.5  # the same for AP


def lower_bound_rounds(radius: float, margin: float) -> int:
    """``T = floor(R_X^2 / gamma^2) - 1``, on the numbers as written (``0.1`` is 1/10, so
    ``R_X = 1, gamma = 0.1`` gives 99, not the 98 of binary floating point)."""
    ratio = (Fraction(repr(float(radius))) / Fraction(repr(float(margin)))) ** 2
    return math.floor(ratio) - 1


MAX_ROUNDS = 100_000  # Theorem 9's game: its matrices are dense (m x d, d > T); beyond this it is slow


def magnitude(value: Fraction | int) -> str:
    """A positive exact number as people read it: ``99.99``, ``999,999``, ``1.6e+21``, and
    ``1e+640`` for one no float64 holds."""
    if value < 10 ** 15:
        return f"{value:,}" if isinstance(value, int) else f"{float(value):g}"
    exponent = math.log10(value.numerator) - math.log10(value.denominator) if isinstance(value, Fraction) \
        else math.log10(value)
    whole = math.floor(exponent)
    return f"{10 ** (exponent - whole):.3g}e+{whole}"


def lower_bound_problem(radius: float, margin: float, features: int | None, docs: int) -> str | None:
    """Why Theorem 9's construction cannot be built for these numbers (None: it can);
    ``features`` None: any width (the least the theorem allows)."""
    if not (radius > 0 and margin > 0 and math.isfinite(radius) and math.isfinite(margin)):
        return "R_X and gamma must be positive finite numbers"
    if min(radius, margin) < sys.float_info.min:
        return (f"R_X and gamma must be at least {sys.float_info.min:.4g}, float64's smallest normal number "
                "(below it the game's arithmetic loses its precision)")
    if docs < 2:
        return f"the theorem needs m >= 2 documents per query (got {docs})"
    ratio = (Fraction(repr(float(radius))) / Fraction(repr(float(margin)))) ** 2
    if ratio < 2:
        return (f"R_X^2 / gamma^2 = {magnitude(ratio)} gives T = floor(R_X^2 / gamma^2) - 1 < 1 round; "
                "take gamma <= R_X / sqrt(2)")
    if math.floor(ratio) - 1 > MAX_ROUNDS:
        return (f"R_X^2 / gamma^2 gives T = {magnitude(math.floor(ratio) - 1)} rounds, more than the "
                f"{MAX_ROUNDS:,} this game plays (its matrices are dense m x d with d > T); take a larger gamma")
    if features is not None and ratio > features:
        return (f"the theorem needs R_X^2 / gamma^2 <= d, but R_X^2 / gamma^2 = {magnitude(ratio)} > d = "
                f"{features}; give at least {math.ceil(ratio)} features")
    return None


def adversary_matrix(i: int, features: int, docs: int, radius: float) -> np.ndarray:
    """``X_i`` of Eq. 25 (round ``i`` = 1..T): rows ``R_X e_{i+1}``, ``-R_X e_{i+1}``, then
    ``R_X e_1`` for every other document (``e_j`` the j-th unit vector, 1-based)."""
    X = np.zeros((docs, features))
    X[0, i] = radius
    X[1, i] = -radius
    X[2:, 0] = radius
    return X


def adversary_labels(ranking: np.ndarray, docs: int) -> np.ndarray:
    """The proof's relevance for the shown ranking: document 2 relevant (``e_2``) when the
    learner put document 1 first, else document 1 (``e_1``): either way a mistake."""
    y = np.zeros(docs)
    y[1 if int(ranking[0]) == 0 else 0] = 1.0
    return y


def separating_weights(first_relevant: Sequence[bool], features: int, radius: float, margin: float) -> np.ndarray:
    """The proof's ``w*``: ``w*_1 = -gamma / (2 R_X)``, ``w*_{i+1} = +-gamma / (2 R_X)`` (+ when
    document 1 was relevant in round i), 0 beyond T + 1. Its norm is
    ``sqrt(T + 1) gamma / (2 R_X) <= 1/2``; it scores the relevant document ``gamma / 2`` and
    every other ``-gamma / 2``: margin exactly gamma in every round."""
    w = np.zeros(features)
    step = margin / (2.0 * radius)
    w[0] = -step
    for i, first in enumerate(first_relevant, start=1):
        w[i] = step if first else -step
    return w
