"""``ltr compare --logs``: the crossed random-effects test of a difference over R logs and Q
test queries (its algebra, its coverage where the naive pooled test's fails, one log as the
paired t-test) and the comparison of click learners condition by condition through the CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.reports.log_pairs import crossed_test

runner = CliRunner()


def test_one_log_is_the_paired_t_test_over_the_queries():
    d = np.random.default_rng(0).normal(0.02, 0.1, size=(1, 40))
    mean, low, high, df, p, note = crossed_test(d)
    assert p == pytest.approx(stats.ttest_1samp(d[0], 0.0).pvalue, rel=1e-12) and df == 39
    assert "counts the test queries only" in note and low < mean < high


def test_an_additive_table_has_the_variance_of_its_two_parts():
    """d[r, q] = a_r + b_q (no residual): Var(D) = var(a) / R + var(b) / Q."""
    rng = np.random.default_rng(1)
    a, b = rng.normal(0, 0.05, 4), rng.normal(0, 0.2, 30)
    d = a[:, None] + b[None, :] + 0.01
    mean, low, high, df, p, _ = crossed_test(d)
    se = np.sqrt(a.var(ddof=1) / 4 + b.var(ddof=1) / 30)
    assert mean == pytest.approx(d.mean())
    assert (high - low) / 2 == pytest.approx(stats.t.ppf(0.975, df) * se, rel=1e-9)
    assert p == pytest.approx(2 * stats.t.sf(abs(mean / se), df), rel=1e-9)


def test_the_interval_covers_the_truth_when_logs_vary_and_the_pooled_test_does_not():
    rng = np.random.default_rng(2)
    R, Q, hits, pooled = 4, 50, 0, 0
    trials = 400
    for _ in range(trials):
        d = 0.01 + rng.normal(0, 0.03, (R, 1)) + rng.normal(0, 0.1, (1, Q)) + rng.normal(0, 0.05, (R, Q))
        _, low, high, *_ = crossed_test(d)
        hits += low <= 0.01 <= high
        flat = d.ravel()
        half = stats.t.ppf(0.975, flat.size - 1) * flat.std(ddof=1) / np.sqrt(flat.size)
        pooled += flat.mean() - half <= 0.01 <= flat.mean() + half
    assert 0.91 <= hits / trials <= 0.99, hits / trials
    assert pooled / trials < 0.85, pooled / trials  # R x Q pairs taken as independent: far too narrow


CONFIG = """experiment: logs
dataset: {{kind: registry, name: mslr-web10k, root: {root}, folds: [1, 2], normalize: zscore}}
cv: {{select_by: ndcg@10, convention: mslr}}
learners:
  labels: {{type: ranksvm, grid: {{C: [0.1]}}}}
  naive:
    type: ranksvm
    grid: {{C: [0.1]}}
    clicks: {{generate: {{model: ultra-pbm, sessions: 2000}}, correction: naive}}
  ips:
    type: ranksvm
    grid: {{C: [0.1]}}
    clicks: {{generate: {{model: ultra-pbm, sessions: 2000, estimate_sessions: 3000}}, correction: ips,
             propensity: true}}
sweep:
  learners.naive.clicks.generate.seed: [0, 1]
  learners.ips.clicks.generate.seed: [0, 1]
  learners.naive.clicks.generate.eta: [1.0, 2.0]
  learners.ips.clicks.generate.eta: [1.0, 2.0]
