"""Paired significance tests between learners: the machinery against scipy, the per-query
test values a batch run stores, ``ltr compare`` end to end, ``ltr report --baseline`` and
the refusals (one line, status 1)."""

from __future__ import annotations

import json
import re
import os
import shutil
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.reports.significance import RESAMPLES, SEED, holm, paired_test
from tests.conftest import REPO
from tests.test_batch_protocol import make_letor

runner = CliRunner()
METRICS = ["ap", "ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "p@1", "p@3", "p@5", "p@10"]


# --- the machinery, against scipy ---------------------------------------------------------

A = np.array([0.61, 0.72, 0.55, 0.80, 0.67, 0.59, 0.74, 0.70, 0.63, 0.77])
B = np.array([0.58, 0.69, 0.57, 0.71, 0.60, 0.60, 0.66, 0.65, 0.64, 0.70])


def test_the_t_test_is_scipys_paired_t_test():
    res = paired_test(A, B, "t")
    ref = stats.ttest_rel(A, B)
    assert res.n == 10 and res.mean_difference == pytest.approx(np.mean(A - B))
    assert res.statistic == pytest.approx(ref.statistic) and res.p == pytest.approx(ref.pvalue)
    assert res.p < 0.05 and res.better() and not paired_test(B, A, "t").better()


def test_the_wilcoxon_test_is_scipys_signed_rank_test():
    res = paired_test(A, B, "wilcoxon")
    ref = stats.wilcoxon(A - B)
    assert res.statistic == pytest.approx(ref.statistic) and res.p == pytest.approx(ref.pvalue)
    zeros = paired_test(np.array([1.0, 2, 3, 4, 5, 6]), np.array([1.0, 2, 2.5, 3, 4.2, 4.9]), "wilcoxon")
    assert zeros.n == 6 and "2 zero differences dropped" in zeros.note and 0 <= zeros.p <= 1


def test_the_randomization_test_is_scipys_permutation_test_with_a_fixed_seed():
    res = paired_test(A, B, "randomization")
    ref = stats.permutation_test((A, B), lambda x, y, axis: np.mean(x - y, axis=axis), vectorized=True,
                                 permutation_type="samples", n_resamples=RESAMPLES, rng=np.random.default_rng(SEED))
    assert res.statistic == pytest.approx(np.mean(A - B)) and res.p == ref.pvalue
    assert paired_test(A, B, "randomization").p == res.p  # seeded: the same p every time
    big = np.random.default_rng(1).random(40)
    ref = stats.permutation_test((big + 0.01, big[::-1]), lambda x, y, axis: np.mean(x - y, axis=axis),
                                 vectorized=True, permutation_type="samples", n_resamples=RESAMPLES,
                                 rng=np.random.default_rng(SEED))
    assert paired_test(big + 0.01, big[::-1], "randomization").p == ref.pvalue  # 2**40 swaps: sampled


@pytest.mark.parametrize("test", ["t", "wilcoxon", "randomization"])
def test_degenerate_pairs_give_no_p_value_and_say_why(test):
    none = paired_test(np.array([]), np.array([]), test)
    assert none.n == 0 and none.p is None and none.mean_difference is None and "at least 2" in none.note
    one = paired_test(np.array([0.5]), np.array([0.2]), test)
    assert one.p is None and "1 pair" in one.note and one.mean_difference == pytest.approx(0.3)
    same = paired_test(A, A.copy(), test)
    assert same.p == 1.0 and same.statistic is None and "all 10 differences are zero" in same.note
    assert not same.better()


def test_equal_differences_have_no_t_statistic_but_other_tests_run():
    t = paired_test(A + 0.1, A, "t")
    assert t.p is None and "no spread" in t.note
    for test in ("wilcoxon", "randomization"):
        res = paired_test(A + 0.1, A, test)
        assert res.p is not None and 0 <= res.p <= 1


def test_random_vectors_give_p_values_in_the_unit_interval():
    rng = np.random.default_rng(3)
    for n in (2, 3, 7, 30):
        for _ in range(10):
            a, b = rng.random(n).round(1), rng.random(n).round(1)
            for test in ("t", "wilcoxon", "randomization"):
                res = paired_test(a, b, test)
                assert (res.p is None and res.note) or 0.0 <= res.p <= 1.0, (a, b, test, res)


def test_holm_adjustment_on_known_values():
    # sorted: 0.01 * 3 = 0.03, 0.03 * 2 = 0.06, 0.04 * 1 -> at least 0.06
    assert holm([0.01, 0.04, 0.03, None]) == pytest.approx([0.03, 0.06, 0.06, None])
    assert holm([0.5, 0.9]) == [1.0, 1.0] and holm([None]) == [None] and holm([]) == []


# --- a batch CV run stores each test query's values ------------------------------------------

BATCH_CONFIG = """experiment: cmp
dataset: {{kind: registry, name: letor3-ohsumed, root: {root}, folds: [1, 2, 3]}}
cv: {{select_by: map}}
learners:
  strong: {{type: ranksvm, label: RankSVM, grid: {{C: [1]}}}}
  twin: {{type: ranksvm, label: RankSVM, grid: {{C: [1]}}}}
  weak: {{type: rankboost, label: RankBoost, grid: {{rounds: [1]}}}}
"""


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Three learners through 3 folds of generated OHSUMED-shaped data (15 test queries per
    fold): a linear SVM, the same config under another name, and one-round RankBoost."""
    root = tmp_path_factory.mktemp("cmp")
    make_letor(root / "OHSUMED", queries=15, docs=10)
    cfg = root / "cmp.yaml"
    cfg.write_text(BATCH_CONFIG.format(root=root / "OHSUMED"))
    res = runner.invoke(app, ["run", str(cfg), "--out", str(root / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    return root / "out" / "cmp"


def _run(folder: Path, learner: str) -> Path:
    (run,) = [p for p in folder.iterdir() if p.name.startswith(f"{learner}-")]
    return run


def test_per_query_values_average_exactly_to_the_fold_table(batch):
    from ltr_cli.measures.conventions import CONVENTIONS
    from ltr_cli.measures.stacked import mean_kept
    from ltr_cli.results.folders import read_run
    from ltr_cli.results.query_values import read_test_queries

    for learner in ("strong", "twin", "weak"):
        run = read_run(_run(batch, learner))
        table = read_test_queries(run)
        assert table is not None and list(table.columns) == ["fold", "qid", *METRICS]
        assert len(table) == run.summary["test_queries"] == 45
        assert run.rounds["fold"].tolist() == [1, 2, 3]
        for fold in (1, 2, 3):
            mine = table[table["fold"] == fold]
            assert list(mine["qid"]) == [str(q) for q in range(1, 16)]  # the test file's qids, in order
            for metric in METRICS:
                mean = mean_kept(mine[metric].to_numpy(), CONVENTIONS["letor3"])
                assert mean == run.rounds.loc[run.rounds["fold"] == fold, metric].item(), (learner, fold, metric)


def test_compare_json_gives_a_p_value_for_every_pair(batch):
    res = runner.invoke(app, ["compare", str(batch.parent), "--metric", "ndcg@1", "--json"])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["metric"] == "ndcg@1" and out["test"] == "t" and out["unit"] == "query"
    assert out["protocol"] == "batch-cv" and out["adjustment"] == "holm"
    pairs = {(p["a"], p["b"]): p for p in out["pairs"]}
    assert set(pairs) == {("strong", "twin"), ("strong", "weak"), ("twin", "weak")}
    for p in out["pairs"]:
        assert p["n"] == 45 and p["experiment"] == "cmp"
        assert (p["p"] is None and p["note"]) or (0 <= p["p"] <= 1 and p["p"] <= p["p_holm"] <= 1)
    assert out["comparisons"] == sum(1 for p in out["pairs"] if p["p"] is not None)


def test_a_clearly_better_learner_is_significant_and_a_twin_is_not(batch):
    """The paper's kind of statement on NDCG@1: the direct method beats a weak baseline
    significantly (after Holm's adjustment too); between two learners of the same config
    there is no significant difference (every query's value is the same)."""
    for test in ("t", "wilcoxon", "randomization"):
        res = runner.invoke(app, ["compare", str(batch), "--metric", "ndcg@1", "--json", "--test", test])
        assert res.exit_code == 0, res.stderr
        pairs = {(p["a"], p["b"]): p for p in json.loads(res.stdout)["pairs"]}
        strong = pairs[("strong", "weak")]
        assert strong["mean_difference"] > 0.2 and strong["p"] < 0.05 and strong["p_holm"] < 0.05, (test, strong)
        twin = pairs[("strong", "twin")]
        assert twin["mean_difference"] == 0 and twin["p"] == twin["p_holm"] == 1.0, twin
        assert "all 45 differences are zero" in twin["note"]


def test_compare_text_lists_pairs_and_the_multiple_comparison_note(batch):
    res = runner.invoke(app, ["compare", str(batch), "--metric", "map", "--test", "wilcoxon"])
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("ap: Wilcoxon signed-rank test (two-sided) over the test queries")
    assert lines[1].split() == ["experiment", "a", "b", "n", "mean_diff", "statistic", "p", "p_holm", "note"]
    assert len(lines) == 7 and "Holm's method for these 3 comparisons" in lines[-2] and lines[-1].startswith("Convention: ")
    assert "all 45 differences are zero" in next(line for line in lines if " twin " in line and "strong" in line)


def test_report_marks_learners_better_than_a_baseline(batch):
    plain = runner.invoke(app, ["report", str(batch)])
    assert plain.exit_code == 0 and "†" not in plain.stdout and "vs_baseline" not in plain.stdout
    res = runner.invoke(app, ["report", str(batch), "--baseline", "weak"])
    assert res.exit_code == 0, res.stderr
    parts = res.stdout.strip().split("\n\n")  # the batch table, its convention, [empty-query rules,] the legend
    table, said, legend = parts[0], parts[1], parts[-1]
    assert said.startswith("Convention: ")
    rows = {line.split(" | ")[2]: line for line in table.splitlines()[2:]}
    assert "| baseline |" in rows["weak"] and "†" not in rows["weak"]
    for learner in ("strong", "twin"):
        assert "better on " in rows[learner] and "ndcg@1 (+" in rows[learner] and "45 queries" in rows[learner]
    assert legend.startswith("†: significantly better than weak (paired t-test")
    # the same cells as the plain report, each marked value with its mark
    head = plain.stdout.splitlines()[0]
    assert table.splitlines()[0] == head + " vs_baseline |"
    for line, marked in zip(plain.stdout.splitlines()[2:], table.splitlines()[2:]):
        assert marked.replace("†", "").startswith(line[:-1])
    csv = runner.invoke(app, ["report", str(batch), "--baseline", "RankBoost", "--format", "csv"])
    assert csv.exit_code == 0 and "†" not in csv.stdout.split("\n")[1].split(",")[5]
    assert csv.stdout.splitlines()[0].endswith(",vs_baseline")


def test_latex_carries_the_marks_and_the_best_values(batch):
    """The LaTeX table marks what the Markdown table marks ($^\\dagger$), bolds each metric
    column's best value, and prints each row's test and the legend as footnote rows."""
    res = runner.invoke(app, ["report", str(batch), "--baseline", "weak", "--format", "latex"])
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    head = lines[2].split(" & ")
    assert head[:3] == ["dataset", "learner", "folds"] and "MAP" in head and "NDCG@1" in lines[2]
    rows = {line.split(" & ")[1]: line.split(" & ") for line in lines[4:7]}
    ndcg1 = head.index("NDCG@1")
    assert rows["RankSVM"][ndcg1].endswith(r"$^\dagger$") and "dagger" not in " ".join(rows["RankBoost"])
    for j in range(3, len(head)):
        if head[j].startswith(("MAP", "NDCG", "P@")) and " sd" not in head[j]:
            values = {k: float(v[j].replace(r"\textbf{", "").split("}")[0].split("$")[0].split(" ")[0])
                      for k, v in rows.items()}
            best = max(values.values())
            assert all((r"\textbf{" in rows[k][j]) == (v == best) for k, v in values.items()), (head[j], rows)
    footnotes = [line for line in lines if line.startswith(r"\multicolumn")]
    assert any("RankSVM" in line and "vs. baseline: better on" in line and "p Holm" in line for line in footnotes)
    assert not any("vs. baseline: baseline" in line for line in footnotes)
    assert any(r"$^\dagger$: significantly better than weak" in line and "Holm-adjusted" in line for line in footnotes)
    assert not any("vs_baseline" in line for line in lines if line.startswith("%"))
    assert "|" not in res.stdout.replace(r"\textbar", "")


# --- online runs: paired by seed ------------------------------------------------------------


@pytest.fixture(scope="module")
def online(tmp_path_factory):
    out = tmp_path_factory.mktemp("online")
    res = runner.invoke(app, ["run", str(REPO / "configs" / "simulated_separable.yaml"), "--out", str(out), "-q",
                              "--learner", "slam-ndcg", "--learner", "listnet", "--set", "protocol.max_rounds=40",
                              "--set", "seeds=[0, 1, 2]"])
    assert res.exit_code == 0, res.stderr
    return out / "simulated_separable"


def test_online_runs_are_paired_by_seed_on_the_reports_last10(online):
    res = runner.invoke(app, ["compare", str(online), "--metric", "ndcg@10", "--json"])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    (pair,) = out["pairs"]
    assert out["unit"] == "seed" and out["protocol"] == "online" and pair["n"] == 3
    last10 = {}
    for run in online.iterdir():
        s = json.loads((run / "summary.json").read_text())
        last10[(s["learner"], s["seed"])] = s["metrics"]["ndcg@10"]["last10_mean_of_time_average"]
    a = np.array([last10[(pair["a"], seed)] for seed in (0, 1, 2)])
    b = np.array([last10[(pair["b"], seed)] for seed in (0, 1, 2)])
    assert pair["mean_difference"] == pytest.approx(np.mean(a - b))
    assert pair["p"] == pytest.approx(stats.ttest_rel(a, b).pvalue)
    report = runner.invoke(app, ["report", str(online), "--baseline", "listnet"])
    assert report.exit_code == 0, report.stderr
    rows = [line for line in report.stdout.splitlines() if line.startswith("| simulated_separable")]
    assert all(line.endswith("| baseline |") for line in rows if "| listnet |" in line)
    assert all("3 seeds; p Holm |" in line for line in rows if "| slam-ndcg |" in line)
    # Holm's adjustment over every test of the table (one per row and metric)
    from ltr_cli.reports.significance import holm

    raw = runner.invoke(app, ["report", str(online), "--baseline", "listnet", "--adjust", "none"])
    raw_rows = [line for line in raw.stdout.splitlines() if line.startswith("| simulated_separable")]
    p_of = lambda lines: [float(m) for line in lines for m in re.findall(r"p=([0-9.e-]+)", line)]  # noqa: E731
    assert p_of(raw_rows) and p_of(rows) == pytest.approx(holm(p_of(raw_rows)), rel=0.05)  # printed to 2 digits


def test_one_seed_is_too_few_pairs_for_a_test(online):
    seed0 = [str(p) for p in online.iterdir() if "-seed0-" in p.name]
    res = runner.invoke(app, ["compare", *seed0, "--metric", "ndcg@10"])
    assert res.exit_code == 0, res.stderr
    assert "1 pair: a test needs at least 2" in res.stdout and "0 with a p-value" in res.stdout


# --- refusals: one line, status 1 -----------------------------------------------------------


def _one_line(res) -> str:
    assert res.exit_code == 1 and "Traceback" not in res.output, (res.exit_code, res.output)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ltr: error:"), res.stderr
    return lines[0]


def _copy(batch: Path, tmp_path: Path) -> Path:
    shutil.copytree(batch, tmp_path / "cmp")
    return tmp_path / "cmp"


def test_no_runs_unknown_metric_and_one_learner(tmp_path, batch):
    (tmp_path / "empty").mkdir()
    assert "no finished runs" in _one_line(runner.invoke(app, ["compare", str(tmp_path / "empty"), "--metric", "map"]))
    assert "no such results directory" in _one_line(
        runner.invoke(app, ["compare", str(tmp_path / "nowhere"), "--metric", "map"]))
    assert "--metric" in _one_line(runner.invoke(app, ["compare", str(batch), "--metric", "ndgc@1"]))
    assert "no test metric 'err@10'" in _one_line(runner.invoke(app, ["compare", str(batch), "--metric", "err@10"]))
    line = _one_line(runner.invoke(app, ["compare", str(_run(batch, "weak")), "--metric", "map"]))
    assert "nothing to compare" in line and "cmp: weak" in line


def test_batch_and_online_runs_together_are_refused(tmp_path, batch, online):
    line = _one_line(runner.invoke(app, ["compare", str(batch), str(online), "--metric", "ndcg@1"]))
    assert "both batch (cv:) and online runs" in line


def test_a_run_without_per_query_values_says_to_re_run(tmp_path, batch):
    folder = _copy(batch, tmp_path)
    (_run(folder, "weak") / "test_queries.parquet").unlink()
    line = _one_line(runner.invoke(app, ["compare", str(folder), "--metric", "ndcg@1"]))
    assert "weak-" in line and "re-run it to record per-query values" in line
    report = runner.invoke(app, ["report", str(folder), "--baseline", "strong", "--format", "csv"])
    assert report.exit_code == 0 and "no per-query values for this run" in report.stdout


def _edit_table(change):
    def edit(path: Path) -> None:
        table = pd.read_parquet(path)
        change(table).to_parquet(path, index=False)
    return edit


HOSTILE = {
    "garbage": lambda p: p.write_bytes(b"PAR1 not a table"),
    "fifo": lambda p: (p.unlink(), os.mkfifo(p)),
    "folder": lambda p: (p.unlink(), p.mkdir()),
    "value-edited": _edit_table(lambda t: t.assign(**{"ndcg@1": 1.0})),
    "column-not-a-metric": _edit_table(lambda t: t.rename(columns={"ap": "rm -rf"})),
    "qid-not-text": _edit_table(lambda t: t.assign(qid=range(len(t)))),
    "fold-not-a-number": _edit_table(lambda t: t.assign(fold="1")),
    "fold-not-of-the-run": _edit_table(lambda t: t.assign(fold=9)),
    "no-qid": _edit_table(lambda t: t.drop(columns=["qid"])),
}


@pytest.mark.parametrize("hostile", sorted(HOSTILE))
def test_a_damaged_or_crafted_per_query_table_is_one_line(tmp_path, batch, hostile):
    folder = _copy(batch, tmp_path)
    path = _run(folder, "twin") / "test_queries.parquet"
    HOSTILE[hostile](path)
    line = _one_line(runner.invoke(app, ["compare", str(folder), "--metric", "ndcg@1"]))
    assert "test_queries.parquet" in line and ("damaged" in line or "cannot read" in line), line


def _main(argv: list[str], capsys) -> tuple[int, str]:
    from ltr_cli.cli.app import main

    old = sys.argv
    sys.argv = ["ltr", *argv]
    try:
        with pytest.raises(SystemExit) as stop:
            main()
    finally:
        sys.argv = old
    return int(stop.value.code or 0), capsys.readouterr().err


def test_an_unknown_test_is_a_usage_line(batch, capsys):
    code, err = _main(["compare", str(batch), "--metric", "map", "--test", "sign"], capsys)
    assert code == 1 and len(err.strip().splitlines()) == 1 and "ltr compare --help" in err


def test_report_baseline_refusals(batch):
    assert "no learner named 'nobody'" in _one_line(runner.invoke(app, ["report", str(batch), "--baseline", "nobody"]))
    assert "--html" in _one_line(runner.invoke(app, ["report", str(batch), "--baseline", "weak", "--html"]))
    assert "--select-by" in _one_line(
        runner.invoke(app, ["report", str(batch), "--baseline", "weak", "--select-by", "map"]))
    assert "add --baseline" in _one_line(runner.invoke(app, ["report", str(batch), "--adjust", "bh"]))
    assert "--adjust 'sidak': one of" in _one_line(
        runner.invoke(app, ["report", str(batch), "--baseline", "weak", "--adjust", "sidak"]))


def test_report_baseline_p_values_are_adjusted_over_the_tables_tests(batch):
    """Holm's p of each test is at least its unadjusted p, and the rows say which one."""
    def ps(adjust: str) -> dict[tuple[str, str], float]:
        res = runner.invoke(app, ["report", str(batch), "--baseline", "weak", "--adjust", adjust, "--format", "csv"])
        assert res.exit_code == 0, res.stderr
        found = {}
        for line in res.stdout.splitlines()[1:]:
            for metric, p in re.findall(r"(\S+) \([+-][0-9.]+, p=([0-9.e-]+)\)", line):
                found[(line.split(",")[2], metric)] = float(p)
        return found

    raw, holm, bh = ps("none"), ps("holm"), ps("bh")
    assert raw and set(holm) <= set(raw) and set(bh) <= set(raw)
    assert all(holm[k] >= raw[k] for k in holm) and any(holm[k] > raw[k] for k in holm)
    assert all(raw[k] <= bh[k] for k in bh)
