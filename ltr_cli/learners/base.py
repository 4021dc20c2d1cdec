"""Interfaces between the online protocol and the learners.

The protocol, not the learner, decides what is revealed: it builds a :class:`Feedback`
from the shown ranking and hands only that to ``update``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


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
    """What happened in ``update``: a ranking-loss mistake, a weight change, the surrogate."""

    mistake: bool
    updated: bool
    surrogate: float = float("nan")


class OnlineLearner(Protocol):
    """A linear online ranker. Holds only its weights and schedule state."""

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Ranking (permutation of range(m), best first) for the query matrix X (m, d)."""

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        """Learn from the feedback on the ranking just shown."""

    @property
    def weights(self) -> np.ndarray:
        """Current weight vector w (d,)."""
