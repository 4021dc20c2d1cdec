"""PDGD through a neural scorer (DeepPDGD, Oosterhuis & de Rijke, CIKM 2018): ``type: pdgd``
with a ``scorer:`` block (a kind of :mod:`ltr_cli.neural.scorers`) instead of the linear
ranker.

.. code-block:: yaml

    learners:
      deep: {type: pdgd, scorer: {kind: mlp, hidden: [64], activation: sigmoid}, learning_rate: 0.1}

Each round is linear PDGD's (:mod:`~ltr_cli.learners.online.pdgd`) with the scores
``s = f_theta(X)`` of the scorer: the shown list is a Plackett-Luce sample of softmax(s)
(Gumbel-max, from the learner's generator); after the clicks, each pair's weight (the
score gradient of P(i before j) times the debiasing ratio rho) is the same code's
(:func:`~ltr_cli.learners.online.pdgd_pairs.document_weights`), summed into one coefficient
per shown document, and ``theta <- theta + rate * grad_theta sum_k coef_k s_k`` with the
coefficients held fixed (a vector-Jacobian product through the scorer, JAX,
:mod:`ltr_cli.neural.query_scorer`). With ``scorer: {kind: linear}`` the step is linear
PDGD's step on ``w`` (the bias's gradient is 0: every pair's two terms cancel).

State: ``w`` is the scorer's flat parameter vector ``theta`` (P,) float64 (its order:
:mod:`~ltr_cli.neural.query_scorer`), so a checkpoint keeps it as it keeps a linear
learner's weights, beside ``t``, ``rng`` and ``rate``; the initial ``theta`` is the
scorer's own initialisation (Glorot-uniform weights, PyTorch's default biases) from a seed
drawn from the learner's generator. The scorer runs in inference mode: dropout and input
noise are refused. The run's model is a neural model file (``ltr score`` reads it); the
held-out evaluations score each query with the current ``theta``.

Facts from the reference code (HarrieO/OnlineLearningToRank, commit 96712e4,
``algorithms/PDGD/deeppdgd.py`` and ``models/neuralmodel.py``), restated: DeepPDGD is PDGD
with its linear model replaced by a network of one hidden layer of 64 sigmoid units by
default, no bias on the output unit, every weight and bias drawn from a normal of standard
deviation 1/fan-in; each document's summed pair weight is backpropagated and the
parameters step along it times the learning rate (its default 0.01; its CIKM 2018 script
runs it at 0.1 with the decay 0.9999977, as PDGD). ``init: reference`` draws that normal
initialisation (output bias 0) for an ``mlp`` scorer; the default is the scorer's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.learners.online.base import Feedback, UpdateInfo
from ltr_cli.learners.online.click_base import ClickLearner
from ltr_cli.learners.online.click_pairs import shown_clicks
from ltr_cli.learners.online.pdgd_pairs import MOVED, NO_MOVE, document_weights, plackett_luce

SEED_RANGE = 2**31 - 1


def reference_init(scorer: Any, rng: np.random.Generator) -> np.ndarray:
    """The reference code's DeepPDGD initialisation of an ``mlp`` scorer's ``theta``: each
    layer's weights and bias normal with standard deviation 1/fan-in, the output layer's
    weights too, its bias 0 (the reference's output unit has none); drawn from ``rng``,
    layer by layer, weights before bias. Input-norm parameters keep the scorer's values."""
    arrays = scorer.named(scorer.theta0)
    layers = sorted({name.split("/")[1] for name in arrays if name.split("/")[1].startswith("layer")},
                    key=lambda layer: int(layer[5:]))
    for layer in [*layers, "output"]:
        w = arrays[f"params/{layer}/w"]
        arrays[f"params/{layer}/w"] = rng.normal(0.0, 1.0 / w.shape[0], w.shape)
        b = arrays[f"params/{layer}/b"]
        arrays[f"params/{layer}/b"] = np.zeros(b.shape) if layer == "output" else rng.normal(0.0, 1.0 / w.shape[0],
                                                                                               b.shape)
    return scorer.theta_of(arrays)


class DeepPDGDLearner(ClickLearner):
    """PDGD on a neural scorer; ``spec`` is the :class:`~ltr_cli.learners.online.pdgd.PDGDSpec`
    with its ``scorer`` block (normalised)."""

    use_kernels = False

    def __init__(self, spec: Any, n_features: int, ties: str, rng: np.random.Generator):
        from ltr_cli.neural.query_scorer import QueryScorer

        super().__init__(n_features, ties, rng, spec.learning_rate, spec.learning_rate_decay)
        self.spec = spec
        self.n_features = n_features
        self.scorer = QueryScorer(spec.scorer, n_features, int(rng.integers(SEED_RANGE)))
        self.w = self.scorer.theta0.copy() if spec.init == "scorer" else reference_init(self.scorer, rng)
        self._drawn: tuple[np.ndarray, np.ndarray] | None = None

    def score_rows(self, X: np.ndarray) -> np.ndarray:
        """The scores (m,) of one query's rows ``X (m, d)`` under the current parameters."""
        return self.scorer.scores(self.w, X)

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        scores = self.score_rows(X)
        self._drawn = (X, scores)  # round scratch: the scores the list is drawn from
        return plackett_luce(scores, self.rng)

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        self.t += 1
        ranking = feedback.ranking
        clicks = shown_clicks(feedback.clicks, ranking, self.shown, "pdgd")
        drawn, self._drawn = self._drawn, None
        if not clicks.any():
            return NO_MOVE
        scores = drawn[1] if drawn is not None and drawn[0] is X else self.score_rows(X)
        coef = document_weights(scores, ranking, clicks)
        if coef is None:
            return NO_MOVE
        shown = ranking[:clicks.shape[0]]
        if self.scorer.per_document:  # only the shown documents' scores carry a coefficient
            grad = self.scorer.vjp(self.w, X[shown], coef)
        else:  # a document's score depends on the others: the whole list, zero elsewhere
            full = np.zeros(X.shape[0])
            full[shown] = coef
            grad = self.scorer.vjp(self.w, X, full)
        self._move(grad)
        return MOVED

    def final_model(self, theta: np.ndarray) -> dict[str, Any]:
        """The run's model for ``theta`` (a run's final weights) as an inline neural model
        (:class:`~ltr_cli.neural.model.NeuralModel`, no feature transform)."""
        from ltr_cli.neural.model import NeuralModel
        from ltr_cli.neural.transforms import Transform

        model = NeuralModel(dict(self.spec.scorer), 1, Transform([], self.n_features), self.scorer.named(theta),
                            self.n_features)
        return model.to_dict()

    def resolved_settings(self) -> dict[str, object]:
        return {"parameters": self.scorer.size}

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_drawn"] = None  # round scratch: never kept
        return state
