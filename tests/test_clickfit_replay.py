"""A fitted click model simulates (``ltr clicks simulate-log --fitted``): it is a browsing walk
the conformance checks accept, a refit of its log gives its parameters back, and a damaged fit
is refused in one line (a UBM fit simulates too: tests/test_click_ubm.py)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.clicklog.fit.replay import FittedModel
from ltr_cli.testing.clicks import CHECKS

runner = CliRunner()


def _ltr(*args):
    return runner.invoke(app, [str(a) for a in args])


def _data(path, queries=4, docs=6):
    rng = np.random.default_rng(0)
    path.write_text("".join(f"{g} qid:{q + 1} 1:{rng.random():.3f}\n" for q in range(queries)
                            for g in rng.permutation([0, 1, 2, 3, 4, 4][:docs])))
    return path


@pytest.mark.parametrize("kind", ["pbm", "cascade", "dcm", "sdbn", "dbn", "ccm"])
def test_every_fitted_walk_passes_the_click_model_checks(tmp_path, kind):
    rng = np.random.default_rng(1)
    model = FittedModel(kind, rng.uniform(0.05, 0.95, 5), rng.uniform(0.05, 0.95, 5), rng.uniform(0.1, 0.9, 3),
                        0.8, (0.7, 0.6, 0.3), "0" * 64)
    for check in CHECKS:
        check(model, tmp_path)


@pytest.mark.parametrize("kind,sim", [("dbn", "dbn"), ("pbm", "pbm")])
def test_a_refit_of_a_fitted_models_log_gives_its_parameters_back(tmp_path, kind, sim):
    data = _data(tmp_path / "d.txt")
    first, again = tmp_path / "a.parquet", tmp_path / "b.parquet"
    assert _ltr("clicks", "simulate-log", data, "--out", first, "--model", sim, "--sessions", 20000, "--shown", 6,
                "--seed", 2).exit_code == 0
    fit = _ltr("clicks", "fit", first, "--model", kind, "--json", "--heldout", 0, "--iterations", 20)
    assert fit.exit_code == 0, fit.output
    (tmp_path / "fit.json").write_text(fit.output)
    res = _ltr("clicks", "simulate-log", data, "--out", again, "--fitted", tmp_path / "fit.json", "--sessions", 20000,
               "--shown", 6, "--seed", 3)
    assert res.exit_code == 0, res.output
    refit = _ltr("clicks", "fit", again, "--model", kind, "--json", "--heldout", 0, "--iterations", 20)
    a, b = json.loads(fit.output)["parameters"], json.loads(refit.output)["parameters"]
    for x, y in zip(a["attractiveness"], b["attractiveness"]):
        assert (x["qid"], x["doc"]) == (y["qid"], y["doc"]) and y["value"] == pytest.approx(x["value"], abs=0.06)
    if kind == "dbn":
        assert b["continuation"] == pytest.approx(a["continuation"], abs=0.03)
    else:
        assert np.array(b["examination"]) == pytest.approx(np.array(a["examination"]), abs=0.06)


def test_a_damaged_fit_is_refused(tmp_path):
    data = _data(tmp_path / "d.txt")
    log = tmp_path / "a.parquet"
    assert _ltr("clicks", "simulate-log", data, "--out", log, "--model", "pbm", "--sessions", 300).exit_code == 0
    pbm = json.loads(_ltr("clicks", "fit", log, "--model", "pbm", "--json", "--iterations", 2).output)
    pbm["parameters"]["attractiveness"][0]["value"] = 1.5
    (tmp_path / "bad.json").write_text(json.dumps(pbm))
    other = json.loads(_ltr("clicks", "fit", log, "--model", "pbm", "--json", "--iterations", 2).output)
    for row in other["parameters"]["attractiveness"]:
        row["qid"] = "elsewhere"
    (tmp_path / "other.json").write_text(json.dumps(other))
    for name, words in (("bad.json", "1.5 is not a probability"),
                        ("other.json", "none of the fit's (qid, doc) pairs"), ("none.json", "no such fitted model")):
        res = _ltr("clicks", "simulate-log", data, "--out", tmp_path / "o.parquet", "--fitted", tmp_path / name,
                   "--sessions", 10)
        assert res.exit_code == 1 and words in res.output and res.output.count("\n") == 1, res.output
        assert not (tmp_path / "o.parquet").exists()


def test_ccm_em_recovers_known_parameters(tmp_path):
    """A CCM with known parameters (written as a fit's JSON) simulates a log; EM on it
    recovers the three continuations and the attractiveness of the documents."""
    data = _data(tmp_path / "d.txt", queries=3)
    rng = np.random.default_rng(4)
    truth = {"tau1": 0.8, "tau2": 0.6, "tau3": 0.3}
    rows = [{"qid": str(q + 1), "doc": d, "value": float(rng.uniform(0.2, 0.8))} for q in range(3) for d in range(6)]
    (tmp_path / "ccm.json").write_text(json.dumps({"model": "ccm", "parameters": {**truth, "attractiveness": rows}}))
    log = tmp_path / "log.parquet"
    assert _ltr("clicks", "simulate-log", data, "--out", log, "--fitted", tmp_path / "ccm.json", "--sessions", 8000,
                "--shown", 6, "--seed", 8).exit_code == 0
    fit = _ltr("clicks", "fit", log, "--model", "ccm", "--json", "--heldout", 0, "--iterations", 25)
    got = json.loads(fit.output)["parameters"]
    for key, value in truth.items():
        assert got[key] == pytest.approx(value, abs=0.06), key
    for want, row in zip(rows, got["attractiveness"]):
        assert row["value"] == pytest.approx(want["value"], abs=0.08)


def test_ubm_recovers_a_position_based_examination(tmp_path):
    """A PBM log is a UBM whose examination ignores the last click: UBM's examination
    relative to rank 1 is 1/rank whatever the rank of the last click above."""
    data = _data(tmp_path / "d.txt")
    log = tmp_path / "log.parquet"
    assert _ltr("clicks", "simulate-log", data, "--out", log, "--model", "pbm", "--sessions", 20000, "--shown", 4,
                "--seed", 6).exit_code == 0
    fit = _ltr("clicks", "fit", log, "--model", "ubm", "--json", "--heldout", 0, "--iterations", 30)
    exam = json.loads(fit.output)["parameters"]["examination"]
    top = exam[0]["no_click_above"]
    for r, row in enumerate(exam, start=1):
        for value in [row["no_click_above"]] + row["last_click_at"]:
            assert value / top == pytest.approx(1 / r, abs=0.08), (r, row)
