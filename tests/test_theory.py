"""The papers' checkable theory items: Theorem 5.2's example (top-k paper, Table 1),
computed by ``ltr theory``."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.learners.online.topk_theory import argsorts, calibration_example, normalised_gain

runner = CliRunner()


# --- Theorem 5.2's example ------------------------------------------------------------------

def test_the_example_gives_the_papers_numbers_to_four_decimals():
    out = calibration_example()
    p, q = out["strategies"]["p"], out["strategies"]["p_tilde"]
    assert p["expected_relevance"] == pytest.approx([0.45, 0.45, 0.4], abs=1e-12)
    assert q["expected_relevance"] == pytest.approx(p["expected_relevance"], abs=1e-12)
    assert np.round(p["expected_normalised_gain"], 4).tolist() == [0.3533, 0.3920, 0.3226]
    assert np.round(q["expected_normalised_gain"], 4).tolist() == [0.3339, 0.3339, 0.4000]
    assert p["argsorts"] == [[2, 1, 3]]
    assert q["argsorts"] == [[3, 1, 2], [3, 2, 1]]  # documents 1 and 2 tie under p~
    assert out["same_top1_feedback"] and out["argsorts_differ"]
    assert out["matches_paper"] == {"p": True, "p_tilde": True}


def test_normalised_gain_uses_the_ideal_dcg_and_takes_zero_over_zero_as_zero():
    assert normalised_gain(np.zeros(3)).tolist() == [0.0, 0.0, 0.0]
    assert normalised_gain(np.array([1.0, 0.0, 0.0])).tolist() == [1.0, 0.0, 0.0]
    two = normalised_gain(np.array([1.0, 1.0, 0.0]))
    assert two[0] == two[1] == pytest.approx(1.0 / (1.0 + 1.0 / math.log2(3.0)))
    assert argsorts(np.array([0.2, 0.5, 0.2])) == [(2, 1, 3), (2, 3, 1)]


def test_topk_calibration_command():
    res = runner.invoke(app, ["theory", "topk-calibration", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["argsorts_differ"] is True
    res = runner.invoke(app, ["theory", "topk-calibration"])
    assert res.exit_code == 0, res.output
    assert "(0.3533, 0.3920, 0.3226)" in res.stdout and "(0.3339, 0.3339, 0.4000)" in res.stdout
    assert "[3, 1, 2] or [3, 2, 1]" in res.stdout and "0/0, taken as 0" in res.stdout
    assert "match" in res.stdout.splitlines()[-1]
