"""The compiled kernels (ltr_cli.kernels) against the slow reference implementations.

Orderings, hinge terms, SLAM weights, AP and everything built from them are reproduced
operation by operation and must be equal exactly; values that go through BLAS dot
products or through exp/log (numba's libm vs numpy's SIMD) must agree to 1e-12.
Learners are compared over hundreds of rounds: fast path vs ``use_kernels = False``.
"""

from __future__ import annotations

import pickle
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltr_cli import kernels
from ltr_cli.core import codes
from ltr_cli.data.svmlight import Query
from ltr_cli.learners.online.base import Feedback
from ltr_cli.measures.conventions import Measure
from ltr_cli.measures.metrics import log2_discount, rank_from_scores, row_scores
from ltr_cli.protocols.online import reveal, run_online
from tests.conftest import make_learner
from ltr_cli.surrogates.slam import max_pair_value_and_grad, slam_terms, slam_value_and_grad, slam_weights

K = kernels.load()
TOL = 1e-12
CONST_1 = {"rule": "constant", "eta": 1.0}
# RTop-kF's decaying schedule with the authors' constants
AUTHORS_SCHEDULE = {"schedule": "authors-code", "eta_scale": 0.1, "gamma_scale": 0.1}

# labels: integer grades with ties, all zero, negative ("not judged"), real-valued
label_lists = st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0, 3.0, 4.0, -1.0, 0.5, 2.25]), min_size=1, max_size=40)
score_values = st.one_of(st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.5]),
                         st.floats(-1e3, 1e3, allow_nan=False, width=64))


@st.composite
def scored_queries(draw):
    y = np.array(draw(label_lists))
    s = np.array(draw(st.lists(score_values, min_size=len(y), max_size=len(y))))
    return s, y


def close(a: float, b: float) -> bool:
    return (np.isnan(a) and np.isnan(b)) or abs(a - b) <= TOL * max(1.0, abs(b))


# --- rankings ------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(scored_queries())
def test_sort_equals_stable_argsort_with_ties(query):
    s, _ = query
    for reverse, ties in ((False, "input-order"), (True, "reverse-input")):
        np.testing.assert_array_equal(K.core._sorted_desc(s, reverse), rank_from_scores(s, ties))


@pytest.mark.parametrize("case", ["spread", "rounded", "heavy-tailed", "outlier", "inf", "nan", "all-nan", "equal"])
def test_sort_edge_cases(case):
    rng = np.random.default_rng(0)
    s = {"spread": rng.normal(size=300), "rounded": np.round(rng.normal(size=300)),
         "heavy-tailed": rng.standard_cauchy(300), "outlier": np.r_[rng.normal(size=299), 1e12],
         "inf": np.r_[rng.normal(size=10), np.inf, -np.inf, 0.0], "nan": np.r_[rng.normal(size=10), np.nan],
         "all-nan": np.r_[np.full(5, np.nan), -np.full(4, np.nan)],
         "equal": np.zeros(17)}[case]
    for reverse, ties in ((False, "input-order"), (True, "reverse-input")):
        np.testing.assert_array_equal(K.core._sorted_desc(s, reverse), rank_from_scores(s, ties))


@settings(max_examples=200, deadline=None)
@given(st.integers(17, 700), st.integers(1, 12), st.integers(0, 2**32 - 1), st.booleans())
def test_crowded_buckets_sort_stably(m, levels, seed, sign):
    """Real features put most scores in one or two buckets (a few outliers stretch the
    range): the merge sort of crowded buckets, with many ties, at every merge width."""
    rng = np.random.default_rng(seed)
    s = rng.integers(0, levels, size=m).astype(float) / levels
    s[rng.integers(0, m)] = 1e6 * (1 if sign else -1)  # one outlier: nearly all in one bucket
    for reverse, ties in ((False, "input-order"), (True, "reverse-input")):
        np.testing.assert_array_equal(K.core._sorted_desc(s, reverse), rank_from_scores(s, ties))


