"""The perceptron paper's SLAM surrogates and the top-k paper's surrogates as JAX losses over
padded batches: on each slate, value and gradient equal to the numpy references in
ltr_cli.surrogates (the ones the online learners use), and the batch value the mean over
slates; plus the properties every loss has."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

from ltr_cli.surrogates.listwise import kl_value_and_grad, smoothdcg_value_and_grad  # noqa: E402
from ltr_cli.surrogates.pairwise import ranksvm_value_and_grad  # noqa: E402
from ltr_cli.surrogates.pointwise import squared_value_and_grad  # noqa: E402
from ltr_cli.surrogates.slam import max_pair_value_and_grad, slam_value_and_grad, slam_weights  # noqa: E402
from tests.neural_checks import batch, check_properties, value_grad64  # noqa: E402


def _slam_reference(measure="ndcg", k=None, weights="paper", threshold=0.0, margin="constant", delta=1.0,
                    ties="first-index"):
    def ref(s, y):
        v = slam_weights(y, s if weights == "paper" else None, measure, k, weights == "level-averaged", threshold)
        yy = (y > threshold).astype(float) if measure == "ap" else y
        return slam_value_and_grad(s, yy, v, margin, delta, ties)
    return ref


CASES = [
    ("slam", {}, _slam_reference()),
    ("slam", {"k": 3, "weights": "paper-fixed"}, _slam_reference(k=3, weights="paper-fixed")),
    ("slam", {"weights": "level-averaged", "margin": "label-difference", "ties": "authors-code"},
     _slam_reference(weights="level-averaged", margin="label-difference", ties="authors-code")),
    ("slam", {"measure": "ap", "threshold": 1.0, "delta": 0.5}, _slam_reference(measure="ap", threshold=1.0, delta=0.5)),
    ("max_pair", {}, lambda s, y: max_pair_value_and_grad(s, y)),
    ("max_pair", {"margin": "label-difference", "ties": "authors-code", "delta": 2.0},
     lambda s, y: max_pair_value_and_grad(s, y, "label-difference", 2.0, "authors-code")),
    ("squared", {}, squared_value_and_grad),
    ("kl", {}, kl_value_and_grad),
    ("smoothdcg", {}, smoothdcg_value_and_grad),
    ("smoothdcg", {"epsilon": 0.5}, lambda s, y: smoothdcg_value_and_grad(s, y, 0.5)),
    ("ranksvm", {}, ranksvm_value_and_grad),
    ("ranksvm", {"delta": 0.3}, lambda s, y: ranksvm_value_and_grad(s, y, 0.3)),
]


def _slates(rng, quantised):
    s, y, m = batch(rng, q=5, length=8)
    if quantised:  # scores on a grid: equal hinge candidates, so the maximiser tie rules decide
        s = np.round(s * 2.0) / 2.0
    return s, y, m


@pytest.mark.parametrize("name, params, reference", CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_a_surrogate_loss_equals_the_reference_slate_by_slate(name, params, reference):
    rng = np.random.default_rng(41)
    for quantised in (False, True):
        s, y, m = _slates(rng, quantised)
        v, g = value_grad64(name, s, y, m, **params)
        present = np.flatnonzero(m.any(axis=1))
        ref_values, ref_grad = [], np.zeros_like(s)
        for q in present:
            rv, rg = reference(s[q, m[q]], y[q, m[q]])
            ref_values.append(rv)
            ref_grad[q, m[q]] = rg / len(present)
            one_v, one_g = value_grad64(name, s[q:q + 1], y[q:q + 1], m[q:q + 1], **params)
            assert one_v == pytest.approx(rv, rel=1e-12, abs=1e-12)
            assert np.allclose(one_g[0, m[q]], rg, rtol=1e-12, atol=1e-12)
        assert v == pytest.approx(np.mean(ref_values), rel=1e-12, abs=1e-12)
        assert np.allclose(g, ref_grad, rtol=1e-12, atol=1e-12)


def test_kl_keeps_the_references_saturated_gradient_beyond_the_cap():
    s = np.array([[60.0, 0.0]])
    y = np.array([[1.0, 0.0]])
    v, g = value_grad64("kl", s, y, np.ones_like(y, bool))
    rv, rg = kl_value_and_grad(s[0], y[0])
    assert v == pytest.approx(rv) and np.allclose(g[0], rg)


@pytest.mark.parametrize("name", ["squared", "kl", "smoothdcg"])
def test_smooth_surrogate_properties(name):
    check_properties(name)


@pytest.mark.parametrize("name, params", [("slam", {}), ("slam", {"weights": "paper-fixed"}), ("max_pair", {}),
                                          ("ranksvm", {})])
def test_hinge_surrogate_properties(name, params):
    check_properties(name, order_free=params.get("weights") != "paper-fixed", **params)
