"""`ltr eval` presets against hand-computed values of the official scripts' rules."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.measures.conventions import CONVENTIONS, evaluate_query, letor_discounts

runner = CliRunner()
L2 = math.log2


def q(conv, labels_in_rank_order, **kw):
    """Evaluate a query whose documents are already in rank order (scores descending)."""
    y = np.array(labels_in_rank_order, float)
    s = -np.arange(len(y), dtype=float)
    return evaluate_query(s, y, CONVENTIONS[conv], **kw)


def test_letor_discounts():
    np.testing.assert_allclose(letor_discounts(4), [1, 1, 1 / L2(3), 1 / L2(4)])


def test_letor4_short_query():
    r = q("letor4", [2, 0, 1])
    assert r["ndcg@1"] == 1.0
    assert r["ndcg@2"] == pytest.approx(3 / 4)
    assert r["ndcg@3"] == pytest.approx((3 + 1 / L2(3)) / 4)
    assert all(r[f"ndcg@{k}"] == 0.0 for k in range(4, 11))  # k > m printed as 0
    assert [r[f"p@{k}"] for k in (1, 2, 3, 4, 10)] == pytest.approx([1, 0.5, 2 / 3, 0.5, 0.2])
    assert r["ap"] == pytest.approx((1 + 2 / 3) / 2)
    assert r["mean_ndcg"] == pytest.approx((1 + 0.75 + (3 + 1 / L2(3)) / 4) / 3)


def test_letor4_label_three_is_gain_zero_not_relevant():
    r = q("letor4", [3, 1])
    assert r["ndcg@1"] == 0.0 and r["ndcg@2"] == 1.0
    assert r["ap"] == pytest.approx(0.5) and r["p@1"] == 0.0


def test_letor4_no_relevant_is_zero():
    r = q("letor4", [0, 0, 0])
    assert r["ndcg@1"] == 0.0 and r["ap"] == 0.0 and r["mean_ndcg"] == 0.0


def test_letor3_omits_positions_beyond_the_list():
    r = q("letor3", [2, 0, 1])
    assert r["ndcg@3"] == pytest.approx((3 + 1 / L2(3)) / 4)
    assert r["ndcg@4"] is None and r["p@16"] is None and "mean_ndcg" not in r
    assert "ndcg@16" in r


def test_mslr_gains_and_relevance():
    r = q("mslr", [3, 1, 4, 0])
    dcg = 7 + 1 + 15 / L2(3)
    ideal = 15 + 7 + 1 / L2(3)
    assert r["ndcg@4"] == pytest.approx(dcg / ideal)
    assert r["ap"] == pytest.approx((1 + 2 / 3) / 2)  # label 1 is not relevant
    assert r["p@2"] == pytest.approx(0.5)


def test_paper_preset():
    r = q("paper", [2, 0, 1])
    assert r["ndcg@2"] == pytest.approx((3 / L2(2)) / (3 / L2(2) + 1 / L2(3)))
    assert r["ndcg@10"] == r["ndcg@3"]  # cut-off min(k, m)
    assert r["p@10"] == pytest.approx(0.2)
    assert q("paper", [0, 0])["ndcg@1"] == 0.0
    assert q("paper", [0, 0], no_relevant="one")["ndcg@1"] == 1.0


def test_ties_keep_file_order_by_default():
    y = np.array([0.0, 2.0])
    s = np.zeros(2)
    assert evaluate_query(s, y, CONVENTIONS["letor4"])["ndcg@1"] == 0.0
    assert evaluate_query(s, y, CONVENTIONS["letor4"], ties="reverse-input")["ndcg@1"] == 1.0


DATA = (
    "2 qid:10 1:1 #docid = a\n0 qid:10 1:2 #docid = b\n1 qid:10 1:3 #docid = c\n"
    "0 qid:2 1:1\n1 qid:2 1:2\n"
)
SCORES = "0.9\n0.5\n0.1\n0.3\n0.3\n"  # qid 2: a tie -> file order (label 0 first)


@pytest.fixture
def eval_files(write):
    return write("data.txt", DATA), write("scores.txt", SCORES)


def test_cli_eval_json_per_query(eval_files):
    data, scores = eval_files
    res = runner.invoke(app, ["eval", str(data), str(scores), "--convention", "letor4",
                              "--json", "--per-query"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.stdout)
    assert list(out["per_query"]) == ["2", "10"]  # numeric qid order, like the scripts
    keys = [f"ndcg@{k}" for k in range(1, 11)] + ["ap"] + [f"p@{k}" for k in range(1, 11)]
    for qid in ("2", "10"):
        assert set(keys) <= set(out["per_query"][qid])
    assert out["per_query"]["2"]["ndcg@1"] == 0.0 and out["per_query"]["10"]["ndcg@1"] == 1.0
    avg_map = (out["per_query"]["2"]["ap"] + out["per_query"]["10"]["ap"]) / 2
    assert out["average"]["ap"] == pytest.approx(avg_map)
    assert out["average"]["ndcg@10"] == 0.0  # both queries are shorter than 10


def test_cli_eval_tables(eval_files):
    data, scores = eval_files
    res = runner.invoke(app, ["eval", str(data), str(scores), "--convention", "letor4", "--per-query"])
    assert res.exit_code == 0
    lines = res.stdout.splitlines()
    assert lines[1].split("\t") == ["qid"] + [f"P@{k}" for k in range(1, 11)] + ["MAP"]
    assert lines[2].startswith("2\t") and lines[4].startswith("Average\t")
    assert "MeanNDCG" in res.stdout


def test_cli_eval_errors(write, eval_files):
    data, _ = eval_files
    short = write("short.txt", "1\n2\n")
    res = runner.invoke(app, ["eval", str(data), str(short)])
    assert res.exit_code == 1 and "has 2 scores but" in res.stderr
    bad = write("bad.txt", "1\nx\n1\n1\n1\n")
    res = runner.invoke(app, ["eval", str(data), str(bad)])
    assert res.exit_code == 1 and "bad.txt:2:" in res.stderr
    real = write("real.txt", "0.5 qid:1 1:1\n1 qid:1 1:1\n")
    two = write("two.txt", "1\n2\n")
    res = runner.invoke(app, ["eval", str(real), str(two), "--convention", "letor4"])
    assert res.exit_code == 1 and "non-negative integer labels" in res.stderr
    res = runner.invoke(app, ["eval", str(real), str(two), "--convention", "paper", "--json"])
    assert res.exit_code == 0


def test_skip_policy_gives_null_json_and_averages_without_nan(write):
    data = write("z.txt", "0 qid:1 1:1\n0 qid:1 1:1\n1 qid:2 1:1\n0 qid:2 1:1\n")
    scores = write("s.txt", "1\n2\n2\n1\n")
    for conv in ("paper", "letor4"):
        res = runner.invoke(app, ["eval", str(data), str(scores), "--convention", conv,
                                  "--no-relevant", "skip", "--json", "--per-query"])
        assert res.exit_code == 0
        out = json.loads(res.stdout, parse_constant=lambda c: pytest.fail(f"non-standard {c}"))
        assert out["per_query"]["1"]["ndcg@1"] is None
        assert out["average"]["ndcg@1"] == 1.0 and out["average"]["ap"] == 1.0


@pytest.mark.parametrize("conv", ["letor3", "letor4", "mslr"])
def test_script_presets_ties_and_all_zero(conv):
    y = np.array([0.0, 2.0, 0.0])
    tied = evaluate_query(np.zeros(3), y, CONVENTIONS[conv])
    assert tied["ndcg@1"] == 0.0 and tied["p@1"] == 0.0  # file order: label 0 first
    assert tied["ap"] == pytest.approx(0.5)
    zero = evaluate_query(np.arange(3.0), np.zeros(3), CONVENTIONS[conv])
    assert zero["ndcg@1"] == zero["ndcg@3"] == zero["ap"] == zero["p@1"] == 0.0


def test_letor3_labels_above_two():
    r = q("letor3", [4, 2, 1])  # label 4: gain 0, not relevant
    assert r["ndcg@1"] == 0.0
    assert r["ndcg@2"] == pytest.approx(3 / 4)
    assert r["ap"] == pytest.approx((1 / 2 + 2 / 3) / 2)
    assert r["p@3"] == pytest.approx(2 / 3) and r["p@4"] is None


def test_mslr_label_one_counts_for_ndcg_not_precision():
    r = q("mslr", [1, 0])
    assert r["ndcg@1"] == 1.0 and r["p@1"] == 0.0 and r["ap"] == 0.0
