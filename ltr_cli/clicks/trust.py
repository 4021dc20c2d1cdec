"""ULTRA's examination table, a position-based model on it, and the trust-bias model.

The examination curve is ULTRA's table e = (0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10,
0.08, 0.06) raised to the power eta, its last value repeated below rank 10; its relative
propensities e_i / e_1 at eta 1 are (1, 0.897, 0.706, 0.500, ...).

- ``ultra-pbm``: position i is examined with probability e_i^eta, independently of the
  others, and an examined document is clicked with P(click | grade).
- ``trust-bias`` (Agarwal et al. 2019; Vardasbi et al. 2020, as ULTRA's
  ``TrustBiasedModel``): the same examination; an examined document is relevant with
  gamma = P(click | grade), and is clicked with eps+_i if relevant and eps-_i if not, where
  eps+_i = 1 - (i + 1)/100 and eps-_i = eps / i (eps = 0.65 by default). So
  P(click at i) = e_i^eta (gamma eps+_i + (1 - gamma) eps-_i): clicks on documents that are
  not relevant also depend on the position.

Neither model stops the user: the clicks at different positions are independent.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ltr_cli.clicks.base import ClickModelKind, ClickSettings, EtaModel
from ltr_cli.errors import LtrError

#: ULTRA's PBM examination probabilities for ranks 1..10 (eta 1)
ULTRA_EXAMINATION: tuple[float, ...] = (0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06)
#: the false-positive rate at rank 1 of the trust-bias model (eps-_i = eps / i)
DEFAULT_NEGATIVE = 0.65


def table_examination(n: int, eta: float) -> np.ndarray:
    """ULTRA's examination table to the power ``eta`` for ranks 1..n, float (n,); ranks
    below 10 take the table's last value."""
    base = np.asarray(ULTRA_EXAMINATION, dtype=float)
    return base[np.minimum(np.arange(n), len(base) - 1)] ** eta


def trust_rates(n: int, negative: float = DEFAULT_NEGATIVE) -> tuple[np.ndarray, np.ndarray]:
    """(eps+, eps-) for ranks 1..n: eps+_i = 1 - (i + 1)/100 (floored at 0), eps-_i = negative / i."""
    i = np.arange(1, n + 1, dtype=float)
    return np.maximum(1.0 - (i + 1.0) / 100.0, 0.0), negative / i


class TablePositionModel(EtaModel):
    """``ultra-pbm``: PBM on ULTRA's examination table; ``click`` one probability per grade."""

    kind = "ultra-pbm"

    def attraction(self, labels: np.ndarray) -> np.ndarray:
        """P(click | examined) per position."""
        return self.click[labels]

    def walk(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        none = np.zeros(labels.shape[-1])
        return table_examination(labels.shape[-1], self.eta) * self.attraction(labels), none, none

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "kind": self.kind, "grades": self.grades, "eta": self.eta,
                "table": self.table, "click": self.click.tolist(), "examination": list(ULTRA_EXAMINATION)}


class TrustBiasModel(TablePositionModel):
    """``trust-bias``: ``click`` gives P(relevant | grade); ``negative`` is eps-_1."""

    kind = "trust-bias"

    def __init__(self, name: str, click: tuple[float, ...], eta: float, table: str, hint: str = "--grades",
                 negative: float = DEFAULT_NEGATIVE):
        super().__init__(name, click, eta, table, hint)
        self.negative = float(negative)

    def attraction(self, labels: np.ndarray) -> np.ndarray:
        plus, minus = trust_rates(labels.shape[-1], self.negative)
        gamma = self.click[labels]
        return gamma * plus + (1.0 - gamma) * minus

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "eps_plus": "1 - (i + 1)/100", "eps_minus": f"{self.negative:g}/i"}


def _build_pbm(s: ClickSettings) -> TablePositionModel:
    return TablePositionModel(s.name, s.click, 1.0 if s.eta is None else s.eta, s.table, s.hint)


def _negative(s: ClickSettings) -> float:
    """A trust-bias model's rank-1 false-click rate: a custom table's ``negative``, or the default."""
    value = s.options.get("negative", DEFAULT_NEGATIVE)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and 0 <= value <= 1):
        raise LtrError(f"{s.where}.negative: {value!r} is not a probability in [0, 1] (the false-click rate at rank 1)")
    return float(value)


def _build_trust(s: ClickSettings) -> TrustBiasModel:
    return TrustBiasModel(s.name, s.click, 1.0 if s.eta is None else s.eta, s.table, s.hint, _negative(s))


ULTRA_PBM = ClickModelKind("position-based on ULTRA's examination table^eta (0.68, 0.61, 0.48, ... by rank), then "
                           "clicked with P(click | grade) of the perfect table; never stops", _build_pbm, eta=True,
                           examination=table_examination)
TRUST_BIAS = ClickModelKind("trust bias: ULTRA's examination table^eta; an examined document clicked with "
                            "1 - (i + 1)/100 if relevant (P = the perfect table's), 0.65/i if not",
                            _build_trust, eta=True, keys=("negative",), examination=table_examination)