@settings(max_examples=200, deadline=None)
@given(st.integers(32, 700), st.integers(0, 2**32 - 1), st.sampled_from([0, 1, 2]))
def test_heavy_tailed_scores_sort_stably(m, seed, ties):
    """Heavy tails at several scales (real MSLR scores: outliers, then outliers of the
    rest) crowd most documents into few buckets; rounding and a run of equal scores add
    ties inside the crowded buckets."""
    rng = np.random.default_rng(seed)
    s = rng.standard_cauchy(m) * 10.0 ** rng.integers(-3, 4, size=m)
    if ties == 1:
        s = np.round(s, 1)
    elif ties == 2:
        s[rng.random(m) < 0.7] = 0.25
    for reverse, policy in ((False, "input-order"), (True, "reverse-input")):
        np.testing.assert_array_equal(K.core._sorted_desc(s, reverse), rank_from_scores(s, policy))


@settings(max_examples=300, deadline=None)
@given(scored_queries(), st.integers(0, 3))
def test_score_order_read_from_the_shown_ranking(query, nans):
    """The paper SLAM weights take the score order (ties in index order) from the ranking
    the round already sorted: as is under input-order ties, with tie runs reversed under
    reverse-input, sorted again when NaN scores (placed at opposite ends), an unknown
    ranking rule or a false claim forbid reuse. Each must equal a fresh stable sort of -s."""
    s, _ = query
    s = s.copy()
    s[:min(nans, s.shape[0] - 1)] = np.nan
    expected = K.core._sorted_desc(s, False)
    unrelated = np.arange(s.shape[0])[::-1].copy()
    C = codes
    for ranking, code in ((K.core._sorted_desc(s, False), C.RANKED_INPUT_ORDER),
                          (K.core._sorted_desc(s, True), C.RANKED_REVERSE_INPUT),
                          (unrelated, C.RANKED_UNKNOWN),
                          # a claim that is false (a ranking changed by its caller, or the
                          # other tie rule's): checked, then sorted again
                          (unrelated, C.RANKED_INPUT_ORDER), (unrelated, C.RANKED_REVERSE_INPUT),
                          (K.core._sorted_desc(s, True), C.RANKED_INPUT_ORDER),
                          (K.core._sorted_desc(s, False), C.RANKED_REVERSE_INPUT)):
        by = np.full(s.shape[0], -7, dtype=np.int64)
        np.testing.assert_array_equal(K.slam._score_order(s, ranking, code, by), expected)


@pytest.mark.parametrize("ties", ["input-order", "reverse-input"])
def test_paper_weights_never_trust_a_changed_ranking(ties):
    """``update`` may receive a ranking other than the one ``rank`` sorted: changed in place
    by the caller, or ``rank``'s ranking of other rows (the scores were computed again since).
    The paper weights then still follow the score order, as the reference's do."""
    fast, ref = (make_learner("slam-perceptron", 4, ties, step=CONST_1, weights="paper") for _ in range(2))
    ref.use_kernels = False
    for learner in (fast, ref):
        learner.w = np.array([1.0, -0.5, 0.25, 2.0])
    X, y, rng = np.eye(4), np.array([1.0, 1.0, 1.0, 0.0]), np.random.default_rng(0)
    shown = fast.rank(X, rng)
    shown[:] = [3, 0, 1, 2]  # changed in place
    fast.update(X, Feedback(shown, y))
    ref.update(X, Feedback(shown.copy(), y))
    np.testing.assert_array_equal(fast.w, ref.w)
    other = fast.rank(X, rng)
    X2 = np.eye(4)[[1, 0, 2, 3]].copy()
    for labels in (np.array([0.0, 0.0, 0.0, 1.0]), y):  # no mistake (rescores X2), then a mistake
        fast.update(X2, Feedback(other, labels))
        ref.update(X2, Feedback(other.copy(), labels))
        np.testing.assert_array_equal(fast.w, ref.w)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_score_rank_writes_scores_and_ranking(dtype):
    rng = np.random.default_rng(1)
    X = np.round(rng.normal(size=(50, 7)), 1).astype(dtype)
    X[10] = X[3]  # duplicate rows: exactly tied scores
    w = rng.normal(size=7)
    buf, ranking = np.empty(64), np.empty(50, dtype=np.int64)
    K.core.score_rank(X, w, False, buf, ranking)
    np.testing.assert_allclose(buf[:50], X.astype(np.float64) @ w, rtol=TOL, atol=TOL)
    # summed row by row in one order, under either tie rule: the reference's bits
    np.testing.assert_array_equal(buf[:50], row_scores(X, w))
    assert buf[10] == buf[3]
    np.testing.assert_array_equal(ranking, rank_from_scores(buf[:50], "input-order"))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_vector_row_scores_keep_the_reference_bits(dtype):
    """Four rows at a time in vector registers (every m mod 4 and d mod 4, wide value
    ranges, NaN and infinite features): the reference's bits, the scalar loop's bits, and
    nothing written past row m."""
    rng = np.random.default_rng(5)
    for m in (1, 2, 3, 4, 5, 6, 7, 9):
        for d in (1, 2, 3, 4, 5, 7, 8, 137):
            X = (rng.normal(size=(m, d)) * 10.0 ** rng.integers(-8, 9, size=(m, d))).astype(dtype)
            if m > 4 and d > 2:
                X[2, 1], X[4, 0] = np.nan, np.inf
            w = rng.normal(size=d) * 10.0 ** rng.integers(-8, 9, size=d)
            vec, scalar = np.full(m + 3, 7.0), np.full(m + 3, 7.0)
            K.core.row_scores_into(X, w, vec)
            K.core._row_scores_scalar(np.asfortranarray(X), w, scalar)  # another layout: the scalar loop
            with np.errstate(invalid="ignore", over="ignore"):
                ref = row_scores(X, w)
            assert vec.tobytes() == scalar.tobytes()
            assert vec[:m].tobytes() == ref.tobytes() and (vec[m:] == 7.0).all()


