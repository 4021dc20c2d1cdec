"""``examine-stop``: the reference code's ``ExamineClickModel`` (its ``ex_per_1``).

Not a position-based model, though it starts from the same examination curve
e_i = (1/i)^eta. Each position reached is clicked with P(click | grade); a click at
position i >= 2 then ends the session with probability 1 - e_i / e_(i-1) =
1 - ((i - 1)/i)^eta, and a click at position 1 never does. An unclicked position never
stops the user. So examination enters only as stop-after-click probabilities: it is a
cascade whose stops depend on the position, not on the grade. The reference code pairs it
with the ``perfect`` table and eta 1 (then a click at i stops with probability 1/i).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.clicks.base import ClickModelKind, ClickSettings, EtaModel


def stop_after_click(n: int, eta: float) -> np.ndarray:
    """P(stop | click at i) = 1 - e_i / e_(i-1) for i >= 2, 0 at i = 1; float (n,).
    The ratio is computed as ((i - 1)/i)^eta, which stays defined where e_i underflows."""
    i = np.arange(2, n + 1, dtype=float)
    return np.concatenate(([0.0], 1.0 - ((i - 1.0) / i) ** eta))[:n]


class ExamineStopModel(EtaModel):
    """``examine-stop``: ``click`` one probability per grade, ``eta`` >= 0."""

    def walk(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        n = labels.shape[-1]
        return self.click[labels], stop_after_click(n, self.eta), np.zeros(n)

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "kind": "examine-stop", "grades": self.grades, "eta": self.eta,
                "table": self.table, "click": self.click.tolist()}


def _build(s: ClickSettings) -> ExamineStopModel:
    return ExamineStopModel(s.name, s.click, 1.0 if s.eta is None else s.eta, s.table, s.hint)


EXAMINE_STOP = ClickModelKind("the reference code's examine model: clicked with P(click | grade) of the perfect "
                              "table; a click at i >= 2 stops with probability 1 - ((i - 1)/i)^eta", _build, eta=True)
