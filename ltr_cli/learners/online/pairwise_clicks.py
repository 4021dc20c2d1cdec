"""The pairwise baseline of the click literature (after Hofmann et al. 2013): epsilon-greedy
exploration of the shown list, and a pairwise step for the pairs the clicks imply.

Each round: the exploit order ranks X w under the run's tie rule; the explore order is a
uniformly random permutation. Each shown position, in turn, explores with probability
``epsilon`` (takes the next document of the explore order not shown yet) and otherwise
exploits (the next one of the exploit order not shown yet); the documents past the shown
list follow in the exploit order. After the clicks, for the pairs (i clicked, j not) of
:func:`~ltr_cli.learners.online.click_pairs.click_pairs`:
``w <- w + learning_rate * sum over the pairs of (x_i - x_j)``.

Facts from the reference code (HarrieO/OnlineLearningToRank, commit 96712e4,
``algorithms/baselines/pairwise.py``), restated: one explore-or-exploit coin per shown
position, exploring when the uniform draw is at most epsilon; epsilon 0.8 in its CIKM 2018
script (``scripts/CIKM2018.py``); the learning rate is PDGD's default, 0.1; the pairs are
PDGD's, each clicked document stepping up by the number of its unclicked partners and
each unclicked one down by the number of clicked ones. That code takes its exploit order
from an ascending sort of the scores (``utils/rankings.py`` sorts ascending and this
learner, unlike PDGD's test rankings, does not negate its scores), so its exploit
positions show its lowest-scored documents while it learns to score clicked documents
higher; here the exploit order is the descending one the baseline describes.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from ltr_cli import kernels
from ltr_cli.learners.online.base import Feedback, KernelScores, UpdateInfo
from ltr_cli.learners.online.click_base import ClickLearner, ClickLearnerConfig
from ltr_cli.learners.online.click_pairs import click_pairs, shown_clicks
from ltr_cli.measures.metrics import rank_from_scores, row_scores

NO_MOVE = UpdateInfo(mistake=False, updated=False)
MOVED = UpdateInfo(mistake=False, updated=True)


def epsilon_greedy(exploit: np.ndarray, explore: np.ndarray, explores: np.ndarray) -> np.ndarray:
    """The shown list first (position p from ``explore`` when ``explores[p]``, else from
    ``exploit``, each time the next document of that order not shown yet), then the other
    documents in the exploit order."""
    m = exploit.shape[0]
    used = np.zeros(m, dtype=bool)
    out = np.empty(m, dtype=np.int64)
    nxt = [0, 0]
    orders = (exploit, explore)
    for p, flag in enumerate(explores.tolist()):
        order, k = orders[flag], nxt[flag]
        while used[order[k]]:
            k += 1
        out[p] = order[k]
        used[order[k]] = True
        nxt[flag] = k + 1
    n = explores.shape[0]
    out[n:] = exploit[~used[exploit]]
    return out


class PairwiseClicksLearner(KernelScores, ClickLearner):
    """The pairwise baseline, configured by a :class:`PairwiseClicksSpec`. Its exploit order
    is the compiled score-and-sort of the other linear learners when the kernels are on
    (:class:`~ltr_cli.learners.online.base.KernelScores`; the same scores and order as the
    reference path), and its shown list is drafted by the compiled
    :func:`ltr_cli.kernels.interleave.epsilon_greedy` (:func:`epsilon_greedy` its reference)."""

    def __init__(self, spec: "PairwiseClicksSpec", n_features: int, ties: str, rng: np.random.Generator):
        super().__init__(n_features, ties, rng, spec.learning_rate, spec.learning_rate_decay)
        self.spec = spec
        self.epsilon = float(spec.epsilon)

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        m = X.shape[0]
        if self.fast:
            exploit = self._rank_fast(X, rng)
        else:
            exploit = rank_from_scores(row_scores(X, self.w), self.ties, rng)
        explore = self.rng.permutation(m)
        explores = self.rng.random(min(self.shown, m)) <= self.epsilon
        if self.fast:
            out = np.empty(m, dtype=np.int64)
            (kernels.module or kernels.load()).interleave.epsilon_greedy(exploit, explore, explores, out)
            return out
        return epsilon_greedy(exploit, explore, explores)

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        self.t += 1
        ranking = feedback.ranking
        clicks = shown_clicks(feedback.clicks, ranking, self.shown, "pairwise-clicks")
        pos, neg = click_pairs(clicks)
        if pos.shape[0] == 0 or neg.shape[0] == 0:
            return NO_MOVE
        coef = np.zeros(clicks.shape[0])
        coef[pos] = neg.shape[0]
        coef[neg] = -pos.shape[0]
        self._move(coef @ X[ranking[:clicks.shape[0]]])
        return MOVED


class PairwiseClicksSpec(ClickLearnerConfig):
    """The pairwise baseline of the click literature: epsilon-greedy shown lists and a
    pairwise step, from clicks."""

    type: Literal["pairwise-clicks"]
    summary: ClassVar[str] = "pairwise baseline: epsilon-greedy shown lists, a pairwise step; learns from clicks"
    examples: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"epsilon": 0.2, "learning_rate": 0.05},
    )
    epsilon: float = Field(0.8, ge=0, le=1, description="probability that a shown position explores (a random "
                           "document) rather than exploits")
    learning_rate: float = Field(0.1, gt=0, description="step along the sum of the clicked-over-unclicked pairs")

    def paper_role(self) -> str:
        return "pairwise-clicks"

    def default_label(self) -> str:
        return self.label or "Pairwise"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "algorithm": "pairwise baseline", "epsilon": self.epsilon,
                "learning_rate": self.learning_rate, "learning_rate_decay": self.learning_rate_decay,
                "feedback": "clicks"}

    def build(self, n_features: int, ties: str, rng: np.random.Generator,
              planned_rounds: int | None = None, fidelity: str = "paper") -> PairwiseClicksLearner:
        return PairwiseClicksLearner(self, n_features, ties, rng)
