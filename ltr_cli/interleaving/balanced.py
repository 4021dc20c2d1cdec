"""Balanced interleaving (Joachims 2002, 2003), for two rankings.

A coin decides which ranking leads. The two rankings are then read in step: the one that
has contributed fewer of its ranks (the leader on a draw) offers its next document, which is
shown unless it already is. Clicks are credited through the lowest click: with d the
lowest clicked document and m the smallest rank at which d appears in either ranking, each
ranking's credit is the number of clicked documents within its own top m. The ranking with
more credit wins.

Balanced interleaving is known to be biased for some pairs of rankings: under clicks that
ignore relevance, one ranking can win more often than the other (Radlinski et al. 2008).
docs/clicks.md gives the exact example.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.interleaving.base import (
    InterleavingKind, Outcome, Shown, check_clicks, check_length, check_rankings, inverse, sign_matrix)


def balanced_list(rankings: np.ndarray, size: int, a_first: bool) -> np.ndarray:
    """The balanced list of ``size`` documents of two rankings (int64 (2, n)) when ranking
    0 leads (``a_first``) or ranking 1 does."""
    a, b = rankings
    used = np.zeros(rankings.shape[1], dtype=bool)
    out: list[int] = []
    ka = kb = 0
    while len(out) < size:
        if ka < kb or (ka == kb and a_first):
            doc, ka = int(a[ka]), ka + 1
        else:
            doc, kb = int(b[kb]), kb + 1
        if not used[doc]:
            used[doc] = True
            out.append(doc)
    return np.asarray(out, dtype=np.int64)


class Balanced:
    """Balanced interleaving of exactly two rankings."""

    name = "balanced"
    min_rankers = 2
    max_rankers: int | None = 2
    #: favours one ranking under clicks that ignore the documents (the module's example):
    #: the conformance suite skips its random-clicks check, saying so
    unbiased = False

    def make(self, rankings: Any, length: int, rng: np.random.Generator) -> Shown:
        """The balanced list of min(length, n) documents; one ``rng.random()`` picks the
        leader (ranking 0 when it is below 0.5)."""
        ranks = check_rankings(rankings, self.min_rankers, self.max_rankers)
        return self.make_checked(ranks, check_length(length, ranks.shape[1]), rng)

    def make_checked(self, ranks: np.ndarray, size: int, rng: np.random.Generator) -> Shown:
        """:meth:`make` for rankings already checked (int64 (2, n), each a permutation) and
        ``size`` <= n."""
        return Shown(docs=balanced_list(ranks, size, bool(rng.random() < 0.5)), rankings=ranks)

    def credit(self, shown: Shown, clicks: Any) -> Outcome:
        """Credit: clicked documents within each ranking's top m (see the module), float
        (2,); prefer: the sign of the difference. No click: a tie at 0."""
        hit = check_clicks(shown, clicks)
        if not hit.any():
            return Outcome(credit=np.zeros(2), prefer=np.zeros((2, 2)))
        inv = inverse(shown.rankings)
        lowest = shown.docs[np.flatnonzero(hit)[-1]]
        top = int(inv[:, lowest].min())
        clicked = shown.docs[hit]
        credit = (inv[:, clicked] <= top).sum(axis=1).astype(float)
        return Outcome(credit=credit, prefer=sign_matrix(credit))


BALANCED = InterleavingKind("the two rankings' tops merged, a coin picks the leader; credit: clicks "
                            "within each ranking's top down to the lowest click (biased under random clicks)",
                            Balanced, interleaves=True, multileaves=False, abbreviation="b")
