"""DeepPDGD (``type: pdgd`` with a ``scorer:``): PDGD's step through a neural scorer (JAX).
Against linear PDGD with a linear scorer, rerun to the same bytes, checkpointed and
resumed, refused without JAX or with dropout, and run end to end by ``ltr run``."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

pytest.importorskip("jax")

from ltr_cli.cli.app import app  # noqa: E402
from ltr_cli.learners.examples import write_data  # noqa: E402
from ltr_cli.learners.online.base import Feedback  # noqa: E402
from ltr_cli.learners.online.deep_pdgd import DeepPDGDLearner  # noqa: E402
from ltr_cli.learners.online.pdgd import PDGDLearner, PDGDSpec  # noqa: E402
from ltr_cli.testing.online import run_killed, same_files  # noqa: E402

runner = CliRunner()
MLP = {"kind": "mlp", "hidden": [8], "activation": "sigmoid"}


def _rounds(n: int, d: int, seed: int, longest: int = 19) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n`` queries (rows (m, d)) with random clicks on their shown lists, each with a
    pair (a click and an unclicked document above the last click or just below it)."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        m = int(rng.integers(3, longest + 1))
        clicks = np.zeros(min(10, m))
        clicks[rng.choice(clicks.shape[0], size=int(rng.integers(1, clicks.shape[0])), replace=False)] = 1.0
        if clicks.all():
            clicks[0] = 0.0
        out.append((rng.normal(size=(m, d)), clicks))
    return out


@pytest.mark.parametrize("kernels_on", [True, False])
def test_a_linear_scorer_steps_exactly_as_linear_pdgd(kernels_on):
    """Same start, same shown lists, same clicks: DeepPDGD on ``scorer: {kind: linear}``
    moves its w as linear PDGD moves its weights (float32 tolerance), round after round;
    its bias, whose gradient is 0 for every pair, stays where it was."""
    d = 6
    linear = PDGDSpec(type="pdgd", learning_rate=0.3).build(d, "input-order", np.random.default_rng(0))
    deep = PDGDSpec(type="pdgd", learning_rate=0.3, scorer={"kind": "linear"}).build(
        d, "input-order", np.random.default_rng(0))
    assert isinstance(linear, PDGDLearner) and isinstance(deep, DeepPDGDLearner)
    linear.use_kernels = kernels_on
    w0 = np.random.default_rng(1).normal(size=d)
    linear.w = w0.copy()
    deep.w = deep.scorer.theta_of({"params/output/w": w0[:, None], "params/output/b": np.array([0.25])})
    tie = np.random.default_rng(2)
    for X, clicks in _rounds(40, d, seed=3):
        ranking = linear.rank(X, tie)
        deep.rank(X, tie)  # its own sample is not used: both see the linear learner's list
        np.testing.assert_allclose(deep._drawn[1] - 0.25, linear._drawn[1], rtol=1e-4, atol=1e-4)  # the bias: a shift
        assert linear.update(X, Feedback(ranking, clicks=clicks)).updated
        assert deep.update(X, Feedback(ranking, clicks=clicks)).updated
        named = deep.scorer.named(deep.w)
        np.testing.assert_allclose(named["params/output/w"][:, 0], linear.w, rtol=1e-4, atol=1e-5)
        assert named["params/output/b"][0] == pytest.approx(0.25, abs=1e-5)
    assert np.linalg.norm(linear.w - w0) > 0.5  # they moved, and far
    assert deep.rate == linear.rate


def test_the_mlp_gradient_of_the_shown_rows_is_that_of_the_whole_list():
    """A per-document scorer's step uses only the shown rows; it equals the step on the
    whole list with the other documents' coefficients 0, and the finite differences."""
    spec = PDGDSpec(type="pdgd", scorer=MLP)
    deep = spec.build(5, "input-order", np.random.default_rng(0))
    rng = np.random.default_rng(1)
    X = rng.normal(size=(14, 5))
    shown = rng.permutation(14)[:10]
    coef = rng.normal(size=10)
    full = np.zeros(14)
    full[shown] = coef
    a = deep.scorer.vjp(deep.w, X[shown], coef)
    b = deep.scorer.vjp(deep.w, X, full)
    np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    k = int(np.argmax(np.abs(a)))
    step = np.zeros_like(deep.w)
    step[k] = 1e-2
    fd = (coef @ deep.scorer.scores(deep.w + step, X[shown]) - coef @ deep.scorer.scores(deep.w - step, X[shown])) / 2e-2
    assert fd == pytest.approx(a[k], rel=2e-2)