# --- measures ------------------------------------------------------------------------------

MEASURES = [Measure(name, policy, threshold) for name in ("ndcg", "ndcg@1", "ndcg@5", "ndcg@50", "ap", "p@3")
            for policy in ("zero", "one", "skip") for threshold in (0.0, 1.5)]


@settings(max_examples=300, deadline=None)
@given(scored_queries(), st.integers(0, 2**32 - 1))
def test_round_measures_equal_the_reference(query, seed):
    s, y = query
    ranking = np.random.default_rng(seed).permutation(len(y)) if seed % 2 else rank_from_scores(s)
    spec = np.array([meas.kernel_row() for meas in MEASURES])
    values = K.measures.round_measures(ranking, y, spec, kernels.discounts(len(y)))
    for meas, value in zip(MEASURES, values):
        assert close(value, meas(ranking, y)), meas.name
    assert values[-1] == float(y.max() > 0)


def test_discount_table_is_numpys():
    table = kernels.discounts(3000)
    for n in (1, 2, 7, 10, 100, 1000, 3000):
        np.testing.assert_array_equal(table[:n], log2_discount(n))


def test_pairwise_sum_is_numpys():
    rng = np.random.default_rng(2)
    for n in list(range(0, 300)) + [1000, 4097, 123457]:
        a = rng.normal(size=n) * 10.0 ** rng.uniform(-8, 8, size=n)
        assert K.pairwise.pairwise_sum(a) == a.sum()


def test_measures_without_a_kernel_row():
    assert Measure("eru@5").kernel_row() is None and Measure("neru").kernel_row() is None


# --- SLAM pieces ---------------------------------------------------------------------------

WEIGHT_OPTIONS = [(kind, k, mode) for kind, k in (("ndcg", None), ("ndcg", 1), ("ndcg", 3), ("ndcg", 100))
                  for mode in ("paper", "paper-fixed", "level-averaged")] + [("ap", None, "paper")]
MODES = {"paper": 0, "paper-fixed": 1, "level-averaged": 2}


