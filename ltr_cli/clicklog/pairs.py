"""The weighted preference pairs of a click log, aggregated per query.

Two sets of pairs, ``versus``:

* ``unclicked`` (the default): in each session, every clicked document is preferred to
  every document shown in the same session and not clicked;
* ``query``: every clicked document is preferred to every other document of its query,
  shown or not, clicked or not: the propensity-weighted rank of the clicked documents among
  all the query's documents, the estimator of Joachims, Swaminathan and Schnabel (WSDM 2017;
  their Propensity SVM-Rank), whose hinge bounds that rank.

A pair weighs the weight of the clicked document's position (1 for naive clicks,
min(1/p_k, clip) for IPS), or, given per-row weights (``clicks.propensity: logged``), the
weight of the clicked row itself (min(1/p_r, clip)). With ``positions`` (``unclicked`` pairs only), the pairs are also
keyed by the positions the session showed both documents at, for a correction that weighs a
pair by both (pairwise debiasing, :mod:`ltr_cli.learners.batch.pair_debias`); without it the
pairs are those of the keys above alone.
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
    within the query, ``weight`` (P,) > 0; sorted by (query, better, worse), and with
    ``positions`` by the 1-based positions ``at_better`` and ``at_worse`` (P,) the session
    showed them at (None without)."""

    query: np.ndarray
    better: np.ndarray
    worse: np.ndarray
    weight: np.ndarray
    at_better: np.ndarray | None = None
    at_worse: np.ndarray | None = None


def _reduce(keys: list[np.ndarray], weights: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    k = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    w = np.concatenate(weights) if weights else np.zeros(0)
    uniq, inv = np.unique(k, return_inverse=True)
    return uniq, np.bincount(inv.reshape(-1), weights=w, minlength=len(uniq))


VERSUS = ("unclicked", "query")


def _compact(keys: list[np.ndarray], weights: list[np.ndarray]) -> tuple[list[np.ndarray], list[np.ndarray], int]:
    """The pending chunks summed into one (distinct keys), and its length."""
    uk, uw = _reduce(keys, weights)
    return [uk], [uw], len(uk)


def _pairs_of(keys: list[np.ndarray], weights: list[np.ndarray], W: np.int64) -> ClickPairs:
    """The summed pairs of the keys ``(query * W + better) * W + worse``, zero weights dropped."""
    uniq, total = _reduce(keys, weights)
    keep = total > 0
    uniq, total = uniq[keep], total[keep]
    return ClickPairs(uniq // (W * W), (uniq // W) % W, uniq % W, total)


def _positioned(keys: list[np.ndarray], weights: list[np.ndarray], W: np.int64, S: np.int64) -> ClickPairs:
    """The summed pairs of the keys ``pair key * S * S + (at_better - 1) * S + (at_worse - 1)``."""
    uniq, total = _reduce(keys, weights)
    keep = total > 0
    uniq, total = uniq[keep], total[keep]
    pair, at = uniq // (S * S), uniq % (S * S)
    return ClickPairs(pair // (W * W), (pair // W) % W, pair % W, total, at // S + 1, at % S + 1)


def click_pairs(s: Sessions, position_weight: np.ndarray, width: int, chunk: int = CHUNK,
                versus: str = "unclicked", documents: np.ndarray | None = None,
                positions: bool = False, row_weight: np.ndarray | None = None) -> ClickPairs:
    """The pairs of the log ``s`` (its rows in session order), a click at position k
    weighing ``position_weight[k - 1]``; ``width`` bounds the document indices (the most
    documents of a query); ``versus``: :data:`VERSUS` (see the module), ``query`` needing
    ``documents`` (the number of documents of each query, by query index); ``positions``:
    keyed by both documents' positions too (``unclicked`` only); ``row_weight``, float
    (rows,): a click at row r weighs ``row_weight[r]`` instead of its position's weight."""
    if positions and versus != "unclicked":
        raise ValueError("positions=True keys the unclicked pairs by both positions; versus must be 'unclicked'")
    if versus == "query":
        if documents is None:
            raise ValueError("versus='query' needs each query's number of documents")
        return _query_pairs(s, np.asarray(position_weight, dtype=float), width, np.asarray(documents), chunk,
                            row_weight)
    if versus != "unclicked":
        raise ValueError(f"versus {versus!r}: one of {', '.join(VERSUS)}")
    n = len(s.session)
    if n == 0:
        empty = np.zeros(0, np.int64)
        return ClickPairs(empty, empty, empty, np.zeros(0))
    starts = np.flatnonzero(np.r_[True, s.session[1:] != s.session[:-1]])
    lengths = np.diff(np.r_[starts, n])
    sessions_of = np.bincount(s.query[starts], minlength=int(s.query.max()) + 1).astype(float)
    W = np.int64(width)
    S = np.int64(int(s.position.max()))
    if positions and float(s.query.max() + 1) * float(W) ** 2 * float(S) ** 2 >= 2.0 ** 62:
        raise ValueError("too many queries, documents and positions to key the pairs by position in 64 bits")
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
                key = (q[m] * W + d[m, a]) * W + d[m, b]
                if positions:
                    key = (key * S + (s.position[rows[m, a]].astype(np.int64) - 1)) * S + \
                        (s.position[rows[m, b]].astype(np.int64) - 1)
                keys.append(key)
                at = rows[m, a]
                weights.append((pw[s.position[at] - 1] if row_weight is None else row_weight[at]) / sessions_of[q[m]])
                pending += m.size
            if pending > 4 * chunk:
                keys, weights, pending = _compact(keys, weights)
    return _positioned(keys, weights, W, S) if positions else _pairs_of(keys, weights, W)


def _query_pairs(s: Sessions, pw: np.ndarray, width: int, documents: np.ndarray, chunk: int,
                 row_weight: np.ndarray | None = None) -> ClickPairs:
    """``versus='query'``: each click's document against every other document of its query."""
    n = len(s.session)
    empty = np.zeros(0, np.int64)
    clicked = np.flatnonzero(s.click)
    if n == 0 or not clicked.size:
        return ClickPairs(empty, empty, empty, np.zeros(0))
    starts = np.flatnonzero(np.r_[True, s.session[1:] != s.session[:-1]])
    sessions_of = np.bincount(s.query[starts], minlength=int(s.query.max()) + 1).astype(float)
    W = np.int64(width)
    keys: list[np.ndarray] = []
    weights: list[np.ndarray] = []
    pending = 0
    q_all = s.query[clicked].astype(np.int64)
    m_all = documents[q_all].astype(np.int64)
    for m in np.unique(m_all):
        rows = clicked[m_all == m]
        for lo in range(0, len(rows), chunk):
            r = rows[lo:lo + chunk]
            q, d = s.query[r].astype(np.int64), s.doc[r].astype(np.int64)
            w = (pw[s.position[r] - 1] if row_weight is None else row_weight[r]) / sessions_of[q]
            others = np.broadcast_to(np.arange(m, dtype=np.int64), (len(r), int(m)))
            keep = others != d[:, None]
            i, j = np.nonzero(keep)
            keys.append((q[i] * W + d[i]) * W + others[i, j])
            weights.append(w[i])
            pending += i.size
            if pending > 4 * chunk:
                keys, weights, pending = _compact(keys, weights)
    return _pairs_of(keys, weights, W)
