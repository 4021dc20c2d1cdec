"""The tie rule inside the SLAM and Alg. 3 maximisers (``maximiser_ties``).

``authors-code`` is pinned two ways: on hand-made ties, and against a line-by-line emulation
of the authors' MATLAB procedure (sort by label ascending, stable, then reverse; MATLAB's
``max`` returns the first maximum; Alg. 3 keeps the first i whose maximum beats the best so
far). Integer scores make exact ties common, so every branch of the rule is exercised.
The compiled kernels equal these references (tests/test_kernels.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltr_cli.surrogates.slam import max_pair_value_and_grad, slam_terms


def authors_order(y: np.ndarray) -> np.ndarray:
    """``flip(sortrows(data, 1), 1)``: labels descending, equal labels in reverse file order."""
    return np.argsort(y, kind="stable")[::-1]


def authors_maximisers(s, y, margin, delta=1.0):
    """For each document i (file order), the partner the authors' SLAM loop picks, or -1
    when its maximum is not positive. Evaluates their expression term by term."""
    order = authors_order(y)
    k = np.full(len(y), -1)
    for i in order:
        if margin == "label-difference":
            vec = (y[i] > y[order]) * (((y[i] - y[order]) * delta - s[i]) + s[order])
        else:
            vec = (y[i] > y[order]) * ((delta - s[i]) + s[order])
        index = int(np.argmax(vec))  # the first maximum, as MATLAB's max
        if vec[index] > 0:
            k[i] = order[index]
    return k


def authors_alg3_pair(s, y):
    """The (i, j) of the authors' calculateOAgradient, or None when no pair violates."""
    order = authors_order(y)
    best, pair = 0.0, None
    for i in order:
        vec = (y[i] > y[order]) * ((1.0 - s[i]) + s[order])
        index = int(np.argmax(vec))
        if vec[index] > best:
            best, pair = vec[index], (int(i), int(order[index]))
    return pair


ties_cases = st.integers(1, 14).flatmap(lambda m: st.tuples(
    st.lists(st.integers(-2, 2), min_size=m, max_size=m),
    st.lists(st.integers(0, 3), min_size=m, max_size=m)))


@settings(max_examples=400, deadline=None)
@given(ties_cases, st.sampled_from(["constant", "label-difference"]))
def test_slam_maximiser_is_the_authors(case, margin):
    s, y = (np.array(v, dtype=float) for v in case)
    c, k = slam_terms(s, y, margin, 1.0, "authors-code")
    expected = authors_maximisers(s, y, margin)
    active = c > 0
    np.testing.assert_array_equal(k[active], expected[active])
    assert (expected[~active] == -1).all()


@settings(max_examples=400, deadline=None)
@given(ties_cases)
def test_alg3_pair_is_the_authors(case):
    s, y = (np.array(v, dtype=float) for v in case)
    value, grad = max_pair_value_and_grad(s, y, "constant", 1.0, "authors-code")
    pair = authors_alg3_pair(s, y)
    if pair is None:
        assert value == 0.0 and not grad.any()
    else:
        i, j = pair
        expected = np.zeros(len(y))
        expected[i] -= 1.0
        expected[j] += 1.0
        np.testing.assert_array_equal(grad, expected)


def test_hand_made_ties_slam():
    # file order: labels 2, 1, 1, 0, 0; every score 0
    y = np.array([2.0, 1.0, 1.0, 0.0, 0.0])
    s = np.zeros(5)
    # constant margin: every lower document ties at 1
    _, k = slam_terms(s, y, "constant", 1.0, "first-index")
    assert k.tolist() == [1, 3, 3, -1, -1]  # the smallest index
    _, k = slam_terms(s, y, "constant", 1.0, "authors-code")
    assert k.tolist() == [2, 4, 4, -1, -1]  # the higher level, then the later document
    # label-difference margin: the lowest level wins outright; within it the later document
    _, k = slam_terms(s, y, "label-difference", 1.0, "first-index")
    assert k.tolist() == [3, 3, 3, -1, -1]
    _, k = slam_terms(s, y, "label-difference", 1.0, "authors-code")
    assert k.tolist() == [4, 4, 4, -1, -1]


def test_hand_made_ties_alg3():
    y = np.array([2.0, 2.0, 1.0, 0.0])
    s = np.zeros(4)
    _, grad = max_pair_value_and_grad(s, y, "constant", 1.0, "first-index")
    assert grad.tolist() == [-1.0, 0.0, 1.0, 0.0]  # i = 0, its partner the first lower doc
    _, grad = max_pair_value_and_grad(s, y, "constant", 1.0, "authors-code")
    assert grad.tolist() == [0.0, -1.0, 1.0, 0.0]  # i = the later label-2 doc, j from level 1
    # a strictly larger term wins whatever its level or index
    s = np.array([0.0, 0.0, 0.0, 5.0])
    _, grad = max_pair_value_and_grad(s, y, "constant", 1.0, "authors-code")
    assert grad.tolist() == [0.0, -1.0, 0.0, 1.0]


def test_unknown_rule_is_refused():
    with pytest.raises(ValueError, match="maximiser tie rule"):
        slam_terms(np.zeros(2), np.array([1.0, 0.0]), "constant", 1.0, "last")  # type: ignore[arg-type]
