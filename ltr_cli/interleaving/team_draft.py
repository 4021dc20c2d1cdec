"""Team-draft interleaving (Radlinski et al. 2008) and multileaving (Schuth et al. 2014).

The shown list is drafted in rounds: each round visits the k rankers in a fresh uniformly
random order, and each ranker in turn adds its highest-ranked document not shown yet, which
joins its team. The prefix that every ranking shares (same documents at the same ranks) is
shown first and belongs to no team, as the reference code of the online learning-to-rank
literature does, so identical rankings tie on every click vector. A ranker's credit is the
number of clicked documents of its team; ranker x beats y when it has more.

With k = 2 this is team-draft interleaving: a round in random order is the original's coin
flip between two teams of equal size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.interleaving.base import Outcome, Shown, check_clicks, check_length, check_rankings, sign_matrix


def shared_prefix(rankings: np.ndarray, length: int) -> int:
    """How many leading ranks (at most ``length``) hold the same document in every ranking."""
    same = np.all(rankings[:, :length] == rankings[:1, :length], axis=0)
    return int(length if same.all() else np.argmin(same))


class TeamDraft:
    """Team-draft interleaving (k = 2) or multileaving (k >= 2)."""

    name = "team-draft"
    min_rankers = 2
    max_rankers: int | None = None

    def make(self, rankings: Any, length: int, rng: np.random.Generator) -> Shown:
        """Draft a shown list of min(length, n) documents; one ``rng.permutation(k)`` per
        round after the shared prefix. ``Shown.teams`` holds each position's ranker."""
        ranks = check_rankings(rankings, self.min_rankers, self.max_rankers)
        k, n = ranks.shape
        size = check_length(length, n)
        docs = np.empty(size, dtype=np.int64)
        teams = np.full(size, -1, dtype=np.int64)
        start = shared_prefix(ranks, size)
        docs[:start] = ranks[0, :start]
        used = np.zeros(n, dtype=bool)
        used[docs[:start]] = True
        nxt = np.full(k, start, dtype=np.int64)
        pos = start
        while pos < size:
            for j in rng.permutation(k):
                if pos == size:
                    break
                row = ranks[j]
                i = nxt[j]
                while used[row[i]]:
                    i += 1
                docs[pos], teams[pos] = row[i], j
                used[row[i]] = True
                nxt[j] = i + 1
                pos += 1
        return Shown(docs=docs, rankings=ranks, teams=teams)

    def credit(self, shown: Shown, clicks: Any) -> Outcome:
        """Credit: clicks on each team's documents, float (k,); prefer: the sign of the
        difference."""
        hit = check_clicks(shown, clicks)
        assert shown.teams is not None, "a team-draft list carries its teams"
        k = shown.rankings.shape[0]
        mine = shown.teams[hit & (shown.teams >= 0)]
        credit = np.bincount(mine, minlength=k).astype(float)
        return Outcome(credit=credit, prefer=sign_matrix(credit))