@pytest.mark.parametrize("block", [MLP, {"kind": "attention", "input": 8, "blocks": 1, "heads": 1,
                                         "ff": 8, "dropout": 0.0}])
def test_deep_pdgd_reruns_to_the_same_bytes(block):
    def play() -> np.ndarray:
        learner = PDGDSpec(type="pdgd", scorer=block).build(4, "input-order", np.random.default_rng(9))
        tie = np.random.default_rng(2)
        for X, clicks in _rounds(15, 4, seed=4, longest=8):  # one bucket: one program to compile
            ranking = learner.rank(X, tie)
            learner.update(X, Feedback(ranking, clicks=clicks))
        return learner.w

    a, b = play(), play()
    assert a.tobytes() == b.tobytes()
    fresh = PDGDSpec(type="pdgd", scorer=block).build(4, "input-order", np.random.default_rng(9))
    assert not np.allclose(a, fresh.w)


@pytest.mark.parametrize("block, key", [
    ({"kind": "mlp", "dropout": 0.1}, "scorer.dropout is 0.1"),
    ({"kind": "dasalc"}, "scorer.dropout is 0.4"),
    ({"kind": "mlp", "width": 3}, "scorer kind mlp has no key 'width'"),
    ({"kind": "tree"}, "unknown scorer kind 'tree'"),
])
def test_bad_scorers_are_one_line_errors_naming_the_key(tmp_path, block, key):
    cfg = _config(tmp_path, f"  deep: {{type: pdgd, scorer: {json.dumps(block)}}}\n")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out")])
    assert res.exit_code == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and key in lines[0] and "learners.deep" in lines[0], res.stderr


def test_without_jax_the_config_is_refused_in_one_line(tmp_path, monkeypatch):
    from ltr_cli.neural import jaxenv

    monkeypatch.setattr(jaxenv, "_PACKAGES", ("jax", "optax", "safetensors", "no_such_package_here"))
    cfg = _config(tmp_path, f"  pdgd: {{type: pdgd}}\n  deep: {{type: pdgd, scorer: {json.dumps(MLP)}}}\n")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out")])
    assert res.exit_code == 1
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert "learner 'deep' (type pdgd): no_such_package_here is not installed: pip install -e '.[neural]'" in lines[0]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("rounds.parquet"))
    assert PDGDSpec(type="pdgd").missing() is None


def _config(tmp_path: Path, learners: str, checkpoint: int = 0, rounds: int = 120) -> Path:
    data = write_data(tmp_path / "train.txt", queries=20)
    held = write_data(tmp_path / "held.txt", queries=8, seed=5)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""experiment: deep
seed: 3
dataset: {{kind: files, features: 12, files: [{data}]}}
protocol:
  feedback: clicks
  sampling: uniform
  max_rounds: {rounds}
  checkpoint_every: {checkpoint}
  clicks: {{model: navigational, stop: any-position, shown: 10}}
