"""Step sizes: ``constant`` (eta) or ``inv-sqrt`` (eta / sqrt(t)), t >= 1 the round, optionally
multiplied by the round's ranking loss (``loss_scaled``, Alg. 3 in the authors' code)."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class StepSchedule:
    rule: str = "inv-sqrt"
    eta: float = 1.0
    loss_scaled: bool = False

    def __call__(self, t: int, loss: float = 1.0) -> float:
        """Step size at round t (1-based); ``loss`` is used when ``loss_scaled``."""
        if self.rule == "constant":
            step = self.eta
        elif self.rule == "inv-sqrt":
            step = self.eta / math.sqrt(t)
        else:
            raise ValueError(f"unknown step rule {self.rule!r}")
        return step * loss if self.loss_scaled else step

    def describe(self) -> str:
        base = f"{self.eta:g}" if self.rule == "constant" else f"{self.eta:g}/sqrt(t)"
        return f"{base} * ranking loss" if self.loss_scaled else base
