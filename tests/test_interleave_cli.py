"""``ltr interleave`` end to end: two runs made by ``ltr run``, a small generated file."""

from __future__ import annotations

import json
import re
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


# --- each model reads DATA as its own run read its training data ---------------------------------

def _as_trained(src: Path, dest: Path, dataset: dict, shift: int = 0) -> Path:
    """A copy of run ``src`` whose config says it read ``dataset``; ``shift`` leading
    columns of zero weight (the model of a 0-based reading of a 1-based file)."""
    from ltr_cli.core.yamlio import dump_yaml, parse_yaml

    dest.mkdir(parents=True)
    models = json.loads((src / "models.json").read_text())
    models["final"]["w"] = [0.0] * shift + models["final"]["w"]
    models["final"]["features"] = models["final"]["features"] + shift
    (dest / "models.json").write_text(json.dumps(models))
    config = parse_yaml((src / "config.yaml").read_text())
    config["dataset"] = dataset
    (dest / "config.yaml").write_text(dump_yaml(config))
    return dest


def _files(data, **settings):
    return {"kind": "files", "files": [str(data)], "features": 10, **settings}


def test_each_model_reads_data_with_its_own_runs_index_base(setup, tmp_path):
    """B learnt the same weights from a 0-based reading of the 1-based file (one column of
    zeros first): read with its own index base it is A's equal; read with A's it was scored
    one feature off."""
    (a, _), _, data = setup
    b = _as_trained(a, tmp_path / "zero-based", _files(data, features=11, index_base=0), shift=1)
    for first, second in ((a, b), (b, a)):
        rec = run_json(first, second, data, "--model", "navigational", "--impressions", 200, "--seed", 2)
        assert (rec["wins"], rec["losses"], rec["ties"]) == (0, 0, 200), rec
        assert rec["offline"]["A"] == rec["offline"]["B"] and rec["agrees"]


def test_each_model_reads_data_with_its_own_runs_other_settings(setup, tmp_path):
    """Runs trained with ``null_value: 0`` read DATA's NULL values as 0, as they did."""
    (a, _), _, data = setup
    nulls = tmp_path / "nulls.txt"
    nulls.write_text(re.sub(r" 3:\S+", " 3:NULL", data.read_text(), count=1))
    assert nulls.read_text().count("NULL") == 1
    one = _as_trained(a, tmp_path / "one", _files(nulls, null_value=0.0))
    two = _as_trained(a, tmp_path / "two", _files(nulls, null_value=0.0))
    rec = run_json(one, two, nulls, "--model", "perfect", "--impressions", 20)
    assert rec["ties"] == 20
    res = ltr("interleave", a, two, nulls, "--model", "perfect", "--impressions", 5, code=1)
    assert "NULL" in res.stderr and f"RUN_A (final weights of {a})" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def test_runs_that_read_other_queries_from_data_are_refused_naming_both(setup, tmp_path):
    (a, _), _, data = setup
    commented = tmp_path / "commented.txt"
    commented.write_text("".join(f"{line} # {100 + i // 6}\n" for i, line in enumerate(data.read_text().splitlines())))
    tokens = _as_trained(a, tmp_path / "tokens", _files(commented, qid="token"))
    comments = _as_trained(a, tmp_path / "comments", _files(commented, qid="comment"))
    res = ltr("interleave", tokens, comments, commented, "--model", "perfect", "--impressions", 5, code=1)
    line = res.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert "read different queries" in line and "qid source token" in line and "qid source comment" in line
    assert str(tokens) in line and str(comments) in line


def test_a_file_wider_than_a_model_names_the_run_the_model_and_both_counts(setup, tmp_path):
    (a, b), _, data = setup
    wide = tmp_path / "wide.txt"
    wide.write_text("".join(f"{line} 11:0.5 12:0.25\n" for line in data.read_text().splitlines()))
    res = ltr("interleave", a, b, wide, "--model", "perfect", "--impressions", 5, code=1)
    line = res.stderr.strip()
    assert len(line.splitlines()) == 1, line
    assert f"RUN_A (final weights of {a}) has 10" in line and "has 12 features" in line


def test_a_run_whose_data_settings_cannot_be_read_is_one_line(setup, tmp_path):
    (a, _), _, data = setup
    odd = _as_trained(a, tmp_path / "odd", _files(data, index_base=7))
    res = ltr("interleave", a, odd, data, "--model", "perfect", "--impressions", 5, code=1)
    line = res.stderr.strip()
    assert len(line.splitlines()) == 1 and f"{odd / 'config.yaml'}: dataset.files.index_base" in line, line


def test_a_model_kept_as_float32_rows_scores_rows_rounded_to_float32(tmp_path):
    from ltr_cli.data.options import ReaderOptions
    from ltr_cli.protocols.interleave import Ranker, Reading, rank_by

    data = tmp_path / "d.txt"
    data.write_text("1 qid:1 1:0.1 2:0.3\n0 qid:1 1:0.2 2:0.7\n")
    seen = []

    class Scorer:
        def scores(self, X):
            seen.append(X.dtype)
            return X.sum(axis=1)

    for storage in ("float32", "float64"):
        rank_by(Ranker("RUN_A", tmp_path, "final", Scorer(), 2, Reading(ReaderOptions(n_features=2), storage)), data)
    assert seen == [np.float32, np.float64]
