"""The learner registry: every learner is one config model, and everything the tool does
with a learner is derived from it."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import numpy as np
import pytest

from ltr_cli.config.experiment import ProtocolSpec, parse_config
from ltr_cli.learners.registry import BATCH_TYPES, LEARNER_TYPES, ONLINE_TYPES, REGISTRY, SOURCES, bench_learners
from ltr_cli.core.schema import BatchLearnerConfig, OnlineLearnerConfig

PACKAGE = Path(__file__).resolve().parents[1] / "ltr_cli"
# the least a config of each type must say besides its type
REQUIRED = {"ogd": {"surrogate": "squared"}, "rtopkf": {"surrogate": "squared", "horizon": 10},
            "bmrm": {"loss": "ordinal"}, "neural": {"loss": {"name": "listnet"}, "train": {"epochs": 2}}, "dla": {"clicks": {"generate": {"sessions": 50}, "correction": "naive"}}}


def _spec(kind: str):
    cfg = {"type": kind, **REQUIRED.get(kind, {})}
    data = {"experiment": "x", "learners": {"a": cfg}}
    if REGISTRY[kind].kind == "batch":
        data.update(dataset={"kind": "registry", "name": "letor3-ohsumed", "root": "r"}, cv={})
    else:
        data["dataset"] = {"kind": "separable"}
        if getattr(REGISTRY[kind], "feedback_kind", "labels") == "clicks" and "clicks" in ProtocolSpec.model_fields:
            data["protocol"] = {"feedback": "clicks", "clicks": {"model": "perfect"}}  # a click learner's protocol
    return parse_config(data).learners["a"]


def test_every_type_is_defined_once_and_nowhere_restated():
    sources = {p: p.read_text() for p in PACKAGE.rglob("*.py")}
    for kind in LEARNER_TYPES:
        defined = [p for p, text in sources.items() if f'type: Literal["{kind}"]' in text]
        # a built-in is defined in the package, once; a plugin's type (installed beside) in its own package
        assert len(defined) == (1 if SOURCES[kind] == "built-in" else 0), (kind, defined)
    # the lists of types that used to be restated by hand are gone: the entry points of
    # pyproject.toml are the one declaration
    for p, text in sources.items():
        assert not re.search(r'\(\s*"svmmap",\s*"ranksvm"', text), p
        assert not re.search(r'"slam-perceptron":\s*\(', text), p
    declared = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text())["project"]["entry-points"]
    assert sorted(declared["ltr_cli.learners"]) == sorted(k for k in LEARNER_TYPES if SOURCES[k] == "built-in")


def test_online_and_batch_partition_the_registry():
    assert set(ONLINE_TYPES) | set(BATCH_TYPES) == set(LEARNER_TYPES)
    assert not set(ONLINE_TYPES) & set(BATCH_TYPES)
    for kind, cls in REGISTRY.items():
        assert issubclass(cls, BatchLearnerConfig if kind in BATCH_TYPES else OnlineLearnerConfig)
        assert cls.summary and cls.type_name() == kind


@pytest.mark.parametrize("kind", ONLINE_TYPES)
def test_online_learners_build_rank_update_and_describe(kind):
    spec = _spec(kind)
    rng = np.random.default_rng(0)
    learner = spec.build(3, "input-order", rng, 10, "paper")
    X = np.array([[1.0, 0.0, 2.0], [0.0, 1.0, 1.0], [2.0, 1.0, 0.0]])
    y = np.array([2.0, 0.0, 1.0])
    ranking = learner.rank(X, np.random.default_rng(1))
    assert sorted(ranking.tolist()) == [0, 1, 2]
    from ltr_cli.learners.online.base import Feedback
    from ltr_cli.protocols.online import reveal

    if type(spec).feedback_kind == "clicks":  # a perfect user's clicks: the relevant documents
        learner.update(X, Feedback(ranking, clicks=(y[ranking] > 0).astype(np.float64)))
    else:
        learner.update(X, reveal(learner, ranking, y))
    described = spec.describe()
    assert described["type"] == kind and described["role"] == spec.paper_role()
    json.dumps(described)
    # a learner never falls through to another's label (a new one used to be "Random")
    assert spec.default_label() and (spec.default_label() == "Random") == (kind == "random")


@pytest.mark.parametrize("kind", BATCH_TYPES)
def test_batch_learners_fit_score_and_describe(kind):
    if kind == "lambdamart":
        pytest.importorskip("lightgbm")
    spec = _spec(kind)
    rng = np.random.default_rng(0)
    train = [(rng.normal(size=(5, 3)), np.array([2.0, 1.0, 0.0, 0.0, 1.0])) for _ in range(3)]
    params = spec.grid_points()[0]
    context = None
    if getattr(spec, "clicks", None) is not None:  # a learner that needs a click log gets the fold's
        from ltr_cli.learners.batch.click_data import fold_clicks
        from ltr_cli.learners.batch.convergence import FitContext

        context = FitContext(clicks=fold_clicks(spec.clicks, train, ["1", "2", "3"], 1))
    model = spec.fit(train, params, context)
    assert model.scores(train[0][0]).shape == (5,)
    json.dumps(model.to_dict())
    assert spec.describe()["type"] == kind and spec.default_label()


def test_grid_keys_come_from_each_learners_hyper_parameters():
    from ltr_cli.errors import ConfigError

    data = {"experiment": "x", "dataset": {"kind": "registry", "name": "letor3-ohsumed", "root": "r"},
            "cv": {}, "learners": {"a": {"type": "adarank", "grid": {"C": [1.0]}}}}
    with pytest.raises(ConfigError, match="adarank has no hyper-parameter 'C'; it has rounds"):
        parse_config(data)


def test_ltr_list_and_bench_are_derived_from_the_registry():
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    listed = json.loads(CliRunner().invoke(app, ["list", "--json"]).stdout)["learners"]
    assert list(listed) == list(LEARNER_TYPES)
    bench = bench_learners()
    assert {raw["type"] for raw in bench.values()} <= set(ONLINE_TYPES)
    assert {"slam-ndcg", "slam-ap", "alg3", "listnet"} <= set(bench)
