"""The ``mlp`` scorer: allRank's ``FCModel`` followed by its output layer, one score per
document from its own features.

``x -> [LayerNorm] -> (Linear -> activation -> dropout) per hidden size -> Linear -> outputs``:
the optional input norm is PyTorch's ``LayerNorm`` over the features (allRank's
``input_norm``); every hidden layer, the last included, is followed by the activation and
dropout, as in allRank's ``FCModel``.

Parameters: ``input_norm/g``, ``input_norm/b`` (with ``input_norm``), ``layer<i>/w``
``[n_in, n_out]``, ``layer<i>/b``, ``output/w`` ``[last, outputs]``, ``output/b``.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, field_validator

from ltr_cli.neural.jaxenv import jax
from ltr_cli.neural.scorers import Scorer, ScorerKind, ScorerSettings
from ltr_cli.neural.scorers.layers import (activation, check_activation, dense, dense_init, dropout, keys,
                                           layer_norm, norm_init)

MAX_WIDTH = 65536


def check_widths(widths: list[int], what: str, empty: bool = True) -> list[int]:
    """Validator body: layer widths are whole numbers from 1 to :data:`MAX_WIDTH`."""
    if not widths and not empty:
        raise ValueError(f"{what} needs at least one width")
    if any(isinstance(w, bool) or not 1 <= w <= MAX_WIDTH for w in widths):
        raise ValueError(f"{what}: widths must be whole numbers from 1 to {MAX_WIDTH}")
    return widths


class MLPSettings(ScorerSettings):
    """``scorer: {kind: mlp, hidden: [64, 64], activation: relu, dropout: 0.0, input_norm: false}``."""

    hidden: list[int] = Field(default_factory=lambda: [64, 64], description="hidden layer widths (allRank's "
                              "fc_model.sizes); [] is a linear scorer")
    activation: str = Field("relu", description="activation after each hidden layer")
    dropout: float = Field(0.0, ge=0.0, lt=1.0, description="dropout after each hidden layer, while training")
    input_norm: bool = Field(False, description="layer norm over the input features (allRank's input_norm)")

    @field_validator("hidden")
    @classmethod
    def _hidden(cls, widths: list[int]) -> list[int]:
        return check_widths(widths, "hidden")

    @field_validator("activation")
    @classmethod
    def _act(cls, name: str) -> str:
        return check_activation(name)


def build(settings: MLPSettings, outputs: int) -> Scorer:
    widths = list(settings.hidden)
    act = activation(settings.activation)
    rate = settings.dropout

    def init(key: Any, d: int) -> dict[str, Any]:
        ks = jax().random.split(key, len(widths) + 1)
        params: dict[str, Any] = {}
        if settings.input_norm:
            params["input_norm"] = norm_init(d)
        sizes = [d, *widths]
        for i, (a, b) in enumerate(zip(sizes[:-1], sizes[1:])):
            params[f"layer{i}"] = dense_init(ks[i], a, b)
        params["output"] = dense_init(ks[-1], sizes[-1], outputs)
        return params

    def forward(params: dict[str, Any], X: Any, mask: Any, train: bool, key: Any, positions: Any) -> Any:
        x = layer_norm(params["input_norm"], X) if settings.input_norm else X
        for i, k in enumerate(keys(key if train and rate > 0 else None, len(widths))):
            x = dropout(k, act(dense(params[f"layer{i}"], x)), rate, train)
        return dense(params["output"], x)

    return Scorer(init, forward, outputs, settings.output_activation, per_document=True,
                  floats=lambda d, L: float(d + 2 * sum(widths) + outputs))


MLP = ScorerKind("mlp", "a multi-layer perceptron on each document's features (allRank's FCModel)",
                 MLPSettings, build)
