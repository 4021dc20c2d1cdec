"""Config validation: one-line errors with the key path; safe YAML; overrides."""

from __future__ import annotations

import pytest

from ltr_cli.config import load_config
from ltr_cli.errors import ConfigError

GOOD = """
experiment: demo
dataset: {kind: separable, queries: 50}
learners:
  slam: {type: slam-perceptron}
"""


def test_good_config_defaults(write):
    spec = load_config(write("c.yaml", GOOD))
    assert spec.protocol.passes == 1 and spec.metrics.names == ["ndcg@10", "ap"]
    assert spec.run_id("slam") == load_config(write("d.yaml", GOOD)).run_id("slam")
    other = load_config(write("e.yaml", GOOD), ["learners.slam.step.eta=0.5"])
    assert other.run_id("slam") != spec.run_id("slam")
    assert other.learners["slam"].step.eta == 0.5


BAD = [
    ("unknown top key", GOOD + "learning_rate: 1\n", [], "learning_rate", "unknown key"),
    ("unknown nested key", GOOD.replace("queries: 50", "queries: 50, docz: 3"), [], "dataset.docz", "unknown key"),
    ("wrong type", GOOD.replace("queries: 50", "queries: many"), [], "dataset.queries", "valid integer"),
    ("unknown learner type", GOOD.replace("slam-perceptron", "svm"), [], "learners.slam.type", "slam-perceptron"),
    ("unknown metric", GOOD + "metrics: {names: [ndcg@10, mrr]}\n", [], "metrics.names", "unknown metric"),
    ("negative rate", GOOD, ["learners.slam.step.eta=-0.1"], "learners.slam.step.eta", "greater than 0"),
    ("bad tie policy", GOOD + "metrics: {ties: sideways}\n", [], "metrics.ties", "input-order"),
    ("keep probability > 1", GOOD + "protocol: {keep_probability: 1.5}\n", [], "protocol.keep_probability", "less than or equal"),
    ("unknown dataset kind", GOOD.replace("kind: separable", "kind: magic"), [], "dataset.kind", "separable"),
    ("unknown registry dataset", GOOD.replace("{kind: separable, queries: 50}", "{kind: registry, name: msrl, root: x}"), [], "dataset.name", "unknown dataset"),
    ("missing learners", "experiment: x\ndataset: {kind: separable}\n", [], "learners", "Field required"),
    ("bad experiment name", GOOD.replace("experiment: demo", "experiment: ../up"), [], "experiment", "letters"),
    ("bad override syntax", GOOD, ["protocol.passes"], None, "KEY=VALUE"),
    ("ragged cost matrix", GOOD.replace("{type: slam-perceptron}", "{type: ogd, surrogate: ordinal, cost: [[0, 1], [1]]}"), [], "learners.slam.cost", "square"),
    ("negative cost", GOOD.replace("{type: slam-perceptron}", "{type: ogd, surrogate: ordinal, cost: [[0, -1], [1, 0]]}"), [], "learners.slam.cost", ">= 0"),
    ("loss-scaled listnet", GOOD.replace("{type: slam-perceptron}", "{type: listnet, step: {loss_scaled: true}}"), [], "learners.slam.step", "ranking loss"),
    ("unknown weights", GOOD.replace("{type: slam-perceptron}", "{type: slam-perceptron, weights: fancy}"), [], "learners.slam.weights", "paper-fixed"),
    ("bad learner measure", GOOD.replace("{type: slam-perceptron}", "{type: slam-perceptron, measure: ap@5}"), [], "learners.slam.measure", "ndcg@K"),
]


@pytest.mark.parametrize("name,text,overrides,key,msg", BAD, ids=[b[0] for b in BAD])
def test_bad_configs(write, name, text, overrides, key, msg):
    p = write("bad.yaml", text)
    with pytest.raises(ConfigError) as info:
        load_config(p, overrides)
    err = str(info.value)
    assert "\n" not in err and str(p) in err and msg in err
    if key:
        assert info.value.key == key


def test_yaml_python_tag_is_refused(write):
    p = write("tag.yaml", "experiment: !!python/object/apply:os.system ['echo hi']\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(p)


def test_yaml_alias_bomb_is_refused(write):
    bomb = 'a: &a ["x","x"]\nb: &b [*a,*a]\nc: [*b,*b]\n'
    with pytest.raises(ConfigError, match="aliases"):
        load_config(write("bomb.yaml", bomb))


def test_not_a_mapping_and_missing_file(write, tmp_path):
    with pytest.raises(ConfigError, match="mapping"):
        load_config(write("list.yaml", "- a\n- b\n"))
    with pytest.raises(ConfigError, match="empty"):
        load_config(write("empty.yaml", ""))
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "none.yaml")
