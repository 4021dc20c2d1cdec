"""Theorem 9's adversary (perceptron paper, Section 6.1, Eq. 25) played against a learner.

A protocol of its own: round i = 1..T (``T = floor(R_X^2 / gamma^2) - 1``) shows the learner
the matrix ``X_i`` of Eq. 25; after seeing its ranking, the adversary sets the relevance:
document 2 relevant if the learner put document 1 first, else document 1. The learner
then gets its feedback (all labels, or the top k it learns from, as in
:func:`ltr_cli.protocols.online.reveal`) and updates. Every round is a mistake, with NDCG
induced loss at least ``1 - 1/log2(3)`` and AP induced loss at least 1/2; the proof's
``w*`` separates the data it generated with margin exactly gamma.

The theorem is about deterministic algorithms: for those the adversary could have computed
the whole stream before the game, so it is one fixed data set. :func:`play` replays the
game with other seeds (the learner's own generator and the tie generator) and reports
whether every ranking was the same; a learner that randomises is outside the theorem.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ltr_cli.errors import LtrError
from ltr_cli.learners.online.base import OnlineLearner
from ltr_cli.learners.online.theory import (AP_ROUND_LOSS, NDCG_ROUND_LOSS, adversary_labels, adversary_matrix,
                                            lower_bound_problem, lower_bound_rounds, query_margin, separating_weights)
from ltr_cli.measures.metrics import average_precision, ndcg_at_k
from ltr_cli.protocols.online import feedback_size, reveal

CHECK_SEEDS = (1, 2, 3)  # the replays that check the learner is deterministic
LOSS_SLACK = 1e-12  # rounding in the measures: a loss counts as meeting its floor within this


@dataclass
class LowerBoundGame:
    """The game's record: per round the relevant document and the shown ranking (0-based),
    the NDCG and AP induced losses; the separating ``w*`` and its margins."""

    radius: float
    margin: float
    features: int
    docs: int
    rounds: int
    relevant: np.ndarray = field(repr=False)
    rankings: np.ndarray = field(repr=False)
    ndcg_loss: np.ndarray = field(repr=False)
    ap_loss: np.ndarray = field(repr=False)
    w_star: np.ndarray = field(repr=False)
    margins: np.ndarray = field(repr=False)
    differs: tuple[int, int] | None = None  # (seed, first round) of a replay that ranked otherwise

    @property
    def deterministic(self) -> bool:
        return self.differs is None

    def report(self) -> dict[str, Any]:
        T = self.rounds
        ndcg_total, ap_total = float(self.ndcg_loss.sum()), float(self.ap_loss.sum())
        return {
            "theorem": "perceptron paper, Theorem 9 (Section 6.1, Eq. 25)",
            "R_X": self.radius, "gamma": self.margin, "features": self.features, "docs": self.docs,
            "rounds": T, "rounds_formula": "T = floor(R_X^2 / gamma^2) - 1",
            "deterministic": self.deterministic,
            "deterministic_check": (f"seed {self.differs[0]} ranked otherwise in round {self.differs[1]}"
                                    if self.differs else "the same rankings when replayed with seeds "
                                    + ", ".join(map(str, CHECK_SEEDS))),
            "per_round": {"relevant": (self.relevant + 1).tolist(),
                          "ranking": (self.rankings + 1).tolist(),
                          "ndcg_loss": self.ndcg_loss.tolist(), "ap_loss": self.ap_loss.tolist()},
            "cumulative": {"ndcg_loss": ndcg_total, "ap_loss": ap_total},
            "bound": {"ndcg_per_round": NDCG_ROUND_LOSS, "ap_per_round": AP_ROUND_LOSS,
                      "ndcg": T * NDCG_ROUND_LOSS, "ap": T * AP_ROUND_LOSS},
            "every_round_a_mistake": bool((self.ndcg_loss > 0).all() and (self.ap_loss > 0).all()),
            "every_round_meets_its_floor": bool((self.ndcg_loss >= NDCG_ROUND_LOSS - LOSS_SLACK).all()
                                                and (self.ap_loss >= AP_ROUND_LOSS - LOSS_SLACK).all()),
            "meets_bound": {"ndcg": bool(ndcg_total >= T * (NDCG_ROUND_LOSS - LOSS_SLACK)),
                            "ap": bool(ap_total >= T * (AP_ROUND_LOSS - LOSS_SLACK))},
            "separable": {"w_star_norm": float(np.linalg.norm(self.w_star)),
                          "min_margin": float(self.margins.min()), "max_margin": float(self.margins.max()),
                          "margin_is_gamma": bool(np.allclose(self.margins, self.margin, rtol=1e-9, atol=0)),
                          "unit_ball": bool(np.linalg.norm(self.w_star) <= 1.0)},
        }


Build = Callable[[int], OnlineLearner]


def _rounds(build: Build, seed: int, T: int, features: int, docs: int, radius: float
            ) -> tuple[np.ndarray, np.ndarray]:
    """One game: the rankings shown (T, m) and the relevant document of each round."""
    learner = build(seed)
    ties = np.random.default_rng(seed)
    k = feedback_size(learner)
    rankings = np.empty((T, docs), dtype=np.int64)
    relevant = np.empty(T, dtype=np.int64)
    for i in range(1, T + 1):
        X = adversary_matrix(i, features, docs, radius)
        ranking = np.asarray(learner.rank(X, ties), dtype=np.int64)
        y = adversary_labels(ranking, docs)
        learner.update(X, reveal(learner, ranking, y, k))
        rankings[i - 1] = ranking
        relevant[i - 1] = int(np.argmax(y))
    return rankings, relevant


def play(build: Build, radius: float, margin: float, features: int, docs: int) -> LowerBoundGame:
    """Play Theorem 9's game against the learner ``build(seed)`` returns (seed 0: the game;
    seeds :data:`CHECK_SEEDS`: replays that rank the same if the learner is deterministic).
    ``seed`` seeds the learner's own generator and the tie generator."""
    problem = lower_bound_problem(radius, margin, features, docs)
    if problem is not None:
        raise LtrError(problem)
    T = lower_bound_rounds(radius, margin)  # at most MAX_ROUNDS (lower_bound_problem)
    rankings, relevant = _rounds(build, 0, T, features, docs, radius)
    differs = None
    for seed in CHECK_SEEDS:
        again, _ = _rounds(build, seed, T, features, docs, radius)
        rows = np.flatnonzero((again != rankings).any(axis=1))
        if rows.size:
            differs = (seed, int(rows[0]) + 1)
            break
    ndcg = np.empty(T)
    ap = np.empty(T)
    margins = np.empty(T)
    w_star = separating_weights((relevant == 0).tolist(), features, radius, margin)
    for i in range(1, T + 1):
        y = np.zeros(docs)
        y[relevant[i - 1]] = 1.0
        ndcg[i - 1] = 1.0 - ndcg_at_k(rankings[i - 1], y, None, "zero")
        ap[i - 1] = 1.0 - average_precision(rankings[i - 1], y, 0.0, "zero")
        margins[i - 1] = query_margin(adversary_matrix(i, features, docs, radius) @ w_star, y)
    return LowerBoundGame(radius, margin, features, docs, T, relevant, rankings, ndcg, ap, w_star, margins,
                          differs)
