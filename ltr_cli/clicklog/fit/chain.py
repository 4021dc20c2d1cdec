"""The chain models, fitted by EM: DBN and CCM.

Both read from the top; an examined document is clicked with its attractiveness
alpha_(q,d); an unclicked one lets the user go on with a continuation probability, a
clicked one with another:

- DBN (Chapelle & Zhang 2009): after a click the user is satisfied with sigma_(q,d) and
  stops; otherwise, clicked or not, goes on with gamma (one for the log). Going on after a
  click: gamma (1 - sigma); unclicked: gamma.
- CCM (Guo et al. 2009): going on unclicked: tau_1; after a click: tau_2 (1 - alpha) +
  tau_3 alpha (the clicked document's relevance is its attractiveness).

EM as PyClick's: the attractiveness counts 1 at a click and, below the session's last
click, (1 - e_r) alpha / (1 - e_r car_r), with e_r the unconditional examination and
car_r = P(a click at r or below | examined at r); DBN's sigma at the last click counts
sigma / (1 - (1 - sigma) gamma car_(r+1)) (CCM's alpha the same, with its continuation after
a click); the continuations count the posterior of examining r + 1 given examining r, from
P(E_r, S_r, E_(r+1), clicks) over the eight states. A session without clicks has its last
click above rank 1 (:func:`last_click`): every position of it may lie below the user's stop.
Where PyClick differs, ours is the exact posterior and the oracle comparison runs PyClick
with these changes: PyClick places the last click of a session without clicks beyond its
end, as for the cascade family (every unclicked document of it examined and unattractive,
every continuation certain); it takes P(C_r = 0 | E_r = 0) as 1 - alpha instead of 1; and
its P(clicks below r | E_(r+1) = 1) reads the parameters of the documents from rank 1
instead of rank r + 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.clicklog.fit.em import FitModel, Params, attractiveness, ratio, scalar
from ltr_cli.clicklog.fit.grid import Grid, Pairs


def forward(attr: np.ndarray, on_click: np.ndarray, on_skip: np.ndarray, click: np.ndarray, start: int
            ) -> tuple[np.ndarray, np.ndarray]:
    """From rank ``start`` examined: (q, e), float (S, K) (zero left of ``start``): q_r =
    P(C_r = c_r | clicks from start to r - 1, E_start = 1), e_r = P(E_r = 1 | the same)."""
    s, k = attr.shape
    q, e = np.zeros((s, k)), np.zeros((s, k))
    ex = np.ones(s)
    for r in range(start, k):
        a, hit = attr[:, r], click[:, r]
        e[:, r] = ex
        q[:, r] = np.where(hit, a * ex, 1.0 - a * ex)
        ex = np.where(hit, on_click[:, r], ex * on_skip[:, r] * (1.0 - a) / np.where(hit, 1.0, q[:, r]))
    return q, e


def tails(attr: np.ndarray, on_click: np.ndarray, on_skip: np.ndarray, grid: Grid) -> np.ndarray:
    """T[:, t] = P(the clicks from t on | E_t = 1), float (S, K + 1) (T[:, K] = 1)."""
    s, k = attr.shape
    out = np.ones((s, k + 1))
    for t in range(k):
        q, _ = forward(attr, on_click, on_skip, grid.click, t)
        out[:, t] = np.prod(np.where(grid.valid[:, t:], q[:, t:], 1.0), axis=1)
    return out


def unconditional(attr: np.ndarray, on_click: np.ndarray, on_skip: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(e, car), float (S, K) each: e_r = P(E_r = 1) before any click is seen, car_r =
    P(a click at r or below | E_r = 1); padding must have ``attr`` 0."""
    s, k = attr.shape
    e, car = np.ones((s, k)), np.zeros((s, k + 1))
    for r in range(1, k):
        a = attr[:, r - 1]
        e[:, r] = e[:, r - 1] * (on_skip[:, r - 1] * (1.0 - a) + a * on_click[:, r - 1])
    for r in range(k - 1, -1, -1):
        a = attr[:, r]
        car[:, r] = a + (1.0 - a) * on_skip[:, r] * car[:, r + 1]
    return e, car


