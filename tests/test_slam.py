"""SLAM surrogate: fast kernel vs. O(m^2) reference, subgradients, Theorem 4, Lemma 5."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltr_cli.measures.metrics import average_precision, ndcg_at_k, rank_from_scores
from ltr_cli.surrogates.slam import ap_weights, ndcg_weights, slam_terms, slam_value_and_grad
from tests.reference import slam_reference

MARGINS = ("constant", "label-difference")


def _case(seed, m, levels=5, integer_scores=False):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, levels, m).astype(float)
    s = rng.integers(-3, 4, m).astype(float) if integer_scores else rng.normal(size=m) * 2
    return s, y


@pytest.mark.parametrize("margin", MARGINS)
@pytest.mark.parametrize("level_average", [False, True])
def test_fast_equals_reference(margin, level_average):
    for seed in range(300):
        m = 1 + seed % 25
        s, y = _case(seed, m, integer_scores=seed % 2 == 0)  # integer scores: many ties
        v = ndcg_weights(y, level_average)
        fast = slam_value_and_grad(s, y, v, margin, 1.0)
        slow = slam_reference(s, y, v, margin, 1.0)
        assert fast[0] == pytest.approx(slow[0], abs=1e-12)
        np.testing.assert_allclose(fast[1], slow[1], atol=1e-12)


def test_all_tied_scores_match_reference_exactly():
    y = np.array([4, 4, 4, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0], float)
    s = np.zeros(20)
    for margin in MARGINS:
        v = ndcg_weights(y, True)
        fast = slam_value_and_grad(s, y, v, margin)
        slow = slam_reference(s, y, v, margin)
        assert fast[0] == pytest.approx(slow[0], abs=1e-14)
        np.testing.assert_allclose(fast[1], slow[1], rtol=0, atol=1e-14)


@pytest.mark.parametrize("margin", MARGINS)
def test_subgradient_matches_finite_differences(margin):
    """Where phi is differentiable (no ties among maximisers), grad = numerical gradient."""
    rng = np.random.default_rng(1)
    checked = 0
    for _ in range(200):
        m = int(rng.integers(2, 15))
        y = rng.integers(0, 4, m).astype(float)
        s = rng.normal(size=m) * 3
        v = ndcg_weights(y)
        c, _ = slam_terms(s, y, margin)
        # skip points near a kink: a hinge term close to 0
        if np.any((np.abs(c) < 1e-3) & (c != 0)):
            continue
        value, grad = slam_value_and_grad(s, y, v, margin)
        h = 1e-6
        num = np.array([
            (slam_value_and_grad(s + h * e, y, v, margin)[0]
             - slam_value_and_grad(s - h * e, y, v, margin)[0]) / (2 * h)
            for e in np.eye(m)
        ])
        np.testing.assert_allclose(grad, num, atol=1e-5)
        checked += 1
    assert checked > 50


def test_subgradient_inequality_convexity():
    """phi(s') >= phi(s) + g . (s' - s) for a subgradient g at s (Lemma 3: convex)."""
    rng = np.random.default_rng(2)
    for _ in range(300):
        m = int(rng.integers(2, 12))
        y = rng.integers(0, 4, m).astype(float)
        s, s2 = rng.normal(size=m), rng.normal(size=m)
        for margin in MARGINS:
            v = ndcg_weights(y)
            f, g = slam_value_and_grad(s, y, v, margin)
            f2, _ = slam_value_and_grad(s2, y, v, margin)
            assert f2 >= f + g @ (s2 - s) - 1e-10


def test_weights_sum_to_one_and_are_monotone():
    y = np.array([2.0, 0.0, 4.0, 4.0, 1.0])
    v = ndcg_weights(y)
    assert v.sum() == pytest.approx(1.0)
    order = np.argsort(-y, kind="stable")
    assert np.all(np.diff(v[order]) <= 1e-15)
    va = ndcg_weights(y, level_average=True)
    assert va.sum() == pytest.approx(1.0) and va[2] == va[3] and va[1] == 0.0
    assert ap_weights(y).tolist() == [0.25, 0.0, 0.25, 0.25, 0.25]
    assert not ndcg_weights(np.zeros(3)).any()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=2, max_size=15), st.integers(0, 2**31))
def test_theorem4_upper_bounds(labels, seed):
    """Theorem 4: phi^{v^NDCG} >= 1 - NDCG and phi^{v^AP} >= 1 - AP (constant margin 1)."""
    y = np.array(labels, float)
    s = np.random.default_rng(seed).normal(size=y.shape[0]) * 2
    ranking = rank_from_scores(s, "input-order")
    if y.max() > 0:
        phi, _ = slam_value_and_grad(s, y, ndcg_weights(y), "constant", 1.0)
        assert phi >= 1.0 - ndcg_at_k(ranking, y) - 1e-12
        yb = (y > 0).astype(float)
        phi_ap, _ = slam_value_and_grad(s, yb, ap_weights(yb), "constant", 1.0)
        assert phi_ap >= 1.0 - average_precision(ranking, yb) - 1e-12


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=2, max_size=15), st.integers(0, 2**31))
def test_gradient_l1_norm_at_most_two(labels, seed):
    """Section 4.2: ||grad_s phi||_1 <= 2 sum v = 2 (Lipschitz constant <= 2)."""
    y = np.array(labels, float)
    s = np.random.default_rng(seed).normal(size=y.shape[0])
    for margin in MARGINS:
        _, g = slam_value_and_grad(s, y, ndcg_weights(y), margin)
        assert np.abs(g).sum() <= 2.0 + 1e-12
        assert abs(g.sum()) < 1e-12  # each term is e_k - e_i


# --- every weight vector (issue 3) ---------------------------------------------------------------

from ltr_cli.surrogates.slam import slam_weights, weight_ratio  # noqa: E402

WEIGHTINGS = [("ndcg", None), ("ndcg", 1), ("ndcg", 3), ("ndcg", 10), ("ap", None)]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(0, 4), min_size=2, max_size=15), st.integers(0, 2**31),
       st.sampled_from(WEIGHTINGS), st.booleans())
def test_theorem4_and_8_for_every_weight_vector(labels, seed, weighting, level_average):
    """phi^{v^NDCG} >= 1 - NDCG, phi^{v^NDCG@k} >= 1 - NDCG@k, phi^{v^AP} >= 1 - AP (binary)."""
    measure, k = weighting
    y = np.array(labels, float)
    rng = np.random.default_rng(seed)
    s = np.round(rng.normal(size=y.shape[0]) * 2, 1)  # rounded: ties in scores occur
    ranking = rank_from_scores(s, "input-order")
    if measure == "ap":
        y = (y > 0).astype(float)
    if y.max() <= 0:
        return
    v = slam_weights(y, s, measure, k, level_average)
    phi, grad = slam_value_and_grad(s, y, v, "constant", 1.0)
    target = average_precision(ranking, y) if measure == "ap" else ndcg_at_k(ranking, y, k)
    assert phi >= 1.0 - target - 1e-12
    assert np.abs(grad).sum() <= 2.0 * v.sum() + 1e-12  # Section 4.2
    assert v.sum() == pytest.approx(1.0)


def test_ndcg_at_k_weights_eq24():
    y = np.array([3.0, 0.0, 3.0, 1.0, 2.0])
    s = np.array([0.0, 0.0, 5.0, 0.0, 0.0])
    v = slam_weights(y, s, "ndcg", k=2)
    # relevance order: doc 2 (level 3, higher score) then doc 0 (level 3): only they weigh
    z = 7 / np.log2(2) + 7 / np.log2(3)
    np.testing.assert_allclose(v, [7 / np.log2(3) / z, 0, 7 / z, 0, 0])


def test_paper_weights_make_a_level_exchangeable():
    """Swapping two documents of one level (features and all) permutes value and gradient."""
    rng = np.random.default_rng(5)
    for _ in range(200):
        m = int(rng.integers(3, 12))
        y = rng.integers(0, 3, m).astype(float)
        s = rng.normal(size=m)
        same = [(i, j) for i in range(m) for j in range(i + 1, m) if y[i] == y[j]]
        if not same:
            continue
        i, j = same[int(rng.integers(len(same)))]
        perm = np.arange(m)
        perm[[i, j]] = perm[[j, i]]
        for k in (None, 2):
            v1, g1 = slam_value_and_grad(s, y, slam_weights(y, s, "ndcg", k), "constant")
            v2, g2 = slam_value_and_grad(s[perm], y[perm], slam_weights(y[perm], s[perm], "ndcg", k), "constant")
            assert v1 == pytest.approx(v2, abs=1e-12)
            np.testing.assert_allclose(g1[perm], g2, atol=1e-12)


def test_weight_ratio_vmax():
    assert weight_ratio(np.array([0.5, 0.25, 0.0, 0.25])) == 2.0
    assert weight_ratio(np.zeros(3)) == 0.0
    v = slam_weights(np.array([1.0, 1.0, 0.0]), measure="ap")
    assert weight_ratio(v) == 1.0  # v_max = 1 for AP (Section 5.1.1)
