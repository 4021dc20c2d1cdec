"""Counterfactual LTR through the CLI: ltr clicks log, runs on generated and on written
logs, the shipped config end to end with report and compare, and the Plackett-Luce policy."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.clicklog.policies import shown_lists
from tests.conftest import REPO

runner = CliRunner()
CONFIG = str(REPO / "configs" / "counterfactual_synthetic.yaml")
SMALL = ["--set", "learners.ranksvm-naive.clicks.generate.sessions=3000",
         "--set", "learners.ranksvm-ips.clicks.generate.sessions=3000",
         "--set", "learners.ranksvm-ips-estimated.clicks.generate.sessions=3000",
         "--set", "learners.ranksvm-ips-estimated.clicks.generate.estimate_sessions=3000",
         "--set", "learners.dla.clicks.generate.sessions=3000",
         *(arg for name in ("ranksvm-labels", "ranksvm-naive", "ranksvm-ips", "ranksvm-ips-estimated")
           for arg in ("--set", f"learners.{name}.grid={{C: [0.1, 1.0]}}")),
         "--set", "learners.dla.grid={C: [10.0, 100.0]}"]


@pytest.fixture(scope="module")
def folds(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("cf") / "mslr"
    res = runner.invoke(app, ["data", "synth", str(root), "--like", "mslr-web10k", "--folds", "--queries", "40",
                              "--docs-per-query", "15"])
    assert res.exit_code == 0, res.stderr
    return root


def _ok(*args: str) -> str:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, res.stderr
    return res.stdout


def test_the_shipped_config_runs_end_to_end_with_report_and_compare(folds, tmp_path):
    out = tmp_path / "out"
    _ok("run", CONFIG, "--set", f"dataset.root={folds}", *SMALL, "--out", str(out), "-q")
    rows = {r["learner"]: r for r in csv.DictReader(io.StringIO(_ok("report", str(out), "--format", "csv")))}
    assert set(rows) == {"ranksvm-labels", "ranksvm-naive", "ranksvm-ips", "ranksvm-ips-estimated", "dla"}
    assert all(0 < float(r["ndcg@10"]) <= 1 for r in rows.values())
    compared = _ok("compare", str(out / "counterfactual_synthetic"), "--metric", "ndcg@10")
    assert "p_holm" in compared and "ranksvm-ips" in compared and "ranksvm-naive" in compared
    run = next((out / "counterfactual_synthetic").glob("ranksvm-ips-??????????"))
    models = json.loads((run / "models.json").read_text())
    fold = next(iter(models.values()))
    clicks = fold["clicks"]
    assert clicks["correction"] == "ips" and len(clicks["fingerprint"]) == 64 and clicks["sessions"] == 3000
    assert clicks["propensity"][:3] == pytest.approx([1.0, 0.61 / 0.68, 0.48 / 0.68])
    assert clicks["weights"][-1] == 10.0  # 0.68 / 0.06 > 10: clipped


def test_clicks_log_writes_what_a_run_generates_and_a_run_can_read_it(folds, tmp_path):
    logs, again = tmp_path / "logs", tmp_path / "again"
    args = ["--set", f"dataset.root={folds}", *SMALL, "--learner", "ranksvm-ips"]
    said = _ok("clicks", "log", CONFIG, "--out", str(logs), *args)
    assert said.count("sessions") == 5
    _ok("clicks", "log", CONFIG, "--out", str(again), *args)
    for n in range(1, 6):
        assert (logs / f"fold{n}.parquet").read_bytes() == (again / f"fold{n}.parquet").read_bytes()
    manifest = json.loads((logs / "manifest.json").read_text())
    assert manifest["learner"] == "ranksvm-ips" and len(manifest["logs"]) == 5
    out = {}
    for source, sets in (("generate", []), ("log", ["--set", f"learners.ranksvm-ips.clicks.log={logs}",
                                                    "--set", "learners.ranksvm-ips.clicks.generate=null"])):
        out[source] = tmp_path / source
        _ok("run", CONFIG, "--set", f"dataset.root={folds}", *SMALL, *sets, "--learner", "ranksvm-ips", "--out",
            str(out[source]), "-q")
    models = [json.loads(next((p / "counterfactual_synthetic").glob("ranksvm-ips-*/models.json")).read_text())
              for p in out.values()]
    for fold in models[0]:
        assert models[0][fold]["clicks"]["fingerprint"] == models[1][fold]["clicks"]["fingerprint"] == \
            manifest["logs"][int(fold) - 1]["fingerprint"]
        assert models[0][fold]["w"] == models[1][fold]["w"]


@pytest.mark.parametrize("args,message", [
    (["--learner", "ranksvm-labels"], "learner 'ranksvm-labels' has no clicks.generate block"),
    (["--learner", "nobody"], "--learner 'nobody': no such learner"),
    (["--set", "learners.ranksvm-ips.clicks.propensity=false"], "propensity: give true, estimated, regression-em, logged or a file"),
    (["--set", "learners.ranksvm-ips.clicks.log=somewhere"], "give exactly one of log"),
])
def test_clicks_log_refuses_bad_input_in_one_line(folds, tmp_path, args, message):
    res = runner.invoke(app, ["clicks", "log", CONFIG, "--out", str(tmp_path / "o"), "--set",
                              f"dataset.root={folds}", *args])
    assert res.exit_code == 1 and message in res.stderr and res.stderr.count("\n") == 1, res.stderr


def test_a_log_of_other_queries_is_refused(folds, tmp_path):
    logs = tmp_path / "logs"
    _ok("clicks", "log", CONFIG, "--out", str(logs), "--set", f"dataset.root={folds}", *SMALL)
    (logs / "fold1.parquet").write_bytes((logs / "fold2.parquet").read_bytes())  # fold 2's training queries
    res = runner.invoke(app, ["run", CONFIG, "--set", f"dataset.root={folds}", "--set",
                              f"learners.ranksvm-naive.clicks.log={logs}", "--set",
                              "learners.ranksvm-naive.clicks.generate=null", "--learner", "ranksvm-naive",
                              "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 1 and "is not a training query of fold 1" in res.stderr, res.stderr


def _relogged(logs: Path, out: Path, meta_change) -> Path:
    """fold1.parquet of ``logs`` with its metadata changed (rows and fingerprint kept)."""
    import pyarrow.parquet as pq

    table = pq.read_table(logs / "fold1.parquet")
    meta = json.loads(table.schema.metadata[b"ltr.clicklog"])
    meta_change(meta)
    out.mkdir()
    pq.write_table(table.replace_schema_metadata({b"ltr.clicklog": json.dumps(meta).encode()}), out / "fold1.parquet")
    return out


@pytest.fixture(scope="module")
def fold1_logs(folds, tmp_path_factory) -> Path:
    logs = tmp_path_factory.mktemp("fold1") / "logs"
    _ok("clicks", "log", CONFIG, "--out", str(logs), "--set", f"dataset.root={folds}", "--set", "dataset.folds=[1]",
        *SMALL, "--learner", "ranksvm-ips")
    return logs


@pytest.mark.parametrize("shown", ["10", 10.5, [10]])
def test_a_log_whose_metadata_is_damaged_is_one_line_in_a_batch_learner(folds, fold1_logs, tmp_path, shown):
    logs = _relogged(fold1_logs, tmp_path / "logs", lambda meta: meta.update(shown=shown))
    res = runner.invoke(app, ["run", CONFIG, "--set", f"dataset.root={folds}", "--set", "dataset.folds=[1]", *SMALL,
                              "--set", f"learners.ranksvm-ips.clicks.log={logs}", "--set",
                              "learners.ranksvm-ips.clicks.generate=null", "--learner", "ranksvm-ips",
                              "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 1, res.stderr
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert res.stderr.count("\n") == 1 and "metadata field 'shown'" in res.stderr and "fold1.parquet" in res.stderr


@pytest.mark.parametrize("learner", ["ranksvm-naive", "dla"])
def test_a_log_without_a_click_is_refused_not_fitted(folds, fold1_logs, tmp_path, learner):
    """A log of 3000 sessions and no click once trained an all-zero model and reported its
    test NDCG with exit 0: one line naming the log, exit 1, nothing written."""
    from ltr_cli.clicklog.logfile import read_log, write_log
    from ltr_cli.clicklog.simulate import Sessions

    log = read_log(fold1_logs / "fold1.parquet")
    (tmp_path / "logs").mkdir()
    silent = Sessions(log.session, log.query, log.doc, log.position, np.zeros_like(log.click))
    write_log(tmp_path / "logs" / "fold1.parquet", silent, log.qids,
              {k: v for k, v in log.meta.items() if k not in ("format", "fingerprint")})
    res = runner.invoke(app, ["run", CONFIG, "--set", f"dataset.root={folds}", "--set", "dataset.folds=[1]", *SMALL,
                              "--set", f"learners.{learner}.clicks.log={tmp_path / 'logs'}", "--set",
                              f"learners.{learner}.clicks.generate=null", "--learner", learner,
                              "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 1, res.stderr
    assert res.stderr.count("\n") == 1 and "fold1.parquet: the log's 3000 sessions hold no click" in res.stderr
    assert not list((tmp_path / "out").rglob("models.json"))


def test_a_generated_log_without_a_click_is_refused(folds, tmp_path):
    never = "{click: [0, 0, 0, 0, 0], stop: [0, 0, 0, 0, 0]}"
    res = runner.invoke(app, ["run", CONFIG, "--set", f"dataset.root={folds}", "--set", "dataset.folds=[1]", *SMALL,
                              "--set", f"learners.ranksvm-naive.clicks.generate.model={never}", "--set",
                              "learners.ranksvm-naive.clicks.generate.eta=null", "--learner", "ranksvm-naive",
                              "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 1 and "clicks.generate: the training log of fold 1: the log's 3000 sessions hold no " \
        "click" in res.stderr and res.stderr.count("\n") == 1, res.stderr


@pytest.mark.parametrize("values, clip, message", [
    ([1e-320] + [1] * 9, "10", "the propensity of position 2 relative to position 1 is inf"),
    ([1, 1e-310] + [0.5] * 8, "null", "position 2's propensity 1e-310 (relative to position 1) gives a click weight"),
])
def test_a_propensity_file_whose_weights_overflow_is_refused(folds, tmp_path, values, clip, message):
    """A tiny first propensity once overflowed the ratios, leaving Infinity in models.json
    (exit 0): one line naming the file; no models.json."""
    file = tmp_path / "p.json"
    file.write_text(json.dumps(values))
    res = runner.invoke(app, ["run", CONFIG, "--set", f"dataset.root={folds}", "--set", "dataset.folds=[1]", *SMALL,
                              "--set", f"learners.ranksvm-ips.clicks.propensity={file}", "--set",
                              f"learners.ranksvm-ips.clicks.clip={clip}", "--learner", "ranksvm-ips",
                              "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 1, res.stderr
    assert res.stderr.count("\n") == 1 and f"clicks.propensity: {file}: " in res.stderr and message in res.stderr
    assert not list((tmp_path / "out").rglob("models.json"))


def test_a_model_with_a_number_that_is_not_finite_is_never_written(folds, tmp_path, monkeypatch):
    """Behind the propensities' own checks: a run whose models.json would hold Infinity (the
    checks switched off here) is refused in one line, and no run folder is written."""
    from ltr_cli.learners.batch import click_data

    # weights let through, and the propensities' record keeps their overflowed ratio (inf)
    monkeypatch.setattr(click_data, "click_weights", lambda p, clip, where: np.ones(len(p)))
    file = tmp_path / "p.json"
    file.write_text(json.dumps([1e-320] + [1] * 9))
    res = runner.invoke(app, ["run", CONFIG, "--set", f"dataset.root={folds}", "--set", "dataset.folds=[1]", *SMALL,
                              "--set", f"learners.ranksvm-ips.clicks.propensity={file}", "--learner", "ranksvm-ips",
                              "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 1 and "the fitted model holds a number that is not finite" in res.stderr, res.stderr
    assert not list((tmp_path / "out").rglob("models.json"))


def test_click_weights_are_finite_and_bounded():
    from ltr_cli.errors import LtrError
    from ltr_cli.learners.batch.click_data import MAX_WEIGHT, click_weights

    assert click_weights(np.array([1.0, 0.5, 1e-9]), 10.0, "here").tolist() == [1.0, 2.0, 10.0]
    for p, clip in (([1.0, np.nan], 10.0), ([1.0, 0.0], 10.0), ([1.0, -1.0], None), ([1.0, np.inf], None),
                    ([1.0, 0.5 / MAX_WEIGHT], None)):
        with pytest.raises(LtrError, match="^here: "):
            click_weights(np.array(p), clip, "here")


def test_plackett_luce_draws_first_documents_by_their_weights():
    rng = np.random.default_rng(0)
    ranking = np.array([3, 0, 2, 1])
    shown = shown_lists("plackett-luce", ranking, 3, 40_000, rng)
    assert shown.shape == (40_000, 3) and all(len(set(r)) == 3 for r in shown[:100])
    first = np.bincount(shown[:, 0], minlength=4) / 40_000
    want = np.zeros(4)
    want[ranking] = (1 / np.arange(1, 5)) / np.sum(1 / np.arange(1, 5))
    assert np.allclose(first, want, atol=0.01)
    # the second position, given the first: the remaining weights renormalised
    second = np.mean(shown[shown[:, 0] == 3][:, 1] == 0)
    assert second == pytest.approx(0.5 / (0.5 + 1 / 3 + 0.25), abs=0.02)
    scores = np.array([0.0, 0.0, 5.0, 0.0])
    assert np.mean(shown_lists("plackett-luce", ranking, 2, 2000, rng, scores)[:, 0] == 2) > 0.9


def test_the_click_bench_row_counts_what_it_timed():
    from ltr_cli.bench.batch import format_batch_table, shaped
    from ltr_cli.bench.clicks_batch import bench_click_ranksvm

    queries = shaped("mslr-web10k", 6)
    row = bench_click_ranksvm(queries, 500)
    assert row["sessions"] == 500 and row["rows"] == 500 * 10 and 0 < row["clicks"] < row["rows"]
    assert row["pairs"] > 0 and row["iterations"] >= 1
    text = format_batch_table({"ranksvm": {}, "fits": {}, "eval": {"queries": 1, "documents": 1, "ours_s": 0.1,
                                                                     "pytrec_eval": "not installed"},
                               "clicks": {"queries": 6, "rows": [row]}})
    assert "IPS-RankSVM on a click log (6 MSLR-shaped queries" in text and f"{row['pairs']:15d}" in text


def test_the_log_size_figure_draws_a_line_per_correction(folds, tmp_path):
    from ltr_cli.reports.logsize import logsize_names, logsize_plan, plot_logsize
    from ltr_cli.results.folders import find_runs, read_run

    cfg = tmp_path / "sweep.yaml"
    cfg.write_text(f"""experiment: counterfactual_sweep