@settings(max_examples=200, deadline=None)
@given(scored_queries(), st.sampled_from([0.0, 1.0]))
def test_slam_weights_terms_value_and_gradient_equal_the_reference(query, threshold):
    s, y = query
    disc = kernels.discounts(len(y))
    integer = np.all(y == np.floor(y))
    for kind, k, mode in WEIGHT_OPTIONS:
        ref = slam_weights(y, s if mode == "paper" else None, kind, k, mode == "level-averaged", threshold)
        fast = K.slam.slam_weights(y, s, 1 if kind == "ap" else 0, -1 if k is None else k, MODES[mode], threshold, disc)
        if integer:
            np.testing.assert_array_equal(fast, ref)
        else:  # exp2 of a real label: numba's libm and numpy may differ in the last bit
            np.testing.assert_allclose(fast, ref, rtol=TOL, atol=0)
    for margin, code in (("constant", 0), ("label-difference", 1)):
        for delta, (tie_code, ties) in ((1.0, (0, "first-index")), (0.5, (0, "first-index")),
                                        (1.0, (1, "authors-code")), (0.5, (1, "authors-code"))):
            c_ref, k_ref = slam_terms(s, y, margin, delta, ties)
            c, k = K.slam.slam_terms(s, y, code, delta, tie_code)
            np.testing.assert_array_equal(c, c_ref)
            np.testing.assert_array_equal(k, k_ref)
            v = slam_weights(y, s, "ndcg", None, True)
            value_ref, grad_ref = slam_value_and_grad(s, y, v, margin, delta, ties)
            value, grad = K.slam.slam_value_and_grad(s, y, v, code, delta, tie_code)
            assert value == value_ref
            np.testing.assert_array_equal(grad, grad_ref)
            value_ref, grad_ref = max_pair_value_and_grad(s, y, margin, delta, ties)
            value, grad = K.slam.max_pair_value_and_grad(s, y, code, delta, tie_code)
            assert value == value_ref
            np.testing.assert_array_equal(grad, grad_ref)


# --- learners: fast path vs reference over many rounds ----------------------------------------


def _stream(seed: int, rounds: int, d: int, dtype=np.float64, exact=False):
    """Random queries with ties in scores (duplicate rows), ties in labels, all-zero labels,
    one-document queries, real-valued labels and long lists (NDCG@k with k > m and k < m).
    ``exact``: only what the kernels reproduce bit for bit (numpy's X @ w on one row is a
    dot product, not the dgemv numba calls; exp2 of a real label may differ in the last bit)."""
    rng = np.random.default_rng(seed)
    for t in range(rounds):
        m = int(rng.choice([2, 3, 8, 25, 60] if exact else [1, 2, 3, 8, 25, 60]))
        X = np.round(rng.normal(size=(m, d)), 2)
        if m > 3:
            X[rng.integers(m)] = X[0]
        y = rng.integers(0, 5, m).astype(float) if t % 7 else np.zeros(m)
        if t % 11 == 5 and not exact:
            y = np.round(rng.uniform(0, 3, m), 2)  # real-valued labels
        yield X.astype(dtype), y


def _run_pair(make, dtype=np.float64, rounds=300, d=6, seed=0, tol=TOL, compare_flags=True, exact=False):
    fast, ref = make(), make()
    ref.use_kernels = False
    rng_f, rng_r = np.random.default_rng(9), np.random.default_rng(9)
    for t, (X, y) in enumerate(_stream(seed, rounds, d, dtype, exact)):
        r_f, r_r = fast.rank(X, rng_f), ref.rank(X, rng_r)
        np.testing.assert_array_equal(r_f, r_r, err_msg=f"round {t}")
        i_f, i_r = fast.update(X, reveal(fast, r_f, y)), ref.update(X, reveal(ref, r_r, y))
        assert i_f.mistake == i_r.mistake, f"round {t}"
        # float32 rows: the reference upcasts and calls BLAS, which on two equal rows leaves
        # c X[i] - c X[k] either exactly 0 (no update) or a last-bit residue, by shape
        if compare_flags and dtype == np.float64:
            assert i_f.updated == i_r.updated, f"round {t}"
        assert close(i_f.ranking_loss, i_r.ranking_loss) and close(i_f.surrogate, i_r.surrogate), f"round {t}"
        scale = max(1.0, float(np.abs(ref.w).max()))  # relative to the weights' size
        assert np.abs(fast.w - ref.w).max() <= tol * scale, f"round {t}"
    return fast, ref


SLAM_CONFIGS = [dict(measure=measure, mistake=mistake, weights=weights, margin=margin, threshold=threshold)
                for measure, mistake in (("ndcg", None), ("ndcg@3", None), ("ndcg@100", None), ("ap", None),
                                         ("ndcg", "ndcg@10"), ("ap", "ndcg@10"), ("ndcg", "ap"))
                for weights in ("paper", "paper-fixed", "level-averaged")
                for margin in ("constant", "label-difference")
                for threshold in (0.0, 1.0)
                if weights == "paper" or threshold == 0.0]


