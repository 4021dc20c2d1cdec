"""Pairwise debiasing (Hu, Wang, Peng & Li, WWW 2019, "Unbiased LambdaMART") on RankSVM's
click pairs: ``clicks.correction: pairwise-debias``.

A session's pair (clicked at position i, shown and not clicked at position j) is biased
twice: by t+_i, how much likelier a relevant document at i is clicked, and by t-_j, how
much likelier an irrelevant document at j is left unclicked. The pair weighs
1 / (t+_i t-_j), and the biases are estimated with the ranker, in turns
(``clicks.debias.rounds``, default 5), from t+ = t- = 1:

1. RankSVM is fitted on the pairs, weighted by their count per query session (the pairs
   of :func:`ltr_cli.clicklog.pairs.click_pairs` keyed by both positions) over
   t+_i t-_j, warm-started from the previous round's weights;
2. with L_ij the summed squared-hinge loss of the fitted ranker on the pairs at (i, j)
   (the count-weighted loss, before any bias), in closed form, relative to position 1,
   p the regularisation power (``clicks.debias.p``, default 1):

       t+_i = ( sum_j L_ij / t-_j  /  sum_j L_1j / t-_j ) ^ (1 / (p + 1))
       t-_j = ( sum_i L_ij / t+_i  /  sum_i L_i1 / t+_i ) ^ (1 / (p + 1))

   both from the previous round's t's. A position without a pair of positive loss keeps
   its value.

After the last update the ranker is fitted once more with the final t's: its model is the
fold's, and the fold's record keeps t+ and t- (``pairwise_debias``) and each round's.
This is the paper's (and ULTRA's ``PairDebias``) update with RankSVM's squared hinge in
place of their pairwise logistic loss, and in full batch (ULTRA moves the t's by a step of
0.05 per minibatch). With t- = 1 throughout, the pairs weigh 1 / t+_i: IPS-RankSVM's with
the propensities t+.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ltr_cli.clicklog.estimators import Estimator, ClickLog
from ltr_cli.clicklog.pairs import ClickPairs
from ltr_cli.learners.batch.common import Queries
from ltr_cli.learners.batch.convergence import FitContext, progress_of, warm_weights
from ltr_cli.results.models import LinearModel


def update(L: np.ndarray, t_plus: np.ndarray, t_minus: np.ndarray, p: float) -> tuple[np.ndarray, np.ndarray]:
    """The closed-form t+ and t- (float (S,) each) from the losses ``L`` (S, S) by
    (clicked position, unclicked position) and the previous t's (module docstring)."""
    plus = L @ (1.0 / t_minus)       # sum_j L_ij / t-_j
    minus = (1.0 / t_plus) @ L       # sum_i L_ij / t+_i
    new_plus, new_minus = t_plus.copy(), t_minus.copy()
    power = 1.0 / (p + 1.0)
    if plus[0] > 0:
        ok = plus > 0
        new_plus[ok] = (plus[ok] / plus[0]) ** power
    if minus[0] > 0:
        ok = minus > 0
        new_minus[ok] = (minus[ok] / minus[0]) ** power
    return new_plus, new_minus


def debiased(pairs: ClickPairs, t_plus: np.ndarray, t_minus: np.ndarray) -> ClickPairs:
    """The positioned pairs weighted by 1 / (t+_i t-_j)."""
    assert pairs.at_better is not None and pairs.at_worse is not None
    w = pairs.weight / (t_plus[pairs.at_better - 1] * t_minus[pairs.at_worse - 1])
    return ClickPairs(pairs.query, pairs.better, pairs.worse, w, pairs.at_better, pairs.at_worse)


def pair_losses(train: Queries, pairs: ClickPairs, w: np.ndarray, shown: int) -> np.ndarray:
    """L (shown, shown): the count-weighted squared-hinge loss of the scores ``X @ w`` on the
    pairs, summed by (clicked position, unclicked position)."""
    assert pairs.at_better is not None and pairs.at_worse is not None
    scores = [np.asarray(X, dtype=np.float64) @ w for X, _ in train]
    width = max(len(s) for s in scores)
    flat = np.zeros(len(scores) * width)
    for q, s in enumerate(scores):
        flat[q * width:q * width + len(s)] = s
    margin = 1.0 - (flat[pairs.query * width + pairs.better] - flat[pairs.query * width + pairs.worse])
    loss = pairs.weight * np.maximum(margin, 0.0) ** 2
    cell = (pairs.at_better - 1) * shown + (pairs.at_worse - 1)
    return np.bincount(cell, weights=loss, minlength=shown * shown).reshape(shown, shown)


def fit_pair_debias(train: Queries, clicks: Any, solve: Callable[..., tuple[np.ndarray, Any]],
                    context: FitContext | None = None) -> LinearModel:
    """RankSVM with pairwise debiasing on the fold's click log ``clicks`` (a
    :class:`ltr_cli.learners.batch.click_data.ClickData` whose correction is
    ``pairwise-debias``; its ``debias`` settings). ``solve(pairs, warm, progress)`` fits
    RankSVM on weighted pairs from the weights ``warm`` (None: 0) and returns
    ``(w, convergence)`` (:func:`ltr_cli.learners.batch.ranksvm.newton_ranksvm`'s)."""
    settings = clicks.debias
    rounds, p = (5, 1.0) if settings is None else (settings.rounds, settings.p)
    width = max((len(y) for _, y in train), default=1)
    pairs = clicks.pairs(width, positions=True)
    shown = len(clicks.weights)
    t_plus, t_minus = np.ones(shown), np.ones(shown)
    warm = warm_weights(context)
    history = []
    iterations = 0
    for r in range(rounds + 1):
        w, conv = solve(debiased(pairs, t_plus, t_minus), warm, progress_of(context) if r == rounds else None)
        iterations += conv.iterations
        warm = w
        if r == rounds:
            break
        t_plus, t_minus = update(pair_losses(train, pairs, w, shown), t_plus, t_minus, p)
        history.append({"t_plus": _rounded(t_plus), "t_minus": _rounded(t_minus)})
    record = {"t_plus": _rounded(t_plus), "t_minus": _rounded(t_minus), "rounds": rounds, "p": p,
              "history": history}
    return LinearModel(w, {"iterations": iterations, "objective": conv.objective, "pairs": int(len(pairs.query)),
                           "convergence": conv.to_dict(), "pairwise_debias": record})


def _rounded(v: np.ndarray) -> list[float]:
    return [float(f"{x:.12g}") for x in v]


def _start(log: ClickLog) -> tuple[np.ndarray, dict[str, Any]]:
    return np.ones(log.shown), {}


PAIRWISE_DEBIAS = Estimator("pairwise debiasing (Hu et al. 2019, Unbiased LambdaMART): the pair (clicked at i, "
                            "unclicked at j) weighs 1/(t+_i t-_j), the position biases estimated with the ranker "
                            "in turns (ranksvm only)", "pairwise-debiased clicks", _start, pairwise=True)
