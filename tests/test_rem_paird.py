"""Regression EM's propensities (``clicks.propensity: regression-em``) and pairwise debiasing
(``clicks.correction: pairwise-debias``): each recovers the truth of a simulated log, the
positioned pairs add up to today's, PairD's pairs are IPS's when t- = 1, both run through the
CLI, and misuse is one line naming the key."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.clicklog.pairs import click_pairs
from ltr_cli.clicklog.rem import regression_em
from ltr_cli.clicklog.signal import PairDebiasSpec
from ltr_cli.clicklog.simulate import simulate
from ltr_cli.clicks.spec import build_model
from ltr_cli.learners.batch.click_data import ClickData
from ltr_cli.learners.batch.pair_debias import debiased, fit_pair_debias, update
from ltr_cli.learners.batch.ranksvm import WeightedPairProblem, newton_ranksvm

runner = CliRunner()


def _queries(n=150, m=15, d=5, seed=0):
    """Queries whose grades 0..4 are quantiles of a noisy linear score, and that score's weights."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    out = []
    for _ in range(n):
        X = rng.normal(size=(m, d))
        s = X @ w + 0.3 * rng.normal(size=m)
        out.append((X, np.digitize(s, np.quantile(s, [0.5, 0.7, 0.85, 0.95])).astype(np.int64)))
    return out, w


def _log(train, w, policy, sessions, shown=6, noise=3.0, model="pbm", seed=3):
    """A log of a weak logging ranker (``w`` plus noise) under ``policy``."""
    logger = w + np.random.default_rng(1).normal(scale=noise, size=len(w))
    rankings = [np.argsort(-(X @ logger), kind="stable") for X, _ in train]
    return simulate([y for _, y in train], rankings, build_model(model, 5, None, 1.0), policy, shown, sessions, seed)


def test_regression_em_recovers_pbm_propensities_from_a_log_that_is_not_randomised():
    # grades 0..10 whose click probabilities g / 10 are a logistic function of the features, rounded
    rng = np.random.default_rng(0)
    w = rng.normal(size=5)
    train = []
    for _ in range(80):
        X = rng.normal(size=(15, 5))
        train.append((X, np.rint(10 / (1 + np.exp(-(X @ w - 1.0)))).astype(np.int64)))
    logger = w + np.random.default_rng(1).normal(scale=0.3, size=5)     # a good logger: ranking, not shuffled
    rankings = [np.argsort(-(X @ logger), kind="stable") for X, _ in train]
    model = build_model({"type": "pbm", "click": [g / 10 for g in range(11)]}, None, None, 1.0)
    s = simulate([y for _, y in train], rankings, model, "ranking", 6, 8000, 3)
    p, rec = regression_em(s, train, 6, relevance="logistic", iterations=200)
    truth = 1.0 / np.arange(1, 7)
    assert np.max(np.abs(p - truth)) < 0.035, (p, truth)
    assert rec["method"] == "regression-em" and len(rec["examination"]) == 6 and rec["converged"]
    # the ratio of click rates by position is off: the logger put the relevant documents on top
    rate = np.bincount(s.position - 1, weights=s.click) / np.bincount(s.position - 1)
    assert np.max(np.abs(rate / rate[0] - truth)) > 0.04


def test_positioned_pairs_sum_to_the_pairs_of_today_and_reduce_to_ips_when_t_minus_is_one():
    train, w = _queries(40)
    s = _log(train, w, "shuffle", 3000)
    plain = click_pairs(s, np.ones(6), 15)
    placed = click_pairs(s, np.ones(6), 15, positions=True)
    assert placed.at_better is not None and placed.at_worse is not None
    assert placed.at_better.min() >= 1 and placed.at_worse.max() <= 6 and not np.any(placed.at_better ==
                                                                                      placed.at_worse)

    def summed(pairs):
        key = (pairs.query * 15 + pairs.better) * 15 + pairs.worse
        uniq, inv = np.unique(key, return_inverse=True)
        return uniq, np.bincount(inv, weights=pairs.weight)

    k0, w0 = summed(plain)
    assert np.array_equal(k0, (plain.query * 15 + plain.better) * 15 + plain.worse)   # already distinct
    k1, w1 = summed(placed)
    assert np.array_equal(k0, k1) and np.allclose(w0, w1, rtol=1e-12)
    p = 1.0 / np.arange(1, 7) ** 0.7
    ips = click_pairs(s, 1.0 / p, 15)
    k2, w2 = summed(debiased(placed, p, np.ones(6)))
    assert np.array_equal(k2, (ips.query * 15 + ips.better) * 15 + ips.worse) and np.allclose(w2, ips.weight)


def test_the_closed_form_update_is_the_papers():
    L = np.array([[0.0, 2.0, 4.0], [1.0, 0.0, 1.0], [0.5, 0.5, 0.0]])
    tp, tm = np.array([1.0, 0.5, 0.25]), np.array([1.0, 2.0, 1.0])
    new_p, new_m = update(L, tp, tm, 1.0)
    plus = np.array([2.0 / 2 + 4.0, 1.0 + 1.0, 0.5 + 0.5 / 2])
    minus = np.array([1.0 / 0.5 + 0.5 / 0.25, 2.0 + 0.5 / 0.25, 4.0 + 1.0 / 0.5])
    assert new_p == pytest.approx(np.sqrt(plus / plus[0])) and new_m == pytest.approx(np.sqrt(minus / minus[0]))


