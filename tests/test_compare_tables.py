"""``ltr compare --format markdown|csv|latex`` (learners x metrics, means with 95% intervals,
significance letters, a caption naming data, test, adjustment, alpha and convention),
``--on`` and ``--adjust``; the statistics exactly (the randomization test enumerated by
hand, Holm and Benjamini-Hochberg against hand-computed values, the interval against
scipy's t); the report's spread of the selected metric; tables that call a partial read a
sample and name their convention in every format."""

from __future__ import annotations

import csv
import io
import itertools
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.learners.examples import write_data
from ltr_cli.measures.conventions import CONVENTIONS
from ltr_cli.reports.significance import adjust, benjamini_hochberg, holm, mean_interval, paired_test
from tests.test_batch_protocol import make_letor

runner = CliRunner()
LETOR3 = CONVENTIONS["letor3"].title()
SAMPLE = "letor3-ohsumed sample (18 of 106 queries)"


# --- the statistics, exactly ----------------------------------------------------------------

def test_the_randomization_test_enumerates_every_sign_flip_of_a_small_case():
    """Differences 1, -2, 3, 4 (mean 1.5): of the 16 sign flips, those whose mean is at
    least as far from 0 flip a subset of {1, 2, 3, 4} summing to at most 2 or at least 8:
    {}, {1}, {2}, {1,3,4}, {2,3,4}, {1,2,3,4}, so p = 6/16."""
    a, b = np.array([1.0, -2.0, 3.0, 4.0]), np.zeros(4)
    res = paired_test(a, b, "randomization")
    assert res.p == 6 / 16 and res.statistic == 1.5
    d = a - b
    flips = [abs(np.mean(np.array(s) * d)) >= abs(d.mean()) for s in itertools.product((1, -1), repeat=4)]
    assert sum(flips) == 6
    assert paired_test(np.array([1.0, 2, 3, 4]), b, "randomization").p == 2 / 16  # only the two extremes


def test_holm_and_benjamini_hochberg_against_hand_computed_values():
    ps = [0.01, 0.04, None, 0.03, 0.005]
    # Holm, m = 4: 4 x 0.005 = 0.02, 3 x 0.01 = 0.03, 2 x 0.03 = 0.06, max(1 x 0.04, 0.06) = 0.06
    assert holm(ps) == pytest.approx([0.03, 0.06, None, 0.06, 0.02])
    # BH, m = 4: 0.005 x 4/1 = 0.02, 0.01 x 4/2 = 0.02, 0.03 x 4/3 = 0.04, 0.04 x 4/4 = 0.04
    assert benjamini_hochberg(ps) == pytest.approx([0.02, 0.04, None, 0.04, 0.02])
    # BH's step-up takes the smallest from the top: 0.02 x 3/2 = 0.03 > 0.025 x 3/3
    assert benjamini_hochberg([0.02, 0.025, 0.001]) == pytest.approx([0.025, 0.025, 0.003])
    assert adjust(ps, "none") == ps and benjamini_hochberg([0.9, 0.8]) == pytest.approx([0.9, 0.9])


def test_the_interval_is_scipys_t_interval():
    v = np.array([0.61, 0.72, 0.55, 0.80, 0.67, 0.59])
    iv = mean_interval(v)
    low, high = stats.t.interval(0.95, v.size - 1, loc=v.mean(), scale=stats.sem(v))
    assert iv.n == 6 and iv.mean == pytest.approx(v.mean()) and (iv.low, iv.high) == pytest.approx((low, high))
    one = mean_interval(np.array([0.5]))
    assert one.mean == 0.5 and one.low is None and one.high is None


# --- a CV run: the tables --------------------------------------------------------------------