@pytest.mark.parametrize("config", SLAM_CONFIGS, ids=lambda c: "-".join(str(v) for v in c.values()))
def test_slam_perceptron_trajectory_equals_the_reference(config):
    step = {"rule": "inv-sqrt", "eta": 0.7, "loss_scaled": config["margin"] == "constant"}
    config = {("relevance_threshold" if k == "threshold" else k): v for k, v in config.items()}
    _run_pair(lambda: make_learner("slam-perceptron", 6, "reverse-input", step=step, **config))
    # float64, integer labels: BLAS as numpy, numpy's sums reproduced: bit for bit
    fast, ref = _run_pair(lambda: make_learner("slam-perceptron", 6, "reverse-input", step=step, **config),
                          exact=True)
    np.testing.assert_array_equal(fast.w, ref.w)


@pytest.mark.parametrize("mistake", ["ndcg", "ndcg@2", "ap"])
@pytest.mark.parametrize("margin", ["constant", "label-difference"])
@pytest.mark.parametrize("maximiser_ties", ["first-index", "authors-code"])
def test_alg3_trajectory_equals_the_reference(mistake, margin, maximiser_ties):
    step = {"rule": "constant", "eta": 1.0, "loss_scaled": True}

    def make():
        return make_learner("alg3", 6, "reverse-input", step=step, mistake=mistake, margin=margin,
                            relevance_threshold=1.0, maximiser_ties=maximiser_ties)

    _run_pair(make)
    fast, ref = _run_pair(make, exact=True)
    np.testing.assert_array_equal(fast.w, ref.w)


@pytest.mark.parametrize("measure", ["ndcg", "ap"])
def test_slam_with_the_authors_tie_rule_equals_the_reference(measure):
    def make():
        return make_learner("slam-perceptron", 6, "reverse-input", step={"rule": "inv-sqrt", "eta": 1.0},
                            measure=measure, mistake="ndcg@10", weights="level-averaged", margin="label-difference",
                            maximiser_ties="authors-code")

    fast, ref = _run_pair(make, exact=True)
    np.testing.assert_array_equal(fast.w, ref.w)


def test_authors_listnet_numerics_equal_the_reference_nan_included():
    """Unshifted exponentials: large features overflow e^s, the weights become NaN and stay
    NaN on both paths; the rankings (NaN scores first, reverse file order) stay equal."""
    def make():
        return make_learner("listnet", 6, "reverse-input", step={"rule": "inv-sqrt", "eta": 1.0},
                            numerics="authors-code")

    fast, ref = make(), make()
    ref.use_kernels = False
    rng = np.random.default_rng(5)
    went_nan = None
    for t in range(40):
        m = int(rng.integers(1, 12))
        X = rng.uniform(0, 300, size=(m, 6))
        y = rng.integers(0, 5, m).astype(float)
        r_f, r_r = fast.rank(X, rng), ref.rank(X, rng)
        np.testing.assert_array_equal(r_f, r_r, err_msg=f"round {t}")
        fast.update(X, reveal(fast, r_f, y))
        ref.update(X, reveal(ref, r_r, y))
        np.testing.assert_array_equal(np.isnan(fast.w), np.isnan(ref.w))
        finite = np.isfinite(ref.w)
        np.testing.assert_allclose(fast.w[finite], ref.w[finite], rtol=1e-12)
        if went_nan is None and np.isnan(ref.w).any():
            went_nan = t
    assert went_nan is not None and np.isnan(ref.w).all()
    # NaN weights: every score NaN, shown in reverse file order as the authors' sort does
    assert fast.rank(np.ones((4, 6)), rng).tolist() == [3, 2, 1, 0]


def test_label_exponentials_from_the_table_are_the_computed_ones():
    """ListNet's e^R reads integer labels from a table: the compiled exp's bits, for every
    integer in range, -0.0, halves, NaN and labels past the table."""
    from numba import njit

    exp = njit(lambda r: np.exp(r))
    for r in [*map(float, range(-64, 64)), -0.0, 0.5, -2.5, 63.5, 64.0, -65.0, 700.0, np.nan]:
        assert np.float64(K.ogd._exp_label(r)).tobytes() == np.float64(exp(r)).tobytes(), r


