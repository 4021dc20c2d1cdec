"""The permutations of one query that PermuRank (Xu et al., SIGIR 2008) works with: the
query-level feature map Phi of Eq. 2, what makes a permutation perfect (E = 1) under a
measure, and the two exact oracles for a linear F = w.Phi: the perfect permutation with
the lowest F and the imperfect one with the highest (:mod:`ltr_cli.learners.batch.permurank`).

Perfect means E = 1: for ``map``, every relevant document (label > ``threshold``) above
every other; for ``ndcg``, gains non-increasing down the list; for ``ndcg@k``, the first
k positions hold the ideal gains in order (the rest is free).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ltr_cli.measures.metrics import exp2_gain, parse_cutoff


def permutation_features(X: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Phi(pi) of Eq. 2 for ``perm`` (document indices, first position first): the document
    at position p is ahead of n-1-p documents and behind p, so it weighs (n-1-2p)/(n(n-1))."""
    n = X.shape[0]
    coef = (n - 1 - 2 * np.arange(n)).astype(np.float64)
    return (coef @ X[perm]) / (n * (n - 1))


@dataclass(frozen=True)
class Levels:
    """What makes a permutation of one query perfect: position p < ``k`` must hold a
    document of level ``required[p]`` (the levels sorted descending); ``k`` = n for MAP and
    NDCG over the whole list."""

    levels: np.ndarray
    required: np.ndarray
    k: int

    @classmethod
    def of(cls, y: np.ndarray, measure: str = "map", threshold: float = 0.0) -> Levels:
        """MAP: relevant (label > threshold) or not; NDCG: the gain 2^label - 1."""
        y = np.asarray(y, dtype=np.float64)
        kind, at, cut = measure.partition("@")
        if kind in ("map", "ap"):
            levels = (y > threshold).astype(np.float64)
        else:
            levels = exp2_gain(y)
        k = y.shape[0] if not at else min(y.shape[0], parse_cutoff(cut) or y.shape[0])
        return cls(levels, -np.sort(-levels), k)

    def perfect(self, perm: np.ndarray) -> bool:
        return bool((self.levels[perm[:self.k]] == self.required[:self.k]).all())

    def has_imperfect(self) -> bool:
        return self.levels.shape[0] > 1 and bool((self.levels != self.levels[0]).any())


def lowest_perfect(f: np.ndarray, lv: Levels) -> np.ndarray:
    """The perfect permutation with the lowest F for scores ``f``. F = c sum_j f_j (n-1-2 pos_j)
    falls as high scores move down, so: each level's slots among the first k take that
    level's lowest-scoring documents, scores ascending within the slots; the positions from k
    on take every other document, scores ascending (ties by index)."""
    n = f.shape[0]
    idx = np.arange(n)
    order = np.lexsort((idx, f, -lv.levels))  # level descending, score ascending
    if lv.k >= n:
        return order
    top = []
    for level in np.unique(lv.required[:lv.k])[::-1]:
        need = int((lv.required[:lv.k] == level).sum())
        top.append(order[lv.levels[order] == level][:need])
    head = np.concatenate(top)
    rest = np.setdiff1d(idx, head)
    return np.concatenate((head, rest[np.lexsort((rest, f[rest]))]))


def highest_imperfect(f: np.ndarray, lv: Levels) -> np.ndarray | None:
    """The imperfect permutation with the highest F for scores ``f``; None if there is none.

    sigma, scores descending (ties: lower level first, then index), maximises F; if it is
    imperfect it is the answer. Otherwise F(sigma) - F(pi) = 2c sum of the score gaps of the
    pairs pi inverts, and an imperfect pi puts some document j in a slot p < k of another
    level, so it costs at least moving j alone to p (the others keep sigma's order), and
    that move is imperfect: the answer is the cheapest such move. Over the whole list
    (k = n) it is the swap of the adjacent pair across a level boundary with the smallest
    score gap."""
    n = f.shape[0]
    sigma = np.lexsort((np.arange(n), lv.levels, -f))
    lv_s = lv.levels[sigma]
    if (lv_s[:lv.k] != lv.required[:lv.k]).any():
        return sigma
    t = f[sigma]
    if lv.k >= n:
        boundary = np.flatnonzero(lv_s[:-1] != lv_s[1:])
        if boundary.size == 0:
            return None
        p = int(boundary[np.argmin(t[boundary] - t[boundary + 1])])
        out = sigma.copy()
        out[p], out[p + 1] = out[p + 1], out[p]
        return out
    S = np.concatenate(([0.0], np.cumsum(t)))
    P = np.arange(n)[:, None]  # sigma position of the moved document
    q = np.arange(lv.k)[None, :]  # the slot it moves to
    up = S[P] - S[q] - (P - q) * t[P]  # over the documents at q..P-1 (P > q)
    down = (q - P) * t[P] - (S[np.minimum(q + 1, n)] - S[P + 1])  # under those at P+1..q (P < q)
    cost = np.where(P > q, up, down)
    cost[lv_s[:, None] == lv.required[None, :lv.k]] = np.inf
    if not np.isfinite(cost).any():
        return None
    P_best, q_best = np.unravel_index(int(np.argmin(cost)), cost.shape)
    rest = np.delete(sigma, P_best)
    return np.insert(rest, q_best, sigma[P_best])