def last_click(grid: Grid) -> np.ndarray:
    """The 0-based rank of each session's last click, -1 when it has none; int64 (S,)."""
    return np.where(grid.click.any(axis=1), grid.last, -1)


def joint(middle: np.ndarray, attr: np.ndarray, on_click: np.ndarray, on_skip: np.ndarray, grid: Grid
          ) -> np.ndarray:
    """P(E_r = x, S_r = y, E_(r+1) = z | clicks) from ``middle`` (2, 2, 2, S, K) =
    P(C_r, S_r = y, E_(r+1) = z | E_r = x): times P(the clicks below r | E_(r+1) = z) times
    P(E_r = x | the clicks above r), normalised over the eight states."""
    s, k = attr.shape
    _, prior = forward(attr, on_click, on_skip, grid.click, 0)
    tail = tails(attr, on_click, on_skip, grid)[:, 1:]
    ranks = np.arange(k)[None, :]
    below = (last_click(grid)[:, None] < ranks + 1).astype(float)  # no click below r: E_(r+1) = 0 is possible
    f = middle.copy()
    f[:, :, 0] *= below
    f[:, :, 1] *= tail
    f[0] *= 1.0 - prior
    f[1] *= prior
    total = f.sum(axis=(0, 1, 2))
    return f / np.where(grid.valid, total, 1.0)


class DBN(FitModel):
    """Parameters: ``attr`` and ``sat`` float (P,) per pair, ``cont`` float (1,)."""

    name = "dbn"
    summary = ("dynamic Bayesian network: attractiveness and satisfaction (query, doc), continuation gamma; "
               "EM")

    def start(self, grid: Grid, pairs: Pairs) -> Params:
        return {"attr": np.full(pairs.size, 0.5), "sat": np.full(pairs.size, 0.5), "cont": np.full(1, 0.5)}

    def _chain(self, params: Params, grid: Grid) -> tuple[np.ndarray, ...]:
        attr = np.where(grid.valid, params["attr"][grid.pair], 0.0)
        sat = params["sat"][grid.pair]
        gamma = np.full(attr.shape, params["cont"][0])
        return attr, sat, gamma * (1.0 - sat), gamma

    def step(self, params: Params, grid: Grid) -> Params:
        attr, sat, on_click, gamma = self._chain(params, grid)
        e, car = unconditional(attr, on_click, gamma)
        ranks, last, click = np.arange(grid.ranks)[None, :], last_click(grid)[:, None], grid.click
        ones = np.ones(attr.shape)
        num_a = np.where(click, 1.0, np.where(ranks >= last, (1.0 - e) * attr / (1.0 - e * car[:, :-1]), 0.0))
        num_s = np.where(ranks == last, sat / (1.0 - (1.0 - sat) * gamma * car[:, 1:]), 0.0)
        middle = np.zeros((2, 2, 2) + attr.shape)
        skip, g = ~click, gamma
        middle[1, 0, 1] = np.where(skip, (1.0 - attr) * g, attr * (1.0 - sat) * g)
        middle[1, 0, 0] = np.where(skip, (1.0 - attr) * (1.0 - g), attr * (1.0 - sat) * (1.0 - g))
        middle[0, 0, 0] = np.where(skip, 1.0, 0.0)
        middle[1, 1, 0] = np.where(skip, 0.0, attr * sat)
        post = joint(middle, attr, on_click, gamma, grid)
        size = len(params["attr"])
        return {"attr": ratio(grid.pair, num_a, ones, grid.valid, size, True),
                "sat": ratio(grid.pair, num_s, ones, grid.valid & click, size, True),
                "cont": scalar(post[1, 0, 1], post[1, 0, 0] + post[1, 0, 1], grid.valid)}

    def full(self, params: Params, grid: Grid) -> np.ndarray:
        attr, _, on_click, gamma = self._chain(params, grid)
        return attr * unconditional(attr, on_click, gamma)[0]

    def conditional(self, params: Params, grid: Grid) -> np.ndarray:
        attr, _, on_click, gamma = self._chain(params, grid)
        return forward(attr, on_click, gamma, grid.click, 0)[0]

    def describe(self, params: Params, pairs: Pairs) -> dict[str, Any]:
        return {"continuation": float(params["cont"][0]), "attractiveness": attractiveness(params, pairs),
                "satisfaction": attractiveness(params, pairs, "sat")}


