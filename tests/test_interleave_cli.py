"""``ltr interleave`` end to end: two runs made by ``ltr run``, a small generated file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.protocols.interleave import sign_test
from tests.conftest import REPO

runner = CliRunner()
DEMO = REPO / "configs" / "simulated_separable.yaml"


def ltr(*args, code=0):
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == code, (res.stdout, res.stderr)
    return res


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """Two listnet runs (30 rounds and 2), a model that ranks as the first one reversed,
    and 8 queries of 6 documents labelled 0-2 by the features' sum, as the demo's data."""
    tmp = tmp_path_factory.mktemp("interleave")
    runs = [Path(ltr("run", DEMO, "--out", tmp / "runs", "-q", "--learner", "listnet",
                     "--set", f"protocol.max_rounds={r}").stdout.strip()) for r in (30, 2)]
    worse = tmp / "reversed"
    worse.mkdir()
    models = json.loads((runs[0] / "models.json").read_text())
    models["final"]["w"] = [-w for w in models["final"]["w"]]
    (worse / "models.json").write_text(json.dumps(models))
    rng = np.random.default_rng(1)
    lines = []
    for q in range(8):
        X = np.round(rng.normal(size=(6, 10)), 3)
        for x, label in zip(X, np.digitize(X.sum(axis=1), [-1.0, 1.5])):
            lines.append(f"{label} qid:{q + 1} " + " ".join(f"{j + 1}:{v}" for j, v in enumerate(x)))
    data = tmp / "test.txt"
    data.write_text("\n".join(lines) + "\n")
    return runs, worse, data


def run_json(*args):
    return json.loads(ltr("interleave", *args, "--json").stdout)


def _two_ranker_methods() -> list[str]:
    """The built-in methods that compare two rankers, from the registry."""
    from ltr_cli import plugins
    from ltr_cli.interleaving.methods import METHODS

    return [n for n in plugins.names("interleaving", built_in=True) if METHODS[n].interleaves]


@pytest.mark.parametrize("method", _two_ranker_methods())
def test_a_model_against_itself_ties_every_impression(setup, method):
    (a, _), _, data = setup
    rec = run_json(a, a, data, "--model", "informational", "--impressions", 50, "--method", method, "--shown", 4)
    assert (rec["wins"], rec["losses"], rec["ties"]) == (0, 0, 50)
    assert rec["p_value"] == 1.0 and rec["online_verdict"] == "tie" and rec["agrees"]


@pytest.mark.parametrize("method", _two_ranker_methods())
def test_a_model_beats_its_reverse_and_the_verdicts_agree(setup, method):
    (a, _), worse, data = setup
    rec = run_json(a, worse, data, "--model", "navigational", "--impressions", 200, "--method", method,
                   "--seed", 3)
    assert rec["wins"] + rec["losses"] + rec["ties"] == 200 and rec["clicks"]["grades"] == 3
    assert rec["wins"] > 3 * rec["losses"] and rec["p_value"] < 1e-6
    assert rec["p_value"] == sign_test(rec["wins"], rec["losses"])
    assert rec["offline"]["A"] > rec["offline"]["B"] and rec["online_verdict"] == "A" and rec["agrees"]


def test_offline_ndcg_is_ltr_evals_and_a_seed_repeats(setup, tmp_path):
    (a, b), _, data = setup
    args = (a, b, data, "--model", "perfect", "--impressions", 100, "--seed", 5)
    rec = run_json(*args)
    assert rec == run_json(*args)
    for run, side in ((a, "A"), (b, "B")):
        scores = tmp_path / f"{side}.txt"
        ltr("score", run, data, "--out", scores)
        ev = json.loads(ltr("eval", data, scores, "--metric", "ndcg@10", "--json").stdout)
        assert rec["offline"][side] == pytest.approx(ev["average"]["ndcg@10"], abs=1e-12)
    assert rec["agrees"] == (rec["online_verdict"] == rec["offline"]["verdict"])
    text = ltr("interleave", *args).stdout
    assert f"wins (A preferred) {rec['wins']}  losses {rec['losses']}  ties {rec['ties']}" in text


def test_the_sign_test_is_the_exact_binomial():
    assert sign_test(0, 0) == 1.0
    assert sign_test(5, 0) == pytest.approx(2 / 32)
    assert sign_test(3, 3) == pytest.approx(1.0)


@pytest.mark.parametrize("extra,message", [
    (["--impressions", "0"], "--impressions 0: give 1 to"),
    (["--impressions", "-3"], "--impressions -3"),
    (["--impressions", "5", "--model", "nav"], "unknown click model"),
    (["--impressions", "5", "--method", "pairwise-preference"], "is a multileaving method"),
    (["--impressions", "5", "--method", "optimized"], "unknown method"),
    (["--impressions", "5", "--grades", "2"], "outside the 2-grade click table"),
])
def test_bad_input_is_one_line(setup, extra, message):
    (a, b), _, data = setup
    args = [a, b, data, "--model", "perfect", *extra]
    if "--impressions" in extra and "--model" in extra:
        args = [a, b, data, *extra]
    res = ltr("interleave", *args, code=1)
    assert message in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_a_missing_run_folder_is_one_line(setup, tmp_path):
    (a, _), _, data = setup
    res = ltr("interleave", a, tmp_path / "nope", data, "--model", "perfect", "--impressions", 5, code=1)
    assert "nope" in res.stderr and len(res.stderr.strip().splitlines()) == 1
