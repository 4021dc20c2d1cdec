"""Linear DLA: the propensities it learns with the ranker, and its refusals."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_cli.clicklog.signal import ClickSignal
from ltr_cli.learners.batch.click_data import fold_clicks
from ltr_cli.learners.batch.convergence import FitContext
from ltr_cli.learners.batch.dla import DLASpec, fit_dla
from ltr_cli.errors import LtrError

ULTRA_RELATIVE = [1, 0.897, 0.706, 0.500, 0.412, 0.294, 0.162, 0.147, 0.118, 0.088]


def _train(queries: int = 300, d: int = 20, seed: int = 0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    out = []
    for _ in range(queries):
        X = rng.normal(size=(40, d))
        out.append((X, np.digitize(X @ w + 0.5 * rng.normal(size=40), [1, 2.5, 3.5, 4.5])))
    return out, w


def test_dla_recovers_the_position_propensities_of_a_randomised_log():
    train, w_true = _train()
    signal = ClickSignal.model_validate({"generate": {"model": "ultra-pbm", "sessions": 30_000, "policy": "shuffle"},
                                         "correction": "naive"})
    data = fold_clicks(signal, train, [str(i) for i in range(len(train))], 1)
    w, info = fit_dla(train, data, 100.0, rounds=8)
    assert np.allclose(info["propensity"], ULTRA_RELATIVE, atol=0.03)
    assert np.corrcoef(w, w_true)[0, 1] > 0.95
    # the naive softmax ranker (propensities held equal) learns no propensity
    _, flat = fit_dla(train, data, 100.0, rounds=1)
    assert not np.allclose(flat["propensity"], info["propensity"], atol=1e-3)


def test_dla_needs_raw_clicks_and_a_click_log():
    with pytest.raises(ValueError, match="DLA learns the propensities from the raw clicks"):
        DLASpec.model_validate({"type": "dla", "clicks": {"generate": {}}})
    spec = DLASpec.model_validate({"type": "dla", "clicks": {"generate": {}, "correction": "naive"}})
    train, _ = _train(3)
    with pytest.raises(LtrError, match="dla trains on a click log"):
        spec.fit(train, {"C": 1.0}, FitContext())


def _randomised(queries: int = 300):
    train, w_true = _train(queries)
    signal = ClickSignal.model_validate({"generate": {"model": "ultra-pbm", "sessions": 30_000, "policy": "shuffle"},
                                         "correction": "naive"})
    return train, w_true, fold_clicks(signal, train, [str(i) for i in range(len(train))], 1)


def test_dla_with_a_linear_scorer_is_linear_dla():
    """The scorer path through JAX (float32 scores, the vector-Jacobian product) with a
    linear scorer: the same convex problem (a bias moves no softmax), so the same
    propensities and the same ranking as the linear DLA, to float32 precision."""
    pytest.importorskip("jax")
    train, _, data = _randomised(150)
    w, info = fit_dla(train, data, 100.0, rounds=4)
    spec = DLASpec.model_validate({"type": "dla", "rounds": 4, "scorer": {"kind": "linear"},
                                   "clicks": {"generate": {}, "correction": "naive"}})
    model = spec.fit(train, {"C": 100.0}, FitContext(clicks=data, seed=3))
    assert np.allclose(model.info["propensity"], info["propensity"], atol=2e-3)
    X = train[0][0]
    assert np.corrcoef(model.scores(X), X @ w)[0, 1] > 0.9999


def test_dla_with_an_mlp_recovers_the_propensities_and_reruns_identically():
    pytest.importorskip("jax")
    train, w_true, data = _randomised()
    spec = DLASpec.model_validate({"type": "dla", "rounds": 6, "scorer": {"kind": "mlp", "hidden": [16]},
                                   "clicks": {"generate": {}, "correction": "naive"}})
    model = spec.fit(train, {"C": 100.0}, FitContext(clicks=data, seed=0))
    assert np.allclose(model.info["propensity"], ULTRA_RELATIVE, atol=0.05)
    X = np.vstack([x for x, _ in train[:20]])
    assert np.corrcoef(model.scores(X), X @ w_true)[0, 1] > 0.8  # a nonlinear fit of a linear truth
    again = spec.fit(train, {"C": 100.0}, FitContext(clicks=data, seed=0))
    assert model.to_bytes() == again.to_bytes()


@pytest.mark.parametrize("scorer, message", [
    ({"kind": "attention"}, "scores each document from its own features"),
    ({"kind": "mlp", "dropout": 0.1}, "scorer.dropout is 0.1"),
    ({"kind": "nope"}, "unknown scorer kind 'nope'"),
])
def test_dla_refuses_a_scorer_it_cannot_drive(scorer, message):
    pytest.importorskip("jax")
    with pytest.raises(ValueError, match=message):
        DLASpec.model_validate({"type": "dla", "scorer": scorer, "clicks": {"generate": {}, "correction": "naive"}})


def test_dla_with_an_mlp_runs_under_cv_through_the_cli(tmp_path):
    """``type: dla`` with ``scorer: {kind: mlp}`` through ``ltr run``: the folds' models are
    neural model files beside ``models.json``, and ``ltr score`` scores with one."""
    pytest.importorskip("jax")
    import json

    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    runner = CliRunner()
    root = tmp_path / "d"
    res = runner.invoke(app, ["data", "synth", str(root), "--like", "mslr-web10k", "--folds", "--queries", "60",
                              "--docs-per-query", "20"])
    assert res.exit_code == 0, res.stderr
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""experiment: dnn
dataset: {{kind: registry, name: mslr-web10k, root: {root}, folds: [1, 2], normalize: zscore}}
cv: {{select_by: ndcg@10, convention: mslr}}
learners:
  dla-mlp:
    type: dla
    rounds: 2
    grid: {{C: [10.0]}}
    scorer: {{kind: mlp, hidden: [8]}}
    clicks: {{generate: {{model: ultra-pbm, sessions: 2000}}, correction: naive}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    (run,) = (tmp_path / "out" / "dnn").glob("dla-mlp-*")
    models = json.loads((run / "models.json").read_text())
    assert sorted(p.name for p in run.glob("neural-fold*.safetensors")) == ["neural-fold1.safetensors",
                                                                              "neural-fold2.safetensors"]
    assert all(m["kind"] == "neural" and len(m["info"]["propensity"]) == 10 for m in models.values())
    summary = json.loads((run / "summary.json").read_text())
    assert 0 < summary["metrics"]["ndcg@10"] <= 1
    scored = runner.invoke(app, ["score", str(run), str(root / "Fold1" / "test.txt"), "--fold", "1"])
    assert scored.exit_code == 0, scored.stderr
    assert len(scored.stdout.split()) == sum(1 for _ in open(root / "Fold1" / "test.txt"))
