"""The batch learners' fast paths pinned to their references: each compiled or vectorised
path gives the straightforward implementation's results (to the last bit where the
arithmetic is the same, else within the solver's stated tolerance)."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_cli import kernels
from ltr_cli.learners.batch.boosting import adarank_reference, fit_adarank, fit_rankboost, rankboost_reference
from ltr_cli.learners.batch.coordinate_ascent import Lists, fit_coordinate_ascent
from ltr_cli.learners.batch.lambdamart import fit_lambdamart


def _letor_like(seed: int, queries: int = 12, d: int = 6, docs: int = 60, relevant: float = 0.1,
                levels: int = 2) -> list[tuple[np.ndarray, np.ndarray]]:
    """Queries of varied length with a few relevant documents, 6-decimal features (ties
    happen) and, in some queries, a constant feature."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(queries):
        m = int(rng.integers(2, docs))
        y = (rng.random(m) < relevant).astype(float) * rng.integers(1, levels, size=m)
        X = np.round(rng.random((m, d)) + 0.5 * np.outer(y, rng.standard_normal(d)), 6 if q % 3 else 1)
        if q % 4 == 0:
            X[:, 2] = 0.25
        out.append((X, y))
    return out


@pytest.mark.parametrize("measure", ["map", "ndcg@3", "ndcg"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_line_search_equals_the_numpy_sort_bit_for_bit(measure, seed):
    train = _letor_like(seed, levels=3)
    fast, ref = Lists(train, measure, compiled=True), Lists(train, measure, compiled=False)
    w = np.random.default_rng(seed).normal(size=6)
    S = fast.scores(w)
    assert all(np.array_equal(a, b) for a, b in zip(S, ref.scores(w)))  # summed in feature order
    v = fast.values(S)
    assert np.array_equal(v, ref.values(S))
    for j in range(6):
        for orig, direction in ((w[j], 1), (w[j], -1), (0.0, 1)):
            steps = 0.001 * direction * np.cumsum(2.0 ** np.arange(25)) if orig == 0 else \
                np.array([-orig, 0.05 * orig, 1e-9])
            assert np.array_equal(fast.along(S, v, j, steps), ref.along(S, v, j, steps))


def test_sparse_pairwise_sum_is_numpys_sum_of_the_row():
    from ltr_cli.kernels.pairwise import sparse_pairwise_sum

    rng = np.random.default_rng(0)
    for n in (1, 7, 8, 9, 16, 127, 128, 129, 256, 300, 1000, 1024, 2500):
        for _ in range(40):
            k = int(rng.integers(0, min(n, 40) + 1))
            pos = np.sort(rng.choice(n, k, replace=False)).astype(np.int64)
            val = rng.random(k) * 10.0 ** rng.integers(-8, 3, k)
            row = np.zeros(n)
            row[pos] = val
            assert sparse_pairwise_sum(pos, val, k, n) == row.sum()


def test_coordinate_ascent_does_not_repeat_a_failed_search(monkeypatch):
    """A feature whose search failed is skipped until a step is accepted: the same model
    and trace as running every search, with fewer searches."""
    from ltr_cli.learners.batch import coordinate_ascent as ca

    train = _letor_like(4, queries=10, d=5)
    calls = []
    along = ca.Lists.along
    monkeypatch.setattr(ca.Lists, "along", lambda self, *a: calls.append(1) or along(self, *a))
    skipping = fit_coordinate_ascent(train, "map", restarts=2, iterations=25)
    skipped = len(calls)
    calls.clear()
    monkeypatch.setattr(ca, "SKIP_REPEATS", False)
    every = fit_coordinate_ascent(train, "map", restarts=2, iterations=25)
    assert np.array_equal(skipping.w, every.w) and skipping.info == every.info
    assert skipped < len(calls)


@pytest.mark.parametrize("measure", ["map", "ndcg@10"])
def test_coordinate_ascent_compiled_fit_is_the_reference_fit(measure, monkeypatch):
    train = _letor_like(7, queries=10, d=5)
    fast = fit_coordinate_ascent(train, measure, restarts=2, iterations=25)
    monkeypatch.setattr(kernels, "ENABLED", False)
    ref = fit_coordinate_ascent(train, measure, restarts=2, iterations=25)
    assert np.array_equal(fast.w, ref.w)
    assert fast.info == ref.info


def _same_stumps(a, b) -> None:
    assert (a.features, a.thresholds, a.alphas, a.info) == (b.features, b.thresholds, b.alphas, b.info)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_rankboost_compiled_search_is_the_reference_bit_for_bit(seed):
    train = _letor_like(seed, levels=3, relevant=0.3)
    _same_stumps(fit_rankboost(train, rounds=40), rankboost_reference(train, rounds=40))


def test_rankboost_grid_continues_from_the_previous_point():
    train = _letor_like(3, levels=3, relevant=0.3)
    warm = None
    for rounds in (5, 20, 60, 10):  # longer fits continue; a shorter one takes the first rounds
        model = fit_rankboost(train, rounds, warm)
        _same_stumps(model, rankboost_reference(train, rounds))
        warm = model
    other = [(X.copy(), y) for X, y in train]  # other queries: no continuation, a fit of its own
    _same_stumps(fit_rankboost(other, 30, warm), rankboost_reference(other, 30))


def test_rankboost_that_stops_early_stays_stopped():
    train = [(np.array([[0.9], [0.2], [0.5]]), np.array([1.0, 0.0, 0.0]))]  # one perfect stump
    first = fit_rankboost(train, 5)
    assert first.info["rounds"] == 1 and first.alphas == [10.0]
    _same_stumps(fit_rankboost(train, 50, first), rankboost_reference(train, 50))


def _same_linear(a, b) -> None:
    assert np.array_equal(a.w, b.w) and a.info == b.info


@pytest.mark.parametrize("measure,tol", [("map", None), ("map", 0.002), ("ndcg@5", None)])
def test_adarank_grid_continues_from_the_previous_point(measure, tol):
    train = _letor_like(5, queries=10, d=5, levels=3, relevant=0.3)
    warm = None
    for rounds in (3, 10, 40, 7, 40):
        model = fit_adarank(train, measure, rounds, tol, warm=warm)
        _same_linear(model, adarank_reference(train, measure, rounds, tol))
        warm = model
    # other settings or other queries: a fit of its own
    _same_linear(fit_adarank(train, measure, 20, tol, max_consecutive=2, warm=warm),
                 adarank_reference(train, measure, 20, tol, max_consecutive=2))
    other = [(X.copy(), y) for X, y in train]
    _same_linear(fit_adarank(other, measure, 20, tol, warm=warm), adarank_reference(other, measure, 20, tol))


def test_adarank_continues_past_features_set_aside():
    q = [(np.array([[3.0, 0.0], [2.0, 3.0], [1.0, 2.0], [0.0, 1.0]]), np.array([1.0, 0.0, 1.0, 0.0]))]
    warm = fit_adarank(q, "map", rounds=4)
    _same_linear(fit_adarank(q, "map", rounds=12, warm=warm), adarank_reference(q, "map", rounds=12))


def test_compiled_tree_walk_scores_as_the_numpy_walk_and_lightgbm(monkeypatch):
    pytest.importorskip("lightgbm")
    train = _letor_like(11, queries=20, d=5, docs=80, levels=3, relevant=0.3)
    model = fit_lambdamart(train, num_leaves=7, rounds=30, min_data_in_leaf=5)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 5))
    X[rng.random(X.shape) < 0.1] = np.nan
    X[rng.random(X.shape) < 0.1] = 0.0
    X[rng.random(X.shape) < 0.05] = 1e-36
    fast = model.scores(X)
    monkeypatch.setattr(kernels, "ENABLED", False)
    assert np.array_equal(fast, model.scores(X))


