"""The interleaving and multileaving methods by name."""

from __future__ import annotations

from ltr_cli.errors import LtrError
from ltr_cli.interleaving.balanced import Balanced
from ltr_cli.interleaving.base import Method
from ltr_cli.interleaving.pairwise_preference import PairwisePreference
from ltr_cli.interleaving.probabilistic import DEFAULT_TAU, Probabilistic
from ltr_cli.interleaving.team_draft import TeamDraft

#: the methods that compare two rankers
INTERLEAVING: tuple[str, ...] = ("team-draft", "balanced", "probabilistic")
#: the methods that compare k >= 2 rankers
MULTILEAVING: tuple[str, ...] = ("team-draft", "probabilistic", "pairwise-preference")


def build_method(name: str, tau: float = DEFAULT_TAU, rankers: int = 2, where: str = "--method") -> Method:
    """The method ``name`` for ``rankers`` rankers (``tau``: the probabilistic softmax
    exponent); a one-line error naming ``where`` for an unknown name or a method that
    cannot compare that many rankers."""
    names = INTERLEAVING if rankers == 2 else MULTILEAVING
    if name not in INTERLEAVING + MULTILEAVING:
        raise LtrError(f"{where} {name!r}: unknown method; interleaving: {', '.join(INTERLEAVING)}; "
                       f"multileaving: {', '.join(MULTILEAVING)}")
    if name not in names:
        raise LtrError(f"{where} {name!r} compares two rankers only; for {rankers} use {', '.join(MULTILEAVING)}"
                       if rankers != 2 else f"{where} {name!r} is a multileaving method; to compare two rankers "
                       f"use {', '.join(INTERLEAVING)}")
    method: Method
    if name == "team-draft":
        method = TeamDraft()
    elif name == "balanced":
        method = Balanced()
    elif name == "probabilistic":
        method = Probabilistic(tau)
    else:
        method = PairwisePreference()
    return method
