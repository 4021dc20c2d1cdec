"""Interfaces between the online protocol and the learners.

The protocol, not the learner, decides what is revealed: it builds a :class:`Feedback`
from the shown ranking and hands only that to ``update``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from ltr_cli.learners.schedules import StepSchedule
from ltr_cli.metrics import average_precision, ndcg_at_k, rank_from_scores


@dataclass(frozen=True)
class Feedback:
    """What the learner may see after showing ``ranking``.

    ``labels`` is the full label vector (m,) in document order under full feedback.
    Partial-feedback protocols (later) pass ``labels=None`` and fill ``top_labels``.
    """

    ranking: np.ndarray
    labels: np.ndarray | None = None
    top_labels: np.ndarray | None = None


@dataclass(frozen=True)
class UpdateInfo:
    """What happened in ``update``: a ranking-loss mistake, a weight change, the surrogate
    value and the round's ranking loss (RML) under the learner's mistake measure."""

    mistake: bool
    updated: bool
    surrogate: float = float("nan")
    ranking_loss: float = float("nan")


class OnlineLearner(Protocol):
    """A linear online ranker. Holds only its weights and schedule state."""

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Ranking (permutation of range(m), best first) for the query matrix X (m, d)."""

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        """Learn from the feedback on the ranking just shown."""

    @property
    def weights(self) -> np.ndarray:
        """Current weight vector w (d,)."""


class LinearRanker:
    """State and ranking shared by the linear learners: weights w (d,), round counter t,
    step schedule; the shown ranking sorts ``X w`` under the run's tie policy."""

    def __init__(self, n_features: int, step: StepSchedule, ties: str):
        self.w = np.zeros(n_features)
        self.t = 0
        self.step = step
        self.ties = ties

    @property
    def weights(self) -> np.ndarray:
        return self.w

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        with np.errstate(over="ignore"):  # infinite scores still sort; updates check finiteness
            scores = X @ self.w
        return rank_from_scores(scores, self.ties, rng)


@dataclass(frozen=True)
class RankingMeasure:
    """The measure whose induced loss ``1 - measure`` drives a perceptron's updates (RML).

    ``name``: ``ndcg`` (k = m), ``ndcg@K`` or ``ap`` (labels > ``threshold`` relevant).
    A query without relevant documents has loss 0 (nothing can be ranked wrongly).
    """

    name: str = "ndcg"
    threshold: float = 0.0

    @property
    def kind(self) -> str:
        return self.name.partition("@")[0]

    @property
    def k(self) -> int | None:
        cut = self.name.partition("@")[2]
        return int(cut) if cut else None

    def loss(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        if self.kind == "ap":
            return 1.0 - average_precision(ranking, labels, self.threshold, "one")
        return 1.0 - ndcg_at_k(ranking, labels, self.k, "one")


def parse_measure(name: str) -> str:
    """Validate a learner measure name (``ndcg``, ``ndcg@K``, ``ap``); return it."""
    kind, at, cut = name.partition("@")
    if kind == "ap" and not at:
        return name
    if kind == "ndcg" and (not at or (cut.isdigit() and int(cut) > 0)):
        return name
    raise ValueError(f"unknown ranking measure {name!r}; expected ndcg, ndcg@K (K > 0) or ap")