def test_lambdamart_grid_continues_the_same_settings_byte_for_byte():
    lgb = pytest.importorskip("lightgbm")
    train = _letor_like(12, queries=20, d=5, docs=80, levels=3, relevant=0.3)
    first = fit_lambdamart(train, num_leaves=7, rounds=10, min_data_in_leaf=5)
    longer = fit_lambdamart(train, num_leaves=7, rounds=25, min_data_in_leaf=5, warm=first)
    fresh = fit_lambdamart(train, num_leaves=7, rounds=25, min_data_in_leaf=5)
    assert longer.text == fresh.text
    # lightgbm.train, as the fit ran before, writes the very same text
    X = np.vstack([x for x, _ in train])
    g = np.concatenate([y for _, y in train]).astype(int)
    params = {"objective": "lambdarank", "num_leaves": 7, "learning_rate": 0.1, "min_data_in_leaf": 5,
              "label_gain": [0.0, 1.0, 3.0], "seed": 0, "deterministic": True, "force_row_wise": True,
              "num_threads": 1, "verbosity": -1, "feature_pre_filter": False}
    data = lgb.Dataset(X, label=g, group=[x.shape[0] for x, _ in train], params=params)
    assert lgb.train(params, data, num_boost_round=25).model_to_string(num_iteration=-1) == fresh.text
    # other settings, or a booster already continued: a fit of its own
    other = fit_lambdamart(train, num_leaves=7, learning_rate=0.05, rounds=30, min_data_in_leaf=5, warm=longer)
    assert other.text == fit_lambdamart(train, num_leaves=7, learning_rate=0.05, rounds=30, min_data_in_leaf=5).text
    again = fit_lambdamart(train, num_leaves=7, rounds=40, min_data_in_leaf=5, warm=first)
    assert again.text == fit_lambdamart(train, num_leaves=7, rounds=40, min_data_in_leaf=5).text


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_svmmap_compiled_risk_is_the_reference_risk_bit_for_bit(seed):
    from ltr_cli.learners.batch.losses import APHinge, ap_structural_hinge, mean_risk

    train = _letor_like(seed, queries=15, docs=120, relevant=0.2, levels=3)
    fast, ref = APHinge(0.0).mean_risk(train), mean_risk(train, ap_structural_hinge)
    rng = np.random.default_rng(seed)
    for w in (np.zeros(6), rng.normal(size=6), np.round(rng.normal(size=6), 1), 1e-3 * rng.normal(size=6)):
        (a, ga), (b, gb) = fast(w), ref(w)
        assert a == b and np.array_equal(ga, gb)


