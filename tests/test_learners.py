"""Learner behaviour: mistake conditions, steps, projection, random ranker, failures."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_cli.errors import LtrError
from ltr_cli.learners.online.base import Feedback, RankingMeasure, parse_measure
from ltr_cli.learners.online.ogd import RandomRanker, project_to_ball
from ltr_cli.learners.online.schedules import StepSchedule
from tests.conftest import make_learner


def one_round(learner, X, y, rng=None):
    rng = rng or np.random.default_rng(0)
    ranking = learner.rank(X, rng)
    return ranking, learner.update(X, Feedback(ranking=ranking, labels=y))


def test_slam_ap_updates_only_on_ap_mistakes():
    # labels 2 and 1 are both "relevant" for AP: ranking 1 above 2 is not an AP mistake
    X = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0]])
    y = np.array([2.0, 1.0, 0.0])
    learner = make_learner("slam-perceptron", 2, measure="ap")
    learner.w = np.array([1.0, 0.0])  # ranks doc 1 (label 1) first, then doc 0, then doc 2
    _, info = one_round(learner, X, y)
    assert not info.mistake and info.ranking_loss == 0.0
    ndcg_learner = make_learner("slam-perceptron", 2, measure="ndcg")
    ndcg_learner.w = np.array([1.0, 0.0])
    _, info = one_round(ndcg_learner, X, y)
    assert info.mistake and info.updated and info.ranking_loss > 0


def test_mistake_measure_can_differ_from_weights():
    X = np.eye(12)
    y = np.zeros(12)
    y[11] = 1.0  # the only relevant document is last in file order
    learner = make_learner("slam-perceptron", 12, measure="ndcg", mistake="ndcg@10")
    _, info = one_round(learner, X, y)  # w = 0: input-order ties put doc 11 at position 12
    assert info.mistake and info.ranking_loss == 1.0  # NDCG@10 = 0


def test_step_schedules():
    assert StepSchedule("constant", 0.5)(9) == 0.5
    assert StepSchedule("inv-sqrt", 2.0)(4) == 1.0
    assert StepSchedule("inv-sqrt", 1.0, loss_scaled=True)(4, 0.3) == pytest.approx(0.15)
    with pytest.raises(ValueError):
        StepSchedule("cosine")(1)


def test_alg3_loss_scaled_step_moves_w_by_loss_times_gradient():
    X = np.array([[0.0, 1.0], [1.0, 0.0]])
    y = np.array([1.0, 0.0])
    learner = make_learner("alg3", 2, step={"rule": "constant", "eta": 1.0, "loss_scaled": True}, mistake="ndcg")
    learner.w = np.array([1.0, 0.0])  # doc 1 (irrelevant) on top
    _, info = one_round(learner, X, y)
    loss = info.ranking_loss
    assert loss == pytest.approx(1 - 1 / np.log2(3))
    # grad_s = e_j* - e_i* with i* = 0 (relevant), j* = 1; w -= loss * X^T grad_s
    np.testing.assert_allclose(learner.w, np.array([1.0, 0.0]) - loss * (X[1] - X[0]))


def test_projection_keeps_w_in_the_ball():
    rng = np.random.default_rng(1)
    learner = make_learner("ogd", 5, surrogate="squared", step={"rule": "constant", "eta": 10.0}, radius=1.0)
    for _ in range(20):
        X = rng.normal(size=(6, 5))
        one_round(learner, X, rng.integers(0, 3, 6).astype(float))
        assert np.linalg.norm(learner.w) <= 1.0 + 1e-12
    w = np.array([3.0, 4.0])
    np.testing.assert_allclose(project_to_ball(w, 1.0), [0.6, 0.8])
    assert project_to_ball(w, None) is w


def test_kl_is_guarded_and_non_finite_steps_are_errors():
    learner = make_learner("ogd", 1, surrogate="kl", step={"rule": "constant", "eta": 1.0}, radius=1.0)
    learner.w = np.array([1000.0])  # scores 1000, 2000: exp is capped, the step is finite
    one_round(learner, np.array([[1.0], [2.0]]), np.array([1.0, 0.0]))
    assert np.all(np.isfinite(learner.w))
    learner.w = np.array([10.0])
    with pytest.raises(LtrError, match="not finite"):  # 1e308 * exp(50) overflows: reported
        one_round(learner, np.array([[1e308], [1e308]]), np.array([1.0, 0.0]))


def test_random_ranker_uses_its_own_stream():
    X = np.zeros((8, 2))
    a = RandomRanker(2, np.random.default_rng(3))
    b = RandomRanker(2, np.random.default_rng(3))
    shared = np.random.default_rng(99)
    ra = [a.rank(X, shared).tolist() for _ in range(5)]
    rb = [b.rank(X, np.random.default_rng(0)).tolist() for _ in range(5)]
    assert ra == rb and len({tuple(r) for r in ra}) > 1
    assert sorted(ra[0]) == list(range(8))


def test_measure_names():
    assert parse_measure("ndcg@10") == "ndcg@10" and RankingMeasure("ndcg@10").k == 10
    for bad in ("ap@3", "ndcg@0", "map", "ndcg@"):
        with pytest.raises(ValueError):
            parse_measure(bad)


def test_a_learner_failing_at_seed_0_stops_no_other_seed(tmp_path):
    """Seeds 0, 1, 2 of a diverging learner beside a sound one: every seed of the sound one
    is written (once only seed 0's), one line names the failed runs, exit 1 at the end."""
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app
    from ltr_cli.results.folders import find_runs

    cfg = tmp_path / "c.yaml"
    cfg.write_text("""
experiment: seeds
seeds: [0, 1, 2]
dataset: {kind: separable, queries: 30}
protocol: {max_rounds: 60}
metrics: {names: [ndcg@10]}
learners:
  diverging: {type: listnet, step: {rule: constant, eta: 1.0e+308}}
  slam: {type: slam-perceptron}
""")
    res = CliRunner().invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 1
    errors = [line for line in res.stderr.splitlines() if line.startswith("ltr: error:")]
    assert len(errors) == 1 and errors[0].startswith("ltr: error: diverging (seed 0): round 1")
    assert "(2 more runs failed: diverging (seed 1), diverging (seed 2))" in errors[0]
    written = sorted(path.name.rsplit("-", 1)[0] for path in find_runs([tmp_path / "out"]))
    assert written == ["slam-seed0", "slam-seed1", "slam-seed2"]


def test_divergence_is_reported_at_its_round_not_plotted(tmp_path):
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    cfg = tmp_path / "c.yaml"
    cfg.write_text("""
experiment: diverge
dataset: {kind: shaped, like: mslr-web10k, queries: 30, docs_per_query: 5}
learners: {sq: {type: ogd, surrogate: squared, step: {rule: constant, eta: 1.0e+150}}}
""")
    res = CliRunner().invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out")])
    assert res.exit_code == 1
    err = res.stderr.strip().splitlines()[-1]
    assert err.startswith("ltr: error: round ") and ("NaN or infinite" in err or "not finite" in err)
    assert not (tmp_path / "out" / "diverge").exists() or not any((tmp_path / "out" / "diverge").iterdir())
