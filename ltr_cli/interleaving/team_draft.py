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

from ltr_cli.interleaving.base import (
    InterleavingKind, Outcome, Shown, check_clicks, check_length, check_rankings, sign_matrix)


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
        return self.make_checked(ranks, check_length(length, ranks.shape[1]), rng)

    def make_checked(self, ranks: np.ndarray, size: int, rng: np.random.Generator) -> Shown:
        """:meth:`make` for rankings already checked (int64 (k, n), each a permutation) and
        ``size`` <= n."""
        start = shared_prefix(ranks, size)
        docs, teams = self.draft(ranks, size, start, self.draws(ranks.shape[0], size - start, rng))
        return Shown(docs=docs, rankings=ranks, teams=teams)

    @staticmethod
    def draws(k: int, count: int, rng: np.random.Generator) -> np.ndarray:
        """The draws of drafting ``count`` documents from ``k`` rankings: one
        ``rng.permutation(k)`` per round, int64 (rounds, k), rounds = ceil(count / k)."""
        perms = np.empty((-(-count // k), k), dtype=np.int64)
        for r in range(perms.shape[0]):
            perms[r] = rng.permutation(k)
        return perms

    @staticmethod
    def draft(ranks: np.ndarray, size: int, start: int, perms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(docs, teams)``, int64 (size,) each: the shared prefix of ``start`` documents
        (team -1), then the rounds in the orders ``perms`` of :meth:`draws`, each ranker
        adding its highest-ranked document not shown yet. The reference of the compiled
        :func:`ltr_cli.kernels.interleave.team_draft`."""
        k, n = ranks.shape
        docs = np.empty(size, dtype=np.int64)
        teams = np.full(size, -1, dtype=np.int64)
        docs[:start] = ranks[0, :start]
        used = np.zeros(n, dtype=bool)
        used[docs[:start]] = True
        nxt = np.full(k, start, dtype=np.int64)
        pos = start
        for order in perms:
            for j in order:
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
        return docs, teams

    def credit(self, shown: Shown, clicks: Any) -> Outcome:
        """Credit: clicks on each team's documents, float (k,); prefer: the sign of the
        difference."""
        hit = check_clicks(shown, clicks)
        assert shown.teams is not None, "a team-draft list carries its teams"
        k = shown.rankings.shape[0]
        mine = shown.teams[hit & (shown.teams >= 0)]
        credit = np.bincount(mine, minlength=k).astype(float)
        return Outcome(credit=credit, prefer=sign_matrix(credit))

    def winners(self, shown: Shown, hit: np.ndarray, over: int = 0) -> np.ndarray:
        """``credit(shown, hit).winners(over)`` for a bool click vector ``hit`` (L,) on
        ``shown``: the rankers whose team has more clicks than ranker ``over``'s."""
        assert shown.teams is not None, "a team-draft list carries its teams"
        counts = np.bincount(shown.teams[hit & (shown.teams >= 0)], minlength=shown.rankings.shape[0])
        return np.flatnonzero(counts > counts[over])


TEAM_DRAFT = InterleavingKind("each round the rankers, in a random order, each add their best "
                              "document not shown yet, which joins their team; credit: clicks on the team",
                              TeamDraft, interleaves=True, multileaves=True, abbreviation="td")
