"""Paper metrics (Eq. 1, Eq. 2), tie policies, no-relevant policies, ERU/NERU."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltr_cli.measures.conventions import Measure
from ltr_cli.measures.metrics import (
    average_precision,
    eru,
    ideal_dcg_at_k,
    ideal_ranking,
    ndcg_at_k,
    neru,
    precision_at_k,
    rank_from_scores,
)
from tests.reference import ap_reference, ideal_by_brute_force, ndcg_reference

L2 = math.log2


def test_ndcg_hand_computed():
    labels = np.array([0.0, 2.0, 1.0])
    ranking = np.array([0, 1, 2])  # shows labels 0, 2, 1
    dcg = 0 / L2(2) + 3 / L2(3) + 1 / L2(4)
    idcg = 3 / L2(2) + 1 / L2(3) + 0
    assert ndcg_at_k(ranking, labels) == pytest.approx(dcg / idcg)
    # cut-off 1: only position 1 counts (gain 0 vs ideal 3)
    assert ndcg_at_k(ranking, labels, 1) == 0.0
    # cut-off larger than m is min(k, m)
    assert ndcg_at_k(ranking, labels, 10) == pytest.approx(dcg / idcg)


def test_ndcg_labels_above_two_and_real_labels():
    labels = np.array([4.0, 0.5, 3.0])
    ranking = np.array([2, 0, 1])
    dcg = 7 / L2(2) + 15 / L2(3) + (2**0.5 - 1) / L2(4)
    idcg = 15 / L2(2) + 7 / L2(3) + (2**0.5 - 1) / L2(4)
    assert ndcg_at_k(ranking, labels) == pytest.approx(dcg / idcg)


def test_ideal_dcg_is_max_over_permutations():
    labels = np.array([1.0, 0.0, 3.0, 2.0, 2.0])
    for k in (1, 2, 3, 5, 9):
        assert ideal_dcg_at_k(labels, k) == pytest.approx(ideal_by_brute_force(labels, k))


@pytest.mark.parametrize("policy,value", [("zero", 0.0), ("one", 1.0)])
def test_no_relevant_policy(policy, value):
    labels = np.zeros(4)
    r = np.arange(4)
    assert ndcg_at_k(r, labels, 10, policy) == value
    assert average_precision(r, labels, no_relevant=policy) == value
    assert neru(r, labels, no_relevant=policy) == value


def test_no_relevant_skip_is_nan():
    assert math.isnan(ndcg_at_k(np.arange(3), np.zeros(3), 10, "skip"))
    assert math.isnan(average_precision(np.arange(3), np.zeros(3), no_relevant="skip"))


def test_ap_hand_computed_and_threshold():
    labels = np.array([1.0, 0.0, 2.0, 0.0])
    ranking = np.array([1, 0, 3, 2])  # rel pattern 0 1 0 1
    assert average_precision(ranking, labels) == pytest.approx((1 / 2 + 2 / 4) / 2)
    # threshold 1: only the label-2 document is relevant, at position 4
    assert average_precision(ranking, labels, threshold=1.0) == pytest.approx(1 / 4)


def test_precision_divides_by_k_on_short_lists():
    labels = np.array([1.0, 0.0])
    assert precision_at_k(np.array([0, 1]), labels, 1) == 1.0
    assert precision_at_k(np.array([0, 1]), labels, 5) == pytest.approx(1 / 5)


def test_tie_policies():
    s = np.array([1.0, 2.0, 1.0, 1.0])
    assert rank_from_scores(s, "input-order").tolist() == [1, 0, 2, 3]
    assert rank_from_scores(s, "reverse-input").tolist() == [1, 3, 2, 0]
    labels = np.array([2.0, 0.0, 0.0, 1.0])
    assert rank_from_scores(s, "pessimistic", labels=labels).tolist() == [1, 2, 3, 0]
    rng = np.random.default_rng(0)
    seen = {tuple(rank_from_scores(s, "random", rng)) for _ in range(200)}
    assert all(r[0] == 1 for r in seen) and len(seen) == 6  # all 3! orders of the tie
    with pytest.raises(ValueError):
        rank_from_scores(s, "sideways")


def test_ties_change_the_measure_as_expected():
    labels = np.array([0.0, 1.0])
    s = np.zeros(2)
    first = ndcg_at_k(rank_from_scores(s, "input-order"), labels)
    rev = ndcg_at_k(rank_from_scores(s, "reverse-input"), labels)
    pes = ndcg_at_k(rank_from_scores(s, "pessimistic", labels=labels), labels)
    assert rev == 1.0 and first == pes == pytest.approx(1 / L2(3))


def test_eru_and_neru():
    labels = np.array([3.0, 0.0, 5.0])
    r = np.array([0, 1, 2])
    alpha, d = 3.0, 1.0
    w = [2 ** (-(i) / (alpha - 1)) for i in range(3)]
    expected = w[0] * 2 + w[1] * 0 + w[2] * 4
    assert eru(r, labels, d, alpha) == pytest.approx(expected)
    best = w[0] * 4 + w[1] * 2
    assert neru(r, labels, d, alpha) == pytest.approx(expected / best)
    assert neru(ideal_ranking(labels), labels, d, alpha) == pytest.approx(1.0)
    with pytest.raises(ValueError):
        eru(r, labels, d, alpha=1.0)


def test_measure_names():
    assert Measure("ndcg@10").k == 10 and Measure("ndcg").k is None
    assert Measure("map").name == "ap"  # the batch configs' spelling of AP is accepted too
    for bad in ("ndcg@0", "ndcg@x", "map@5", "p", "ap@5"):
        with pytest.raises(ValueError):
            Measure(bad)


labels_st = st.lists(st.integers(0, 4).map(float), min_size=1, max_size=12)


@settings(max_examples=200, deadline=None)
@given(labels_st, st.integers(1, 12), st.integers(0, 2**31))
def test_ndcg_ap_in_unit_interval_and_match_reference(labels, k, seed):
    y = np.array(labels)
    ranking = np.random.default_rng(seed).permutation(len(y))
    n = ndcg_at_k(ranking, y, k)
    a = average_precision(ranking, y)
    assert 0.0 <= n <= 1.0 + 1e-12 and 0.0 <= a <= 1.0 + 1e-12
    if y.max() > 0:
        assert n == pytest.approx(ndcg_reference(ranking, y, k))
        assert a == pytest.approx(ap_reference(ranking, y))


@settings(max_examples=200, deadline=None)
@given(labels_st, st.integers(1, 12))
def test_ideal_ranking_scores_one(labels, k):
    y = np.array(labels)
    r = ideal_ranking(y)
    if y.max() > 0:
        assert ndcg_at_k(r, y, k) == 1.0
        assert average_precision(r, y) == 1.0


def test_negative_labels_have_zero_gain():
    labels = np.array([-1.0, -1.0, 1.0])
    n = ndcg_at_k(np.array([0, 2, 1]), labels)
    assert 0.0 <= n <= 1.0 and n == pytest.approx(1 / L2(3))
    assert ndcg_at_k(np.arange(2), np.array([-1.0, -1.0]), no_relevant="one") == 1.0
