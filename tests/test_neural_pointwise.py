"""Pointwise RMSE, sigmoid cross entropy (allRank's bce on logits) and allRank's ordinal loss
against numpy references written from their definitions, and the properties every loss has."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

from ltr_cli import api  # noqa: E402
from ltr_cli.errors import LtrError  # noqa: E402
from tests.neural_checks import batch, check_properties, value64, value_grad64  # noqa: E402


def _log_sigmoid(x):
    return -np.logaddexp(0.0, -x)


def rmse_reference(s, y, m, no_of_levels):
    out = [np.sqrt(np.mean((yi[mi] - no_of_levels * si[mi]) ** 2)) for si, yi, mi in zip(s, y, m) if mi.any()]
    return float(np.mean(out)) if out else 0.0


def bce_reference(s, y, m):
    total = sum(-np.sum(yi[mi] * _log_sigmoid(si[mi]) + (1 - yi[mi]) * _log_sigmoid(-si[mi]))
                for si, yi, mi in zip(s, y, m))
    return float(total / max(1, int(m.any(axis=1).sum())))


def ordinal_reference(s, y, m, n):
    total, docs = 0.0, 0
    for si, yi, mi in zip(s, y, m):
        for doc in np.flatnonzero(mi):
            docs += 1
            for t in range(1, n + 1):
                o = float(yi[doc] >= t)
                total -= o * _log_sigmoid(si[doc, t - 1]) + (1 - o) * _log_sigmoid(-si[doc, t - 1])
    return total / max(docs, 1)


def test_pointwise_losses_equal_their_definitions():
    rng = np.random.default_rng(31)
    for _ in range(3):
        s, y, m = batch(rng)
        assert value64("pointwise_rmse", s, y, m, no_of_levels=4) == pytest.approx(rmse_reference(s, y, m, 4), rel=1e-12)
        yb = (y > 1).astype(float)
        assert value64("bce", s, yb, m) == pytest.approx(bce_reference(s, yb, m), rel=1e-12)
        so, yo, mo = batch(rng, outputs=4)
        assert value64("ordinal", so, yo, mo, n=4) == pytest.approx(ordinal_reference(so, yo, mo, 4), rel=1e-12)


@pytest.mark.parametrize("name, params", [("pointwise_rmse", {"no_of_levels": 4}), ("bce", {}), ("ordinal", {"n": 4})])
def test_pointwise_properties(name, params):
    check_properties(name, **params)


def test_rmse_has_a_finite_gradient_where_the_fit_is_exact():
    s = np.array([[0.25, 0.5]])
    y = np.array([[1.0, 2.0]])
    v, g = value_grad64("rmse", s, y, np.ones_like(y, bool), no_of_levels=4)
    assert v == 0.0 and np.array_equal(g, np.zeros_like(g))


def test_the_api_checks_what_a_pointwise_loss_needs():
    s, y = np.zeros((1, 3)), np.array([[1.0, 0.0, 2.0]])
    with pytest.raises(LtrError, match="^loss pointwise_rmse: parameter 'no_of_levels' is required"):
        api.ranking_loss("rmse", s, y)
    with pytest.raises(LtrError, match=r"labels must lie in \[0, 1\]"):
        api.ranking_loss("bce", s, y)
    with pytest.raises(LtrError, match=r"expected \(1, 3, 4\) \(4 outputs per document\)"):
        api.ranking_loss("ordinal", s, y, n=4)
    assert api.ranking_loss("ordinal", np.zeros((1, 3, 4)), y, n=4) == pytest.approx(4 * np.log(2.0))


def test_ordinal_ranks_by_the_sum_of_its_probabilities():
    from ltr_cli.neural.losses import resolve

    kind = resolve("ordinal")
    assert kind.n_outputs({"n": 3}) == 3
    out = np.array([[[0.0, 0.0], [10.0, -10.0]]])
    assert np.allclose(np.asarray(kind.rank_scores(out)), [[1.0, 1.0]], atol=1e-4)


def test_a_scorer_with_several_outputs_ranks_by_the_sum_of_their_sigmoids():
    """Where the sum of the logits and the sum of their sigmoids disagree (document 0: one
    very sure threshold, the other unsure; document 1: both fairly sure), the ranking follows
    the expected grade, the ordinal loss's rank_scores, for vali, test and ``ltr score``."""
    from ltr_cli.neural import scorers
    from ltr_cli.neural.losses import resolve

    out = np.array([[[12.0, -3.0], [2.0, 2.0]]], dtype=np.float32)  # logit sums 9 > 4; sigmoid sums 1.05 < 1.76
    scorer = scorers.build({"kind": "linear"}, 2)
    ranked = np.asarray(scorer.ranking(out))
    assert ranked[0, 1] > ranked[0, 0]
    assert np.allclose(ranked, np.asarray(resolve("ordinal").rank_scores(out)))