"""


def test_compare_logs_pairs_each_condition_by_log_and_query(tmp_path):
    root = tmp_path / "data"
    assert runner.invoke(app, ["data", "synth", str(root), "--like", "mslr-web10k", "--folds", "--queries", "50",
                               "--docs-per-query", "15"]).exit_code == 0
    cfg = tmp_path / "logs.yaml"
    cfg.write_text(CONFIG.format(root=root))
    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    folder = tmp_path / "out" / "logs"
    res = runner.invoke(app, ["compare", str(folder), "--metric", "ndcg@10", "--logs", "--json"])
    assert res.exit_code == 0, res.stderr
    pairs = json.loads(res.stdout)["pairs"]
    # only what differs names them; estimate_sessions (ips's, not naive's) is not the log's
    assert sorted(p["condition"] for p in pairs) == ["eta 1.0", "eta 2.0"]
    assert all(p["a"] == "ips" and p["b"] == "naive" and p["logs"] == 2 and p["queries"] == 20 for p in pairs)
    # the numbers are crossed_test's on the runs' own per-query tables
    import pandas as pd
    import yaml

    runs = {}
    for run in folder.iterdir():
        if not (run / "summary.json").is_file():
            continue
        config = yaml.safe_load((run / "config.yaml").read_text())
        learner = json.loads((run / "summary.json").read_text())["learner"]
        if learner == "labels":
            continue
        gen = config["learners"][learner]["clicks"]["generate"]
        runs[(learner, gen["eta"], gen["seed"])] = pd.read_parquet(run / "test_queries.parquet")["ndcg@10"].to_numpy()
    for p in pairs:
        eta = float(p["condition"].split()[1])
        d = np.array([runs[("ips", eta, r)] - runs[("naive", eta, r)] for r in (0, 1)])
        assert p["mean_difference"] == pytest.approx(crossed_test(d)[0], abs=1e-12)
        assert p["p"] == pytest.approx(crossed_test(d)[4], rel=1e-9)
    text = runner.invoke(app, ["compare", str(folder), "--metric", "ndcg@10", "--logs"])
    assert "eta 2.0 | ips - naive:" in text.stdout and "2 logs, 20 queries" in text.stdout
    plotted = runner.invoke(app, ["plot", str(folder)])
    assert plotted.exit_code == 0, plotted.stderr
    caption = (folder / "plots" / "logs_conditions.caption.txt").read_text()
    assert (folder / "plots" / "logs_conditions.png").is_file() and "eta 2.0: " in caption and "2 logs x 20 queries" in caption
    # ltr report: the batch rows name the settings that differ, and a table by condition
    report = runner.invoke(app, ["report", str(folder)])
    assert report.exit_code == 0, report.stderr
    assert "| settings |" in report.stdout and "clicks.generate.seed: 1" in report.stdout
    table = [line for line in report.stdout.splitlines() if line.startswith("| eta ")]
    head = next(line for line in report.stdout.splitlines() if line.startswith("| condition |"))
    columns = [c.strip() for c in head.strip("|").split("|")]
    assert columns == ["condition", "metric", "logs", "queries", "ips", "naive"] and len(table) == 2
    for line in table:
        cells = dict(zip(columns, (c.strip() for c in line.strip("|").split("|"))))
        eta = float(cells["condition"].split()[1])
        for learner in ("ips", "naive"):
            values = np.array([runs[(learner, eta, r)] for r in (0, 1)])
            mean, low, high = crossed_test(values)[:3]
            assert cells[learner] == f"{mean:.4f} [{low:.4f}, {high:.4f}]"
    refused = runner.invoke(app, ["compare", str(folder), "--metric", "ndcg@10", "--logs", "--format", "latex"])
    assert refused.exit_code == 1 and "--logs prints its own comparison" in refused.stderr


def test_a_learner_swept_over_a_setting_of_its_own_is_one_learner_per_value(tmp_path):
    """Runs of one learner on the same logs that differ in a setting that is not the log's
    (here clicks.clip) are compared as one learner per value, named by it, not refused as
    two runs of one log."""
    root = tmp_path / "data"
    assert runner.invoke(app, ["data", "synth", str(root), "--like", "mslr-web10k", "--folds", "--queries", "30",
                               "--docs-per-query", "10"]).exit_code == 0
    cfg = tmp_path / "own.yaml"
    body = CONFIG.format(root=root).split("sweep:")[0].replace("experiment: logs", "experiment: own")
    cfg.write_text(body + "sweep:\n  learners.naive.clicks.generate.seed: [0, 1]\n"
                   "  learners.ips.clicks.generate.seed: [0, 1]\n  learners.ips.clicks.clip: [2.0, 10.0]\n")
    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    res = runner.invoke(app, ["compare", str(tmp_path / "out" / "own"), "--metric", "ndcg@10", "--logs", "--json"])
    assert res.exit_code == 0, res.stderr
    pairs = json.loads(res.stdout)["pairs"]
    named = {(p["a"], p["b"]) for p in pairs}
    assert named == {("ips (clicks.clip 10.0)", "naive"), ("ips (clicks.clip 10.0)", "ips (clicks.clip 2.0)"),
                     ("ips (clicks.clip 2.0)", "naive")}, named
    assert all(p["logs"] == 2 for p in pairs)
    # one condition is named by the settings it has, not by the ones left unset
    assert all("null" not in p["condition"] and "sessions 2000" in p["condition"] for p in pairs), pairs[0]["condition"]
