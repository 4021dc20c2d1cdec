"""The shipped click-experiment configs (clicks_synthetic.yaml, cikm2018_*.yaml) use the agreed
click syntax, the PDGD paper's setup (10,000 impressions, 125 runs over the folds, query-level
normalisation, the three click models) and read their data as the rest of ltr does.

Their non-click parts validate against today's models; the whole config validates (and its
sweep expands) once the click protocol and the click learners are registered."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import TypeAdapter

from ltr_cli.config.datasets import DatasetSpec
from ltr_cli.config.experiment import HeldoutSpec, MetricsSpec, read_config_mapping
from ltr_cli.config.protocol import ProtocolSpec
from ltr_cli.data.registry import DATASETS
from tests.conftest import REPO

CIKM = ["cikm2018_mslr10k.yaml", "cikm2018_yahoo.yaml", "cikm2018_mq2007.yaml", "cikm2018_mq2008.yaml"]
CONFIGS = ["clicks_synthetic.yaml", *CIKM]

# the agreed syntax: protocol keys, click keys, and each learner type's keys
PROTOCOL_KEYS = {"feedback", "sampling", "max_rounds", "clicks"}
CLICK_KEYS = {"model", "stop", "shown", "eta", "grades", "gamma"}
LEARNER_KEYS = {"pdgd": {"learning_rate", "learning_rate_decay"},
                "dbgd": {"comparison", "candidates", "learning_rate", "delta", "learning_rate_decay", "preference"},
                "pairwise-clicks": {"epsilon", "learning_rate_decay"}}
PAPER_LEARNERS = {  # name -> the settings that make it the paper's learner
    "pdgd": {"type": "pdgd", "learning_rate": 0.1},
    "p-dbgd": {"type": "dbgd", "comparison": "probabilistic", "candidates": 1, "learning_rate": 0.01},
    "td-dbgd": {"type": "dbgd", "comparison": "team-draft"},
    "p-mgd": {"type": "dbgd", "comparison": "probabilistic", "candidates": 49},
    "pairwise": {"type": "pairwise-clicks", "epsilon": 0.8},
}


def _raw(name: str) -> dict[str, Any]:
    return read_config_mapping(REPO / "configs" / name)


@pytest.mark.parametrize("name", CONFIGS)
def test_click_configs_use_the_agreed_syntax(name):
    raw = _raw(name)
    protocol = raw["protocol"]
    assert set(protocol) <= PROTOCOL_KEYS
    assert protocol["feedback"] == "clicks" and protocol["sampling"] == "uniform"
    assert set(protocol["clicks"]) <= CLICK_KEYS
    assert protocol["clicks"]["stop"] == "any-position" and protocol["clicks"]["shown"] == 10
    assert protocol["clicks"]["gamma"] == 0.9995
    assert raw["sweep"] == {"protocol.clicks.model": ["perfect", "navigational", "informational"]}
    for key, spec in raw["learners"].items():
        assert set(spec) - {"type", "label"} <= LEARNER_KEYS[spec["type"]], key
        assert PAPER_LEARNERS[key].items() <= spec.items(), key
    assert {"pdgd", "p-dbgd", "td-dbgd", "p-mgd"} <= set(raw["learners"])


@pytest.mark.parametrize("name", CONFIGS)
def test_click_configs_read_their_data_as_ltr_does(name):
    raw = _raw(name)
    dataset = TypeAdapter(DatasetSpec).validate_python(raw["dataset"])
    assert dataset.kind == "registry" and dataset.split == "train"
    assert dataset.normalize == "query-level"
    metrics = MetricsSpec.model_validate(raw["metrics"])
    assert metrics.names == ["ndcg@10"] and metrics.no_relevant == "skip"
    heldout = HeldoutSpec.model_validate(raw["heldout"])
    info = DATASETS[dataset.name]
    folds = dataset.folds or [None]
    assert len(folds) == 1
    expected = info.path_for(dataset.root, "test", folds[0]) if folds[0] else dataset.root / info.files["test"]
    assert heldout.file == expected
    # the click table follows the data's grades
    assert raw["protocol"]["clicks"]["grades"] == len(info.label_levels)


@pytest.mark.parametrize("name", CONFIGS)
def test_click_configs_protocol_validates_for_every_swept_click_model(name):
    raw = _raw(name)
    for model in raw["sweep"]["protocol.clicks.model"]:
        protocol = ProtocolSpec.model_validate({**raw["protocol"], "clicks": {**raw["protocol"]["clicks"], "model": model}})
        protocol.check()  # feedback: clicks with clicks:, uniform sampling with max_rounds, the model's table
        assert protocol.sampling == "uniform" and protocol.clicks is not None
        assert protocol.clicks.stop == "any-position" and protocol.clicks.gamma == 0.9995


@pytest.mark.parametrize("name", CIKM)
def test_cikm2018_configs_run_the_papers_grid(name):
    raw = _raw(name)
    info = DATASETS[raw["dataset"]["name"]]
    assert raw["protocol"]["max_rounds"] == 10_000
    # 125 runs per learner and click model over the folds: 25 seeds x 5 folds, or 125 on one split
    assert len(set(raw["seeds"])) * max(1, len(info.folds)) == 125
    assert set(raw["learners"]) == set(PAPER_LEARNERS)


def _click_learners_registered() -> bool:
    from ltr_cli.learners.registry import LEARNER_TYPES

    return {"pdgd", "dbgd", "pairwise-clicks"} <= set(LEARNER_TYPES)


@pytest.mark.parametrize("name", CONFIGS)
def test_click_configs_load_and_expand_once_the_learners_exist(name):
    if not _click_learners_registered():
        pytest.skip("the click learners (pdgd, dbgd, pairwise-clicks) are not registered yet")
    from ltr_cli.config.experiment import load_config
    from ltr_cli.sweep.grid import expand

    spec = load_config(REPO / "configs" / name)
    assert spec.protocol.max_rounds == _raw(name)["protocol"]["max_rounds"]
    seeds = len(_raw(name)["seeds"])
    assert len(expand(REPO / "configs" / name)) == 3 * seeds * len(spec.learners)
