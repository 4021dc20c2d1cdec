"""Constants of a margin-separable stream and the perceptron paper's loss bounds.

For a stream generated with a known ranker u (the separable generators):

* ``gamma`` (Eq. 21) is the margin of the unit-norm ranker ``u / ||u||``:
  ``min_t min_{i,j: R_ti > R_tj} u.(x_ti - x_tj) / ||u||``;
* ``R_X`` is the largest document norm, ``m`` the largest number of documents per query;
* Corollary 7 (Alg. 2): cumulative RML <= ``4 m R_X^2 v_max / gamma^2``, with v_max the
  largest ratio of positive weights in one query (Lemma 5); for v^NDCG@k, Theorem 8 puts
  k in place of m; Corollary 11 (Alg. 3): ``4 R_X^2 / gamma^2``.

The bounds are proved for the paper's surrogate (constant margin 1, Eq. 8), a convex
surrogate (fixed weights, Lemma 3) and the constant learning rate that optimises the regret
bound, ``eta = 1 / (4 m R_X^2 v_max)`` (Alg. 2) or ``1 / (4 R_X^2)`` (Alg. 3). Each
condition is recorded under ``assumptions``; ``applies`` is their conjunction. When it is
false the bound is a reference line, not a guarantee.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ltr_cli.data.svmlight import Query
from ltr_cli.learners.online.base import RankingMeasure
from ltr_cli.learners.online.perceptron import MaxPairPerceptronSpec, SlamPerceptronSpec
from ltr_cli.config.schema import LearnerConfig
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
                "formula": "4 m R_X^2 v_max / gamma^2", "eta_for_bound": 1.0 / scale,
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
