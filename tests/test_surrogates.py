"""Shared surrogates: fast kernels vs. direct sums, gradients vs. finite differences."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltr_cli.surrogates import SURROGATES
from ltr_cli.surrogates.pairwise import label_preferences, ordinal_value_and_grad, preference_value_and_grad
from ltr_cli.surrogates.slam import max_pair_value_and_grad, slam_terms


def pairwise_reference(f, y, cost="uniform", normalise=True, direction="ordinal"):
    """Direct O(m^2) sum of C(y_i, y_j) max(0, 1 + f_i - f_j) over y_i < y_j."""
    m = len(f)
    value, grad = 0.0, np.zeros(m)
    pairs = 0
    for i in range(m):
        for j in range(m):
            if y[i] < y[j]:
                pairs += 1
                if isinstance(cost, str):
                    c = 1.0 if cost == "uniform" else y[j] - y[i]
                else:
                    c = cost[int(y[i])][int(y[j])]
                if 1 + f[i] - f[j] > 0:
                    value += c * (1 + f[i] - f[j])
                    grad[i] += c
                    grad[j] -= c
    if normalise and pairs:
        value, grad = value / pairs, grad / pairs
    return value, grad


# scores on a grid of eighths: all sums are exact in floating point, so the fast kernels
# and the direct sums must agree to the last bit, ties and hinge kinks included
scores_st = st.one_of(
    st.lists(st.integers(-3, 3).map(float), min_size=1, max_size=14),  # many ties and kinks
    st.lists(st.integers(-40, 40).map(lambda k: k / 8), min_size=1, max_size=14),
)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_ordinal_algorithm1_equals_pairwise_sum(data):
    f = np.array(data.draw(scores_st))
    y = np.array(data.draw(st.lists(st.integers(0, 4), min_size=len(f), max_size=len(f))), float)
    cost = data.draw(st.sampled_from(["uniform", "difference", "matrix"]))
    if cost == "matrix":
        cost = np.arange(25, dtype=float).reshape(5, 5) / 10 + 0.5
    value, grad = ordinal_value_and_grad(f, y, cost)
    ref_v, ref_g = pairwise_reference(f, y, cost)
    assert value == pytest.approx(ref_v, abs=1e-9)
    np.testing.assert_allclose(grad, ref_g, atol=1e-9)
    # Algorithm 2 over the same pairs gives the same loss
    pairs, costs = label_preferences(y, cost)
    v2, g2 = preference_value_and_grad(f, pairs, costs)
    assert v2 == pytest.approx(ref_v, abs=1e-9)
    np.testing.assert_allclose(g2, ref_g, atol=1e-9)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_ranksvm_counting_equals_pairwise_sum(data):
    f = np.array(data.draw(scores_st))
    y = np.array(data.draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 4.0]), min_size=len(f), max_size=len(f))))
    value, grad = SURROGATES["ranksvm"](f, y)
    ref_v, ref_g = pairwise_reference(f, y, normalise=False)
    assert value == pytest.approx(ref_v, abs=1e-9)
    np.testing.assert_allclose(grad, ref_g, atol=1e-9)


def max_pair_reference(s, y, delta=1.0):
    best, pair = 0.0, None
    for i in range(len(s)):
        for j in range(len(s)):
            if y[i] > y[j] and delta + s[j] - s[i] > best:
                best, pair = delta + s[j] - s[i], (i, j)
    return best, pair


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_alg3_surrogate_equals_eq27(data):
    s = np.array(data.draw(scores_st))
    y = np.array(data.draw(st.lists(st.integers(0, 3), min_size=len(s), max_size=len(s))), float)
    value, grad = max_pair_value_and_grad(s, y)
    ref, pair = max_pair_reference(s, y)
    assert value == pytest.approx(ref, abs=1e-12)
    if pair is None:
        assert not grad.any()
    else:
        # the subgradient is e_j - e_i for a maximising pair
        i, j = np.flatnonzero(grad < 0)[0], np.flatnonzero(grad > 0)[0]
        assert y[i] > y[j] and s[j] - s[i] + 1 == pytest.approx(ref)
        assert np.abs(grad).sum() == 2.0  # ||grad||_1 <= 2 (Theorem 10's first bound)
    c, _ = slam_terms(s, y)
    assert value == pytest.approx(max(0.0, c.max()) if c.size else 0.0)


SMOOTH = ["squared", "listnet", "kl", "smoothdcg"]


@pytest.mark.parametrize("name", SMOOTH + ["ranksvm", "ordinal", "preference"])
def test_gradients_match_finite_differences(name):
    rng = np.random.default_rng(7)
    fn = SURROGATES[name]
    params = {"epsilon": 0.5} if name == "smoothdcg" else {}
    checked = 0
    for _ in range(60):
        m = int(rng.integers(2, 10))
        y = rng.integers(0, 4, m).astype(float)
        s = rng.normal(size=m)
        if name in ("ranksvm", "ordinal", "preference"):
            # skip points close to a hinge kink (non-differentiable there)
            diffs = np.abs(s[:, None] - s[None, :])
            if np.any(np.abs(diffs - 1.0) < 1e-3):
                continue
        value, grad = fn(s, y, **params)
        h = 1e-6
        num = np.array([(fn(s + h * e, y, **params)[0] - fn(s - h * e, y, **params)[0]) / (2 * h)
                        for e in np.eye(m)])
        np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-6)
        checked += 1
    assert checked > 20


@pytest.mark.parametrize("name", ["squared", "ranksvm", "ordinal", "listnet", "kl"])
def test_convex_surrogates_satisfy_subgradient_inequality(name):
    rng = np.random.default_rng(3)
    fn = SURROGATES[name]
    for _ in range(200):
        m = int(rng.integers(2, 10))
        y = rng.integers(0, 4, m).astype(float)
        s, s2 = rng.normal(size=m), rng.normal(size=m)
        f, g = fn(s, y)
        assert fn(s2, y)[0] >= f + g @ (s2 - s) - 1e-9


def test_listwise_properties():
    y = np.array([2.0, 0.0, 1.0])
    _, g = SURROGATES["listnet"](np.zeros(3), y)
    assert abs(g.sum()) < 1e-12  # softmax(s) - softmax(R)
    v, g = SURROGATES["kl"](y.copy(), y)
    assert v == pytest.approx(0.0, abs=1e-12) and not np.abs(g).max() > 1e-12  # minimum at s = R
    v, _ = SURROGATES["listnet"](np.array([1000.0, -1000.0, 0.0]), y)
    assert np.isfinite(v)  # log-softmax is stable
    v, g = SURROGATES["smoothdcg"](np.array([5.0, 0.0, 0.0]), y, epsilon=0.01)
    assert v == pytest.approx(-3.0)  # all weight on the top document: -G(2)
