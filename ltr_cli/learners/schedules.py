"""Learning-rate schedules: ``constant`` (eta) and ``inv-sqrt`` (c / sqrt(t)), t >= 1."""

from __future__ import annotations

import math
from dataclasses import dataclass


@dataclass(frozen=True)
class StepSchedule:
    rule: str = "inv-sqrt"
    eta: float = 1.0

    def __call__(self, t: int) -> float:
        """Step size at round t (1-based; the protocol's round counter)."""
        if self.rule == "constant":
            return self.eta
        if self.rule == "inv-sqrt":
            return self.eta / math.sqrt(t)
        raise ValueError(f"unknown step rule {self.rule!r}")

    def describe(self) -> str:
        return f"{self.eta:g}" if self.rule == "constant" else f"{self.eta:g}/sqrt(t)"