@pytest.fixture(scope="module")
def cv(tmp_path_factory) -> Path:
    """letor3-ohsumed-shaped folds 1-3 of 6 queries (a sample of 18 of the 106 queries),
    two learners selected by vali NDCG@10."""
    root = tmp_path_factory.mktemp("cvtables")
    make_letor(root / "OHSUMED", queries=6, docs=8)
    cfg = root / "cv.yaml"
    cfg.write_text(f"""experiment: tables
dataset: {{kind: registry, name: letor3-ohsumed, root: {root / 'OHSUMED'}, folds: [1, 2, 3]}}
cv: {{select_by: ndcg@10}}
learners:
  ranksvm: {{type: ranksvm, grid: {{C: [1]}}}}
  adarank: {{type: adarank, measure: map, grid: {{rounds: [5]}}}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(root / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    return root / "out"


def _ok(*args: str) -> str:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, res.stderr
    return res.stdout


def _query_values(out: Path, learner: str, metric: str) -> np.ndarray:
    (run,) = [p for p in (out / "tables").iterdir() if p.name.startswith(learner + "-")]
    return pd.read_parquet(run / "test_queries.parquet")[metric].to_numpy()


def test_compare_csv_gives_each_learners_mean_interval_and_marks(cv):
    rows = list(csv.DictReader(io.StringIO(_ok("compare", str(cv), "--metric", "ndcg@10", "--metric", "map",
                                                "--format", "csv"))))
    assert [(r["system"], r["learner"], r["metric"]) for r in rows] == [
        ("a", "AdaRank", "ndcg@10"), ("a", "AdaRank", "ap"), ("b", "RankSVM", "ndcg@10"), ("b", "RankSVM", "ap")]
    pairs = json.loads(_ok("compare", str(cv), "--metric", "ndcg@10", "--metric", "map", "--json"))
    for r in rows:
        values = _query_values(cv, r["learner"].lower(), r["metric"])
        low, high = stats.t.interval(0.95, values.size - 1, loc=values.mean(), scale=stats.sem(values))
        assert int(r["n"]) == 18 and float(r["mean"]) == pytest.approx(values.mean(), rel=1e-12)
        assert (float(r["ci_low"]), float(r["ci_high"])) == pytest.approx((low, high), rel=1e-12)
        assert r["dataset"] == SAMPLE and r["convention"] == LETOR3 and r["on"] == "test"
        assert (r["test"], r["adjustment"], r["alpha"]) == ("t", "holm", "0.05")
        (pair,) = next(p for p in pairs if p["metric"] == r["metric"])["pairs"]
        winner = "RankSVM" if pair["mean_difference"] < 0 else "AdaRank"  # a = adarank, b = ranksvm
        marked = pair["p_holm"] < 0.05 and r["learner"] == winner
        assert r["better_than"] == ({"AdaRank": "b", "RankSVM": "a"}[r["learner"]] if marked else "")
        # the pooled mean difference is the difference of the table's means
        other = next(o for o in rows if o["metric"] == r["metric"] and o["learner"] != r["learner"])
        if r["learner"] == "AdaRank":
            assert pair["mean_difference"] == pytest.approx(float(r["mean"]) - float(other["mean"]), rel=1e-9)


def test_compare_latex_is_a_table_whose_caption_names_data_test_adjustment_alpha_and_convention(cv):
    latex = _ok("compare", str(cv), "--metric", "ndcg@10", "--format", "latex", "--test", "randomization",
                "--adjust", "bh", "--alpha", "0.1")
    assert latex.startswith("\\begin{table}[t]\n\\centering\n\\caption{NDCG@10 of tables on " + SAMPLE)
    caption = latex.split("\\caption{")[1].split("}\n\\label")[0]
    for said in ("Fisher's paired randomization test (two-sided), 10000 random sign flips",
                 "Benjamini-Hochberg adjustment", "alpha = 0.1", "95\\% t interval",
                 "Convention: letor3 (gain 0,1,3 for labels 0-2, discount 1,1,1/log2(i), @k beyond the list: left out, "
                 "no relevant: 0)", "18 queries; ltr report's columns are means of the fold means"):
        assert said in caption, said
    assert "\\toprule\n & learner & NDCG@10 \\\\\n\\midrule\na & AdaRank & " in latex
    assert "\\textbf{" in latex and "{\\scriptsize [" in latex and latex.rstrip().endswith("\\end{table}")
    markdown = _ok("compare", str(cv), "--metric", "ndcg@10", "--format", "markdown", "--adjust", "none")
    assert markdown.startswith("| | learner | ndcg@10 |\n|---|---|---|\n| a | AdaRank | ")
    assert "no adjustment" in markdown and LETOR3 in markdown and SAMPLE in markdown


def test_on_must_fit_the_runs_and_the_alpha_its_range(cv, tmp_path):
    res = runner.invoke(app, ["compare", str(cv), "--metric", "ndcg@10", "--on", "online"])
    assert res.exit_code == 1 and res.stderr.count("\n") == 1 and "give --on test" in res.stderr
    res = runner.invoke(app, ["compare", str(cv), "--metric", "ndcg@10", "--alpha", "1.5"])
    assert res.exit_code == 2 and "between 0 and 1" in res.stderr
    res = runner.invoke(app, ["compare", str(cv), "--metric", "ap", "--metric", "map"])
    assert res.exit_code == 1 and "ap is given twice" in res.stderr
    out = tmp_path / "t.tex"
    assert _ok("compare", str(cv), "--metric", "ap", "--format", "latex", "--out", str(out)) == out.read_text()
    text = _ok("compare", str(cv), "--metric", "ap", "--adjust", "bh")
    assert text.rstrip().endswith(f"Convention: {LETOR3}.") and "  p_bh  " in text.splitlines()[1] + "  "
    assert json.loads(_ok("compare", str(cv), "--metric", "ap", "--json"))["convention"] == f"Convention: {LETOR3}."


def test_the_report_shows_the_spread_of_the_selected_metric_a_sample_and_the_convention(cv, tmp_path):
    rows = list(csv.DictReader(io.StringIO(_ok("report", str(cv), "--format", "csv"))))
    for r in rows:
        (run,) = [p for p in (cv / "tables").iterdir() if p.name.startswith(r["learner"] + "-")]
        folds = pd.read_parquet(run / "rounds.parquet")["ndcg@10"].to_numpy()
        assert float(r["ndcg@10_std"]) == pytest.approx(np.std(folds, ddof=1), rel=1e-12)  # selected by ndcg@10
        assert "ndcg@5_std" not in r and r["dataset"] == SAMPLE and r["convention"] == LETOR3
    markdown = _ok("report", str(cv))
    assert f"| {SAMPLE} |" in markdown and f"\nConvention: {LETOR3}.\n" in markdown
    latex = _ok("report", str(cv), "--format", "latex")
    assert SAMPLE in latex and "{\\footnotesize Convention: letor3 (gain 0,1,3 for labels 0-2" in latex
    assert "NDCG@10 sd" in latex
    pivot = _ok("report", str(cv), "--pivot")
    assert f"{SAMPLE}:ndcg@10" in pivot and f"Convention: {LETOR3}." in pivot
    assert LETOR3 in _ok("report", str(cv), "--pivot", "--format", "csv")
    html = tmp_path / "r.html"
    _ok("report", str(cv), "--html", "--out", str(html))
    text = html.read_text()
    assert f"<td>{SAMPLE}</td>" in text and f"Convention: {LETOR3}." in text


# --- online click runs: --on ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def clicks(tmp_path_factory) -> Path:
    """Two learners from perfect clicks, three seeds, a held-out file."""
    root = tmp_path_factory.mktemp("clicktables")
    train = write_data(root / "train.txt", queries=30)
    held = write_data(root / "held.txt", queries=12, seed=5)
    cfg = root / "c.yaml"
    cfg.write_text(f"""experiment: clicktab
seeds: [1, 2, 3]
dataset: {{kind: files, features: 12, files: [{train}]}}
protocol:
  feedback: clicks
  sampling: uniform
  max_rounds: 150
  clicks: {{model: perfect, stop: any-position, shown: 10}}
heldout: {{file: {held}, every: 50}}
metrics: {{names: [ndcg@10], no_relevant: one}}
learners:
  ogd: {{type: ogd, surrogate: squared, step: {{rule: inv-sqrt, eta: 0.1}}}}
  random: {{type: random}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(root / "res"), "-q"])
    assert res.exit_code == 0, res.stderr
    return root / "res" / "clicktab"


