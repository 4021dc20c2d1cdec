"""The cascade family, in closed form: the cascade model, DCM and SDBN.

The user reads from the top; a document examined is clicked with its attractiveness
alpha_(q,d).

- cascade (Craswell et al. 2008): the user stops at the first click. alpha counts the
  positions up to the first click (all of a session without clicks), clicked or not.
- DCM (Guo et al. 2009): after a click at rank r the user goes on with lambda_r (by rank).
  alpha counts the positions up to the last click (all of a session without clicks);
  lambda_r counts the clicks at r, 1 in the numerator unless it is the session's last.
- SDBN (Chapelle & Zhang 2009): after a click the user is satisfied with sigma_(q,d) and
  stops, or goes on; nobody stops unclicked. alpha as DCM's; sigma_(q,d) counts the
  clicks on the pair, 1 in the numerator when it is the session's last.

Each estimate is PyClick's ratio (1 + clicks counted) / (2 + positions counted).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.clicklog.fit.em import PROB_MIN, FitModel, Params, attractiveness, ratio
from ltr_cli.clicklog.fit.grid import Grid, Pairs


def _ranks(grid: Grid) -> np.ndarray:
    return np.broadcast_to(np.arange(grid.ranks)[None, :], grid.pair.shape)


def _walk(attr: np.ndarray, click: np.ndarray, after_click: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(full, conditional), float (S, K), of a walk where a user who reached r clicks with
    ``attr``, goes on after a click with ``after_click`` and always goes on unclicked."""
    s, k = attr.shape
    full, cond = np.zeros((s, k)), np.zeros((s, k))
    reach, seen = np.ones(s), np.ones(s)
    for r in range(k):
        a = attr[:, r]
        full[:, r] = a * reach
        reach = reach * (after_click[:, r] * a + 1.0 - a)
        hit = a * seen
        cond[:, r] = np.where(click[:, r], hit, 1.0 - hit)
        seen = np.where(click[:, r], after_click[:, r], seen * (1.0 - a) / np.where(click[:, r], 1.0, 1.0 - hit))
    return full, cond


class Cascade(FitModel):
    """Parameters: ``attr`` float (P,) per pair."""

    name = "cascade"
    summary = "cascade: examined from the top, stops at the first click; closed form"
    em = False

    def start(self, grid: Grid, pairs: Pairs) -> Params:
        return {"attr": np.full(pairs.size, 0.5)}

    def step(self, params: Params, grid: Grid) -> Params:
        seen = grid.valid & (_ranks(grid) <= grid.first[:, None])
        ones = np.ones(grid.pair.shape)
        return {"attr": ratio(grid.pair, grid.click.astype(float), ones, seen, len(params["attr"]), False)}

    def full(self, params: Params, grid: Grid) -> np.ndarray:
        attr = params["attr"][grid.pair]
        return _walk(attr, grid.click, np.zeros_like(attr))[0]

    def conditional(self, params: Params, grid: Grid) -> np.ndarray:
        """Up to the first click, P(click) = alpha; below it, the user has left: an unclicked
        position has probability 1, a clicked one PROB_MIN (the model cannot explain it)."""
        attr = params["attr"][grid.pair]
        upto = _ranks(grid) <= grid.first[:, None]
        return np.where(upto, np.where(grid.click, attr, 1.0 - attr), np.where(grid.click, PROB_MIN, 1.0))

    def describe(self, params: Params, pairs: Pairs) -> dict[str, Any]:
        return {"attractiveness": attractiveness(params, pairs)}


class DCM(FitModel):
    """Parameters: ``attr`` float (P,) per pair, ``cont`` float (K,) per rank."""

    name = "dcm"
    summary = "dependent click model: cascade that goes on after a click with lambda(rank); closed form"
    em = False

    def start(self, grid: Grid, pairs: Pairs) -> Params:
        return {"attr": np.full(pairs.size, 0.5), "cont": np.full(grid.ranks, 0.5)}

    def step(self, params: Params, grid: Grid) -> Params:
        ranks, last = _ranks(grid), grid.last[:, None]
        ones = np.ones(grid.pair.shape)
        seen = grid.valid & (ranks <= last)
        return {"attr": ratio(grid.pair, grid.click.astype(float), ones, seen, len(params["attr"]), False),
                "cont": ratio(ranks, (ranks != last).astype(float), ones, grid.valid & grid.click,
                              len(params["cont"]), False)}

    def _walk(self, params: Params, grid: Grid) -> tuple[np.ndarray, np.ndarray]:
        attr = params["attr"][grid.pair]
        return _walk(attr, grid.click, np.broadcast_to(params["cont"][None, :grid.ranks], attr.shape))

    def full(self, params: Params, grid: Grid) -> np.ndarray:
        return self._walk(params, grid)[0]

    def conditional(self, params: Params, grid: Grid) -> np.ndarray:
        return self._walk(params, grid)[1]

    def describe(self, params: Params, pairs: Pairs) -> dict[str, Any]:
        return {"continuation": [float(v) for v in params["cont"]], "attractiveness": attractiveness(params, pairs)}


class SDBN(FitModel):
    """Parameters: ``attr`` and ``sat`` float (P,) per pair."""

    name = "sdbn"
    summary = "simplified DBN: cascade that stops after a click when satisfied, sigma(query, doc); closed form"
    em = False

    def start(self, grid: Grid, pairs: Pairs) -> Params:
        return {"attr": np.full(pairs.size, 0.5), "sat": np.full(pairs.size, 0.5)}

    def step(self, params: Params, grid: Grid) -> Params:
        ranks, last = _ranks(grid), grid.last[:, None]
        ones = np.ones(grid.pair.shape)
        seen = grid.valid & (ranks <= last)
        size = len(params["attr"])
        return {"attr": ratio(grid.pair, grid.click.astype(float), ones, seen, size, False),
                "sat": ratio(grid.pair, (ranks == last).astype(float), ones, grid.valid & grid.click, size, False)}

    def _walk(self, params: Params, grid: Grid) -> tuple[np.ndarray, np.ndarray]:
        return _walk(params["attr"][grid.pair], grid.click, 1.0 - params["sat"][grid.pair])

    def full(self, params: Params, grid: Grid) -> np.ndarray:
        return self._walk(params, grid)[0]

    def conditional(self, params: Params, grid: Grid) -> np.ndarray:
        return self._walk(params, grid)[1]

    def describe(self, params: Params, pairs: Pairs) -> dict[str, Any]:
        return {"attractiveness": attractiveness(params, pairs), "satisfaction": attractiveness(params, pairs, "sat")}
