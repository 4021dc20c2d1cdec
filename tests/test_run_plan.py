"""The run plan that ``ltr run`` and ``ltr sweep`` share: run ids of the shipped configs
never change (they name existing results), and one grouping rule decides which runs read
a stream together."""

from __future__ import annotations

import pytest

from ltr_cli.config.experiment import load_config
from ltr_cli.runs.plan import plan_experiment
from ltr_cli.sweep.grid import expand
from tests.conftest import REPO

# run ids computed before the plan existed (commit 7fc812f): results written then must be
# found again by --resume, ltr report and the sweep's status
PINNED = {
    "letor_ohsumed.yaml": ["svmmap-a373b9d06f", "adarank-cc70b523e1", "permurank-592111d6b2"],
    "mslr_slam.yaml": ["slam-ndcg-7252cb4a34", "slam-ap-730395cb9b", "alg3-406c772205"],
    "simulated_separable.yaml": ["slam-ndcg-cbf747a756", "alg3-fbea8f1a80", "listnet-8d71dbec0a"],
    "topk_synthetic.yaml": ["listnet-seed0-8e7604d11f", "rtopkf-ranksvm-seed0-81391e62d0",
                            "rtopkf-kl-seed0-945acbcf40"],
    "yahoo_topk.yaml": ["listnet-2a5dbe23b7", "rtopkf-ranksvm-512af1c220", "rtopkf-kl-eceff8a3f7"],
    "yahoo_topk_paper.yaml": ["listnet-7e07b9af7c", "rtopkf-ranksvm-857836d286", "rtopkf-kl-84500cd43c"],
}


@pytest.mark.parametrize("config", sorted(PINNED))
def test_run_ids_of_the_shipped_configs_do_not_change(config):
    spec = load_config(REPO / "configs" / config)
    ids = [run.run_id for runs in plan_experiment(spec) for run in runs]
    assert ids[:3] == PINNED[config]


def test_sweep_run_ids_do_not_change():
    tasks = expand(REPO / "configs" / "sweep_separable.yaml")
    assert len(tasks) == 24
    assert [t.run_id for t in tasks[:3]] == ["slam-260ce5b1a3", "listnet-d68cc2f6cf", "slam-a3addf7958"]


def test_one_grouping_rule_for_run_and_sweep():
    """The learners of a config share a group exactly when their sweep points would."""
    spec = load_config(REPO / "configs" / "sweep_separable.yaml")
    (runs,) = plan_experiment(spec.model_copy(update={"sweep": None}))
    by_learner = {run.learner: run.group for run in runs}
    assert by_learner["slam"] is not None and by_learner["listnet"] is not None
    assert by_learner["slam"] != by_learner["listnet"]  # perceptron and OGD families
    tasks = expand(REPO / "configs" / "sweep_separable.yaml")
    seed0 = [t for t in tasks if t.run.spec.seed == 0]
    assert {t.stream for t in seed0 if t.learner == "slam"} == {by_learner["slam"]}
    # a task's run is the validated spec itself, not a dict parsed again
    assert all(t.run.spec.sweep is None for t in tasks)
