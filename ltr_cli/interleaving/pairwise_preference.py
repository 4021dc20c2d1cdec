"""Pairwise-preference multileaving (Oosterhuis & de Rijke 2017).

The shown list: position i (1-based) is drawn uniformly from the documents that some ranker
places in its top i and that are not shown yet (the choice set C_i).

The clicks give pairs: each clicked document over each unclicked document shown at or above
the position just below the last click. A pair at positions a and b counts only when both
documents were in the choice sets from above the higher of the two positions on: with
t(d) = min_j rank_j(d) (0-based), min(a, b) >= max(t(d_a), t(d_b)) (0-based positions). Each
counted pair weighs 1 / prod over positions i in [min t, max t) of (1 - 1/|C_i|), which
undoes how often the pair's order was fixed by the draws rather than open (no factor is 0:
at those positions the document with the smaller t was offered and not drawn, so the choice
set held another). A ranker's credit is the weighted number of counted pairs it orders as
the clicks do; ranker x beats y when its credit is higher. The pairs, weights and verdicts
are those of the reference code of the online learning-to-rank literature
(``PairwisePreferenceMultileave``); it also divides every credit by the number of counted
pairs, which leaves each verdict as it is but makes the expected credit under random clicks
differ between rankers, so it is not done here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.interleaving.base import (
    InterleavingKind, Outcome, Shown, check_clicks, check_length, check_rankings, inverse, sign_matrix)


def choice_sets(shown: Shown) -> tuple[np.ndarray, np.ndarray]:
    """``(sizes, top)``: int64 (L,) the size of the choice set at each position of the shown
    list, and int64 (L,) t(d) = min_j rank_j(d) (0-based) of each shown document."""
    ranks = shown.rankings
    n = ranks.shape[1]
    first = inverse(ranks).min(axis=0)                          # the depth at which d is offered
    size = len(shown.docs)
    placed_at = np.full(n, size, dtype=np.int64)
    placed_at[shown.docs] = np.arange(size)
    offered = first[None, :] <= np.arange(size)[:, None]        # (L, n)
    open_ = placed_at[None, :] >= np.arange(size)[:, None]
    sizes = (offered & open_).sum(axis=1)
    return sizes.astype(np.int64), first[shown.docs]


class PairwisePreference:
    """Pairwise-preference multileaving of k >= 2 rankings."""

    name = "pairwise-preference"
    min_rankers = 2
    max_rankers: int | None = None

    def make(self, rankings: Any, length: int, rng: np.random.Generator) -> Shown:
        """A shown list of min(length, n) documents; per position one ``rng.integers`` over
        the choice set, in document-index order."""
        ranks = check_rankings(rankings, self.min_rankers, self.max_rankers)
        return self.make_checked(ranks, check_length(length, ranks.shape[1]), rng)

    def make_checked(self, ranks: np.ndarray, size: int, rng: np.random.Generator) -> Shown:
        """:meth:`make` for rankings already checked (int64 (k, n), each a permutation) and
        ``size`` <= n."""
        n = ranks.shape[1]
        first = inverse(ranks).min(axis=0)
        used = np.zeros(n, dtype=bool)
        docs = np.empty(size, dtype=np.int64)
        for pos in range(size):
            choice = np.flatnonzero((first <= pos) & ~used)
            doc = int(choice[rng.integers(len(choice))])
            docs[pos] = doc
            used[doc] = True
        return Shown(docs=docs, rankings=ranks)

    def credit(self, shown: Shown, clicks: Any) -> Outcome:
        """Credit: the weighted number of counted pairs each ranker orders as the clicks
        do, float (k,); prefer: the sign of the difference. No counted pair: all zeros."""
        hit = check_clicks(shown, clicks)
        k = shown.rankings.shape[0]
        if not hit.any():
            return Outcome(credit=np.zeros(k), prefer=np.zeros((k, k)))
        size = len(hit)
        last = int(np.flatnonzero(hit)[-1])
        pos = np.flatnonzero(hit)
        neg = np.flatnonzero(~hit & (np.arange(size) <= last + 1))
        a, b = np.repeat(pos, len(neg)), np.tile(neg, len(pos))
        sizes, top = choice_sets(shown)
        keep = np.minimum(a, b) >= np.maximum(top[a], top[b])
        a, b = a[keep], b[keep]
        if not len(a):
            return Outcome(credit=np.zeros(k), prefer=np.zeros((k, k)))
        lo, hi = np.minimum(top[a], top[b]), np.maximum(top[a], top[b])
        at = np.arange(size)[None, :]
        passed = np.where((lo[:, None] <= at) & (at < hi[:, None]), 1.0 - 1.0 / sizes[None, :], 1.0)
        weight = 1.0 / passed.prod(axis=1)                          # no factor is 0: see the module
        inv = inverse(shown.rankings)
        right = inv[:, shown.docs[a]] < inv[:, shown.docs[b]]       # (k, pairs)
        credit = (right * weight).sum(axis=1)
        return Outcome(credit=credit, prefer=sign_matrix(credit))


PAIRWISE_PREFERENCE = InterleavingKind("each position drawn from the documents every "
                                       "ranking ranks at least that high; credit: the weighted click pairs each "
                                       "ranking orders right", PairwisePreference, interleaves=False,
                                       multileaves=True, abbreviation="pp")
