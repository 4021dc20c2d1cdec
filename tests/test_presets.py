"""The literature's learner names as presets: ``type: p-dbgd`` is ``type: dbgd`` with the
comparison and candidates of P-DBGD, the config's own keys win, the run id is the
spelled-out config's, and ``ltr list`` and the unknown-type error name the presets."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.config.experiment import load_config
from ltr_cli.errors import LtrError
from ltr_cli.learners.presets import PRESETS, expand

HEAD = ("experiment: clicks\nseed: 0\n"
        "dataset: {kind: shaped, like: mslr-web10k, queries: 20, docs_per_query: 12}\n"
        "protocol: {feedback: clicks, max_rounds: 40, clicks: {model: navigational}}\n"
        "learners:\n")


def _spec(tmp_path: Path, learners: str, name: str = "c.yaml"):
    cfg = tmp_path / name
    cfg.write_text(HEAD + learners)
    return load_config(cfg)


def test_a_preset_is_its_spelled_out_config_with_the_same_run_id(tmp_path):
    named = _spec(tmp_path, "  a: {type: P-DBGD}\n  m: {type: p-mgd}\n  t: {type: td-mgd}\n", "named.yaml")
    spelled = _spec(tmp_path, "  a: {type: dbgd, comparison: probabilistic, candidates: 1}\n"
                              "  m: {type: dbgd, comparison: probabilistic, candidates: 49}\n"
                              "  t: {type: dbgd, comparison: team-draft, candidates: 9}\n", "spelled.yaml")
    for name in ("a", "m", "t"):
        assert named.learners[name] == spelled.learners[name]
        assert named.run_id(name) == spelled.run_id(name)
    assert named.learners["a"].comparison == "probabilistic" and named.learners["m"].candidates == 49


def test_the_configs_own_keys_win_over_the_preset(tmp_path):
    spec = _spec(tmp_path, "  m: {type: p-mgd, candidates: 9, learning_rate: 0.05}\n")
    assert spec.learners["m"].candidates == 9 and spec.learners["m"].learning_rate == 0.05
    assert spec.learners["m"].comparison == "probabilistic"
    assert expand({"type": "td-dbgd", "comparison": "probabilistic"})["comparison"] == "probabilistic"
    assert expand({"type": "ranksvm"}) == {"type": "ranksvm"} and expand("x") == "x"


def test_an_unknown_type_lists_the_presets_too(tmp_path):
    with pytest.raises(LtrError) as err:
        _spec(tmp_path, "  a: {type: p-dbdg}\n")
    assert "learners.a.type" in str(err.value) and "p-dbgd, td-dbgd, p-mgd" in str(err.value)


def test_ltr_list_names_each_preset_and_its_settings():
    out = CliRunner().invoke(app, ["list"]).stdout
    section = out.split("presets:\n", 1)[1].split("\ndatasets:", 1)[0]
    for name, preset in PRESETS.items():
        assert f"  {name}" in section and f"type: {preset.type}" in section
    assert "comparison: probabilistic, candidates: 49" in section
