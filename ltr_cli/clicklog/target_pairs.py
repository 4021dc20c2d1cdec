"""Preference pairs from per-document estimates of relevance: how a pairwise learner
(RankSVM, LambdaMART's pairwise objective) trains on a per-document estimator's targets
(``policy-aware``, ``affine``, ``dm``, ``dr``; :mod:`ltr_cli.clicklog.docwise`).

The derivation. For one query with estimated relevances ``t`` (m,) (any sign: DR and the
affine correction give negative estimates) and scores ``s`` without ties, let
``rank(i) = 1 + #{j : s_j > s_i}``. The estimated sum of ranks is::

    sum_i t_i rank(i) = sum_i t_i + sum_{i != j} t_i 1[s_j > s_i]

Take each unordered pair {i, j} once, with ``t_i >= t_j``: exactly one of ``s_j > s_i``,
``s_i > s_j`` holds, so its two terms ``t_i 1[s_j > s_i] + t_j 1[s_i > s_j]`` are
``t_j + (t_i - t_j) 1[s_j > s_i]``. Summed over the pairs::

    sum_i t_i rank(i) = C(t) + sum_{(i, j): t_i > t_j} (t_i - t_j) 1[s_j > s_i]
    C(t) = sum_i t_i + sum_{i < j} min(t_i, t_j)                  (:func:`rank_sum_offset`)

``C`` does not depend on the scores, so minimising the estimated rank sum is minimising
the pair objective on the right: the pairs (i over j) with ``t_i > t_j``, each weighing
``t_i - t_j > 0``. Every weight is positive whatever the signs of ``t``, so replacing the
0/1 loss by a convex surrogate of ``s_i - s_j`` (RankSVM's squared hinge, RankNet's
logistic loss) keeps the objective convex in the scores. When ``t`` is unbiased for the
relevance (IPS, affine, DR under their assumptions), the pair objective is unbiased for
the relevance's rank sum minus ``C`` of the relevance, as the targets are linear in it.

With IPS targets (``t_d`` the clicks on d, each weighing ``min(1/p_k, clip)``, per
session), the 0/1 objective equals Joachims, Swaminathan and Schnabel's propensity-weighted
rank of the clicked documents (``clicks.pairs: query``) up to a constant: both are
``sum_i t_i rank(i)``; their pairs (each click over every other document, weighing its
click's weight) and these differ in the surrogate, not in the 0/1 objective.

A query's pairs number at most m (m - 1) / 2, formed at once per query by numpy; the
documents of equal targets give none (a query whose targets are all equal gives none).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ltr_cli.clicklog.pairs import ClickPairs
from ltr_cli.errors import LtrError

#: the pairs a fold's targets may give at most (each costs about 100 bytes in a fit)
MAX_PAIRS = 20_000_000


def query_pairs(t: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One query's pairs of targets ``t`` (m,): ``better``, ``worse`` (P,) document indices
    with ``t[better] > t[worse]``, sorted by (better, worse), and their weights
    ``t[better] - t[worse]`` (P,)."""
    t = np.asarray(t, dtype=np.float64)
    better, worse = np.nonzero(t[:, None] > t[None, :])
    return better, worse, t[better] - t[worse]


def query_starts(sizes: Any) -> np.ndarray:
    """The first row of each of the stacked queries of ``sizes`` documents, and the end:
    int64 (Q + 1,), query q's rows ``starts[q]:starts[q + 1]``."""
    starts = np.zeros(len(sizes) + 1, dtype=np.int64)
    np.cumsum(np.asarray(sizes, dtype=np.int64), out=starts[1:])
    return starts