heldout: {{file: {held}, every: 40}}
metrics: {{names: [ndcg@10], no_relevant: skip}}
learners:
{learners}""")
    return cfg


def _only_run(out: Path) -> Path:
    (run,) = [p for p in (out / "deep").iterdir() if p.is_dir() and not p.name.startswith(".")]
    return run


def test_ltr_run_learns_scores_and_reruns_to_the_same_files(tmp_path):
    cfg = _config(tmp_path, f"  deep: {{type: pdgd, scorer: {json.dumps(MLP)}, learning_rate: 0.5}}\n")
    for out in ("a", "b"):
        res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / out), "-q"])
        assert res.exit_code == 0, res.stderr
    a, b = _only_run(tmp_path / "a"), _only_run(tmp_path / "b")
    assert same_files(a, b) == []
    summary = json.loads((a / "summary.json").read_text())
    assert summary["label"] == "DeepPDGD" and summary["role"] == "deep-pdgd" and summary["updates"] > 0
    rounds = pd.read_parquet(a / "rounds.parquet")
    assert rounds["heldout_ndcg@10"].notna().sum() == 3
    manifest = json.loads((a / "manifest.json").read_text())
    conv = manifest["learner_conventions"]
    assert conv["algorithm"] == "DeepPDGD" and conv["scorer"]["hidden"] == [8] and conv["parameters"] == 12 * 8 + 8 + 8 + 1
    models = json.loads((a / "models.json").read_text())
    assert models["final"]["kind"] == "neural" and models["final"]["round"] == 120
    # ltr score: the saved model gives the learner's scores of the held-out file
    res = runner.invoke(app, ["score", str(a), str(tmp_path / "held.txt")])
    assert res.exit_code == 0, res.stderr
    assert len(res.stdout.split()) == sum(1 for _ in open(tmp_path / "held.txt"))
    assert len(set(res.stdout.split())) > 10


def test_a_killed_deep_pdgd_run_resumes_to_the_same_bytes(tmp_path):
    cfg = _config(tmp_path, f"  deep: {{type: pdgd, scorer: {json.dumps(MLP)}}}\n", checkpoint=30, rounds=100)
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "reference"), "-q"])
    assert res.exit_code == 0, res.stderr
    killed = tmp_path / "killed"
    proc = run_killed(cfg, killed)
    assert proc.returncode == 9, proc.stderr
    res = runner.invoke(app, ["run", str(cfg), "--out", str(killed), "--resume"])
    assert res.exit_code == 0, res.stderr
    assert "resuming after round 60" in res.stderr
    assert same_files(_only_run(tmp_path / "reference"), _only_run(killed)) == []


def test_linear_pdgd_runs_keep_their_run_ids():
    """The ``scorer`` key, unset, leaves the run ids of linear PDGD runs as they were (they
    name existing results)."""
    from ltr_cli.config.experiment import load_config
    from ltr_cli.runs.plan import plan_experiment
    from tests.conftest import REPO

    spec = load_config(REPO / "configs" / "clicks_synthetic.yaml", ["sweep=null"])
    ids = [run.run_id for group in plan_experiment(spec) for run in group]
    assert ids[0] == "pdgd-seed0-3d35637ca7"


def test_the_reference_initialisation_is_normal_with_sd_one_over_fan_in():
    spec = PDGDSpec(type="pdgd", scorer={"kind": "mlp", "hidden": [64], "activation": "sigmoid"}, init="reference")
    learner = spec.build(136, "input-order", np.random.default_rng(0))
    named = learner.scorer.named(learner.w)
    assert np.std(named["params/layer0/w"]) == pytest.approx(1 / 136, rel=0.05)
    assert np.std(named["params/output/w"]) == pytest.approx(1 / 64, rel=0.25)
    assert np.all(named["params/output/b"] == 0) and np.std(named["params/layer0/b"]) < 0.02
    again = spec.build(136, "input-order", np.random.default_rng(0))
    assert again.w.tobytes() == learner.w.tobytes()
    with pytest.raises(ValueError, match="init: reference is the reference code's MLP initialisation"):
        PDGDSpec(type="pdgd", scorer={"kind": "linear"}, init="reference")
    with pytest.raises(ValueError, match="init: reference"):
        PDGDSpec(type="pdgd", init="reference")