@pytest.mark.parametrize("ties", ["input-order", "reverse-input", "random"])
def test_tie_policies_and_float32_rows(ties):
    _run_pair(lambda: make_learner("slam-perceptron", 6, ties, measure="ndcg", weights="paper"))
    # float32 rows: loops with float64 accumulation instead of numpy's upcast + BLAS
    _run_pair(lambda: make_learner("slam-perceptron", 6, ties, measure="ap"), dtype=np.float32, tol=1e-9)
    _run_pair(lambda: make_learner("alg3", 6, ties), dtype=np.float32, tol=1e-9)


@pytest.mark.parametrize("surrogate", ["squared", "listnet", "kl", "smoothdcg", "ranksvm", "ordinal"])
@pytest.mark.parametrize("radius", [None, 1.0])
def test_ogd_trajectory_equals_the_reference(surrogate, radius):
    config = {"surrogate": surrogate, "step": {"rule": "inv-sqrt", "eta": 0.05}, "radius": radius,
              **({"epsilon": 0.5} if surrogate == "smoothdcg" else {})}
    # smoothdcg: with every label equal the gradient is zero up to rounding, so "updated"
    # can differ by a step of 1e-17; the weights still agree
    _run_pair(lambda: make_learner("ogd", 6, **config), compare_flags=surrogate != "smoothdcg")
    _run_pair(lambda: make_learner("ogd", 6, **config), dtype=np.float32, tol=1e-9,
              compare_flags=surrogate != "smoothdcg")


@pytest.mark.parametrize("surrogate", ["squared", "kl", "smoothdcg", "ranksvm"])
@pytest.mark.parametrize("fidelity", ["exact", "authors-code"])
def test_rtopkf_trajectory_equals_the_reference(surrogate, fidelity):
    # epsilon 0.5: with the default 0.01 SmoothDCG's dynamics amplify a last-bit difference
    # of exp by 1/epsilon every round (the reference disagrees with itself as much);
    # a single round at epsilon 0.01 is compared below
    def make():
        return make_learner("rtopkf", 6, rng=np.random.default_rng(3), surrogate=surrogate, epsilon=0.5,
                            fidelity=fidelity, **AUTHORS_SCHEDULE)

    _run_pair(make)
    _run_pair(make, dtype=np.float32, tol=1e-9)


@pytest.mark.parametrize("surrogate", ["squared", "kl", "smoothdcg", "ranksvm"])
@pytest.mark.parametrize("options", [
    dict(fidelity="authors-code", miss_scale=1000.0, numerics="authors-code", short_lists="skip"),
    dict(fidelity="authors-code", miss_scale=1.0, numerics="stable", direction="ascend-gain"),
], ids=["authors", "exact-law-ascend"])
def test_rtopkf_authors_options_equal_the_reference(surrogate, options):
    if surrogate != "smoothdcg" and "direction" in options:
        options = {k: v for k, v in options.items() if k != "direction"}

    def make():
        return make_learner("rtopkf", 6, "reverse-input", rng=np.random.default_rng(3), surrogate=surrogate,
                            epsilon=0.5, **AUTHORS_SCHEDULE, **options)

    _run_pair(make)
    _run_pair(make, dtype=np.float32, tol=1e-9)


def test_rtopkf_skips_short_lists_without_a_draw():
    settings = {"surrogate": "squared", "schedule": "authors-code", "eta_scale": 0.1, "gamma_scale": 0.9}
    learner = make_learner("rtopkf", 2, short_lists="skip", **settings)
    state = learner.rng.bit_generator.state
    X, y = np.array([[1.0, 2.0]]), np.array([3.0])
    shown = learner.rank(X, np.random.default_rng(1))
    info = learner.update(X, reveal(learner, shown, y))
    assert shown.tolist() == [0] and not info.updated and learner.t == 1
    assert learner.rng.bit_generator.state == state and not learner.w.any()
    learner = make_learner("rtopkf", 2, **settings)
    learner.update(X, reveal(learner, learner.rank(X, np.random.default_rng(1)), y))
    assert learner.w.any()  # "learn": a one-document list moves the squared loss


