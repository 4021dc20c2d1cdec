"""Pairwise surrogates.

* RankSVM hinge (Joachims): ``sum_{(i,j): R_i > R_j} max(0, delta - (s_i - s_j))``. Computed
  by counting, not by enumerating pairs: for every relevance level, the active lower
  (higher) documents of each document are found with a binary search in the sorted scores
  of all lower (higher) levels, so the cost is O(L m log m) for L distinct levels.
* Ordinal regression (ranking-losses supplement, Eq. 4 and its Algorithm 1):
  ``(1/M) sum_{y_i < y_j} C(y_i, y_j) max(0, 1 + f_i - f_j)``, ``M = (m^2 - sum_k m_k^2)/2``
  the number of pairs with different labels. Algorithm 1 sorts the 2m values
  ``f - 1/2, f + 1/2`` once and sweeps them with per-level counters.
* Preference pairs (supplement Eq. 6, Algorithm 2): ``(1/|P|) sum_{(i,j) in P} C_ij
  max(0, 1 + f_i - f_j)`` over an explicit set P of pairs "j preferred to i".

Costs ``C``: ``"uniform"`` (1 for every pair), ``"difference"`` (``y_j - y_i``), or a square
matrix indexed by integer labels, ``C[lower][higher]``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ltr_cli.errors import LtrError


def ranksvm_value_and_grad(
    scores: np.ndarray, labels: np.ndarray, delta: float = 1.0
) -> tuple[float, np.ndarray]:
    """Pairwise hinge over all pairs with different labels; value () and gradient (m,)."""
    s = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    m = s.shape[0]
    grad = np.zeros(m)
    value = 0.0
    levels = np.unique(y)
    for level in levels[1:]:
        upper = np.flatnonzero(y == level)
        lower_scores = np.sort(s[y < level])
        prefix = np.concatenate(([0.0], np.cumsum(lower_scores)))
        # lower j is active for upper i when s_j > s_i - delta
        start = np.searchsorted(lower_scores, s[upper] - delta, side="right")
        count = lower_scores.shape[0] - start
        total = prefix[-1] - prefix[start]
        value += float(np.sum(count * (delta - s[upper]) + total))
        grad[upper] -= count
    for level in levels[:-1]:
        lower = np.flatnonzero(y == level)
        upper_scores = np.sort(s[y > level])
        # upper i is active for lower j when s_i < s_j + delta
        grad[lower] += np.searchsorted(upper_scores, s[lower] + delta, side="left")
    return value, grad


def _cost(cost: str | Sequence[Sequence[float]] | np.ndarray, low: float, high: float) -> float:
    if isinstance(cost, str):
        if cost == "uniform":
            return 1.0
        if cost == "difference":
            return float(high - low)
        raise ValueError(f"unknown cost {cost!r}; expected uniform, difference or a matrix")
    C = np.asarray(cost, dtype=np.float64)
    for label in (low, high):
        if label != int(label) or not 0 <= label < C.shape[0]:
            raise LtrError(
                f"label {label:g} cannot index the {C.shape[0]} x {C.shape[0]} cost matrix; a cost "
                f"matrix needs integer labels 0..{C.shape[0] - 1} (use cost: uniform or difference)"
            )
    return float(C[int(low), int(high)])


def ordinal_value_and_grad(
    scores: np.ndarray,
    labels: np.ndarray,
    cost: str | Sequence[Sequence[float]] | np.ndarray = "uniform",
) -> tuple[float, np.ndarray]:
    """Ordinal-regression loss by the supplement's Algorithm 1 (one sort, one sweep).

    Values ``f_j - 1/2`` (a document's "upper" role) and ``f_i + 1/2`` (its "lower" role)
    are swept in ascending order; ``u[k]`` counts label-k documents whose ``+1/2`` value
    is still ahead (still active as the lower side), ``h[k]`` those whose ``-1/2`` value is
    behind (already active as the upper side). At equal values the ``+1/2`` event goes
    first, so a pair exactly at the hinge's kink counts as inactive.
    Cost: O(m log m + m L) for L distinct labels.
    """
    f = np.asarray(scores, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    m = f.shape[0]
    levels, z = np.unique(y, return_inverse=True)
    n = levels.shape[0]
    counts = np.bincount(z, minlength=n).astype(np.float64)
    pairs = 0.5 * (m * m - float(counts @ counts))
    grad = np.zeros(m)
    if pairs == 0:
        return 0.0, grad
    C = np.array([[_cost(cost, levels[a], levels[b]) if a < b else 0.0 for b in range(n)]
                  for a in range(n)]) / pairs
    c = np.concatenate((f - 0.5, f + 0.5))
    kind = np.concatenate((np.ones(m), np.zeros(m)))  # 0 = "+1/2" event, sorted first on ties
    order = np.lexsort((kind, c))
    u = counts.copy()
    h = np.zeros(n)
    loss = 0.0
    for e in order:
        j = e % m
        level = z[j]
        if e < m:  # f_j - 1/2: j is the upper side against active lower documents
            w = C[:level, level] @ u[:level]
            loss -= w * c[e]
            grad[j] -= w
            h[level] += 1
        else:  # f_j + 1/2: j is the lower side against active upper documents
            w = C[level, level + 1:] @ h[level + 1:]
            loss += w * c[e]
            grad[j] += w
            u[level] -= 1
    return float(loss), grad


def preference_value_and_grad(
    scores: np.ndarray,
    pairs: Sequence[tuple[int, int]] | np.ndarray,
    costs: Sequence[float] | np.ndarray | None = None,
) -> tuple[float, np.ndarray]:
    """Supplement Algorithm 2: pairs ``(i, j)`` mean j is preferred to i; loss
    ``C_ij (1 + f_i - f_j)`` when ``f_j - f_i < 1``, averaged over the |P| pairs."""
    f = np.asarray(scores, dtype=np.float64)
    P = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    grad = np.zeros(f.shape[0])
    if P.shape[0] == 0:
        return 0.0, grad
    C = np.ones(P.shape[0]) if costs is None else np.asarray(costs, dtype=np.float64)
    i, j = P[:, 0], P[:, 1]
    active = f[j] - f[i] < 1.0
    w = C[active] / P.shape[0]
    np.add.at(grad, i[active], w)
    np.subtract.at(grad, j[active], w)
    return float(w @ (1.0 + f[i[active]] - f[j[active]])), grad


def label_preferences(
    labels: np.ndarray, cost: str | Sequence[Sequence[float]] | np.ndarray = "uniform"
) -> tuple[np.ndarray, np.ndarray]:
    """All pairs ``(i, j)`` with ``y_i < y_j`` and their costs (O(m^2) pairs)."""
    y = np.asarray(labels, dtype=np.float64)
    i, j = np.nonzero(y[:, None] < y[None, :])
    costs = np.array([_cost(cost, y[a], y[b]) for a, b in zip(i, j)])
    return np.stack((i, j), axis=1), costs