def test_svmmap_compiled_fit_is_the_reference_fit():
    from ltr_cli.learners.batch.bmrm import fit_bmrm
    from ltr_cli.learners.batch.losses import ap_structural_hinge
    from ltr_cli.learners.batch.structural import fit_svmmap

    train = _letor_like(9, queries=15, docs=120, relevant=0.2)
    for C in (0.1, 10.0, 1000.0):  # the same solver on the per-query reference loss
        model = fit_svmmap(train, C, feature_scale="none")
        ref = fit_bmrm(train, lambda X, y, w: ap_structural_hinge(X, y, w), C, 1e-3, 1000, None)
        assert np.array_equal(model.w, ref.w)
        assert model.info["iterations"] == ref.info["iterations"]


def test_lambdamart_stops_when_lightgbm_can_split_no_more(monkeypatch):
    """Three queries of five documents and 20 documents per leaf: no tree can split, so
    LightGBM keeps one single-leaf tree, and each update after the first reports it finished
    and drops its tree. A fit counted trees, not updates, and never ended; here the updates
    are counted and capped, so a relapse fails instead of hanging."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(0)
    train = [(rng.normal(size=(5, 3)), np.array([2.0, 1.0, 0.0, 0.0, 1.0])) for _ in range(3)]
    calls = []
    update = lgb.Booster.update

    def counted(self, *args, **kwargs):
        calls.append(1)
        if len(calls) > 1000:
            raise AssertionError("Booster.update called over 1000 times")
        return update(self, *args, **kwargs)

    monkeypatch.setattr(lgb.Booster, "update", counted)
    first = fit_lambdamart(train, num_leaves=7, learning_rate=0.05, rounds=100, min_data_in_leaf=20)
    assert len(calls) == 1 and len(first.trees) == 1 and first.info["trees"] == 1
    longer = fit_lambdamart(train, num_leaves=7, learning_rate=0.05, rounds=300, min_data_in_leaf=20, warm=first)
    assert len(calls) == 1  # finished stays finished: nothing left to run
    calls.clear()
    fresh = fit_lambdamart(train, num_leaves=7, learning_rate=0.05, rounds=300, min_data_in_leaf=20)
    assert len(calls) == 1 and longer.text == fresh.text
    # lightgbm.train runs all its updates (each a no-op after the first) to the same text
    X = np.vstack([x for x, _ in train])
    g = np.concatenate([y for _, y in train]).astype(int)
    params = {"objective": "lambdarank", "num_leaves": 7, "learning_rate": 0.05, "min_data_in_leaf": 20,
              "label_gain": [0.0, 1.0, 3.0], "seed": 0, "deterministic": True, "force_row_wise": True,
              "num_threads": 1, "verbosity": -1, "feature_pre_filter": False}
    data = lgb.Dataset(X, label=g, group=[5, 5, 5], params=params)
    calls.clear()
    assert lgb.train(params, data, num_boost_round=300).model_to_string(num_iteration=-1) == fresh.text
    assert len(calls) == 300
    assert np.array_equal(fresh.scores(X), np.zeros(15) + fresh.scores(X)[0])


def test_lambdamart_refuses_a_model_it_does_not_score_as_lightgbm(monkeypatch):
    pytest.importorskip("lightgbm")
    from ltr_cli.errors import LtrError
    from ltr_cli.results.gbdt import LightGBMModel

    train = _letor_like(13, queries=20, d=5, docs=80, levels=3, relevant=0.3)
    scores = LightGBMModel.scores
    monkeypatch.setattr(LightGBMModel, "scores", lambda self, X: scores(self, X) + 1e-12)
    with pytest.raises(LtrError, match="does not reproduce exactly"):
        fit_lambdamart(train, num_leaves=7, rounds=5, min_data_in_leaf=5)
