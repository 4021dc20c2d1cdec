"""Step sizes: ``constant`` (eta) or ``inv-sqrt`` (eta / sqrt(t)), t >= 1 the round, optionally
multiplied by the round's ranking loss (``loss_scaled``, Alg. 3 in the authors' code)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pydantic import Field

from ltr_cli.core.schema import Strict


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


# --- config ------------------------------------------------------------------------------


class StepSpec(Strict):
    """The ``step:`` block of a learner's config (see :class:`StepSchedule`)."""

    rule: Literal["constant", "inv-sqrt"] = Field("inv-sqrt", description="constant: eta; inv-sqrt: eta / sqrt(t)")
    eta: float = Field(1.0, gt=0, description="the step's scale")
    loss_scaled: bool = Field(False, description="multiply by the round's ranking loss (authors' Alg. 3)")

    def schedule(self) -> StepSchedule:
        return StepSchedule(self.rule, self.eta, self.loss_scaled)


def reject_loss_scaled(step: StepSpec) -> StepSpec:
    """Validator body: learners without a ranking loss cannot scale steps by it."""
    if step.loss_scaled:
        raise ValueError("loss_scaled needs a ranking loss: only the perceptrons of Alg. 2 and Alg. 3 have one")
    return step
