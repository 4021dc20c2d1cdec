"""What the click-driven learners (DBGD/MGD, PDGD, the pairwise baseline) share: a linear
ranker that learns only from clicks, its state, and the config keys of its step.

State (what a checkpoint keeps): weights ``w``, round counter ``t``, the learner's own
generator ``rng`` (every draw the learner makes: candidate directions, interleavings,
Plackett-Luce samples, exploration coins) and ``rate``, the current learning rate. The rate
is multiplied by ``learning_rate_decay`` after each update that moves the weights, as the
reference code of the online learning-to-rank literature does (HarrieO/OnlineLearningToRank,
``models/linearmodel.py``; its CIKM 2018 script, ``scripts/CIKM2018.py``, runs every
learner with a decay of 0.9999977; the default here is 1, no decay).

``shown`` (default 10) is how many documents the user sees; the click protocol sets it
before round 1. ``rank`` returns a whole permutation of the query's documents, the shown
list first; the clicks the learner gets are on its first min(shown, m) documents.
"""

from __future__ import annotations

from typing import ClassVar, Literal

import numpy as np
from pydantic import Field

from ltr_cli.core.schema import OnlineLearnerConfig

DEFAULT_SHOWN = 10


class ClickLearner:
    """The state and bookkeeping of a linear click learner (subclasses add ``rank`` and
    ``update``)."""

    feedback_k: int | None = None
    feedback_kind = "clicks"
    numerics = "stable"
    state_fields: tuple[str, ...] = ("w", "t", "rng", "rate")
    shown = DEFAULT_SHOWN

    def __init__(self, n_features: int, ties: str, rng: np.random.Generator, learning_rate: float,
                 learning_rate_decay: float):
        self.w = np.zeros(n_features)
        self.t = 0
        self.rng = rng
        self.ties = ties
        self.rate = float(learning_rate)
        self.decay = float(learning_rate_decay)

    @property
    def weights(self) -> np.ndarray:
        return self.w

    def resolved_settings(self) -> dict[str, object]:
        return {}

    def _move(self, direction: np.ndarray) -> None:
        """``w <- w + rate * direction`` (a new array: weights are replaced, never modified
        in place), then the rate decays."""
        self.w = self.w + self.rate * direction
        self.rate *= self.decay


class ClickLearnerConfig(OnlineLearnerConfig):
    """The config keys every click learner has besides its own (``learning_rate`` is
    declared by each, with its default)."""

    feedback_kind: ClassVar[Literal["labels", "clicks"]] = "clicks"
    learning_rate_decay: float = Field(
        1.0, gt=0, le=1, description="multiply the learning rate by this after each update (the reference "
        "code's CIKM 2018 script: 0.9999977)")
