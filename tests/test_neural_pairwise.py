"""RankNet and LambdaLoss (every scheme, cut-off, sigma, mu, reduction and log base) against
straightforward numpy references written pair by pair from their definitions, and the
properties every loss has (neural_checks)."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("jax")

from tests.neural_checks import batch, check_properties, value64  # noqa: E402

EPS = 1e-10
SCHEMES = [None, "ndcgLoss1_scheme", "ndcgLoss2_scheme", "ndcgLoss2PP_scheme", "lambdaRank_scheme",
           "rankNet_scheme", "rankNetWeightedByGTDiff_scheme", "rankNetWeightedByGTDiffPowed_scheme"]


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + math.exp(-x))


def ranknet_reference(s, y, m, weighting=None):
    terms = []
    for si, yi, mi in zip(s, y, m):
        for i in np.flatnonzero(mi):
            for j in np.flatnonzero(mi):
                if yi[i] > yi[j]:
                    w = {None: 1.0, "diff": abs(yi[i] - yi[j]), "pow": abs(yi[i] ** 2 - yi[j] ** 2)}[weighting]
                    terms.append(w * math.log(1.0 + math.exp(-(si[i] - si[j]))))
    return float(np.mean(terms)) if terms else 0.0


def _weight(scheme, a, b, G, D, t, mu):
    """w for the documents at positions a and b (0-based) of the score order."""
    if scheme in (None, "rankNet_scheme"):
        return 1.0
    if scheme == "ndcgLoss1_scheme":
        return G[a] / D[a]
    if scheme == "rankNetWeightedByGTDiff_scheme":
        return abs(t[a] - t[b])
    if scheme == "rankNetWeightedByGTDiffPowed_scheme":
        return abs(t[a] ** 2 - t[b] ** 2)
    d = abs(a - b)
    ndcg2 = 0.0 if d == 0 else abs(1.0 / D[d - 1] - 1.0 / D[d]) * abs(G[a] - G[b])
    lambdarank = abs(1.0 / D[a] - 1.0 / D[b]) * abs(G[a] - G[b])
    return {"ndcgLoss2_scheme": ndcg2, "lambdaRank_scheme": lambdarank}.get(scheme, mu * ndcg2 + lambdarank)


def lambdaloss_reference(s, y, m, eps=EPS, weighing_scheme=None, k=None, sigma=1.0, mu=10.0, reduction="sum",
                         reduction_log="binary"):
    terms = []
    for si, yi, mi in zip(s, y, m):
        n = len(si)
        real = np.flatnonzero(mi)
        order = real[np.argsort(-si[real])]
        ss, t = si[order], yi[order]
        D = np.log2(1.0 + np.arange(1, n + 1))  # position i + 1 has D[i]
        cut = n if k is None else min(k, n)
        ideal = np.sort(yi[real])[::-1]
        max_dcg = max(sum((2.0 ** ideal[a] - 1.0) / D[a] for a in range(min(cut, len(real)))), eps)
        G = (2.0 ** t - 1.0) / max_dcg
        for a in range(min(cut, len(real))):
            for b in range(min(cut, len(real))):
                if weighing_scheme != "ndcgLoss1_scheme" and not t[a] > t[b]:
                    continue
                w = _weight(weighing_scheme, a, b, G, D, t, mu)
                p = max(max(_sigmoid(sigma * (ss[a] - ss[b])), eps) ** w, eps)
                terms.append(math.log(p) if reduction_log == "natural" else math.log2(p))
    if not terms:
        return 0.0
    return -float(np.sum(terms) if reduction == "sum" else np.mean(terms))


@pytest.mark.parametrize("name, params, weighting", [
    ("ranknet", {}, None), ("ranknet", {"weight_by_diff": True}, "diff"), ("ranknet", {"weight_by_diff_powed": True}, "pow"),
    ("ranknet", {"weight_by_diff": True, "weight_by_diff_powed": True}, "diff"),
    ("ranknet_weightbygtdiff", {}, "diff"), ("ranknet_weightbygtdiff_pow", {}, "pow")])
def test_ranknet_equals_its_definition(name, params, weighting):
    rng = np.random.default_rng(11)
    for _ in range(3):
        s, y, m = batch(rng)
        assert value64(name, s, y, m, **params) == pytest.approx(ranknet_reference(s, y, m, weighting), rel=1e-12)


@pytest.mark.parametrize("name", ["ranknet", "ranknet_weightbygtdiff_pow"])
def test_ranknet_properties(name):
    check_properties(name)


# the float32 discounts (as allRank's) keep the values within 1e-6 of the float64 definition
@pytest.mark.parametrize("scheme", SCHEMES)
def test_lambdaloss_equals_its_definition_under_every_scheme(scheme):
    rng = np.random.default_rng(12)
    settings = [{}, {"k": 3, "sigma": 2.0, "mu": 5.0}, {"reduction": "mean", "reduction_log": "natural"},
                {"k": 1, "reduction": "mean"}, {"k": 50, "eps": 1e-3}]
    for params in settings:
        s, y, m = batch(rng)
        ours = value64("lambdaloss", s, y, m, weighing_scheme=scheme, **params)
        assert ours == pytest.approx(lambdaloss_reference(s, y, m, weighing_scheme=scheme, **params), rel=1e-6,
                                     abs=1e-12), params


@pytest.mark.parametrize("scheme", ["ndcgLoss1_scheme", "ndcgLoss2PP_scheme", "lambdaRank_scheme", None])
def test_lambdaloss_properties(scheme):
    check_properties("lambdaloss", weighing_scheme=scheme)


def test_a_batch_without_an_ordered_pair_gives_zero():
    """torch's mean over no pair is NaN; the loss gives 0, and a finite gradient."""
    s = np.array([[0.3, -0.2, 1.0]])
    y = np.array([[1.0, 1.0, 1.0]])
    m = np.ones_like(y, dtype=bool)
    assert value64("ranknet", s, y, m) == 0.0
    assert value64("lambdaloss", s, y, m, reduction="mean") == 0.0
