"""Batch learners against the reference's worked examples, and on generated LETOR-like data."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_cli.learners.batch.boosting import fit_adarank, fit_rankboost
from ltr_cli.learners.batch.permurank import fit_permurank
from ltr_cli.learners.batch.permurank_cuts import fit_permurank_max_violation
from ltr_cli.learners.batch.permutations import Levels, highest_imperfect, lowest_perfect, permutation_features
from ltr_cli.learners.batch.ranksvm import fit_ranksvm
from ltr_cli.learners.batch.structural import fit_bmrm_ndcg, fit_bmrm_surrogate, fit_svmmap
from ltr_cli.measures.metrics import average_precision, ndcg_at_k
from ltr_cli.learners.batch.qp import solve_dual_qp

ADA = [(np.array([[3.0, 1.0], [2.0, 3.0], [1.0, 2.0]]), np.array([1.0, 0.0, 0.0])),
       (np.array([[1.0, 3.0], [2.0, 1.0]]), np.array([1.0, 0.0]))]


def test_adarank_worked_example():
    model = fit_adarank(ADA, "map", rounds=3, tol=None)
    trace = model.info["trace"]
    assert [t["feature"] for t in trace] == [0, 1, 0]
    assert trace[0]["alpha"] == pytest.approx(0.5 * np.log(7))
    assert trace[1]["alpha"] == pytest.approx(0.969095, abs=1e-6)
    assert trace[2]["alpha"] == pytest.approx(1.130615, abs=1e-6)
    assert [t["mean"] for t in trace] == pytest.approx([0.75, 0.75, 0.75])
    assert model.info["selected_features"] == [0, 1, 0]
    assert model.w.tolist() == pytest.approx([0.972955 + 1.130615, 0.969095], abs=1e-6)  # f_T, the last round
    # RankLib's rule stops on a fall of more than tol, not on a flat mean: all three rounds run
    flat = fit_adarank(ADA, "map", rounds=3, tol=0.002)
    assert flat.info["selected_features"] == [0, 1, 0] and flat.w.tolist() == pytest.approx(model.w.tolist())


def test_adarank_sets_aside_a_feature_that_changes_nothing():
    """One query: every round picks the feature with the best single-feature AP, and adding
    more of it changes no ranking, so the query weights never change. After five such
    choices in a row the feature leaves the pool and the next feature gets its turn."""
    q = [(np.array([[3.0, 0.0], [2.0, 3.0], [1.0, 2.0], [0.0, 1.0]]), np.array([1.0, 0.0, 1.0, 0.0]))]
    model = fit_adarank(q, "map", rounds=8, tol=None)
    chosen = model.info["selected_features"]
    assert chosen[:5] == [0] * 5 and chosen[5] == 1
    capped = fit_adarank(q, "map", rounds=8, tol=None, max_consecutive=2)
    assert capped.info["selected_features"][:3] == [0, 0, 1]


def test_adarank_stops_when_the_training_measure_falls():
    rng = np.random.default_rng(3)
    queries = [(rng.normal(size=(8, 6)), rng.integers(0, 2, size=8).astype(float)) for _ in range(12)]
    full = fit_adarank(queries, "map", rounds=40, tol=None)
    means = [t["mean"] for t in full.info["trace"]]
    falls = [i for i in range(1, len(means)) if means[i] < means[i - 1] - 0.002]
    assert falls, "the example needs a round whose training MAP falls"
    stopped = fit_adarank(queries, "map", rounds=40, tol=0.002)
    assert stopped.info["rounds"] == falls[0]  # the falling round is undone
    assert stopped.info["selected_features"] == full.info["selected_features"][:falls[0]]


def test_rankboost_worked_examples():
    b1 = [(np.array([[0.9], [0.2], [0.5]]), np.array([2.0, 1.0, 0.0]))]
    m = fit_rankboost(b1, rounds=2)
    assert m.thresholds == pytest.approx([0.7, 0.7])
    assert m.alphas == pytest.approx([0.5 * np.log(5), 0.512815], abs=1e-6)
    b2 = [(np.array([[3.0, 1.0], [1.0, 2.0], [2.0, 0.0]]), np.array([2.0, 1.0, 0.0])),
          (np.array([[0.0, 2.0], [1.0, 0.5]]), np.array([1.0, 0.0]))]
    m = fit_rankboost(b2, rounds=2)
    assert m.features == [1, 0] and m.thresholds == pytest.approx([0.75, 2.5])
    assert m.alphas == pytest.approx([0.5 * np.log(7), 0.767977], abs=1e-6)


def test_permurank_oracles_and_one_cut_qp():
    """BATCH-REFERENCE's P1 / P2 (NDCG over the whole list); its Phi is twice Eq. 2's, so
    F and the F differences here are half its values."""
    y = np.array([2.0, 1.0, 1.0, 0.0])
    f = np.array([0.3, 0.9, 0.1, 0.5])
    X = f[:, None]
    lv = Levels.of(y, "ndcg")
    star, bad = lowest_perfect(f, lv), highest_imperfect(f, lv)
    assert star.tolist() == [0, 2, 1, 3] and bad is not None and bad.tolist() == [1, 3, 0, 2]
    F_star, F_bad = permutation_features(X, star)[0], permutation_features(X, bad)[0]
    assert F_star == pytest.approx(-0.233333 / 2, abs=1e-6) and F_bad == pytest.approx(0.433333 / 2, abs=1e-6)
    E = ndcg_at_k(bad, y)
    assert E == pytest.approx(0.709447, abs=1e-6)
    assert (1 - E) * (1 - 2 * (F_star - F_bad)) == pytest.approx(0.484255, abs=1e-6)
    y2, f2 = np.array([2.0, 1.0, 0.0]), np.array([3.0, 2.0, 0.5])
    lv2 = Levels.of(y2, "ndcg")
    assert lowest_perfect(f2, lv2).tolist() == [0, 1, 2] and highest_imperfect(f2, lv2).tolist() == [1, 0, 2]
    # the reference's one-cut QP, C = 1 (its Phi: Phi* - Phi = 2/3): w* = l (2/3) C
    ell = 1 - ndcg_at_k(np.array([1, 0, 2]), y2)
    g = np.array([ell * 2 / 3])
    a, dual = solve_dual_qp(np.array([[g @ g]]), np.array([ell]), "blocks", 1.0, blocks=np.array([0]))
    assert g[0] * a[0] == pytest.approx(0.135528, abs=1e-6) and dual == pytest.approx(0.194108, abs=1e-6)


def letor_like(seed=0, queries=12, docs=15, d=6):
    u = np.random.default_rng(99).normal(size=d)  # one true ranker for train and test
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(queries):
        X = rng.normal(size=(docs, d))
        s = X @ u + rng.normal(scale=0.7, size=docs)
        y = np.digitize(s, np.quantile(s, [0.6, 0.85])).astype(float)
        out.append((X, y))
    return out


@pytest.mark.parametrize("fit", [
    lambda q: fit_svmmap(q, C=1.0),
    lambda q: fit_ranksvm(q, C=1.0),
    lambda q: fit_bmrm_ndcg(q, C=1.0, k=10),
    lambda q: fit_adarank(q, "map", rounds=50),
    lambda q: fit_rankboost(q, rounds=50),
    lambda q: fit_permurank(q, C=1.0, measure="map", rounds=20),
    lambda q: fit_permurank_max_violation(q, C=1.0, measure="map", rounds=20),
    lambda q: fit_bmrm_surrogate(q, C=1.0, loss="ordinal"),
    lambda q: fit_bmrm_surrogate(q, C=1.0, loss="preference", cost="difference"),
], ids=["svmmap", "ranksvm", "bmrm-ndcg", "adarank", "rankboost", "permurank", "permurank-max-violation", "ordinal",
     "preference"])
def test_learners_beat_random_on_held_out_queries(fit):
    train, test = letor_like(0), letor_like(1)
    model = fit(train)
    rng = np.random.default_rng(5)
    learned = np.mean([average_precision(np.argsort(-model.scores(X), kind="stable"), y) for X, y in test])
    chance = np.mean([average_precision(rng.permutation(len(y)), y) for X, y in test for _ in range(20)])
    assert learned > chance + 0.15, (learned, chance)
