"""The cascade click model with a per-grade click table and a switchable stop rule.

The user reads the list from the top. At each position reached, the document is clicked
with P(click | grade), and the user may stop there with P(stop | grade):

- ``after-click``: the textbook cascade; the stop is possible only after a click, so an
  unclicked document never ends the session;
- ``any-position``: the rule of the online learning-to-rank reference code
  (``ClickModel.generate_clicks``): a stop coin is thrown at every position, clicked or not,
  and the clicks up to and including the first stop are kept.

The two agree when no grade can stop (``perfect``, ``random``) and differ elsewhere.

The named cascades are the literature's tables (:mod:`ltr_cli.clicks.tables`) under a stop
rule, each a :class:`~ltr_cli.clicks.base.ClickModelKind` named as its table;
:data:`CASCADE` builds a cascade on a custom table (``{click: [...], stop: [...]}``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.clicks.base import ClickModel, ClickModelKind, ClickSettings
from ltr_cli.clicks.tables import table

#: the stop rules, the textbook one first
STOP_RULES: tuple[str, ...] = ("after-click", "any-position")


class CascadeModel(ClickModel):
    """A cascade model: ``click`` and ``stop`` hold one probability per grade (tuples of
    length ``grades``), ``stop_rule`` one of :data:`STOP_RULES`."""

    def __init__(self, name: str, click: tuple[float, ...], stop: tuple[float, ...], stop_rule: str,
                 hint: str = "--grades"):
        if stop_rule not in STOP_RULES:
            raise ValueError(stop_rule)
        self.name = name
        self.click = np.asarray(click, dtype=float)
        self.stop = np.asarray(stop, dtype=float)
        self.stop_rule = stop_rule
        self.grades = len(click)
        self.hint = hint

    def walk(self, labels: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        click, stop = self.click[labels], self.stop[labels]
        return click, stop, (stop if self.stop_rule == "any-position" else np.zeros_like(stop))

    def describe(self) -> dict[str, Any]:
        return {"model": self.name, "kind": "cascade", "stop": self.stop_rule, "grades": self.grades,
                "click": self.click.tolist(), "stop_probability": self.stop.tolist()}


def build_cascade(s: ClickSettings) -> CascadeModel:
    """The cascade of ``s``'s click and stop columns under its stop rule."""
    return CascadeModel(s.name, s.click, s.stop, s.stop_rule or STOP_RULES[0], s.hint)


def _named(name: str, words: str) -> ClickModelKind:
    t = table(name, 5)
    column = ", ".join(f"{p:g}" for p in t.click)
    stops = ", ".join(f"{p:g}" for p in t.stop)
    return ClickModelKind(f"cascade on the {name} table ({words}): P(click | grade 0..4) {column}; "
                          f"P(stop | grade) {stops}", build_cascade, table=name, stop_rules=STOP_RULES)


PERFECT = _named("perfect", "clicks follow the grade, never stops")
NAVIGATIONAL = _named("navigational", "looks for one relevant document and stops there")
INFORMATIONAL = _named("informational", "clicks many documents, stops late")
ALMOST_RANDOM = _named("almost-random", "the grade barely matters")
RANDOM = _named("random", "every document clicked with probability 0.5, never stops")
#: a cascade on a custom table (not a named model)
CASCADE = ClickModelKind("cascade on a custom table", build_cascade, table="perfect", stop_rules=STOP_RULES)
