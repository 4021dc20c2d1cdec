"""Config validation: one-line errors with the key path; safe YAML; overrides."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ltr_cli.config.experiment import load_config
from ltr_cli.errors import ConfigError
from ltr_cli.core.yamlio import YamlProblem, dump_yaml, parse_yaml

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


# --- strict YAML (YAML 1.2 core schema, no repeated keys) and strict types ---------------------

YAML12 = [
    ("1_000", "1_000"), ("1e11", 1e11), ("1e-3", 0.001), (".5", 0.5), ("1.", 1.0), ("+7", 7),
    ("010", 10), ("0o17", 15), ("0x1F", 31), ("0b101", "0b101"), ("1:30", "1:30"),
    ("yes", "yes"), ("no", "no"), ("on", "on"), ("off", "off"), ("y", "y"), ("true", True),
    ("False", False), ("~", None), ("null", None), ("", None), (".inf", float("inf")),
    ("-.Inf", float("-inf")), ("2001-01-01", "2001-01-01"), ("\u0661", "\u0661"), ('"1e3"', "1e3"),
]


@pytest.mark.parametrize("text,value", YAML12, ids=[t or "empty" for t, _ in YAML12])
def test_scalars_follow_yaml_1_2(text, value):
    got = parse_yaml(f"a: {text}")["a"]
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize("text,line,problem", [
    ("a: 1\nb: 2\na: 3\n", 3, "duplicate key 'a' (first at line 1)"),
    ("x:\n  a: 1\n  a: 2\n", 3, "duplicate key 'a' (first at line 2)"),
    ("- {a: 1, a: 2}\n", 1, "duplicate key 'a'"),
    ("a: !!int 1_000\n", 1, "not a YAML 1.2 integer"),
    ("a: !!bool yes\n", 1, "not a boolean"),
    ("a: !!binary aGk=\n", 1, "not valid YAML"),
    ("a: !!timestamp 2001-01-01\n", 1, "not valid YAML"),
    ("a: !!set {x: null}\n", 1, "not valid YAML"),
    ("? [a]\n: 1\n", 1, "plain value"),
])
def test_refused_yaml(text, line, problem):
    with pytest.raises(YamlProblem) as info:
        parse_yaml(text)
    assert info.value.line == line and problem in info.value.problem


def test_duplicate_keys_name_both_lines(write):
    p = write("c.yaml", GOOD + "seed: 1\nprotocol: {passes: 2}\nseed: 2\n")
    with pytest.raises(ConfigError) as info:
        load_config(p)
    assert str(info.value) == f"{p}:8: duplicate key 'seed' (first at line 6); keep one of them"


def test_set_values_are_strict_yaml_too(write):
    p = write("c.yaml", GOOD)
    with pytest.raises(ConfigError, match=r"^--set dataset: duplicate key 'queries'"):
        load_config(p, ["dataset={kind: separable, queries: 5, queries: 6}"])
    for override, key in (("seed=true", "seed"), ("protocol.shuffle=yes", "protocol.shuffle"),
                          ("protocol.max_rounds=1_000", "protocol.max_rounds"),
                          ("dataset.docs=1e2", "dataset.docs")):
        with pytest.raises(ConfigError) as info:
            load_config(p, [override])
        assert info.value.key == key
    spec = load_config(p, ["learners.slam.step.eta=1e-3", "protocol.max_rounds=0x10", "seed=010"])
    assert spec.learners["slam"].step.eta == 0.001 and spec.protocol.max_rounds == 16 and spec.seed == 10


STRICT = [
    ("seed: true", "seed", "got True; true/false is a boolean"),
    ("seed: 1.0", "seed", "digits only, e.g. 1"),
    ('seed: "1"', "seed", "unquoted"),
    ("protocol: {shuffle: 1}", "protocol.shuffle", "valid boolean"),
    ("protocol: {keep_probability: true}", "protocol.keep_probability", "valid number"),
    ("metrics: {eru_alpha: '5'}", "metrics.eru_alpha", "valid number"),
    ("seeds: [0, true]", "seeds.1", "valid integer"),
    ("description: 5", "description", "quote it"),
]


@pytest.mark.parametrize("line,key,msg", STRICT, ids=[s[0] for s in STRICT])
def test_types_are_strict(write, line, key, msg):
    with pytest.raises(ConfigError) as info:
        load_config(write("c.yaml", GOOD + line + "\n"))
    assert info.value.key == key and msg in str(info.value)


def test_floats_take_integers_and_paths_take_strings(write):
    spec = load_config(write("c.yaml", GOOD + "protocol: {keep_probability: 1}\noutput: out\n"
                             "metrics: {eru_alpha: 6}\n"))
    assert spec.protocol.keep_probability == 1.0 and str(spec.output) == "out" and spec.metrics.eru_alpha == 6


@pytest.mark.parametrize("name", ["../x", "a/b", "demo\n", ".demo", "-demo", "x" * 101, "caf\u00e9", "a b", ""])
def test_names_that_become_paths(write, name):
    with pytest.raises(ConfigError) as info:
        load_config(write("c.yaml", GOOD), [f"experiment={json.dumps(name)}"])
    assert info.value.key == "experiment" and "ASCII letters, digits, '.', '_' or '-'" in str(info.value)
    with pytest.raises(ConfigError) as info:
        load_config(write("d.yaml", "experiment: demo\ndataset: {kind: separable}\n"
                          f"learners: {{{json.dumps(name)}: {{type: alg3}}}}\n"))
    assert info.value.key == "learners" and "ASCII letters" in str(info.value)


def test_names_at_the_limits(write):
    for name in ("x" * 100, "_x", "a.b-c_d", "0"):
        assert load_config(write("c.yaml", GOOD), [f"experiment={json.dumps(name)}"]).experiment == name


@pytest.mark.parametrize("metric", ["ndcg@\u0661", "ndcg@01", "ndcg@\u00b2", "p@\uff11", "ndcg@1 ", "ndcg@+1",
                                    "ndcg@", "ndcg@1" + "0" * 12])
def test_metric_cutoffs_are_ascii_digits(write, metric):
    with pytest.raises(ConfigError) as info:
        load_config(write("c.yaml", GOOD), [f"metrics.names=[{json.dumps(metric)}]"])
    assert info.value.key == "metrics.names"


def test_learner_and_batch_measures_are_ascii(write):
    from ltr_cli.learners.batch.common import measure_fn
    from ltr_cli.learners.online.base import parse_measure

    for bad in ("ndcg@\u0661", "ndcg@01", "ndcg@0"):
        with pytest.raises(ValueError):
            parse_measure(bad)
        with pytest.raises(ValueError):
            measure_fn(bad)
    assert parse_measure("ndcg@10") == "ndcg@10"
    p = write("c.yaml", "experiment: x\ndataset: {kind: registry, name: letor3-ohsumed, root: r}\ncv: {}\n"
              "learners: {a: {type: adarank, measure: 'ndcg@\u0661'}}\n")
    with pytest.raises(ConfigError) as info:
        load_config(p)
    assert info.value.key == "learners.a.measure"


_json_like = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False),
              st.text(max_size=12), st.sampled_from(["1e3", "yes", "1_000", "0x1F", "1:30", "~", "null",
                                                     "2001-01-01", ".5", "True", "off", "<<", "=", ""])),
    lambda kids: st.one_of(st.lists(kids, max_size=4), st.dictionaries(st.text(max_size=8), kids, max_size=4)),
    max_leaves=20)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(max_size=8), _json_like, max_size=5))
def test_dumped_yaml_reads_back_identically(data):
    """What a run's config.yaml is written with reads back unchanged, with this loader and
    with PyYAML's YAML 1.1 safe_load."""
    import yaml

    text = dump_yaml(data)
    assert parse_yaml(text) == data
    assert yaml.safe_load(text) == data
