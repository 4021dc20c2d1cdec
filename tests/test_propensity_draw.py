"""clicks.propensity_draw: IPS propensities drawn from their estimate's error, one draw per
log and fold, so that results repeated over logs count the estimate's error."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ltr_cli.clicklog.propensity_draw import draw_propensity
from ltr_cli.clicklog.signal import ClickSignal
from ltr_cli.errors import LtrError
from ltr_cli.learners.batch.click_data import fold_clicks


def test_a_draw_has_the_estimate_mean_and_standard_error():
    p = np.array([1.0, 0.8, 0.5, 0.2])
    se = np.array([0.0, 0.02, 0.05, 0.01])
    draws = np.array([draw_propensity(p, se, seed, 1, "x") for seed in range(4000)])
    assert np.all(draws[:, 0] == 1.0) and np.all(draws > 0)
    assert draws.mean(axis=0) == pytest.approx(p, abs=4 * se.max() / np.sqrt(4000) + 1e-3)
    assert draws.std(axis=0)[1:] == pytest.approx(se[1:], rel=0.1)
    assert np.array_equal(draw_propensity(p, se, 3, 1, "x"), draw_propensity(p, se, 3, 1, "x"))
    assert not np.array_equal(draw_propensity(p, se, 3, 1, "x"), draw_propensity(p, se, 3, 2, "x"))


def _train(seed=0, queries=30):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(12, 3)), rng.integers(0, 5, 12)) for _ in range(queries)], \
        [f"q{i}" for i in range(queries)]


def test_each_simulated_log_estimates_its_own_propensities_and_needs_no_draw():
    """With clicks.generate and propensity: estimated, the logs of other seeds estimate
    other propensities (the estimate's error is in the log-to-log spread already), and a
    draw on top is refused."""
    train, ids = _train()
    spec = {"generate": {"model": "ultra-pbm", "sessions": 4000, "seed": 0}, "propensity": "estimated",
            "clip": None}
    a = fold_clicks(ClickSignal.model_validate(spec), train, ids, 1)
    b = fold_clicks(ClickSignal.model_validate({**spec, "generate": {**spec["generate"], "seed": 1}}), train, ids, 1)
    se = np.array(a.meta["estimated_from"]["stderr"])
    gap = np.abs(np.array(a.meta["propensity"]) - np.array(b.meta["propensity"]))[1:]
    assert np.all(gap > 0) and np.all(gap < 6 * np.sqrt(2) * se[1:])
    with pytest.raises(ValueError, match="each simulated log already estimates its own propensities"):
        ClickSignal.model_validate({**spec, "propensity_draw": True})


def test_the_estimate_of_a_read_log_is_drawn_per_fold_and_recorded(tmp_path):
    from ltr_cli.clicklog.logfile import write_log

    train, ids = _train()
    sig = ClickSignal.model_validate({"generate": {"model": "ultra-pbm", "sessions": 6000, "policy": "shuffle"},
                                      "correction": "naive"})
    logged = fold_clicks(sig, train, ids, 1)
    for fold in (1, 2):  # the same sessions as both folds' logs: only the draw's seed differs
        write_log(tmp_path / f"fold{fold}.parquet", logged.sessions, ids,
                  {k: v for k, v in logged.meta.items() if k != "fingerprint"})
    spec = {"log": str(tmp_path), "propensity": "estimated", "clip": None}
    plain = fold_clicks(ClickSignal.model_validate(spec), train, ids, 1)
    drawn = fold_clicks(ClickSignal.model_validate({**spec, "propensity_draw": True}), train, ids, 1)
    assert "propensity_drawn" not in plain.meta
    p, q = np.array(drawn.meta["propensity"]), np.array(drawn.meta["propensity_drawn"])
    assert np.array_equal(p, plain.meta["propensity"]) and q[0] == 1.0 and not np.allclose(p, q)
    assert np.allclose(drawn.weights, 1.0 / q)
    again = fold_clicks(ClickSignal.model_validate({**spec, "propensity_draw": True}), train, ids, 1)
    assert np.array_equal(again.weights, drawn.weights)
    other = fold_clicks(ClickSignal.model_validate({**spec, "propensity_draw": True}), train, ids, 2)
    assert not np.allclose(other.meta["propensity_drawn"], q)


def test_a_file_propensity_draws_from_its_stderr_and_refuses_without_one(tmp_path):
    train, ids = _train()
    path = tmp_path / "p.json"
    p = [1.0, 0.9, 0.7, 0.5, 0.4, 0.3, 0.16, 0.15, 0.12, 0.09]
    path.write_text(json.dumps({"propensity": p, "stderr": [0.0] + [0.01] * 9}))
    sig = ClickSignal.model_validate({"generate": {"model": "ultra-pbm", "sessions": 300}, "propensity": str(path),
                                      "clip": None, "propensity_draw": True})
    data = fold_clicks(sig, train, ids, 1)
    assert not np.allclose(data.meta["propensity_drawn"], p)
    path.write_text(json.dumps({"propensity": p}))
    with pytest.raises(LtrError, match="propensity_draw needs a standard error for each of the 10 positions"):
        fold_clicks(sig, train, ids, 1)
    path.write_text(json.dumps({"propensity": p, "stderr": [0.0, None] + [0.01] * 8}))
    with pytest.raises(LtrError, match="position 2 has no standard error"):
        fold_clicks(sig, train, ids, 1)


def test_true_propensities_have_nothing_to_draw():
    with pytest.raises(ValueError, match="propensity_draw: true propensities have no error"):
        ClickSignal.model_validate({"generate": {"model": "ultra-pbm"}, "propensity": True, "propensity_draw": True})
