"""The position models: PBM and UBM, fitted by EM.

- PBM: P(C_r = 1) = alpha_(q,d) gamma_r: a document is clicked when its position is
  examined (gamma_r, by rank) and it attracts (alpha_(q,d), by query and document),
  independently of every other position.
- UBM (Dupret & Piwowarski 2008): P(C_r = 1 | clicks above) = alpha_(q,d) gamma_(r,j),
  where j is the rank of the last click above r, or "none" when there is none.

EM (PyClick's updates): at a clicked position both the attractiveness and the examination
count 1; at an unclicked one the attractiveness counts (1 - gamma) alpha / (1 - gamma alpha)
and the examination (1 - alpha) gamma / (1 - gamma alpha); every position counts 1 in both
denominators.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.clicklog.fit.em import FitModel, Params, attractiveness, ratio
from ltr_cli.clicklog.fit.grid import Grid, Pairs


def previous_click(grid: Grid) -> np.ndarray:
    """Per position, the 0-based rank of the last click above it, or K (the "none" slot)
    when there is none: int64 (S, K)."""
    s, k = grid.pair.shape
    out = np.full((s, k), k, dtype=np.int64)
    last = np.full(s, k, dtype=np.int64)
    for r in range(k):
        out[:, r] = last
        last = np.where(grid.click[:, r], r, last)
    return out


def _em_counts(click: np.ndarray, attr: np.ndarray, exam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The numerators of attractiveness and examination at every position."""
    joint = 1.0 - exam * attr
    return (np.where(click, 1.0, (1.0 - exam) * attr / joint),
            np.where(click, 1.0, (1.0 - attr) * exam / joint))


class PBM(FitModel):
    """Parameters: ``attr`` float (P,) per pair, ``exam`` float (K,) per rank."""

    name = "pbm"
    summary = "position-based: P(click) = attractiveness(query, doc) x examination(rank); EM"

    def start(self, grid: Grid, pairs: Pairs) -> Params:
        return {"attr": np.full(pairs.size, 0.5), "exam": np.full(grid.ranks, 0.5)}

    def _exam(self, params: Params, grid: Grid) -> np.ndarray:
        return np.broadcast_to(params["exam"][None, :grid.ranks], grid.pair.shape)

    def step(self, params: Params, grid: Grid) -> Params:
        attr, exam = params["attr"][grid.pair], self._exam(params, grid)
        num_a, num_e = _em_counts(grid.click, attr, exam)
        ones = np.ones(grid.pair.shape)
        ranks = np.broadcast_to(np.arange(grid.ranks)[None, :], grid.pair.shape)
        return {"attr": ratio(grid.pair, num_a, ones, grid.valid, len(params["attr"]), True),
                "exam": ratio(ranks, num_e, ones, grid.valid, len(params["exam"]), True)}

    def full(self, params: Params, grid: Grid) -> np.ndarray:
        return params["attr"][grid.pair] * self._exam(params, grid)

    def conditional(self, params: Params, grid: Grid) -> np.ndarray:
        p = self.full(params, grid)
        return np.where(grid.click, p, 1.0 - p)

    def describe(self, params: Params, pairs: Pairs) -> dict[str, Any]:
        return {"examination": [float(v) for v in params["exam"]],
                "attractiveness": attractiveness(params, pairs)}


class UBM(FitModel):
    """Parameters: ``attr`` float (P,) per pair, ``exam`` float (K, K + 1): row r the rank,
    column j < r the rank of the last click above, column K none."""

    name = "ubm"
    summary = ("user browsing model: P(click) = attractiveness(query, doc) x examination(rank, rank of the "
               "last click above); EM")

    def start(self, grid: Grid, pairs: Pairs) -> Params:
        return {"attr": np.full(pairs.size, 0.5), "exam": np.full((grid.ranks, grid.ranks + 1), 0.5)}

    def _slots(self, grid: Grid, k: int) -> np.ndarray:
        """Index of each position's examination parameter in ``exam.ravel()``."""
        prev = previous_click(grid)
        prev = np.where(prev == grid.ranks, k, prev)
        return np.arange(grid.ranks)[None, :] * (k + 1) + prev

    def step(self, params: Params, grid: Grid) -> Params:
        k = params["exam"].shape[0]
        slots = self._slots(grid, k)
        attr, exam = params["attr"][grid.pair], params["exam"].ravel()[slots]
        num_a, num_e = _em_counts(grid.click, attr, exam)
        ones = np.ones(grid.pair.shape)
        return {"attr": ratio(grid.pair, num_a, ones, grid.valid, len(params["attr"]), True),
                "exam": ratio(slots, num_e, ones, grid.valid, params["exam"].size, True).reshape(k, k + 1)}

    def conditional(self, params: Params, grid: Grid) -> np.ndarray:
        k = params["exam"].shape[0]
        p = params["attr"][grid.pair] * params["exam"].ravel()[self._slots(grid, k)]
        return np.where(grid.click, p, 1.0 - p)

    def full(self, params: Params, grid: Grid) -> np.ndarray:
        """P(C_r = 1) = sum over j of P(C_j = 1) prod_(j<m<r) (1 - alpha_m gamma_(m,j))
        alpha_r gamma_(r,j), j running over "none" (P = 1) and the ranks above r."""
        gamma = params["exam"]
        k = gamma.shape[0]
        attr = params["attr"][grid.pair]
        out = np.zeros(grid.pair.shape)
        for r in range(grid.ranks):
            for j in range(-1, r):
                col = k if j < 0 else j
                before = out[:, j] if j >= 0 else 1.0
                between = np.prod(1.0 - attr[:, j + 1:r] * gamma[j + 1:r, col][None, :], axis=1)
                out[:, r] += before * between * attr[:, r] * gamma[r, col]
        return out

    def describe(self, params: Params, pairs: Pairs) -> dict[str, Any]:
        gamma = params["exam"]
        k = gamma.shape[0]
        return {"examination": [{"rank": r + 1, "no_click_above": float(gamma[r, k]),
                                 "last_click_at": [float(gamma[r, j]) for j in range(r)]} for r in range(k)],
                "attractiveness": attractiveness(params, pairs)}
