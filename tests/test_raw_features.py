"""Structural SVMs on raw (unnormalised) features: BMRM solves on internally scaled columns
and maps the weights back (``feature_scale``), and a CV fold whose selected model ranks in
file order (constant scores) is reported as degenerate, never with the method's numbers."""

from __future__ import annotations

import csv
import io

import json
import re
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.config.experiment import load_config
from ltr_cli.learners.batch.common import column_scale
from ltr_cli.learners.batch.structural import fit_bmrm_ndcg, fit_svmmap
from ltr_cli.protocols.batch import degenerate
from ltr_cli.results.models import LinearModel
from tests.test_batch_protocol import make_letor

runner = CliRunner()
RAW_SCALE = np.array([1.0, 3e4, 1.0, 2e5, 50.0])  # counts and lengths beside unit-scale features


def _queries(seed: int = 0, n: int = 12, scale: np.ndarray = RAW_SCALE) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    w_true = rng.normal(size=scale.shape[0])
    out = []
    for _ in range(n):
        X = rng.uniform(0, 1, size=(int(rng.integers(4, 9)), scale.shape[0]))
        y = np.digitize(X @ w_true + rng.normal(0, 0.3, X.shape[0]), [-0.5, 0.5]).astype(np.float64)
        out.append((X * scale, y))
    return out


def test_raw_features_stay_at_zero_unscaled_and_converge_scaled():
    train = _queries()
    stuck = fit_svmmap(train, C=10.0, max_iter=30, feature_scale="none")
    assert not stuck.info["convergence"]["converged"] and not stuck.w.any()
    assert degenerate(stuck, train)
    fitted = fit_svmmap(train, C=10.0, max_iter=30, feature_scale="auto")
    assert fitted.info["convergence"]["converged"] and fitted.info["feature_scale"] == "max-abs"
    assert not degenerate(fitted, train)


@pytest.mark.parametrize("fit", [fit_svmmap, fit_bmrm_ndcg], ids=["svmmap", "bmrm-ndcg"])
def test_scaled_fit_is_the_fit_on_scaled_columns_mapped_back(fit):
    """``max-abs``: the weights are those of the unscaled solver on X / s, divided by s, so
    the model scores raw rows as that solution scores scaled rows."""
    train = _queries(seed=3)
    s = column_scale(train, "max-abs")
    assert s is not None and np.allclose(s, [max(np.abs(X[:, j]).max() for X, _ in train) for j in range(5)])
    on_scaled = fit([(X / s, y) for X, y in train], C=1.0, feature_scale="none")
    mapped = fit(train, C=1.0, feature_scale="max-abs")
    np.testing.assert_array_equal(mapped.w, on_scaled.w / s)
    for X, _ in train:
        np.testing.assert_allclose(LinearModel(mapped.w).scores(X), on_scaled.scores(X / s), rtol=1e-12)


def test_auto_leaves_unit_scale_features_exactly_as_they_are():
    train = _queries(scale=np.ones(5))
    assert column_scale(train, "auto") is None
    a = fit_svmmap(train, C=1.0, feature_scale="auto")
    b = fit_svmmap(train, C=1.0, feature_scale="none")
    np.testing.assert_array_equal(a.w, b.w)
    assert "feature_scale" not in a.info


def test_a_constant_scores_model_is_degenerate_and_a_single_document_query_does_not_count():
    queries = [(np.array([[1.0, 2.0], [3.0, 2.0]]), np.array([1.0, 0.0])), (np.array([[5.0, 1.0]]), np.array([1.0]))]
    assert degenerate(LinearModel(np.zeros(2)), queries)
    assert degenerate(LinearModel(np.array([0.0, 1.0])), queries)  # feature 2 is constant within the query
    assert not degenerate(LinearModel(np.array([1.0, 0.0])), queries)


def _raw_letor(root: Path) -> None:
    """LETOR-shaped folds with two features blown up to raw counts."""
    make_letor(root, queries=8, docs=10)
    for path in root.rglob("*.txt"):
        lines = []
        for line in path.read_text().splitlines():
            line = re.sub(r"(?<= )(1|7):([0-9.eE+-]+)", lambda m: f"{m[1]}:{float(m[2]) * 5e4:.6g}", line)
            lines.append(line)
        path.write_text("\n".join(lines) + "\n")


def _cv_config(tmp_path: Path, scale: str) -> Path:
    cfg = tmp_path / f"cv-{scale}.yaml"
    cfg.write_text(f"""experiment: raw
dataset: {{kind: registry, name: letor3-ohsumed, root: {tmp_path / 'OHSUMED'}, folds: [1, 2]}}
cv: {{select_by: map}}
learners:
  svmmap: {{type: svmmap, grid: {{C: [10]}}, max_iter: 8, feature_scale: {scale}}}
""")
    return cfg


def test_a_degenerate_cv_run_says_so_in_its_line_and_its_report_row(tmp_path):
    _raw_letor(tmp_path / "OHSUMED")
    out = tmp_path / "out"
    res = runner.invoke(app, ["run", str(_cv_config(tmp_path, "none")), "--out", str(out)])
    assert res.exit_code == 0, res.stderr
    assert "DEGENERATE model" in res.stdout and "fold 1: the selected model gives every" in res.stderr
    (summary_file,) = out.rglob("summary.json")
    assert json.loads(summary_file.read_text())["degenerate_folds"] == [1, 2]
    report = runner.invoke(app, ["report", str(out), "--format", "csv"])
    assert report.exit_code == 0, report.stderr
    *_, values = csv.DictReader(io.StringIO(report.stdout))  # the last row
    assert values["ap"] == "" and values["ndcg@3"] == "" and "degenerate model" in values["vs_paper"]

    scaled = tmp_path / "scaled"
    res = runner.invoke(app, ["run", str(_cv_config(tmp_path, "auto")), "--out", str(scaled)])
    assert res.exit_code == 0, res.stderr
    assert "DEGENERATE" not in res.stdout and "test MAP=" in res.stdout
    (models_file,) = scaled.rglob("models.json")
    assert all(m["feature_scale"] == "max-abs" for m in json.loads(models_file.read_text()).values())


def test_feature_scale_auto_keeps_existing_run_ids(tmp_path):
    cfg = _cv_config(tmp_path, "auto")
    auto_id = load_config(cfg).run_id("svmmap")
    cfg.write_text(cfg.read_text().replace(", feature_scale: auto", ""))
    assert load_config(cfg).run_id("svmmap") == auto_id
    assert load_config(_cv_config(tmp_path, "none")).run_id("svmmap") != auto_id