def test_pairwise_debias_moves_its_biases_toward_the_truth():
    train, w = _queries(200)
    s = _log(train, w, "shuffle", 20_000)
    data = ClickData(s, np.ones(6), "pairwise-debias", debias=PairDebiasSpec(rounds=4, p=0.0))
    model = fit_pair_debias(train, data, lambda pairs, warm, progress: newton_ranksvm(
        WeightedPairProblem.from_pairs(train, pairs, 1.0), 1e-6, 200, warm))
    rec = model.info["pairwise_debias"]
    truth = 1.0 / np.arange(1, 7)                 # PBM: t+_i = theta_i / theta_1
    errors = [np.abs(np.array(h["t_plus"]) - truth).max() for h in rec["history"]]
    assert errors[-1] < 0.5 * np.abs(1.0 - truth).max() and errors[-1] < 0.08, errors
    assert rec["t_plus"] == rec["history"][-1]["t_plus"] and rec["t_plus"][0] == 1.0 and rec["t_minus"][0] == 1.0
    # the debiased ranker points where the relevance does
    assert model.w @ w / np.linalg.norm(model.w) / np.linalg.norm(w) > 0.95


CONFIG = """experiment: rem_paird
dataset: {{kind: registry, name: mslr-web10k, root: {root}, folds: [1], normalize: zscore}}
cv: {{select_by: ndcg@10, convention: mslr}}
learners:
  rem:
    type: ranksvm
    grid: {{C: [1.0]}}
    clicks: {{generate: {{model: pbm, sessions: 3000, shown: 5}}, correction: ips, propensity: regression-em,
             em: {{relevance: {relevance}, iterations: 5}}}}
  rem-lambdamart:
    type: lambdamart
    grid: {{num_leaves: [7], learning_rate: [0.1], num_boost_round: [20], min_data_in_leaf: [5]}}
    clicks: {{generate: {{model: pbm, sessions: 3000, shown: 5}}, correction: ips, propensity: regression-em,
             em: {{relevance: logistic, iterations: 5}}}}
  paird:
    type: ranksvm
    grid: {{C: [1.0]}}
    clicks: {{generate: {{model: pbm, sessions: 3000, shown: 5}}, correction: pairwise-debias, debias: {{rounds: 2}}}}
"""


@pytest.fixture(scope="module")
def folds(tmp_path_factory):
    root = tmp_path_factory.mktemp("rp") / "mslr"
    res = runner.invoke(app, ["data", "synth", str(root), "--like", "mslr-web10k", "--folds", "--queries", "30",
                              "--docs-per-query", "12"])
    assert res.exit_code == 0, res.output
    return root


@pytest.mark.parametrize("relevance", ["logistic", "gbdt"])
def test_both_run_end_to_end_and_record_their_estimates(folds, tmp_path, relevance):
    pytest.importorskip("lightgbm")
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CONFIG.format(root=folds, relevance=relevance))
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.output
    models = {p.parent.name.rsplit("-", 1)[0]: json.loads(p.read_text())
              for p in (tmp_path / "out" / "rem_paird").glob("*/models.json")}
    rem = next(iter(models["rem"].values()))["clicks"]
    assert rem["estimated_from"]["method"] == "regression-em" and rem["estimated_from"]["relevance"] == relevance
    assert len(rem["propensity"]) == 5 and rem["propensity"][0] == 1.0
    assert rem["weights"] == pytest.approx([min(1 / p, 10) for p in rem["propensity"]])
    lm = next(iter(models["rem-lambdamart"].values()))["clicks"]
    assert lm["estimated_from"]["method"] == "regression-em" and len(lm["propensity"]) == 5
    paird = next(iter(models["paird"].values()))
    assert paird["clicks"]["correction"] == "pairwise-debias"
    t = paird["pairwise_debias"]
    assert len(t["t_plus"]) == 5 and len(t["t_minus"]) == 5 and len(t["history"]) == 2


@pytest.mark.parametrize("learner,words", [
    ("{type: lambdamart, clicks: {generate: {}, correction: pairwise-debias}}", "clicks.correction"),
    ("{type: dla, clicks: {generate: {}, correction: pairwise-debias}}", "clicks.correction"),
    ("{type: ranksvm, clicks: {generate: {}, correction: pairwise-debias, pairs: query}}", "pairs: unclicked"),
    ("{type: ranksvm, clicks: {generate: {}, correction: ips, debias: {rounds: 2}}}", "debias"),
    ("{type: ranksvm, clicks: {generate: {}, correction: ips, em: {iterations: 2}}}", "propensity: regression-em"),
])
def test_misuse_is_one_line_naming_the_key(folds, tmp_path, learner, words):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(CONFIG.split("learners:")[0].format(root=folds) + f"learners:\n  x: {learner}\n")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 1 and words in res.output and res.output.strip().count("\n") == 0, res.output
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("models.json"))