def _seed_values(folder: Path, learner: str, read) -> np.ndarray:
    runs = sorted(p for p in folder.iterdir() if p.name.startswith(learner + "-"))
    return np.array([read(json.loads((p / "summary.json").read_text())) for p in runs])


@pytest.mark.parametrize("on", ["online", "heldout", "cumulative"])
def test_compare_on_click_runs_takes_the_value_asked_for(clicks, on):
    read = {"online": lambda s: s["metrics"]["ndcg@10"]["last10_mean_of_time_average"],
            "heldout": lambda s: s["heldout"]["last"]["heldout_ndcg@10"],
            "cumulative": lambda s: s["metrics"]["ndcg@10"]["discounted_cumulative"]}[on]
    rows = list(csv.DictReader(io.StringIO(_ok("compare", str(clicks), "--metric", "ndcg@10", "--on", on,
                                                "--format", "csv"))))
    for r in rows:
        values = _seed_values(clicks, "ogd" if r["learner"].startswith("OGD") else "random", read)
        assert int(r["n"]) == 3 and float(r["mean"]) == pytest.approx(values.mean(), rel=1e-12)
        assert r["on"] == on and r["convention"] == CONVENTIONS["paper"].title("one")
    latex = _ok("compare", str(clicks), "--metric", "ndcg@10", "--on", on, "--format", "latex")
    assert "the seeds (3 seeds; a seed's value: " in latex and "no relevant: 1)" in latex
    res = runner.invoke(app, ["compare", str(clicks), "--metric", "ndcg@10", "--on", "test"])
    assert res.exit_code == 1 and "online runs have no test queries" in res.stderr
    assert json.loads(_ok("compare", str(clicks), "--metric", "ndcg@10", "--on", on, "--json"))["on"] == on


def test_report_baseline_tests_the_heldout_column_on_the_heldout_values(clicks):
    rows = {r["learner"]: r for r in csv.DictReader(io.StringIO(
        _ok("report", str(clicks), "--baseline", "random", "--format", "csv")))}
    ogd = rows["ogd"]
    held = _seed_values(clicks, "ogd", lambda s: s["heldout"]["last"]["heldout_ndcg@10"])
    base = _seed_values(clicks, "random", lambda s: s["heldout"]["last"]["heldout_ndcg@10"])
    p = stats.ttest_rel(held, base).pvalue
    assert f"heldout: {'better: ' if p < 0.05 and held.mean() > base.mean() else ''}" \
        f"{held.mean() - base.mean():+.4f}, p={p:.2g}, 3 seeds" in ogd["vs_baseline"]
    assert rows["random"]["vs_baseline"] == "baseline"


def test_the_selection_table_names_its_convention_too(clicks):
    text = _ok("report", str(clicks), "--select-by", "ndcg@10")
    assert f"\nConvention: {CONVENTIONS['paper'].title('one')}.\n" in text
    rows = list(csv.DictReader(io.StringIO(_ok("report", str(clicks), "--select-by", "ndcg@10", "--format", "csv"))))
    assert {r["convention"] for r in rows} == {CONVENTIONS["paper"].title("one")}
