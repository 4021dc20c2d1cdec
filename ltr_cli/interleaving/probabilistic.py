"""Probabilistic interleaving (Hofmann et al. 2011) and multileaving (Schuth et al. 2015).

Each ranking j becomes a softmax over the documents, P_j(d) proportional to
1 / rank_j(d)^tau (rank 1-based, tau 3 by default). Each position of the shown list picks a
ranker uniformly at random (independently per position) and draws from that ranker's softmax
over the documents not shown yet.

The clicks are credited by marginalising over the assignments (which ranker contributed
each position) given the shown list. With a uniform prior the posterior factorises over
positions: P(position i came from j | list) is P_j(doc_i | documents left at i), normalised
over the rankers. A ranker's credit is its expected number of clicked documents, and
``prefer[x, y]`` is the exact expectation of sign(clicks of x - clicks of y) under that
posterior (the reference code estimates it from 10,000 sampled assignments).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.errors import LtrError
from ltr_cli.interleaving.base import (
    InterleavingKind, Outcome, Shown, check_clicks, check_length, check_rankings, inverse)

#: the softmax exponent of the literature (Hofmann et al. 2011; the reference code's P-DBGD)
DEFAULT_TAU = 3.0


def posterior(shown: Shown, tau: float, inv: np.ndarray | None = None) -> np.ndarray:
    """float (L, k): P(position i was contributed by ranker j | the shown list), each row
    summing to 1 (``inv``: ``inverse(shown.rankings)``, when known)."""
    n = shown.rankings.shape[1]
    total = float((1.0 / (np.arange(n) + 1.0) ** tau).sum())          # the same for every ranking
    if inv is None:
        inv = inverse(shown.rankings)
    shown_w = 1.0 / (inv[:, shown.docs] + 1.0) ** tau                  # (k, L)
    left = total - np.cumsum(shown_w, axis=1) + shown_w
    like = (shown_w / left).T                                          # P_j(doc_i | left at i)
    return like / like.sum(axis=1, keepdims=True)


def sign_expectation(post: np.ndarray) -> np.ndarray:
    """float (k, k): E[sign(c_x - c_y)] when each row of ``post`` (float (c, k)) is the law
    of the ranker credited with one click, independently across rows; exact, through the
    law of c_x - c_y for every pair at once."""
    c, k = post.shape
    dist = np.zeros((k, k, 2 * c + 1))
    dist[:, :, c] = 1.0
    for p in post:
        up, down = p[:, None], p[None, :]                              # +1 for x, -1 for y
        stay = 1.0 - up - down
        new = dist * stay[:, :, None]
        new[:, :, 1:] += dist[:, :, :-1] * up[:, :, None]
        new[:, :, :-1] += dist[:, :, 1:] * down[:, :, None]
        dist = new
    out = dist[:, :, c + 1:].sum(axis=2) - dist[:, :, :c].sum(axis=2)
    # out[x, y] and out[y, x] come from the same operations when x and y have the same
    # posterior: halving the difference makes such a pair an exact tie
    return (out - out.T) / 2.0


def sign_masses(post: np.ndarray, over: int) -> tuple[np.ndarray, np.ndarray]:
    """The laws of c_x - c_over and of c_over - c_x for every ranker x, float (k, 2c + 1)
    each (entry c + s: the probability that the difference is s), when each row of ``post``
    (float (c, k)) is the law of the ranker credited with one click: the operations of
    :func:`sign_expectation` on the 2k pairs (x, over) and (over, x) only. The reference of
    the compiled :func:`ltr_cli.kernels.interleave.sign_masses`."""
    return _pair_law(post, post, post[:, over]), _pair_law(post, post[:, over], post)


def _pair_law(post: np.ndarray, up: np.ndarray, down: np.ndarray) -> np.ndarray:
    c, k = post.shape
    dist = np.zeros((k, 2 * c + 1))
    dist[:, c] = 1.0
    for a, b in zip(up, down):
        u, d = np.broadcast_to(a, (k,))[:, None], np.broadcast_to(b, (k,))[:, None]
        stay = 1.0 - u - d
        new = dist * stay
        new[:, 1:] += dist[:, :-1] * u
        new[:, :-1] += dist[:, 1:] * d
        dist = new
    return dist


def sign_expectation_column(post: np.ndarray, over: int = 0, masses: Any = sign_masses) -> np.ndarray:
    """float (k,): column ``over`` of :func:`sign_expectation`, ``prefer[:, over]``, with
    the same numbers (the same operations on the 2k pairs (x, over) and (over, x) instead
    of all k^2). ``masses``: :func:`sign_masses` or a function with its contract."""
    c = post.shape[0]
    mine, theirs = masses(post, over)
    return ((mine[:, c + 1:].sum(axis=1) - mine[:, :c].sum(axis=1))
            - (theirs[:, c + 1:].sum(axis=1) - theirs[:, :c].sum(axis=1))) / 2.0


def sampled_preference(shown: Shown, clicks: Any, tau: float, rng: np.random.Generator, samples: int,
                       over: int = 0) -> np.ndarray:
    """float (k,): a Monte Carlo estimate of ``prefer[:, over]``, as the reference code of the
    online learning-to-rank literature computes it (``ProbabilisticMultileave``, 10,000
    samples): ``samples`` assignments of the clicked positions drawn from the posterior (one
    ``rng.random((clicks, samples))`` call, each uniform placed in the posterior's cumulative
    law), and the mean over them of sign(clicks of x - clicks of ``over``). Rankers the clicks
    cannot tell apart (an exact tie) get an estimate near 0 of either sign. No click: zeros."""
    hit = check_clicks(shown, clicks)
    k = shown.rankings.shape[0]
    if not hit.any():
        return np.zeros(k)
    if isinstance(samples, bool) or not isinstance(samples, (int, np.integer)) or samples < 1:
        raise LtrError(f"samples {samples!r}: draw at least one assignment")
    cum = np.cumsum(posterior(shown, tau)[hit], axis=1)
    draws = rng.random((cum.shape[0], int(samples)))
    counts = np.zeros((int(samples), k))
    rows = np.arange(int(samples))
    for cu, u in zip(cum, draws):
        counts[rows, np.minimum(np.searchsorted(cu, u, side="left"), k - 1)] += 1.0
    return np.sign(counts - counts[:, over:over + 1]).mean(axis=0)


class Probabilistic:
    """Probabilistic interleaving (k = 2) or multileaving (k >= 2) with softmax exponent tau."""

    name = "probabilistic"
    min_rankers = 2
    max_rankers: int | None = None

    def __init__(self, tau: float = DEFAULT_TAU) -> None:
        if not (np.isfinite(tau) and tau > 0):
            raise LtrError(f"tau {tau!r}: give a finite softmax exponent above 0")
        self.tau = float(tau)

    def make(self, rankings: Any, length: int, rng: np.random.Generator) -> Shown:
        """A shown list of min(length, n) documents: per position one ``rng.integers(k)``
        (the ranker) and one ``rng.random()`` (the document, by inversion of that ranker's
        softmax over the documents left)."""
        ranks = check_rankings(rankings, self.min_rankers, self.max_rankers)
        return self.make_checked(ranks, check_length(length, ranks.shape[1]), rng)

    def make_checked(self, ranks: np.ndarray, size: int, rng: np.random.Generator) -> Shown:
        """:meth:`make` for rankings already checked (int64 (k, n), each a permutation) and
        ``size`` <= n."""
        picks, coins = self.draws(ranks.shape[0], size, rng)
        return Shown(docs=self.draft(ranks, inverse(ranks), picks, coins), rankings=ranks)

    @staticmethod
    def draws(k: int, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The draws of a shown list of ``size`` documents from ``k`` rankings, in their
        order: per position one ``rng.integers(k)`` (int64 (size,)) and one
        ``rng.random()`` (float (size,)). They do not depend on the rankings."""
        picks = np.empty(size, dtype=np.int64)
        coins = np.empty(size)
        for pos in range(size):
            picks[pos] = rng.integers(k)
            coins[pos] = rng.random()
        return picks, coins

    def weights(self, n: int) -> np.ndarray:
        """The softmax weights by rank, 1 / rank^tau, float (n,)."""
        return 1.0 / (np.arange(n) + 1.0) ** self.tau

    def draft(self, ranks: np.ndarray, inv: np.ndarray, picks: np.ndarray, coins: np.ndarray) -> np.ndarray:
        """The shown documents, int64 (size,), for the draws ``picks`` and ``coins`` of
        :meth:`draws` (``inv``: :func:`~ltr_cli.interleaving.base.inverse` of ``ranks``).
        The reference of the compiled :func:`ltr_cli.kernels.interleave.probabilistic_draft`."""
        k, n = ranks.shape
        weight = self.weights(n)                                        # by rank
        left = np.ones((k, n), dtype=bool)                              # by rank, per ranker
        docs = np.empty(picks.shape[0], dtype=np.int64)
        for pos in range(picks.shape[0]):
            j = int(picks[pos])
            w = np.where(left[j], weight, 0.0)
            cum = np.cumsum(w)
            r = min(int(np.searchsorted(cum, coins[pos] * cum[-1], side="right")), n - 1)
            while not left[j, r]:                                       # rounding at the edge
                r -= 1
            doc = int(ranks[j, r])
            docs[pos] = doc
            left[np.arange(k), inv[:, doc]] = False
        return docs

    def credit(self, shown: Shown, clicks: Any) -> Outcome:
        """Credit: each ranker's expected number of clicked documents, float (k,); prefer:
        the exact expected sign of the click difference, both under the posterior over
        assignments (see the module). No click: all zeros."""
        hit = check_clicks(shown, clicks)
        k = shown.rankings.shape[0]
        if not hit.any():
            return Outcome(credit=np.zeros(k), prefer=np.zeros((k, k)))
        post = posterior(shown, self.tau)[hit]
        return Outcome(credit=post.sum(axis=0), prefer=sign_expectation(post))

    def winners(self, shown: Shown, hit: np.ndarray, over: int = 0, masses: Any = sign_masses,
                inv: np.ndarray | None = None) -> np.ndarray:
        """``credit(shown, hit).winners(over)`` for a bool click vector ``hit`` (L,) on
        ``shown``, from the one column of ``prefer`` it reads
        (:func:`sign_expectation_column`, the same numbers; ``masses`` as there; ``inv``:
        the rankings' inverse, when known)."""
        if not hit.any():
            return np.zeros(0, dtype=np.int64)
        post = posterior(shown, self.tau, inv)[hit]
        return np.flatnonzero(sign_expectation_column(post, over, masses) > 0)


PROBABILISTIC = InterleavingKind("each position drawn from a random ranker's softmax 1/rank^tau; "
                                 "credit: the expected clicks over every assignment", Probabilistic,
                                 interleaves=True, multileaves=True, params={"tau": "the softmax exponent (default 3)"},
                                 abbreviation="p")
