"""The neural WEB30K configs (neuralndcg_web30k, contextaware_web30k, neural_vs_gbdt): they
load and expand, take --data and dataset.root, carry the papers' settings, and ltr report
shows the papers' numbers beside their runs, each with its empty-query rule."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.config.experiment import load_config
from ltr_cli.reports.neural_papers import PUBLISHED, matches, primary, published_rows
from ltr_cli.runs.plan import plan_experiment
from tests.conftest import REPO

runner = CliRunner()
CONFIGS = {"neuralndcg_web30k.yaml": 7, "contextaware_web30k.yaml": 4, "neural_vs_gbdt.yaml": 2}


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_the_configs_load_expand_and_take_a_data_root(name, tmp_path):
    spec = load_config(REPO / "configs" / name)
    assert spec.dataset.name == "mslr-web30k" and spec.cv is not None
    runs = [run for group in plan_experiment(spec) for run in group]
    assert len(runs) == CONFIGS[name]
    moved = load_config(REPO / "configs" / name, [f"dataset.root={tmp_path}"])
    assert moved.dataset.root == tmp_path
    head = (REPO / "configs" / name).read_text().split("\nexperiment:")[0]
    assert f"ltr run configs/{name} --data DIR" in head


def test_the_neuralndcg_config_is_the_papers_table_3():
    spec = load_config(REPO / "configs" / "neuralndcg_web30k.yaml")
    neural = {k: v for k, v in spec.learners.items() if v.type_name() == "neural"}
    assert sorted(v.loss["name"] for v in neural.values()) == sorted(
        ["neuralndcg", "lambdaloss", "listnet", "listmle", "approxndcgloss", "pointwise_rmse"])
    for learner in neural.values():
        s = learner.scorer
        assert (s["kind"], s["input"], s["blocks"], s["heads"], s["ff"]) == ("attention", [96], 2, 1, 384)
        t = learner.train
        assert (t.optimizer, t.lr, t.batch_queries, t.slate, t.epochs) == ("adam", 0.001, 64, 240, 100)
        assert (t.schedule, t.step_epochs, t.gamma) == ("step", 50, 0.1)
        assert learner.transform[0]["kind"] == "allrank"
    assert spec.learners["lambdarank"].loss["weighing_scheme"] == "lambdaRank_scheme"
    assert spec.cv.convention == "allrank" and "lambdamart" in spec.learners


def test_the_vs_gbdt_config_runs_on_yahoo_and_istella_by_its_overrides():
    for name in ("yahoo-set1", "istella-s"):
        spec = load_config(REPO / "configs" / "neural_vs_gbdt.yaml",
                           [f"dataset.name={name}", "dataset.root=elsewhere", "dataset.folds=null"])
        assert spec.dataset.name == name and len([r for g in plan_experiment(spec) for r in g]) == 2
    text = (REPO / "configs" / "neural_vs_gbdt.yaml").read_text()
    assert "no_relevant" in text and "all three rules" in text  # the other two conventions, recorded by the run


def _run(paper, learner, dataset="mslr-web30k", metrics=None):
    return SimpleNamespace(config={"paper": paper, "learners": {"a": learner}}, experiment="e",
                           summary={"learner": "a", "dataset": dataset, "metrics": metrics or {}}, manifest={})


def test_runs_are_matched_to_their_papers_rows_by_their_learner():
    lambdarank = _run("neuralndcg", {"type": "neural", "scorer": {"kind": "attention"},
                                     "loss": {"name": "lambdaloss", "weighing_scheme": "lambdaRank_scheme"}})
    assert primary(lambdarank).row == "Transformer + LambdaRank@max"
    other_scheme = _run("neuralndcg", {"type": "neural", "scorer": {"kind": "attention"},
                                       "loss": {"name": "lambdaloss", "weighing_scheme": "ndcgLoss2PP_scheme"}})
    assert primary(other_scheme) is None
    mlp = _run("context-aware", {"type": "neural", "scorer": {"kind": "mlp"},
                                 "loss": {"name": "lambdaloss", "weighing_scheme": "ndcgLoss2PP_scheme"}})
    assert primary(mlp).values["ndcg@10"] == 0.5122 and primary(mlp).empty == "one"
    trees = _run("neural-vs-gbdt", {"type": "lambdamart"}, metrics={"ndcg@5": 0.5})
    assert primary(trees).values == {"ndcg@5": 0.4966} and primary(trees).empty == "skip"
    unnamed = _run(None, {"type": "lambdamart"})
    assert not any(matches(e, unnamed) for e in PUBLISHED)
    rows = published_rows([trees])
    beside = [r for r in rows if r["beside"]]
    assert {r["source"].split(" (")[0] for r in beside} == {"Qin et al.", "LightGBM docs"}
    assert {r["paper_empty"] for r in beside} == {"dropped", "1"}
    assert any(r["row"].startswith("DASALC-ens") and not r["beside"] for r in rows)


def test_ltr_report_shows_the_papers_numbers_and_both_conventions(tmp_path):
    data = tmp_path / "w30"
    res = runner.invoke(app, ["data", "synth", str(data), "--like", "mslr-web30k", "--queries", "20",
                              "--docs-per-query", "10", "--folds"])
    assert res.exit_code == 0, res.stderr
    out = tmp_path / "out"
    res = runner.invoke(app, ["run", str(REPO / "configs" / "neural_vs_gbdt.yaml"), "--data", str(data), "--learner",
                              "lambdamart", "--set", "learners.lambdamart.grid.num_boost_round=[5]", "--set",
                              "learners.lambdamart.grid.learning_rate=[0.1]", "--set",
                              "learners.lambdamart.grid.num_leaves=[4]", "--set",
                              "learners.lambdamart.grid.min_data_in_leaf=[5]", "--out", str(out), "-q"])
    assert res.exit_code == 0, res.stderr
    res = runner.invoke(app, ["report", str(out / "neural_vs_gbdt"), "--format", "csv"])
    assert res.exit_code == 0, res.stderr
    text = res.stdout
    assert "paper_ndcg@5,paper_ndcg@10,paper_empty" in text
    assert "0.4966" in text and "empty queries dropped; this run: lightgbm" in text
    assert "generated data, shaped like Microsoft MSLR-WEB30K" in text
    assert "LightGBM docs" in text and "0.5274" in text and "DASALC-ens" in text
    summary = json.loads(next((out / "neural_vs_gbdt").glob("lambdamart-*/summary.json")).read_text())
    assert summary["convention"] == "lightgbm"
