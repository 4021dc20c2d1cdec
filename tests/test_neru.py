"""BMRM on the NERU structural loss (ranking-losses supplement s.1.4): the loss is NDCG's
with a_i = 2^(-(i-1)/(alpha-1)) and b_i = max(y_i - d, 0) (normalised by the ideal ERU)."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.learners.batch.losses import position_weights
from ltr_cli.learners.batch.neru import fit_bmrm_neru, neru_structural_hinge
from ltr_cli.cli.app import app
from ltr_cli.measures.metrics import eru_weights, neru
from tests.test_batch_protocol import make_letor


def _query(seed: int, n: int = 5, dims: int = 3):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, dims)), rng.integers(0, 4, size=n).astype(np.float64), rng.normal(size=dims)


@pytest.mark.parametrize("seed", range(6))
def test_hinge_is_the_maximum_over_all_rankings(seed):
    X, y, w = _query(seed)
    d, alpha, k = 0.5, 3.0, 5
    out = neru_structural_hinge(X, y, w, d, alpha, k)
    if out is None:
        assert (y <= d).all()
        return
    n = y.shape[0]
    f = X @ w
    a, c = eru_weights(n, alpha), position_weights(n, "bmrm", k)
    ideal = np.argsort(-y, kind="stable")
    brute = max(1 - neru(np.array(p), y, d, alpha, k) + c @ (f[list(p)] - f[ideal])
                for p in itertools.permutations(range(n)))
    assert out[0] == pytest.approx(brute, abs=1e-12)
    # and a . b is NERU: 1 for the ideal order
    b = np.maximum(y - d, 0) / (np.maximum(y - d, 0)[ideal] @ a)
    assert a @ b[ideal] == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(6))
def test_hinge_bounds_the_loss_of_the_scores_ranking_and_is_convex_with_its_subgradient(seed):
    X, y, w = _query(seed, n=8)
    y[0] = 3.0  # some utility
    d, alpha, k = 0.0, 5.0, 4
    value, grad = neru_structural_hinge(X, y, w, d, alpha, k)
    shown = np.argsort(-(X @ w), kind="stable")
    assert value >= 1 - neru(shown, y, d, alpha, k) - 1e-12
    rng = np.random.default_rng(seed)
    for _ in range(20):  # subgradient inequality h(v) >= h(w) + g.(v - w)
        v = w + rng.normal(size=w.shape)
        assert neru_structural_hinge(X, y, v, d, alpha, k)[0] >= value + grad @ (v - w) - 1e-9


def test_queries_without_utility_are_left_out():
    X = np.ones((3, 2))
    assert neru_structural_hinge(X, np.array([1.0, 0.0, 1.0]), np.zeros(2), d=1.0) is None


def test_fit_learns_the_generating_direction():
    rng = np.random.default_rng(0)
    u = np.array([1.0, -2.0, 0.5])
    train = []
    for _ in range(20):
        X = rng.normal(size=(8, 3))
        train.append((X, np.digitize(X @ u, [-1.0, 0.0, 1.0]).astype(np.float64)))
    model = fit_bmrm_neru(train, C=10.0, k=8)
    cosine = model.w @ u / np.linalg.norm(model.w) / np.linalg.norm(u)
    assert cosine > 0.9
    mean = np.mean([neru(np.argsort(-(X @ model.w), kind="stable"), y, k=8) for X, y in train])
    assert mean > 0.9


def test_cv_run_through_the_cli(tmp_path: Path):
    root = tmp_path / "OHSUMED"
    make_letor(root, queries=6, docs=10)
    config = tmp_path / "neru.yaml"
    config.write_text(f"""experiment: neru
dataset: {{kind: registry, name: letor3-ohsumed, root: {root}, folds: [1, 2]}}
cv: {{select_by: neru@5}}
learners:
  neru: {{type: bmrm-neru, grid: {{C: [0.1, 10]}}, k: 5}}
""")
    res = CliRunner().invoke(app, ["run", str(config), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    (run_dir,) = [Path(p) for p in res.stdout.split()]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["folds"] == [1, 2] and 0 < summary["metrics"]["ndcg@10"] <= 1
    assert summary["selected_by"] == "vali neru@5"
    tried = [t["vali"] for fold in summary["grid"] for t in fold["tried"]]
    assert len(tried) == 4 and all(0 < v <= 1 for v in tried)  # NERU@5 of each fit on vali
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["learner_conventions"]["measure"] == "NERU@5 (d=0, alpha=5)"
