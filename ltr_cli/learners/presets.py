"""The literature's names for settings of a learner type: ``type: p-dbgd`` in a config is
``type: dbgd`` with ``comparison: probabilistic`` and ``candidates: 1``.

A preset fills keys; any key the config gives itself wins (``type: p-mgd, candidates: 9``
is probabilistic MGD with 9 candidates). The expansion happens before validation, so a
run of a preset is the same run, with the same run id, as the spelled-out config.
Names are matched without regard to case (``P-DBGD`` is ``p-dbgd``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Preset:
    """A literature name: the learner type it is, the settings it fixes, and where it comes from."""

    name: str
    type: str
    settings: dict[str, Any]
    source: str

    def summary(self) -> str:
        keys = ", ".join(f"{k}: {v}" for k, v in self.settings.items())
        return f"type: {self.type}, {keys} ({self.source})"


PRESETS: dict[str, Preset] = {p.name: p for p in (
    Preset("p-dbgd", "dbgd", {"comparison": "probabilistic", "candidates": 1},
           "DBGD with probabilistic interleaving, Hofmann et al. 2011"),
    Preset("td-dbgd", "dbgd", {"comparison": "team-draft", "candidates": 1},
           "DBGD with team-draft interleaving, Yue & Joachims 2009; Radlinski et al. 2008"),
    Preset("p-mgd", "dbgd", {"comparison": "probabilistic", "candidates": 49},
           "multileave gradient descent, probabilistic multileaving, 49 candidates as in "
           "Oosterhuis & de Rijke 2018's reference code"),
    Preset("td-mgd", "dbgd", {"comparison": "team-draft", "candidates": 9},
           "multileave gradient descent, team-draft multileaving, 9 candidates, Schuth et al. 2016"),
)}


def expand(entry: Any) -> Any:
    """A ``learners:`` entry with a preset ``type`` replaced by its learner type and settings
    (the entry's own keys win); anything else is returned as it is."""
    if not isinstance(entry, dict) or not isinstance(entry.get("type"), str):
        return entry
    preset = PRESETS.get(entry["type"].lower())
    if preset is None:
        return entry
    return {**preset.settings, **entry, "type": preset.type}
