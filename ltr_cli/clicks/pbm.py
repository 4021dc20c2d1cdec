"""The position-based model (PBM): examination by rank, attractiveness by grade.

Position i is examined with probability (1/i)^eta, independently of every other position,
and an examined document is clicked with P(click | grade) (by default the ``perfect``
table's). Clicks at different positions are independent: P(click at i) = (1/i)^eta times
P(click | grade), and nothing stops the user.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.clicks.base import ClickModelKind, ClickSettings, EtaModel


def examination(n: int, eta: float) -> np.ndarray:
    """(1/i)^eta for i = 1..n, float (n,)."""
    return (1.0 / np.arange(1, n + 1, dtype=float)) ** eta


class PositionBasedModel(EtaModel):
    """PBM: ``click`` one probability per grade (length ``grades``), ``eta`` >= 0."""

    def walk(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        none = np.zeros(labels.shape[-1])
        return examination(labels.shape[-1], self.eta) * self.click[labels], none, none

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "kind": "pbm", "grades": self.grades, "eta": self.eta,
                "table": self.table, "click": self.click.tolist()}


def _build(s: ClickSettings) -> PositionBasedModel:
    return PositionBasedModel(s.name, s.click, 1.0 if s.eta is None else s.eta, s.table, s.hint)


PBM = ClickModelKind("position-based: position i examined with probability (1/i)^eta, then clicked with "
                     "P(click | grade) of the perfect table; never stops", _build, eta=True, examination=examination)
