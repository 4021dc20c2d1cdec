"""The document pairs a click vector on a shown list implies, shared by the pairwise
click learners (:mod:`~ltr_cli.learners.online.pdgd`, :mod:`~ltr_cli.learners.online.pairwise_clicks`).

Each clicked position is preferred over each unclicked position above the last click and
over the unclicked position just below it (the user is taken to have seen down to one
position past the last click). This is the pair set of PDGD (Oosterhuis & de Rijke, CIKM
2018) and of the pairwise baseline in the reference code of the online learning-to-rank
literature (HarrieO/OnlineLearningToRank, ``algorithms/PDGD/pdgd.py`` and
``algorithms/baselines/pairwise.py``: a position counts as seen when some click is at the
position above it or lower).
"""

from __future__ import annotations

import numpy as np


def click_pairs(clicks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``(pos, neg)``: the clicked positions and the unclicked positions at or above the
    one just below the last click, int64 (0-based positions of the shown list). Every
    (pos, neg) combination is a pair; no click: both empty."""
    hit = np.asarray(clicks) > 0
    pos = np.flatnonzero(hit)
    if pos.shape[0] == 0:
        return pos, pos
    seen = np.arange(hit.shape[0]) <= pos[-1] + 1
    return pos, np.flatnonzero(seen & ~hit)


def shown_clicks(clicks: np.ndarray | None, ranking: np.ndarray, shown: int, who: str) -> np.ndarray:
    """The click vector of a click learner's feedback, checked: one 0/1 per shown position
    (min(shown, len(ranking)) of them)."""
    if clicks is None:
        raise ValueError(f"{who} learns from clicks only; run it under protocol.feedback: clicks")
    n = min(shown, ranking.shape[0])
    if clicks.shape != (n,):
        raise ValueError(f"{who}: {clicks.shape[0] if clicks.ndim == 1 else clicks.shape} clicks for a shown "
                         f"list of {n} documents")
    return clicks