def pair_bound(targets: list[np.ndarray]) -> int:
    """The pairs every query's targets (float (m_q,) each) may give at most: sum m_q (m_q - 1) / 2."""
    return sum(len(t) * (len(t) - 1) // 2 for t in targets)


def target_pairs(targets: list[np.ndarray], where: str = "clicks.correction") -> ClickPairs:
    """The pairs of every query's targets (float (m_q,) each) as :class:`ClickPairs`
    (``query`` indexes ``targets``); a one-line error naming ``where`` when there would be
    more than :data:`MAX_PAIRS` (RankSVM and LambdaMART then make them block by block
    instead, :func:`block_pairs`)."""
    total = pair_bound(targets)
    if total > MAX_PAIRS:
        raise LtrError(f"{where}: the per-document targets would give up to {total} preference pairs, above "
                       f"{MAX_PAIRS}; make them block by block (block_pairs), "
                       "or train on fewer documents per query")
    q, b, w, c = [], [], [], []
    for k, t in enumerate(targets):
        better, worse, weight = query_pairs(t)
        q.append(np.full(len(better), k, dtype=np.int64))
        b.append(better.astype(np.int64))
        w.append(worse.astype(np.int64))
        c.append(weight)
    if not q:
        empty = np.zeros(0, dtype=np.int64)
        return ClickPairs(empty, empty, empty, np.zeros(0))
    return ClickPairs(np.concatenate(q), np.concatenate(b), np.concatenate(w), np.concatenate(c))


def rank_sum(t: np.ndarray, s: np.ndarray) -> float:
    """``sum_i t_i rank(i)``, ``rank(i) = 1 + #{j : s_j > s_i}`` (``t``, ``s`` (m,))."""
    s = np.asarray(s, dtype=np.float64)
    rank = 1 + (s[None, :] > s[:, None]).sum(axis=1)
    return float(np.asarray(t, dtype=np.float64) @ rank)


def pair_loss01(t: np.ndarray, s: np.ndarray) -> float:
    """The pair objective with the 0/1 loss: ``sum_{t_i > t_j} (t_i - t_j) 1[s_j > s_i]``."""
    better, worse, weight = query_pairs(t)
    s = np.asarray(s, dtype=np.float64)
    return float(weight @ (s[worse] > s[better]))


def rank_sum_offset(t: np.ndarray) -> float:
    """``C(t) = sum_i t_i + sum_{i < j} min(t_i, t_j)``: the rank sum minus the 0/1 pair
    objective, under any scores without ties (the module docstring)."""
    t = np.asarray(t, dtype=np.float64)
    upper = np.triu(np.minimum(t[:, None], t[None, :]), 1)
    return float(t.sum() + upper.sum())


#: the m x m cells of the queries of one block of :func:`query_blocks`, at most
BLOCK_CELLS = 4_000_000


def query_blocks(sizes: np.ndarray, cells: int | None = None) -> list[tuple[int, int]]:
    """Consecutive queries (of ``sizes`` documents) cut into blocks ``[a, b)`` whose m x m
    grids hold at most ``cells`` (default :data:`BLOCK_CELLS`) cells together; a larger
    query is a block of its own."""
    cap = BLOCK_CELLS if cells is None else cells
    blocks, a, held = [], 0, 0
    for q, m in enumerate(np.asarray(sizes, dtype=np.int64)):
        if q > a and held + int(m * m) > cap:
            blocks.append((a, q))
            a, held = q, 0
        held += int(m * m)
    if len(sizes) > a:
        blocks.append((a, len(sizes)))
    return blocks


def block_pairs(t: np.ndarray, starts: np.ndarray,
                blocks: list[tuple[int, int]]) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """The pairs of the stacked targets ``t`` (n,) (query q's rows ``starts[q]:starts[q + 1]``)
    block by block: rows ``i``, ``j`` (int64) with ``t_i > t_j`` and weights ``t_i - t_j``,
    in :func:`target_pairs`' order (by query, then i, then j); each block's are made from its
    full m x m grids at once and dropped after use."""
    for a, b in blocks:
        lo, hi = int(starts[a]), int(starts[b])
        sizes = np.diff(starts[a:b + 1])
        first = np.repeat(starts[a:b], sizes)  # each row's query's first row
        width = np.repeat(sizes, sizes)
        i = np.repeat(np.arange(lo, hi), width)
        offsets = np.repeat(np.cumsum(width) - width, width)
        j = np.repeat(first, width) + (np.arange(len(i)) - offsets)
        keep = t[i] > t[j]
        i, j = i[keep], j[keep]
        yield i, j, t[i] - t[j]

