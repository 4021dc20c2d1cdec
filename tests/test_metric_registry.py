"""The metric registry: one parser, ERR and RR against hand-computed values, their kernels
against their reference functions, the config's metric lists, CV selection under
cv.convention, and refusals of unknown metric names."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from ltr_cli import kernels
from ltr_cli.cli.app import app
from ltr_cli.config.experiment import parse_config
from ltr_cli.measures.conventions import CONVENTIONS, Measure, bind, evaluate_query
from ltr_cli.errors import ConfigError
from ltr_cli.measures.registry import KINDS, is_metric_name, parse_metric
from ltr_cli.measures.stacked import evaluate_stacked

PAPER, LETOR3, LETOR4, MSLR = (CONVENTIONS[n] for n in ("paper", "letor3", "letor4", "mslr"))


def same(a: float | None, b: float | None) -> bool:
    """Equal bit for bit, NaN equal to NaN, None to None."""
    if a is None or b is None:
        return a is b
    return a == b or (math.isnan(a) and math.isnan(b))


# --- the parser -------------------------------------------------------------------------------

def test_one_spelling_per_metric():
    assert parse_metric("map").name == "ap"
    assert parse_metric("err@10-gmax=2").name == "err@10-gmax=2"
    spec = parse_metric("err@10-gmax=2")
    assert (spec.kind, spec.k, spec.param("gmax")) == ("err", 10, 2)
    assert parse_metric("rr").k is None and parse_metric("rr@5").k == 5
    assert is_metric_name("err@10") and is_metric_name("rr") and is_metric_name("map")
    assert not is_metric_name("errr@10") and not is_metric_name(3)


@pytest.mark.parametrize("bad, says", [
    ("errr@10", "unknown metric 'errr@10'; known: ndcg[@K], ap, p@K"),
    ("err@10-gmax=02", "positive integer"), ("err@10-gmax=0", "positive integer"),
    ("err@10-gmax=2-gmax=3", "one positive integer"), ("err@10-alpha=2", "err parameters: gmax"),
    ("rr-gmax=2", "rr parameters: none"), ("ap@5", "takes no cut-off"), ("p", "needs a cut-off"),
    ("ndcg@01", "without a leading zero"), ("mean_ndcg@3", "takes no cut-off"),
])
def test_the_parser_names_what_is_wrong(bad, says):
    with pytest.raises(ValueError, match=None) as info:
        parse_metric(bad)
    assert says in str(info.value)


def test_every_kind_has_a_reference_and_kernels_use_named_codes():
    from ltr_cli.core import codes

    named = {codes.MEASURE_NDCG, codes.MEASURE_AP, codes.MEASURE_PRECISION, codes.MEASURE_ERR, codes.MEASURE_RR}
    assert {info.kernel for info in KINDS.values() if info.kernel is not None} == named
    assert all(callable(info.reference) and info.help for info in KINDS.values())
    assert Measure("err@10").kernel_row() is not None and Measure("rr").kernel_row() is not None
    assert Measure("eru@5").kernel_row() is None  # Python only
    assert Measure("err@10", conv=LETOR4).kernel_row() is None  # the online kernels compute the paper's gain


# --- ERR and RR by hand --------------------------------------------------------------------------

def test_err_hand_computed_under_each_convention():
    y = np.array([2.0, 0.0, 1.0, 4.0])
    r = np.array([0, 1, 2, 3])
    # paper: gain 2^g - 1, gmax 4 -> R = 3/16, 0, 1/16, 15/16
    R = [3 / 16, 0.0, 1 / 16, 15 / 16]
    full = R[0] + (1 - R[0]) * R[1] / 2 + (1 - R[0]) * (1 - R[1]) * R[2] / 3 \
        + (1 - R[0]) * (1 - R[1]) * (1 - R[2]) * R[3] / 4
    assert Measure("err", conv=PAPER)(r, y) == pytest.approx(full, abs=1e-15)
    assert Measure("err@1", conv=PAPER)(r, y) == 3 / 16
    assert Measure("err@10", conv=PAPER)(r, y) == pytest.approx(full, abs=1e-15)  # k > m: nothing added
    # gmax=2: a label above it counts as 2 (R = 3/4)
    R2 = [3 / 4, 0.0, 1 / 4, 3 / 4]
    expected = R2[0] + (1 - R2[0]) * R2[2] / 3 + (1 - R2[0]) * (1 - R2[2]) * R2[3] / 4
    assert Measure("err-gmax=2", conv=PAPER)(r, y) == pytest.approx(expected, abs=1e-15)
    # letor4: gains {0: 0, 1: 1, 2: 3}, gmax 2; label 4 is outside the table: gain 0
    assert Measure("err", conv=LETOR4)(r, y) == pytest.approx(3 / 4 + (1 / 4) * (1 / 4) / 3, abs=1e-15)
    # mslr: gains 2^g - 1 for 0-4, gmax 4: as the paper on integer grades
    assert Measure("err", conv=MSLR)(r, y) == pytest.approx(full, abs=1e-15)


def test_err_without_relevant_documents_follows_the_policy_where_it_makes_sense():
    y, r = np.zeros(3), np.arange(3)
    assert Measure("err@10", "zero")(r, y) == 0.0
    assert Measure("err@10", "one")(r, y) == 0.0  # not normalised: every ranking's ERR is 0
    assert math.isnan(Measure("err@10", "skip")(r, y))
    assert Measure("err", "zero")(np.zeros(0, dtype=np.int64), np.zeros(0)) == 0.0


def test_rr_hand_computed():
    y = np.array([0.0, 1.0, 2.0])
    assert Measure("rr")(np.array([0, 2, 1]), y) == 0.5
    assert Measure("rr")(np.array([1, 0, 2]), y) == 1.0
    assert Measure("rr", conv=MSLR)(np.array([0, 1, 2]), y) == pytest.approx(1 / 3)  # relevant: label >= 2
    assert Measure("rr", relevance_threshold=1.5)(np.array([0, 1, 2]), y) == pytest.approx(1 / 3)
    assert Measure("rr@1")(np.array([0, 2, 1]), y) == 0.0  # first relevant below the cut-off
    assert Measure("rr@2")(np.array([0, 2, 1]), y) == 0.5
    none = np.zeros(2)
    assert Measure("rr", "zero")(np.arange(2), none) == 0.0
    assert Measure("rr", "one")(np.arange(2), none) == 1.0
    assert math.isnan(Measure("rr", "skip")(np.arange(2), none))


# --- kernels against the reference ----------------------------------------------------------------

labels = st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 5.0, -1.0, 0.5, 2.25]), min_size=0, max_size=30)
ROUND = [Measure(n, policy, threshold) for n in ("err@10", "err", "err@3-gmax=2", "rr", "rr@2", "ndcg@5", "ap")
         for policy in ("zero", "one", "skip") for threshold in (0.0, 1.5)]


@settings(max_examples=300, deadline=None)
@given(labels, st.integers(0, 2**32 - 1))
def test_round_measures_kernel_equals_the_reference(y_list, seed):
    y = np.array(y_list)
    K = kernels.load()
    ranking = np.random.default_rng(seed).permutation(len(y))
    spec = np.array([meas.kernel_row() for meas in ROUND])
    values = K.measures.round_measures(ranking, y, spec, kernels.discounts(max(len(y), 1)))
    for meas, value in zip(ROUND, values):
        assert same(float(value), meas(ranking, y)), meas.name


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(0, 4), min_size=0, max_size=14), st.integers(0, 2**32 - 1)),
                min_size=1, max_size=6),
       st.sampled_from(["paper", "letor3", "letor4", "mslr"]), st.sampled_from(["zero", "one", "skip"]),
       st.sampled_from(["input-order", "reverse-input", "pessimistic"]))
def test_stacked_kernel_equals_the_reference(queries, convention, policy, ties):
    conv = CONVENTIONS[convention]
    ys = [np.array(q, dtype=np.float64) for q, _ in queries]
    ss = [np.random.default_rng(seed).integers(0, 3, len(y)).astype(np.float64) for y, (_, seed) in zip(ys, queries)]
    offsets = np.concatenate([[0], np.cumsum([len(y) for y in ys])]).astype(np.int64)
    measures = bind(["err@10", "err", "err@2-gmax=2", "rr", "rr@3", "neru@5"], conv, policy)
    table = evaluate_stacked(np.concatenate(ss), np.concatenate(ys), offsets, conv, ties, policy,
                             measures=measures)
    for q, (s, y) in enumerate(zip(ss, ys)):
        ref = evaluate_query(s, y, conv, ties, measures=measures)
        row = table.row(q)
        assert all(same(row[k], ref[k]) for k in ref), (row, ref)


def test_online_rounds_with_err_and_rr_equal_the_reference_path(monkeypatch):
    from ltr_cli.data.svmlight import Query
    from tests.conftest import make_learner
    from ltr_cli.protocols.online import run_online

    rng = np.random.default_rng(3)
    queries = [Query(str(i), rng.normal(size=(m, 4)), rng.integers(0, 5, m).astype(np.float64))
               for i, m in enumerate(rng.integers(1, 12, 60))]
    measures = [Measure("err@10"), Measure("rr", "skip"), Measure("err-gmax=2", "one")]

    def run() -> pd.DataFrame:
        return run_online(iter([(1, q) for q in queries]), make_learner("slam-perceptron", 4, measure="ndcg"), measures,
                          np.random.default_rng(0), quiet=True).rounds

    fast = run()
    monkeypatch.setattr(kernels, "ENABLED", False)
    ref = run()
    for col in ("err@10", "rr", "err-gmax=2"):
        np.testing.assert_array_equal(fast[col].to_numpy(), ref[col].to_numpy())
    assert ((fast["err@10"] >= 0) & (fast["err@10"] < 1)).all() and fast["rr"].notna().any()


# --- configs and the CLI -----------------------------------------------------------------------

BASE = {"experiment": "e", "dataset": {"kind": "separable", "queries": 20},
        "learners": {"p": {"type": "slam-perceptron"}}}


def test_config_metric_list_goes_through_the_registry():
    spec = parse_config({**BASE, "metrics": {"names": ["ndcg@10", "err@10", "rr", "err@5-gmax=2"]}})
    assert [m.name for m in spec.metrics.measures()] == ["ndcg@10", "err@10", "rr", "err@5-gmax=2"]
    assert all(m.conv is PAPER for m in spec.metrics.measures())
    with pytest.raises(ConfigError) as info:
        parse_config({**BASE, "metrics": {"names": ["ap", "map"]}})
    assert "metrics.names" in str(info.value) and "listed twice" in str(info.value)
    with pytest.raises(ConfigError) as info:
        parse_config({**BASE, "metrics": {"names": ["ndcg@10", "errr@10"]}})
    text = str(info.value)
    assert "metrics.names" in text and "unknown metric 'errr@10'" in text and "err[@K]" in text
    assert "\n" not in text


def _cv_config(tmp_path: Path, cv: str) -> Path:
    from tests.test_batch_protocol import make_letor

    root = tmp_path / "OHSUMED"
    make_letor(root, queries=6, docs=10)
    config = tmp_path / "cv.yaml"
    config.write_text(f"""experiment: cv