class CCM(FitModel):
    """Parameters: ``attr`` float (P,) per pair; ``tau1``, ``tau2``, ``tau3`` float (1,)."""

    name = "ccm"
    summary = ("click chain model: attractiveness (query, doc); goes on with tau1 unclicked, "
               "tau2 (1 - alpha) + tau3 alpha after a click; EM")

    def start(self, grid: Grid, pairs: Pairs) -> Params:
        return {"attr": np.full(pairs.size, 0.5), "tau1": np.full(1, 0.5), "tau2": np.full(1, 0.5),
                "tau3": np.full(1, 0.5)}

    def _chain(self, params: Params, grid: Grid) -> tuple[np.ndarray, ...]:
        attr = np.where(grid.valid, params["attr"][grid.pair], 0.0)
        t1, t2, t3 = (np.full(attr.shape, params[k][0]) for k in ("tau1", "tau2", "tau3"))
        return attr, t2 * (1.0 - attr) + t3 * attr, t1, t2, t3

    def step(self, params: Params, grid: Grid) -> Params:
        attr, on_click, t1, t2, t3 = self._chain(params, grid)
        e, car = unconditional(attr, on_click, t1)
        ranks, last, click = np.arange(grid.ranks)[None, :], last_click(grid)[:, None], grid.click
        num_a = np.where(click, 1.0, np.where(ranks >= last, (1.0 - e) * attr / (1.0 - e * car[:, :-1]), 0.0))
        num_a = num_a + np.where(click & (ranks == last), attr / (1.0 - on_click * car[:, 1:]), 0.0)
        den_a = 1.0 + click
        skip = ~click
        middle = np.zeros((2, 2, 2) + attr.shape)
        middle[1, 0, 1] = np.where(skip, (1.0 - attr) * t1, attr * (1.0 - attr) * t2)
        middle[1, 0, 0] = np.where(skip, (1.0 - attr) * (1.0 - t1), attr * (1.0 - attr) * (1.0 - t2))
        middle[0, 0, 0] = np.where(skip, 1.0, 0.0)
        middle[1, 1, 1] = np.where(skip, 0.0, attr * attr * t3)
        middle[1, 1, 0] = np.where(skip, 0.0, attr * attr * (1.0 - t3))
        post = joint(middle, attr, on_click, t1, grid)
        went = post[1, :, 1].sum(axis=0)
        seen = post[1].sum(axis=(0, 1))
        return {"attr": ratio(grid.pair, num_a, den_a, grid.valid, len(params["attr"]), True),
                "tau1": scalar(went, seen, grid.valid & skip),
                "tau2": scalar(post[1, 0, 1], post[1, 0, 0] + post[1, 0, 1], grid.valid & click),
                "tau3": scalar(post[1, 1, 1], post[1, 1, 0] + post[1, 1, 1], grid.valid & click)}

    def full(self, params: Params, grid: Grid) -> np.ndarray:
        attr, on_click, t1, _, _ = self._chain(params, grid)
        return attr * unconditional(attr, on_click, t1)[0]

    def conditional(self, params: Params, grid: Grid) -> np.ndarray:
        attr, on_click, t1, _, _ = self._chain(params, grid)
        return forward(attr, on_click, t1, grid.click, 0)[0]

    def describe(self, params: Params, pairs: Pairs) -> dict[str, Any]:
        return {"tau1": float(params["tau1"][0]), "tau2": float(params["tau2"][0]), "tau3": float(params["tau3"][0]),
                "attractiveness": attractiveness(params, pairs)}