dataset: {{kind: registry, name: mslr-web10k, root: {folds}, folds: [1, 2, 3], normalize: zscore}}
cv: {{select_by: ndcg@10, convention: mslr}}
learners:
  ranksvm-labels: {{type: ranksvm, label: RankSVM (labels), grid: {{C: [0.1]}}}}
  ranksvm-naive:
    type: ranksvm
    label: RankSVM (naive clicks)
    grid: {{C: [0.1]}}
    clicks: {{generate: {{model: ultra-pbm, sessions: 300}}, correction: naive}}
  ranksvm-ips:
    type: ranksvm
    label: RankSVM (IPS)
    grid: {{C: [0.1]}}
    clicks: {{generate: {{model: ultra-pbm, sessions: 300}}, correction: ips}}
sweep:
  learners.ranksvm-naive.clicks.generate.sessions: [300, 1500]
  learners.ranksvm-ips.clicks.generate.sessions: [300, 1500]
""")
    _ok("sweep", str(cfg), "--out", str(tmp_path / "out"), "-q")
    runs = [read_run(p) for p in find_runs([tmp_path / "out"])]
    plan = logsize_plan(runs)
    assert list(plan) == [("counterfactual_sweep", "ultra-pbm, eta 1")]
    clicked, labels = plan[("counterfactual_sweep", "ultra-pbm, eta 1")]
    assert len(clicked) == 4 and [r.manifest["learner"] for r in labels] == ["ranksvm-labels"]
    written = plot_logsize(runs, "ndcg@10", tmp_path / "plots")
    assert sorted(p.name for p in written) == sorted(logsize_names(runs)) == [
        "counterfactual_sweep_logsize.caption.txt", "counterfactual_sweep_logsize.pdf",
        "counterfactual_sweep_logsize.png"]
    caption = (tmp_path / "plots" / "counterfactual_sweep_logsize.caption.txt").read_text()
    assert "RankSVM (naive clicks): sessions 300, 1500" in caption and "RankSVM (labels): trained on the labels" in caption
    _ok("plot", str(tmp_path / "out"), "--out", str(tmp_path / "cli-plots"))  # ltr plot draws it too
    assert (tmp_path / "cli-plots" / "counterfactual_sweep_logsize.png").is_file()


def test_selection_on_clicks_chooses_by_the_vali_logs_estimate(folds, tmp_path):
    out = tmp_path / "out"
    _ok("run", CONFIG, "--set", f"dataset.root={folds}", *SMALL, "--set", "learners.ranksvm-ips.clicks.select=clicks",
        "--learner", "ranksvm-ips", "--out", str(out), "-q")
    run = next((out / "counterfactual_synthetic").glob("ranksvm-ips-*"))
    summary = json.loads((run / "summary.json").read_text())
    assert summary["selected_by"].startswith("vali clicks")
    for grid, row in zip(summary["grid"], summary["per_fold"]):
        scores = [t["vali_clicks"] for t in grid["tried"]]
        assert all(s > 0 for s in scores)
        best = grid["tried"][int(np.argmax(scores))]["params"]
        assert json.loads(row["chosen"]) == best


def test_a_label_runs_checkpoint_digest_does_not_name_clicks():
    """Runs on labels keep the fold-checkpoint digest they had before the clicks block:
    an interrupted run resumes."""
    from ltr_cli.config.experiment import load_config
    from ltr_cli.protocols.cv_checkpoint import learner_digest
    from ltr_cli.runs.plan import plan_experiment

    spec = load_config(REPO / "configs" / "mslr_batch.yaml")
    runs = {run.learner: run for run in plan_experiment(spec)[0]}
    for name in ("ranksvm", "lambdamart"):
        lspec = spec.learners[name]
        dumped = {k: v for k, v in lspec.model_dump(mode="json").items() if k != "clicks"}
        want = learner_digest(dumped, select_by=spec.cv.select_by, convention=spec.cv.convention,
                              normalize=spec.dataset.normalize, tests=None)
        plan = runs[name].cv_plan(Path("/nonexistent"))
        assert plan.checkpoint(Path("/nonexistent/run"), {"files": []}, [1]).learner == want