dataset: {{kind: registry, name: letor3-ohsumed, root: {root}, folds: [1, 2]}}
cv: {cv}
learners:
  rsvm: {{type: ranksvm, grid: {{C: [0.01, 10]}}}}
""")
    return config


def test_select_by_err_is_validated_and_scored_under_the_cv_convention(tmp_path):
    from ltr_cli.protocols.batch import _vali_score

    bad = _cv_config(tmp_path, "{select_by: errr@10}")
    res = CliRunner().invoke(app, ["run", str(bad), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 1 and "cv.select_by" in res.stderr and "unknown metric" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1

    class Model:  # scores = the first feature
        def scores(self, X: np.ndarray) -> np.ndarray:
            return X[:, 0]

    X = np.array([[3.0], [2.0], [1.0]])
    vali = [(X, np.array([1.0, 2.0, 0.0])), (X, np.array([0.0, 0.0, 2.0]))]
    # letor3: gains {0: 0, 1: 1, 2: 3}, gmax 2 -> R = 1/4, 3/4, 0 and 0, 0, 3/4
    by_hand = ((1 / 4 + (3 / 4) * (3 / 4) / 2) + (3 / 4) / 3) / 2
    assert _vali_score(Model(), vali, LETOR3, Measure("err@10", conv=LETOR3)) == pytest.approx(by_hand, abs=1e-15)
    paper = _vali_score(Model(), vali, PAPER, Measure("err@10", conv=PAPER))  # gmax 4: other numbers
    assert abs(paper - by_hand) > 0.1

    config = _cv_config(tmp_path, "{select_by: err@10, metrics: [err@10, rr, ap]}")
    res = CliRunner().invoke(app, ["run", str(config), "--out", str(tmp_path / "out2")])
    assert res.exit_code == 0, res.stderr
    assert "test MAP=" in res.stdout
    (run_dir,) = [p.parent for p in (tmp_path / "out2").rglob("summary.json")]
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["selected_by"] == "vali err@10" and list(summary["metrics"]) == ["err@10", "rr", "ap"]
    assert all(0 < t["vali"] < 1 for fold in summary["grid"] for t in fold["tried"])
    assert summary["convention"] == "letor3"
    rows = summary["per_fold"]
    assert all({"vali_err@10", "err@10", "rr", "ap"} <= set(r) for r in rows)
    report = CliRunner().invoke(app, ["report", str(tmp_path / "out2"), "--format", "csv"])
    assert report.exit_code == 0, report.stderr
    head = report.stdout.splitlines()[0].split(",")
    assert head[5:10] == ["err@10", "err@10_std", "rr", "ap", "ap_std"]  # the selected metric's spread too


def test_unknown_eval_metric_is_one_line_naming_the_option(tmp_path):
    data = tmp_path / "d.txt"
    data.write_text("1 qid:1 1:1\n0 qid:1 1:0\n")
    scores = tmp_path / "s.txt"
    scores.write_text("1\n0\n")
    res = CliRunner().invoke(app, ["eval", str(data), str(scores), "--metric", "err@10", "--metric", "mrr"])
    assert res.exit_code == 1
    assert res.stderr.startswith("ltr: error: --metric: unknown metric 'mrr'; known:") and "ltr list" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1
    ok = CliRunner().invoke(app, ["eval", str(data), str(scores), "--metric", "err@10", "--metric", "rr"])
    assert ok.exit_code == 0 and ok.stdout.splitlines()[1] == "qid\tERR@10\tMRR"
    assert ok.stdout.splitlines()[2] == f"Average\t{1 / 16:.4f}\t1.0000"


# --- the shared Yahoo sample, end to end -----------------------------------------------------------

from tests.conftest import YAHOO_SAMPLE as YAHOO, absent  # noqa: E402


def _independent(labels: list[list[int]], scores: list[list[float]], gmax: int, relevant_from: int) -> tuple:
    """ERR@10 and RR from scratch: stable sort on -score (ties in file order), plain Python."""
    errs, rrs = [], []
    for y, s in zip(labels, scores):
        order = sorted(range(len(y)), key=lambda i: -s[i])
        err, keep = 0.0, 1.0
        for pos, i in enumerate(order[:10], start=1):
            stop = (2 ** y[i] - 1) / 2 ** gmax
            err += keep * stop / pos
            keep *= 1 - stop
        errs.append(err)
        first = next((pos for pos, i in enumerate(order, start=1) if y[i] >= relevant_from), None)
        rrs.append(0.0 if first is None else 1 / first)
    return sum(errs) / len(errs), sum(rrs) / len(rrs), errs, rrs


@pytest.mark.skipif(not (YAHOO / "rank.test").is_file(), reason=absent("data/yahoo-sample-lightgbm"))
@pytest.mark.parametrize("convention, relevant_from", [("paper", 1), ("mslr", 2)])
def test_eval_err_and_rr_on_the_yahoo_sample_agree_with_a_computation_from_scratch(tmp_path, convention,
                                                                                   relevant_from):
    lines = (YAHOO / "rank.test").read_text().splitlines()
    sizes = [int(n) for n in (YAHOO / "rank.test.query").read_text().split()]
    rng = np.random.default_rng(11)
    flat = [round(float(v), 1) for v in rng.normal(size=len(lines))]  # rounded: many ties
    (tmp_path / "scores.txt").write_text("".join(f"{v}\n" for v in flat))
    labels, scores, start = [], [], 0
    for n in sizes:
        labels.append([int(line.split()[0]) for line in lines[start:start + n]])
        scores.append(flat[start:start + n])
        start += n
    err, rr, errs, rrs = _independent(labels, scores, 4, relevant_from)
    res = CliRunner().invoke(app, [
        "eval", str(YAHOO / "rank.test"), str(tmp_path / "scores.txt"), "--group", str(YAHOO / "rank.test.query"),
        "--metric", "err@10", "--metric", "rr", "--json", "--per-query", "--convention", convention])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["queries"] == len(sizes) == 50 and out["metrics"] == ["err@10", "rr"]
    assert abs(out["average"]["err@10"] - err) <= 1e-12 and abs(out["average"]["rr"] - rr) <= 1e-12
    per_query = list(out["per_query"].values())
    assert all(abs(q["err@10"] - e) <= 1e-12 and abs(q["rr"] - r) <= 1e-12
               for q, e, r in zip(per_query, errs, rrs))


def test_select_by_is_read_by_the_registry():
    from ltr_cli.errors import LtrError
    from ltr_cli.reports.selection import select

    with pytest.raises(LtrError, match=r"^--select-by: unknown metric 'mrr'; known: .*'ltr list'"):
        select([], "mrr", 10)
    assert select([], "map", 10) == []


def test_err_gmax_beyond_float64_is_one_line_and_1023_is_a_number(tmp_path):
    """ERR divides each gain by 2^gmax: gmax 1024 and above (2^1024 overflows float64) is
    refused in one line naming the metric, by ``ltr eval`` and in a config (once an
    OverflowError from both); gmax 1023 is computed, on both paths."""
    data, scores = tmp_path / "d.txt", tmp_path / "s.txt"
    data.write_text("2 qid:1 1:1\n0 qid:1 1:0.5\n1 qid:1 1:0.2\n")
    scores.write_text("0.3\n0.2\n0.1\n")
    for gmax in (1024, 5000):
        res = CliRunner().invoke(app, ["eval", str(data), str(scores), "--metric", f"err@10-gmax={gmax}"])
        assert res.exit_code == 1 and res.stderr.count("\n") == 1, res.output
        assert f"metric 'err@10-gmax={gmax}': gmax must be at most 1023" in res.stderr
    res = CliRunner().invoke(app, ["eval", str(data), str(scores), "--metric", "err@10-gmax=1023", "--json"])
    assert res.exit_code == 0, res.output
    # R = (2^g - 1) / 2^1023 for labels 2, 0, 1 in that order
    expected = 3 / 2.0 ** 1023 + (1 - 3 / 2.0 ** 1023) * (1 / 2.0 ** 1023) / 3
    assert json.loads(res.stdout)["average"]["err@10-gmax=1023"] == expected
    y = np.array([2.0, 0.0, 1.0])
    meas = Measure("err@10-gmax=1023", conv=CONVENTIONS["paper"])
    assert meas.kernel_row() is not None and meas(np.array([0, 1, 2]), y) == expected
    with pytest.raises(ConfigError, match="metrics.names.*gmax must be at most 1023"):
        parse_config({"experiment": "x", "dataset": {"kind": "separable", "queries": 5},
                      "learners": {"s": {"type": "slam-perceptron"}}, "metrics": {"names": ["err@10-gmax=1024"]}})
