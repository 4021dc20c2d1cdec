"""Pairwise Differentiable Gradient Descent (Oosterhuis & de Rijke, CIKM 2018): a linear
ranker that shows a Plackett-Luce sample of its scores and learns from the pairs its clicks
imply, each weighted to undo the position bias of its own sampling.

Each round: scores s = X w; the shown list is a Plackett-Luce sample without replacement
from softmax(s) (each position draws from the documents not shown yet with probability
proportional to exp(s)). Drawn here by the Gumbel-max construction (the documents sorted by
s + Gumbel noise, from the learner's generator), whose first n documents have exactly that
law. After the clicks, for each pair (i clicked, j not clicked) of
:func:`~ltr_cli.learners.online.click_pairs.click_pairs`:

* the gradient of P(i before j) = e^{s_i} / (e^{s_i} + e^{s_j}) with respect to the
  scores, e^{s_i} e^{s_j} / (e^{s_i} + e^{s_j})^2 times (x_i - x_j);
* times the debiasing weight rho = P(R*) / (P(R) + P(R*)), where P(R) is the
  Plackett-Luce probability of the shown list and R* the same list with i and j swapped.
  Only the positions from the higher to the lower of the two change their factor, so the
  ratio P(R*) / P(R) is the product, over the positions k after the higher one up to the
  lower one, of D_k / D*_k, D_k being the exp-scores of the documents not yet shown above
  position k (the numerators of the two lists are the same).

``w <- w + learning_rate * sum over the pairs``. No click, or no unclicked document in
the pairs: no move.

Facts from the reference code (HarrieO/OnlineLearningToRank, commit 96712e4,
``algorithms/PDGD/pdgd.py``), restated: learning rate 0.1; the shown list has
min(10, m) documents sampled from the softmax of the scores without replacement (shifted
by the maximum for numerical safety); the pairs are each clicked document with each
unclicked one above the last click and the one just below it; the pair weight is the
product of the two exp-scores over their squared sum, times the reversed-pair ratio
above, computed there over the positions from the higher to the lower of the pair (both
included; the factor of the higher position is the same in both lists); the weights step
along the sum of the weighted document features (``models/linearmodel.py``).
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from ltr_cli import kernels
from ltr_cli.learners.online.base import Feedback, UpdateInfo
from ltr_cli.learners.online.click_base import ClickLearner, ClickLearnerConfig
from ltr_cli.learners.online.click_pairs import shown_clicks
from ltr_cli.learners.online.pdgd_pairs import MOVED, NO_MOVE, document_weights, pair_weights, plackett_luce

__all__ = ["MOVED", "NO_MOVE", "PDGDLearner", "PDGDSpec", "document_weights", "pair_weights", "pdgd_gradient",
           "plackett_luce"]

def pdgd_gradient(X: np.ndarray, scores: np.ndarray, ranking: np.ndarray, clicks: np.ndarray) -> np.ndarray | None:
    """The PDGD ascent direction (d,) for ``clicks`` (n,) on the shown list ``ranking[:n]``
    of a query with features X and scores ``scores`` (those the list was sampled from);
    None when the clicks give no pair."""
    coef = document_weights(scores, ranking, clicks)
    return None if coef is None else coef @ X[ranking[:clicks.shape[0]]]


class PDGDLearner(ClickLearner):
    """PDGD, configured by a :class:`PDGDSpec`. With the kernels on (and ``use_kernels``),
    the update direction is computed by the compiled
    :func:`ltr_cli.kernels.pdgd.pdgd_gradient`; :func:`pdgd_gradient` is its reference."""

    use_kernels = True

    def __init__(self, spec: "PDGDSpec", n_features: int, ties: str, rng: np.random.Generator):
        super().__init__(n_features, ties, rng, spec.learning_rate, spec.learning_rate_decay)
        self.spec = spec
        self._drawn: tuple[np.ndarray, np.ndarray] | None = None

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        scores = X @ self.w
        self._drawn = (X, scores)  # round scratch: the scores the list is drawn from
        return plackett_luce(scores, self.rng)

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        self.t += 1
        ranking = feedback.ranking
        clicks = shown_clicks(feedback.clicks, ranking, self.shown, "pdgd")
        drawn, self._drawn = getattr(self, "_drawn", None), None
        if not clicks.any():
            return NO_MOVE
        # the scores the list was drawn from (the weights have not moved since rank)
        scores = drawn[1] if drawn is not None and drawn[0] is X else X @ self.w
        grad: np.ndarray | None
        if self.use_kernels and kernels.ENABLED:
            grad = np.empty(self.w.shape[0])
            found = (kernels.module or kernels.load()).pdgd.pdgd_gradient(
                X, scores, ranking, np.ascontiguousarray(clicks, dtype=np.float64), grad)
            if not found:
                return NO_MOVE
        else:
            grad = pdgd_gradient(X, scores, ranking, clicks)
            if grad is None:
                return NO_MOVE
        self._move(grad)
        return MOVED

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_drawn"] = None  # round scratch: never kept
        return state


class PDGDSpec(ClickLearnerConfig):
    """Pairwise Differentiable Gradient Descent (Oosterhuis & de Rijke 2018): Plackett-Luce
    sampling and the debiased pairwise gradient, from clicks. With ``scorer:`` (a neural
    scorer's block), DeepPDGD: the same step through that scorer
    (:mod:`~ltr_cli.learners.online.deep_pdgd`, JAX)."""

    type: Literal["pdgd"]
    summary: ClassVar[str] = ("PDGD: Plackett-Luce sampling and the debiased pairwise gradient; learns from clicks "
                              "(with scorer: a neural scorer, DeepPDGD; needs pip install -e '.[neural]')")
    examples: ClassVar[tuple[dict[str, Any], ...]] = (
        {},
        {"learning_rate": 0.5, "learning_rate_decay": 0.99},
        {"scorer": {"kind": "mlp", "hidden": [8], "activation": "sigmoid"}},
    )
    id_defaults: ClassVar[dict[str, Any]] = {"scorer": None, "init": "scorer"}  # added later: unset, ids stay
    learning_rate: float = Field(0.1, gt=0, description="step along the debiased pairwise gradient")
    scorer: dict[str, Any] | None = Field(
        None, description="a neural scorer ({kind: mlp, hidden: [64], ...}; kinds of ltr_cli.scorers, without "
        "dropout or noise) instead of the linear ranker: DeepPDGD, the gradient through the scorer (JAX)")

    init: Literal["scorer", "reference"] = Field(
        "scorer", description="with scorer: the initial parameters: the scorer's own (Glorot-uniform), or "
        "reference: the reference code's DeepPDGD (an mlp scorer; every weight and hidden bias normal with "
        "standard deviation 1/fan-in, the output bias 0)")

    @field_validator("scorer")
    @classmethod
    def _scorer(cls, block: dict[str, Any] | None) -> dict[str, Any] | None:
        from ltr_cli.neural.query_scorer import checked_block

        return checked_block(block, "an online learner")

    @model_validator(mode="after")
    def _init(self) -> PDGDSpec:
        if self.init == "reference" and (self.scorer is None or self.scorer["kind"] != "mlp"):
            raise ValueError("init: reference is the reference code's MLP initialisation; it needs "
                             "scorer: {kind: mlp, ...}")
        return self

    def paper_role(self) -> str:
        return "pdgd" if self.scorer is None else "deep-pdgd"

    def default_label(self) -> str:
        return self.label or ("PDGD" if self.scorer is None else "DeepPDGD")

    def describe(self) -> dict[str, Any]:
        described = {**super().describe(), "algorithm": "PDGD" if self.scorer is None else "DeepPDGD",
                     "learning_rate": self.learning_rate, "learning_rate_decay": self.learning_rate_decay,
                     "sampling": "Plackett-Luce (Gumbel-max)", "feedback": "clicks"}
        if self.scorer is not None:
            described.update(scorer=self.scorer, gradient="pair weights of linear PDGD, through the scorer (JAX "
                             "vector-Jacobian product), float32", initialisation=("the scorer's" if self.init == "scorer" else
                                             "the reference code's: normal, sd 1/fan-in") + ", seeded from the "
                             "learner's generator")
        return described

    def missing(self) -> str | None:
        if self.scorer is None:
            return None
        from ltr_cli.neural import jaxenv

        return jaxenv.missing()

    def build(self, n_features: int, ties: str, rng: np.random.Generator,
              planned_rounds: int | None = None, fidelity: str = "paper") -> ClickLearner:
        if self.scorer is not None:
            from ltr_cli.learners.online.deep_pdgd import DeepPDGDLearner

            return DeepPDGDLearner(self, n_features, ties, rng)
        return PDGDLearner(self, n_features, ties, rng)