@pytest.mark.parametrize("surrogate", ["smoothdcg", "listnet", "kl"])
def test_one_round_of_the_sharp_surrogates(surrogate):
    rng = np.random.default_rng(4)
    for _ in range(100):
        X, y = rng.normal(size=(12, 5)), rng.integers(0, 5, 12).astype(float)
        w = rng.normal(size=5)
        if surrogate == "smoothdcg":
            a, b = (make_learner("rtopkf", 5, rng=np.random.default_rng(3), surrogate=surrogate, radius=None,
                                 epsilon=0.01, **AUTHORS_SCHEDULE) for _ in range(2))
        else:
            a, b = (make_learner("ogd", 5, surrogate=surrogate, step={"rule": "constant", "eta": 0.1})
                    for _ in range(2))
        b.use_kernels = False
        a.w, b.w = w.copy(), w.copy()
        ra, rb = a.rank(X, np.random.default_rng(0)), b.rank(X, np.random.default_rng(0))
        np.testing.assert_array_equal(ra, rb)
        a.update(X, reveal(a, ra, y))
        b.update(X, reveal(b, rb, y))
        np.testing.assert_allclose(a.w, b.w, rtol=TOL, atol=TOL)


def test_update_without_rank_and_weights_are_replaced_not_modified():
    rng = np.random.default_rng(5)
    X, y = rng.normal(size=(9, 4)), rng.integers(0, 3, 9).astype(float)
    a, b = make_learner("slam-perceptron", 4), make_learner("slam-perceptron", 4)
    b.use_kernels = False
    a.w = b.w = shared = rng.normal(size=4)
    ranking = np.arange(9)  # not the learner's ranking, no rank() call: scores computed in update
    ia, ib = a.update(X, Feedback(ranking, y)), b.update(X, Feedback(ranking, y))
    assert ia == ib and ia.updated
    np.testing.assert_array_equal(a.w, b.w)
    assert a.w is not shared and b.w is not shared


def test_pickled_learners_resume_identically_and_drop_the_round_cache():
    def play(learner, stream):
        rng = np.random.default_rng(1)
        for X, y in stream:
            learner.update(X, reveal(learner, learner.rank(X, rng), y))
        return learner

    for make in (lambda: make_learner("slam-perceptron", 6, measure="ndcg@10", weights="level-averaged"),
                 lambda: make_learner("listnet", 6),
                 lambda: make_learner("rtopkf", 6, rng=np.random.default_rng(3), surrogate="ranksvm",
                                      schedule="authors-code")):
        stream = list(_stream(7, 120, 6))
        whole = play(make(), stream)
        first = play(make(), stream[:60])
        assert first._seen is not None  # the last round's cache, to be dropped
        blob = pickle.dumps(first)
        assert b"_sbuf" not in blob and b"_seen" not in blob
        resumed = play(pickle.loads(blob), stream[60:])
        np.testing.assert_array_equal(resumed.w, whole.w)


def test_run_online_equals_the_reference_protocol(monkeypatch):
    queries = [Query(str(i), X, y) for i, (X, y) in enumerate(_stream(8, 150, 5))]
    measures = [Measure("ndcg@10"), Measure("ap", "skip"), Measure("ndcg", "one"), Measure("p@5")]

    def run():
        learner = make_learner("slam-perceptron", 5, measure="ap")
        return run_online(iter([(1, q) for q in queries]), learner, measures, np.random.default_rng(0),
                          quiet=True).rounds

    fast = run()
    monkeypatch.setattr(kernels, "ENABLED", False)
    ref = run()
    for col in ("ndcg@10", "ap", "ndcg", "p@5", "ranking_loss"):
        np.testing.assert_allclose(fast[col], ref[col], rtol=TOL, atol=TOL)
    for col in ("mistake", "updated", "no_relevant", "m"):
        assert fast[col].tolist() == ref[col].tolist()


def test_cli_start_up_does_not_import_numba():
    code = "import sys, ltr_cli.cli.app, ltr_cli.learners, ltr_cli.runs.runner; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
