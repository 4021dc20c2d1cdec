"""Where the IPS correction pays: on generated MSLR-shaped folds with nonlinear relevance (a
linear ranker misspecified), a weak logger (a RankSVM fitted on 1% of the training queries)
and strong position bias (eta 2), RankSVM on IPS-weighted clicks beats RankSVM on naive
clicks on the test queries, through ``ltr run`` and ``ltr compare``; and the shipped
conditions sweep expands to the runs its comment says."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from ltr_cli.cli.app import app
from tests.conftest import REPO

runner = CliRunner()
CONFIG = """experiment: conditions
dataset: {{kind: registry, name: mslr-web10k, root: {root}, folds: [1, 2, 3, 4, 5], normalize: zscore}}
cv: {{select_by: ndcg@10, convention: mslr}}
learners:
  naive:
    type: ranksvm
    grid: {{C: [0.1]}}
    clicks: {{generate: {{model: ultra-pbm, eta: 2.0, sessions: 20000, logger_fraction: 0.01}}, correction: naive}}
  ips:
    type: ranksvm
    grid: {{C: [0.1]}}
    clicks: {{generate: {{model: ultra-pbm, eta: 2.0, sessions: 20000, logger_fraction: 0.01}}, correction: ips,
             propensity: true, clip: 10}}
"""


def _ok(*args: str) -> str:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, res.stderr
    return res.stdout


def test_ips_beats_naive_clicks_on_nonlinear_relevance_under_a_weak_logger(tmp_path):
    root = tmp_path / "nl"
    _ok("data", "synth", str(root), "--like", "mslr-web10k", "--folds", "--queries", "250",
        "--docs-per-query", "40", "--relevance", "nonlinear")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CONFIG.format(root=root))
    _ok("run", str(cfg), "--out", str(tmp_path / "out"), "-q")
    found = json.loads(_ok("compare", str(tmp_path / "out" / "conditions"), "--metric", "ndcg@10", "--json"))
    (pair,) = found["pairs"]
    sign = 1 if pair["a"] == "ips" else -1
    assert pair["n"] == 250
    assert sign * pair["mean_difference"] > 0.02 and pair["p"] < 1e-3, pair


def test_the_conditions_sweep_runs_each_learners_own_points_once():
    from ltr_cli.sweep.grid import plan

    tasks = plan(REPO / "configs" / "counterfactual_conditions.yaml").tasks()
    by_learner: dict[str, int] = {}
    for task in tasks:
        by_learner[task.run.learner] = by_learner.get(task.run.learner, 0) + 1
    assert by_learner == {"ranksvm-labels": 2, "ranksvm-naive": 216, "ranksvm-ips": 216, "ranksvm-ips-estimated": 36,
                          "mlp-labels": 2, "mlp-naive": 36, "mlp-ips": 36}
    assert "544 runs" in (REPO / "configs" / "counterfactual_conditions.yaml").read_text()
    assert plan(REPO / "configs" / "counterfactual_conditions.yaml").points == 544  # under the grid limit
