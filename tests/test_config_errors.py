"""Config errors name their cause: unknown keys first with a did-you-mean, --set on a
learner the config does not have, and settings that cannot work together refused before
any learner starts (issue 16, item 7)."""

from __future__ import annotations

from typer.testing import CliRunner

from ltr_cli.cli.app import app
from tests.conftest import REPO

runner = CliRunner()
DEMO = str(REPO / "configs" / "simulated_separable.yaml")


def _error(args, tmp_path):
    res = runner.invoke(app, [*args, "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 1
    lines = [line for line in res.stderr.splitlines() if line.startswith("ltr: error:")]
    assert len(lines) == 1, res.stderr
    assert not (tmp_path / "out").exists()  # refused before anything ran
    return lines[0]


def test_a_misspelt_top_level_key_comes_first_with_a_suggestion(tmp_path):
    cfg = tmp_path / "typo.yaml"
    cfg.write_text("experiment: x\ndataset: {kind: separable, queries: 20}\n"
                   "lerners: {s: {type: slam-perceptron}}\n")
    line = _error(["run", str(cfg)], tmp_path)
    assert "lerners: unknown key; did you mean 'learners'?" in line


def test_a_misspelt_nested_key_gets_a_suggestion(tmp_path):
    line = _error(["run", DEMO, "--set", "dataset.querys=10"], tmp_path)
    assert "dataset.querys: unknown key; did you mean 'queries'?" in line


def test_set_on_a_learner_the_config_lacks_names_its_learners(tmp_path):
    line = _error(["run", DEMO, "--set", "learners.slam.step.eta=0.1"], tmp_path)
    assert "no learner 'slam'" in line and "slam-ndcg, alg3, listnet" in line


def test_top_k_feedback_with_a_full_label_learner_is_refused_before_any_run(tmp_path):
    line = _error(["run", DEMO, "--set", "protocol.feedback=top-1"], tmp_path)
    assert "learner 'slam-ndcg' (slam-perceptron) learns from all labels" in line
    assert "got {" not in line  # no dump of the whole config


def test_top_k_below_what_an_estimator_needs_is_refused(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("experiment: x\ndataset: {kind: separable, queries: 20}\nprotocol: {feedback: top-1}\n"
                   "learners: {r: {type: rtopkf, surrogate: ranksvm, schedule: authors-code}}\n")
    line = _error(["run", str(cfg)], tmp_path)
    assert "needs the top 2 labels" in line


def test_sweep_status_names_each_runs_settings(tmp_path):
    cfg = tmp_path / "s.yaml"
    cfg.write_text("experiment: grid\ndataset: {kind: separable, queries: 20}\n"
                   "learners:\n  slam: {type: slam-perceptron}\n  topk: {type: rtopkf, surrogate: kl, schedule: authors-code}\n"
                   "sweep:\n  learners.slam.step.eta: [0.1, 1.0]\n  seed: [0, 1]\n")
    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(tmp_path / "out"), "--status"])
    assert res.exit_code == 0
    lines = res.stdout.splitlines()[:-1]
    slam = sorted(line.split("[", 1)[1] for line in lines if " grid/slam-" in line)
    assert slam == ["step.eta: 0.1, seed: 0]", "step.eta: 0.1, seed: 1]", "step.eta: 1, seed: 0]",
                    "step.eta: 1, seed: 1]"]
    topk = sorted(line.split("[", 1)[1] for line in lines if " grid/topk-" in line)
    assert topk == ["seed: 0]", "seed: 1]"]  # another learner's axis is not its setting
