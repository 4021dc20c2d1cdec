"""The ``linear`` scorer: ``s = x w + b``, one score per document from its own features
(allRank's output layer alone). Glorot-uniform ``w``, PyTorch's default bias.

Parameters: ``output/w`` ``[d, outputs]``, ``output/b`` ``[outputs]``.
"""

from __future__ import annotations

from typing import Any

from ltr_cli.neural.scorers import Scorer, ScorerKind, ScorerSettings
from ltr_cli.neural.scorers.layers import dense, dense_init


class LinearSettings(ScorerSettings):
    """``scorer: {kind: linear}``: no keys of its own."""


def build(settings: LinearSettings, outputs: int) -> Scorer:
    def init(key: Any, d: int) -> dict[str, Any]:
        return {"output": dense_init(key, d, outputs)}

    def forward(params: dict[str, Any], X: Any, mask: Any, train: bool, key: Any, positions: Any) -> Any:
        return dense(params["output"], X)

    return Scorer(init, forward, outputs, settings.output_activation, per_document=True,
                  floats=lambda d, L: float(d + outputs))


LINEAR = ScorerKind("linear", "a linear function of the features, x w + b", LinearSettings, build)
