"""What PDGD (:mod:`~ltr_cli.learners.online.pdgd`) and DeepPDGD
(:mod:`~ltr_cli.learners.online.deep_pdgd`) share: the Plackett-Luce shown list, each
click pair's weight (the score gradient of P(i before j) times the debiasing ratio rho;
the formulas are in :mod:`~ltr_cli.learners.online.pdgd`'s docstring) and the weights summed
into one coefficient per shown document."""

from __future__ import annotations

import numpy as np

from ltr_cli.learners.online.base import UpdateInfo
from ltr_cli.learners.online.click_pairs import click_pairs

NO_MOVE = UpdateInfo(mistake=False, updated=False)
MOVED = UpdateInfo(mistake=False, updated=True)


def plackett_luce(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """A Plackett-Luce permutation of the documents under softmax(scores): every prefix has
    the law of drawing without replacement, proportionally to exp(score). One
    ``rng.gumbel`` draw per document."""
    return np.argsort(-(scores + rng.gumbel(size=scores.shape[0])), kind="stable")


def pair_weights(scores: np.ndarray, ranking: np.ndarray, n: int, pos: np.ndarray,
                 neg: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(i, j, weight)``: the pairs (clicked position i, unclicked position j of the shown
    list ``ranking[:n]``, every combination of ``pos`` and ``neg``) and each pair's PDGD
    weight, the score gradient of P(i before j) times the reversed-pair ratio rho (see the
    module)."""
    e = np.exp(scores - scores.max())
    shown = ranking[:n]
    unshown = float(e[ranking[n:]].sum())
    es = e[shown]
    i, j = np.repeat(pos, neg.shape[0]), np.tile(neg, pos.shape[0])
    a, b = np.minimum(i, j), np.maximum(i, j)
    # D[k]: exp-scores of the documents not shown above position k; sums of positive terms
    D = unshown + np.cumsum(es[::-1])[::-1]
    swapped = np.tile(es, (i.shape[0], 1))
    rows = np.arange(i.shape[0])
    swapped[rows, a], swapped[rows, b] = es[b], es[a]
    Dswapped = unshown + np.cumsum(swapped[:, ::-1], axis=1)[:, ::-1]
    at = np.arange(n)[None, :]
    inside = (at > a[:, None]) & (at <= b[:, None])
    log_ratio = np.where(inside, np.log(D)[None, :] - np.log(Dswapped), 0.0).sum(axis=1)
    rho = 0.5 * (1.0 + np.tanh(0.5 * log_ratio))         # P(R*) / (P(R) + P(R*))
    gap = np.abs(scores[shown[i]] - scores[shown[j]])
    q = np.exp(-gap)
    return i, j, q / (1.0 + q) ** 2 * rho


def document_weights(scores: np.ndarray, ranking: np.ndarray, clicks: np.ndarray) -> np.ndarray | None:
    """The PDGD coefficient (n,) of each shown document's score, for ``clicks`` (n,) on the
    shown list ``ranking[:n]`` of a query with scores ``scores`` (those the list was sampled
    from): each pair's weight added at its clicked document and subtracted at its
    unclicked one, so the ascent direction is the gradient of ``coef @ scores[ranking[:n]]``
    with the coefficients held fixed (for a linear ranker ``coef @ X[ranking[:n]]``; for a
    neural scorer its vector-Jacobian product, :mod:`~ltr_cli.learners.online.deep_pdgd`).
    None when the clicks give no pair."""
    pos, neg = click_pairs(clicks)
    if pos.shape[0] == 0 or neg.shape[0] == 0:
        return None
    n = clicks.shape[0]
    i, j, weight = pair_weights(scores, ranking, n, pos, neg)
    coef = np.zeros(n)
    np.add.at(coef, i, weight)
    np.add.at(coef, j, -weight)
    return coef


