"""The weighted preference pairs of a click log, aggregated per query.

In each session, every clicked document is preferred to every document shown in the same
session and not clicked; the pair weighs the weight of the clicked document's position
(1 for naive clicks, min(1/p_k, clip) for IPS; Joachims, Swaminathan and Schnabel 2017).
A query's pairs are summed over its sessions and divided by its number of sessions, so a
query's loss is its mean per session and does not grow with the log's size. Pairs are
keyed (query, preferred document, other document) and summed in chunks of sessions, so
only the distinct pairs are kept, never one row per session and pair.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ltr_cli.clicklog.simulate import Sessions

#: sessions turned into pair keys at once before they are summed
CHUNK = 500_000


@dataclass(frozen=True)
class ClickPairs:
    """Distinct pairs: ``query`` (P,), ``better`` and ``worse`` (P,) document indices
    within the query, ``weight`` (P,) > 0; sorted by (query, better, worse)."""

    query: np.ndarray
    better: np.ndarray
    worse: np.ndarray
    weight: np.ndarray


def _reduce(keys: list[np.ndarray], weights: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    k = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    w = np.concatenate(weights) if weights else np.zeros(0)
    uniq, inv = np.unique(k, return_inverse=True)
    return uniq, np.bincount(inv.reshape(-1), weights=w, minlength=len(uniq))


def click_pairs(s: Sessions, position_weight: np.ndarray, width: int, chunk: int = CHUNK) -> ClickPairs:
    """The pairs of the log ``s`` (its rows in session order), a click at position k
    weighing ``position_weight[k - 1]``; ``width`` bounds the document indices (the most
    documents of a query)."""
    n = len(s.session)
    if n == 0:
        empty = np.zeros(0, np.int64)
        return ClickPairs(empty, empty, empty, np.zeros(0))
    starts = np.flatnonzero(np.r_[True, s.session[1:] != s.session[:-1]])
    lengths = np.diff(np.r_[starts, n])
    sessions_of = np.bincount(s.query[starts], minlength=int(s.query.max()) + 1).astype(float)
    W = np.int64(width)
    keys: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    pending = 0
    pw = np.asarray(position_weight, dtype=float)
    for k in np.unique(lengths):
        first = starts[lengths == k]
        for lo in range(0, len(first), chunk):
            rows = first[lo:lo + chunk, None] + np.arange(k)
            c, d = s.click[rows], s.doc[rows].astype(np.int64)
            q = s.query[rows[:, 0]].astype(np.int64)
            for a in range(int(k)):
                m, b = np.nonzero(c[:, a:a + 1] & ~c)
                if not m.size:
                    continue
                keys.append((q[m] * W + d[m, a]) * W + d[m, b])
                weights.append(pw[s.position[rows[m, a]] - 1] / sessions_of[q[m]])
                pending += m.size
            if pending > 4 * chunk:
                uk, uw = _reduce(keys, weights)
                keys, weights, pending = [uk], [uw], len(uk)
    uniq, total = _reduce(keys, weights)
    keep = total > 0
    uniq, total = uniq[keep], total[keep]
    return ClickPairs(uniq // (W * W), (uniq // W) % W, uniq % W, total)
