"""What every fitted click model shares: PyClick's ratio estimates, the EM loop, the model
contract, and the log-likelihood and perplexity of sessions under a model.

A parameter is a ratio ``(1 + numerator) / (2 + denominator)`` of sums over the sessions'
positions (so a parameter no session informs stays 1/2); an EM parameter is capped at
1 - :data:`PROB_MIN`, a closed-form one is not. EM recomputes every ratio from fresh sums
at each iteration, with the expectations taken under the previous iteration's values.

Measures (PyClick's ``LogLikelihood`` and ``Perplexity``):

- log-likelihood: the mean over sessions of the mean over the session's positions of
  ln P(C_r = c_r | c_1 .. c_(r-1)); per rank, the mean over the sessions that show rank r;
- perplexity at rank r: 2^(-mean over the sessions that show r of log2 P(C_r = c_r)), with
  P(C_r = 1) the model's unconditional click probability; overall, the mean over ranks.
  Positions whose probability is 0 are left out, as PyClick leaves them out.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.clicklog.fit.grid import Grid, Pairs

#: the cap of an EM parameter below 1 (PyClick's ``ParamEM.PROB_MIN``)
PROB_MIN = 1e-6
#: PyClick's EM iterations
ITERATIONS = 50

Params = dict[str, np.ndarray]


def ratio(index: np.ndarray, numerator: np.ndarray, denominator: np.ndarray, mask: np.ndarray, size: int,
          cap: bool) -> np.ndarray:
    """(1 + sum of ``numerator``) / (2 + sum of ``denominator``) per value of ``index``
    (all arrays of one shape; only entries where ``mask`` holds count), float (size,),
    capped at 1 - PROB_MIN if ``cap``."""
    num = 1.0 + np.bincount(index[mask], weights=numerator[mask], minlength=size)
    den = 2.0 + np.bincount(index[mask], weights=denominator[mask], minlength=size)
    value = num / den
    return np.minimum(value, 1.0 - PROB_MIN) if cap else value


def scalar(numerator: np.ndarray, denominator: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """A single EM parameter: (1 + sum) / (2 + sum) over ``mask``, capped; float (1,)."""
    value = (1.0 + float(numerator[mask].sum())) / (2.0 + float(denominator[mask].sum()))
    return np.array([min(value, 1.0 - PROB_MIN)])


class FitModel:
    """A click model to fit. Subclasses set ``name``, ``summary`` and ``em`` (whether it
    needs EM), and define :meth:`start`, :meth:`step` (one EM iteration, or the closed
    form), :meth:`full` and :meth:`conditional`, both float (S, K) on a grid (any value at
    padding), and :meth:`describe` (the parameters as JSON)."""

    name = ""
    summary = ""
    em = True

    def start(self, grid: Grid, pairs: Pairs) -> Params:
        raise NotImplementedError

    def step(self, params: Params, grid: Grid) -> Params:
        raise NotImplementedError

    def full(self, params: Params, grid: Grid) -> np.ndarray:
        """P(C_r = 1) at every position."""
        raise NotImplementedError

    def conditional(self, params: Params, grid: Grid) -> np.ndarray:
        """P(C_r = c_r | the clicks above r) at every position."""
        raise NotImplementedError

    def describe(self, params: Params, pairs: Pairs) -> dict[str, Any]:
        raise NotImplementedError

    def fit(self, grid: Grid, pairs: Pairs, iterations: int = ITERATIONS) -> Params:
        """The parameters fitted on ``grid``: ``iterations`` EM steps from 1/2 everywhere,
        or the closed form."""
        params = self.start(grid, pairs)
        for _ in range(iterations if self.em else 1):
            params = self.step(params, grid)
        return params


def attractiveness(params: Params, pairs: Pairs, key: str = "attr") -> list[dict[str, Any]]:
    """A per-pair parameter as JSON rows ``{qid, doc, value}``, by query then document."""
    order = np.lexsort((pairs.doc, pairs.query))
    values = params[key]
    return [{"qid": pairs.qids[int(pairs.query[i])], "doc": int(pairs.doc[i]), "value": float(values[i])}
            for i in order]


def measures(model: FitModel, params: Params, grid: Grid) -> dict[str, Any]:
    """Log-likelihood and perplexity of ``grid``'s sessions, overall and per rank (the
    module docstring), and the number of sessions."""
    valid = grid.valid
    shown = valid.sum(axis=0)
    with np.errstate(divide="ignore", invalid="ignore"):
        cond = np.log(np.where(valid, model.conditional(params, grid), 1.0))
        full = model.full(params, grid)
        p = np.where(grid.click, full, 1.0 - full)
        ok = valid & (p > 0)
        bits = np.where(ok, np.log2(np.where(ok, p, 1.0)), 0.0)
    per_session = cond.sum(axis=1) / grid.length
    ll_rank = np.where(shown > 0, cond.sum(axis=0) / np.maximum(shown, 1), np.nan)
    ppl_rank = 2.0 ** (-bits.sum(axis=0) / np.maximum(shown, 1))
    ranks = shown > 0
    return {"sessions": grid.sessions,
            "log_likelihood": float(per_session.mean()),
            "log_likelihood_per_rank": [float(v) for v in ll_rank[ranks]],
            "perplexity": float(ppl_rank[ranks].mean()),
            "perplexity_per_rank": [float(v) for v in ppl_rank[ranks]]}
