"""The chain click models as simulators: SDBN, DBN and DCM on a per-grade table.

Each is a browsing walk (:mod:`ltr_cli.clicks.law`); a reached document is clicked with its
attractiveness P(click | grade), the table's ``click`` column:

- ``sdbn`` (Chapelle & Zhang 2009, simplified): after a click the user is satisfied with
  P(stop | grade), the table's ``stop`` column, and stops; nobody stops unclicked (the
  textbook cascade under another name);
- ``dbn``: as ``sdbn``, and the user goes on to the next position only with the
  continuation gamma (custom key ``gamma``, default :data:`DEFAULT_GAMMA`), clicked or not:
  P(stop | clicked) = 1 - gamma (1 - sigma), P(stop | not clicked) = 1 - gamma;
- ``dcm`` (Guo et al. 2009): after a click at position i the user goes on with
  lambda_i = (i / (i + 1))^eta (by rank, not by grade), and always goes on unclicked.

The fitted models of ``ltr clicks fit`` keep one attractiveness per query and document;
these simulators keep one per grade, the contract of every named click model.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ltr_cli.clicks.base import ClickModel, ClickModelKind, ClickSettings, EtaModel
from ltr_cli.errors import LtrError

#: DBN's continuation when a custom table gives none
DEFAULT_GAMMA = 0.9


class ChainModel(ClickModel):
    """SDBN (``gamma`` 1) or DBN: ``click`` (attractiveness) and ``stop`` (satisfaction),
    one probability per grade."""

    def __init__(self, name: str, kind: str, click: tuple[float, ...], stop: tuple[float, ...], gamma: float,
                 hint: str = "--grades"):
        self.name, self.kind = name, kind
        self.click = np.asarray(click, dtype=float)
        self.stop = np.asarray(stop, dtype=float)
        self.gamma = float(gamma)
        self.grades = len(click)
        self.hint = hint

    def walk(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        sat = self.stop[labels]
        return self.click[labels], 1.0 - self.gamma * (1.0 - sat), np.full(sat.shape, 1.0 - self.gamma)

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "kind": self.kind, "grades": self.grades, "click": self.click.tolist(),
                "satisfaction": self.stop.tolist(), "gamma": self.gamma}


def continuation(n: int, eta: float) -> np.ndarray:
    """DCM's lambda_i = (i / (i + 1))^eta for i = 1..n, float (n,)."""
    i = np.arange(1, n + 1, dtype=float)
    return (i / (i + 1.0)) ** eta


class DependentClickModel(EtaModel):
    """``dcm``: ``click`` one probability per grade, ``eta`` >= 0."""

    def walk(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = labels.shape[-1]
        return self.click[labels], 1.0 - continuation(n, self.eta), np.zeros(n)

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "kind": "dcm", "grades": self.grades, "eta": self.eta, "table": self.table,
                "click": self.click.tolist()}


def _gamma(s: ClickSettings) -> float:
    value = s.options.get("gamma", DEFAULT_GAMMA)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not (math.isfinite(value) and 0 <= value <= 1):
        raise LtrError(f"{s.where}.gamma: {value!r} is not a probability in [0, 1] (DBN's continuation)")
    return float(value)


def _build_sdbn(s: ClickSettings) -> ChainModel:
    return ChainModel(s.name, "sdbn", s.click, s.stop, 1.0, s.hint)


def _build_dbn(s: ClickSettings) -> ChainModel:
    return ChainModel(s.name, "dbn", s.click, s.stop, _gamma(s), s.hint)


def _build_dcm(s: ClickSettings) -> DependentClickModel:
    return DependentClickModel(s.name, s.click, 1.0 if s.eta is None else s.eta, s.table, s.hint)


SDBN = ClickModelKind("simplified DBN: attractiveness P(click | grade), satisfied after a click with P(stop | grade) "
                      "of the navigational table, never stops unclicked", _build_sdbn, table="navigational",
                      stop_rules=("after-click",))
DBN = ClickModelKind(f"dynamic Bayesian network: as sdbn, and goes on only with gamma (default {DEFAULT_GAMMA:g}), "
                     "clicked or not", _build_dbn, table="navigational", stop_rules=("after-click",), keys=("gamma",))
DCM = ClickModelKind("dependent click model: clicked with P(click | grade) of the perfect table; after a click at i, "
                     "goes on with (i/(i + 1))^eta", _build_dcm, eta=True)
