"""Constants of a margin-separable stream and the perceptron paper's loss bounds.

For a stream generated with a known ranker u (the separable generators):

* ``gamma`` (Eq. 21) is the margin of the unit-norm ranker ``u / ||u||``:
  ``min_t min_{i,j: R_ti > R_tj} u.(x_ti - x_tj) / ||u||``;
* ``R_X`` is the largest document norm, ``m`` the largest number of documents per query;
* Corollary 7 (Alg. 2): cumulative RML <= ``4 m R_X^2 v_max / gamma^2``, with v_max the
  largest ratio of positive weights in one query (Lemma 5); for v^NDCG@k, Theorem 8 puts
  k in place of m; Corollary 11 (Alg. 3): ``4 R_X^2 / gamma^2``.

The bounds are proved for the paper's surrogate (constant margin 1, Eq. 8) with the
learning rate that optimises the regret bound; ``applies`` says whether a learner's
settings match the first condition. Other step sizes are not covered by the proof, so the
bound is then a reference line, not a guarantee.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ltr_cli.config import LearnerSpec, MaxPairPerceptronSpec, SlamPerceptronSpec
from ltr_cli.data.svmlight import Query
from ltr_cli.learners.base import RankingMeasure
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
    spec: LearnerSpec, constants: StreamConstants, queries: Iterable[Query]
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
        bound = 4.0 * size * c.R_X**2 * v_max / c.gamma**2
        applies = spec.margin == "constant" and spec.delta == 1.0 and (spec.mistake or spec.measure) == spec.measure
        return {"name": name, "bound": bound, "v_max": v_max, "size": size,
                "formula": "4 m R_X^2 v_max / gamma^2", "applies": applies}
    if isinstance(spec, MaxPairPerceptronSpec):
        bound = 4.0 * c.R_X**2 / c.gamma**2
        return {"name": "Corollary 11", "bound": bound, "formula": "4 R_X^2 / gamma^2",
                "applies": spec.margin == "constant" and spec.delta == 1.0}
    return None


def theory_block(spec: LearnerSpec, constants: StreamConstants, queries: Iterable[Query]) -> dict[str, Any]:
    return {"stream": asdict(constants), "bound": learner_bound(spec, constants, queries)}
