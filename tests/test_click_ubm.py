"""The UBM simulator: the named ``ubm`` and a fitted UBM pass the click-model checks, a UBM
fit of a simulated UBM log gives its examination back, and ``simulate-log --fitted`` takes a
UBM fit."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.clicklog.fit.replay import FittedUBM
from ltr_cli.clicks.base import CLICK_MODELS
from ltr_cli.clicks.browsing import distance_exam
from ltr_cli.clicks.spec import build_model
from ltr_cli.testing.clicks import CHECKS, expand

runner = CliRunner()


def _ltr(*args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_the_named_and_a_fitted_ubm_pass_the_click_model_checks(tmp_path, check):
    rng = np.random.default_rng(1)
    gamma = np.triu(rng.uniform(0.1, 0.9, (3, 4)), -3)
    for _, model in expand("ubm", CLICK_MODELS["ubm"]) + [("fitted", FittedUBM(rng.uniform(0.05, 0.95, 5), gamma,
                                                                                "0" * 64))]:
        check(model, tmp_path)


def test_the_named_ubm_examines_by_the_distance_to_the_last_click():
    model = build_model("ubm", 5, None, 1.0)
    # two top-grade documents: the first always clicked, the second at distance 1 from it
    assert model.marginal([4, 4]) == pytest.approx([1.0, 1.0])
    # a grade-0 document between: never clicked, so the third is at distance 2 from the click at 1
    assert model.marginal([4, 0, 4]) == pytest.approx([1.0, 0.0, 0.5])
    assert build_model("pbm", 5, None, 1.0).marginal([4, 0, 4]) == pytest.approx([1.0, 0.0, 1 / 3])


def _data(path, queries=6, docs=6):
    rng = np.random.default_rng(0)
    path.write_text("".join(f"{g} qid:{q + 1} 1:{rng.random():.3f}\n" for q in range(queries)
                            for g in rng.permutation([1, 2, 3, 4, 4, 2][:docs])))
    return path


def _relative(exam):
    """UBM's fitted examination as (K, K + 1) relative to rank 1 without a click above."""
    k = len(exam)
    g = np.full((k, k + 1), np.nan)
    for r, row in enumerate(exam):
        g[r, k] = row["no_click_above"]
        g[r, :r] = row["last_click_at"]
    return g / g[0, k]


def test_a_ubm_fit_of_a_simulated_ubm_log_gives_its_examination_back(tmp_path):
    data, log = _data(tmp_path / "d.txt"), tmp_path / "a.parquet"
    res = _ltr("clicks", "simulate-log", data, "--out", log, "--model", "ubm", "--eta", 1, "--sessions", 30000,
               "--shown", 4, "--policy", "shuffle", "--seed", 2)
    assert res.exit_code == 0, res.output
    fit = _ltr("clicks", "fit", log, "--model", "ubm", "--json", "--heldout", 0, "--iterations", 40)
    assert fit.exit_code == 0, fit.output
    got = _relative(json.loads(fit.output)["parameters"]["examination"])
    want = distance_exam(4, 1.0)
    want = np.where(np.isnan(got), np.nan, want / want[0, 4])
    assert np.nanmax(np.abs(got - want)) < 0.06, (got, want)


def test_simulate_log_fitted_takes_a_ubm_fit_and_a_refit_gives_it_back(tmp_path):
    data, first, again = _data(tmp_path / "d.txt"), tmp_path / "a.parquet", tmp_path / "b.parquet"
    assert _ltr("clicks", "simulate-log", data, "--out", first, "--model", "ubm", "--sessions", 20000, "--shown", 4,
                "--policy", "shuffle", "--seed", 2).exit_code == 0
    fit = _ltr("clicks", "fit", first, "--model", "ubm", "--json", "--heldout", 0, "--iterations", 30)
    (tmp_path / "fit.json").write_text(fit.output)
    res = _ltr("clicks", "simulate-log", data, "--out", again, "--fitted", tmp_path / "fit.json", "--sessions", 20000,
               "--shown", 4, "--policy", "shuffle", "--seed", 3)
    assert res.exit_code == 0 and "sessions" in res.output, res.output
    refit = _ltr("clicks", "fit", again, "--model", "ubm", "--json", "--heldout", 0, "--iterations", 30)
    a, b = json.loads(fit.output)["parameters"], json.loads(refit.output)["parameters"]
    ga, gb = _relative(a["examination"]), _relative(b["examination"])
    assert np.nanmax(np.abs(ga - gb)) < 0.08, (ga, gb)


def test_a_damaged_ubm_fit_is_refused_in_one_line(tmp_path):
    data, log = _data(tmp_path / "d.txt"), tmp_path / "a.parquet"
    assert _ltr("clicks", "simulate-log", data, "--out", log, "--model", "ubm", "--sessions", 300).exit_code == 0
    rec = json.loads(_ltr("clicks", "fit", log, "--model", "ubm", "--json", "--iterations", 2).output)
    rec["parameters"]["examination"][2]["last_click_at"] = [0.5]
    (tmp_path / "bad.json").write_text(json.dumps(rec))
    res = _ltr("clicks", "simulate-log", data, "--out", tmp_path / "o.parquet", "--fitted", tmp_path / "bad.json",
               "--sessions", 10)
    assert res.exit_code == 1 and "parameters.examination[2]" in res.output and res.output.count("\n") == 1, res.output
    assert not (tmp_path / "o.parquet").exists()
