"""The papers' checkable theory items: Theorem 5.2's example (top-k paper, Table 1) and
Theorem 9's adversary (perceptron paper, Eq. 25), computed by ``ltr theory``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.learners.online.theory import (AP_ROUND_LOSS, NDCG_ROUND_LOSS, adversary_labels, adversary_matrix,
                                            lower_bound_rounds, query_margin, separating_weights)
from ltr_cli.learners.online.topk_theory import argsorts, calibration_example, normalised_gain
from ltr_cli.learners.registry import ONLINE_TYPES, REGISTRY
from ltr_cli.protocols.adversary import play

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


# --- Theorem 9's adversary ------------------------------------------------------------------

def test_rounds_are_counted_on_the_numbers_as_written():
    assert lower_bound_rounds(1.0, 0.1) == 99  # (1/0.1)^2 is 99.99999999999999 in binary
    assert lower_bound_rounds(2.0, 0.5) == 15
    assert lower_bound_rounds(1.0, 0.7) == 1


def test_the_matrices_and_w_star_of_eq_25():
    X = adversary_matrix(2, 5, 4, 3.0)
    assert X.tolist() == [[0, 0, 3, 0, 0], [0, 0, -3, 0, 0], [3, 0, 0, 0, 0], [3, 0, 0, 0, 0]]
    assert adversary_labels(np.array([0, 2, 1, 3]), 4).tolist() == [0, 1, 0, 0]
    assert adversary_labels(np.array([2, 0, 1, 3]), 4).tolist() == [1, 0, 0, 0]
    w = separating_weights([True, False], 5, 3.0, 0.6)
    assert w.tolist() == pytest.approx([-0.1, 0.1, -0.1, 0.0, 0.0])


# RTop-kF explores with probability gamma and the random baseline draws a permutation every
# round: both randomise, and Theorem 9 is about deterministic algorithms (for them the
# adaptive stream is one fixed data set). Their refusal is tested below. The click learners
# randomise too, and see no labels.
DETERMINISTIC = [(t, ex) for t in ONLINE_TYPES if t not in ("random", "rtopkf")
                 and getattr(REGISTRY[t], "feedback_kind", "labels") == "labels" for ex in REGISTRY[t].examples]


@pytest.mark.parametrize("learner,settings", DETERMINISTIC,
                         ids=[f"{t}-{i}" for i, (t, _) in enumerate(DETERMINISTIC)])
@pytest.mark.parametrize("docs", [2, 4])
def test_every_deterministic_learner_suffers_the_bound(learner, settings, docs):
    radius, margin = 2.0, 0.5  # T = 15
    spec = REGISTRY[learner].model_validate({"type": learner, **settings})
    game = play(lambda seed: spec.build(16, "input-order", np.random.default_rng(seed), 15, "paper"),
                radius, margin, 16, docs)
    assert game.rounds == 15 and game.deterministic
    assert (game.ndcg_loss > 0).all() and (game.ap_loss > 0).all()  # every round a mistake
    assert (game.ndcg_loss >= NDCG_ROUND_LOSS - 1e-12).all() and (game.ap_loss >= AP_ROUND_LOSS - 1e-12).all()
    assert game.ndcg_loss.sum() >= 15 * NDCG_ROUND_LOSS - 1e-9 and game.ap_loss.sum() >= 15 * 0.5 - 1e-9
    # the paper's w* (norm <= 1) separates what the adversary generated with margin exactly gamma
    assert np.linalg.norm(game.w_star) <= 1.0
    for i in range(1, 16):
        y = np.zeros(docs)
        y[game.relevant[i - 1]] = 1.0
        scores = adversary_matrix(i, 16, docs, radius) @ game.w_star
        assert query_margin(scores, y) == pytest.approx(margin, rel=1e-12)
        assert scores[y == 1][0] == pytest.approx(margin / 2) and np.allclose(scores[y == 0], -margin / 2)
    report = game.report()
    assert report["meets_bound"] == {"ndcg": True, "ap": True} and report["separable"]["margin_is_gamma"]


def test_lower_bound_command(tmp_path):
    res = runner.invoke(app, ["theory", "lower-bound", "--learner", "alg3", "--radius", "1", "--margin", "0.25",
                              "--set", "step.eta=0.5", "--json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert out["rounds"] == 15 and out["features"] == 16 and out["docs"] == 3
    assert out["cumulative"]["ndcg_loss"] >= out["bound"]["ndcg"] - 1e-9
    assert out["cumulative"]["ap_loss"] >= out["bound"]["ap"] - 1e-9
    assert out["every_round_a_mistake"] and out["separable"]["margin_is_gamma"]
    assert len(out["per_round"]["ndcg_loss"]) == 15
    res = runner.invoke(app, ["theory", "lower-bound", "--learner", "listnet", "--margin", "0.5", "--docs", "2"])
    assert res.exit_code == 0, res.output
    assert "T = floor(R_X^2/gamma^2) - 1 = 3 rounds" in res.stdout
    assert "cumulative NDCG loss 1.1072 >= T (1 - 1/log2 3) = 1.1072: yes" in res.stdout
    assert "cumulative AP loss 1.5000 >= T / 2 = 1.5000: yes" in res.stdout


@pytest.mark.parametrize("args,message", [
    (["--learner", "random", "--margin", "0.25"], "randomises its rankings"),
    (["--learner", "rtopkf", "--set", "surrogate=kl", "--margin", "0.25"], "gamma_scale=0"),
    (["--learner", "svmmap", "--margin", "0.25"], "is a batch learner"),
    (["--learner", "pdgd", "--margin", "0.25"], "learns from clicks"),
    (["--learner", "dbgd", "--margin", "0.25"], "learns from clicks"),
    (["--learner", "nope", "--margin", "0.25"], "unknown learner type"),
    (["--learner", "alg3", "--margin", "0.25", "--features", "10"], "give at least 16 features"),
    (["--learner", "alg3", "--margin", "1"], "T = floor(R_X^2 / gamma^2) - 1 < 1"),
    (["--learner", "alg3", "--margin", "0.25", "--set", "step.eta=-1"], "step.eta"),
    (["--learner", "alg3", "--margin", "0.25", "--ties", "random"], "--ties"),
])
def test_lower_bound_refusals(args, message):
    res = runner.invoke(app, ["theory", "lower-bound", *args])
    assert res.exit_code == 1
    assert message in res.stderr and "Traceback" not in res.output


def test_rtopkf_without_exploration_is_deterministic():
    res = runner.invoke(app, ["theory", "lower-bound", "--learner", "rtopkf", "--set", "surrogate=squared",
                              "--set", "gamma_scale=0", "--margin", "0.5", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.stdout)["meets_bound"] == {"ndcg": True, "ap": True}


def test_type_two_bounds_bound_the_pair_loss_and_none_is_the_tightest():
    """Direct-optimisation paper, Figure 1 and Theorem 2: every type two bound is at least the
    loss (6) at every score difference, and none is the tightest: each is above another bound
    somewhere ("it is not possible to say which upper bound is the tightest"). The
    exponential is above the hinge everywhere (e^-x >= 1 - x), so not every pair crosses."""
    from ltr_cli.learners.batch.type_two_bounds import BOUNDS, bound, curves, pair_loss

    rng = np.random.default_rng(0)
    x = np.concatenate([rng.normal(0, 3, 2000), [0.0, -0.0, 1.0, 0.5]])
    for gap in (0.05, 0.5, 1.0):
        for name in BOUNDS:
            assert (bound(name, x, gap) >= pair_loss(x, gap)).all(), (name, gap)
    c = curves(0.5)
    for a in BOUNDS:
        assert any((c[a] > c[b] + 1e-12).any() for b in BOUNDS if b != a), a
    assert (c["exponential"] >= c["hinge"]).all()
    assert c["hinge"][np.searchsorted(c["x"], 0.0)] == pytest.approx(0.5)


def test_ltr_theory_bounds_writes_figure_1_and_its_values(tmp_path):
    res = runner.invoke(app, ["theory", "bounds", "--out", str(tmp_path / "plots")])
    assert res.exit_code == 0, res.stderr
    assert sorted(Path(p).name for p in res.stdout.split()) == ["type_two_bounds.pdf", "type_two_bounds.png"]
    data = json.loads(runner.invoke(app, ["theory", "bounds", "--json", "--gap", "0.3"]).stdout)
    assert data["every_bound_at_least_the_loss"] and data["gap"] == 0.3 and len(data["x"]) == 401
    bad = runner.invoke(app, ["theory", "bounds", "--gap", "1.5"])
    assert bad.exit_code == 1 and "must be in (0, 1]" in bad.stderr


@pytest.mark.parametrize("margin,message", [
    ("inf", "--margin inf: R_X and gamma must be positive finite numbers"),
    ("1e-320", "must be at least 2.225e-308, float64's smallest normal number"),
    ("1e-300", "gives T = 1e+600 rounds, more than the 100,000 this game plays"),
    ("0.001", "gives T = 999,999 rounds"),
])
def test_lower_bound_margins_beyond_float64_are_one_line(margin, message):
    """An infinite margin, a subnormal one and one whose T no float64 holds are refused in
    one line (they once raised from Fraction('inf') and from float() of R_X^2/gamma^2)."""
    res = runner.invoke(app, ["theory", "lower-bound", "--learner", "slam-perceptron", "--margin", margin])
    assert res.exit_code == 1, res.output
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("ltr: error: ") and message in res.stderr, res.stderr
