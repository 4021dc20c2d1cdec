"""``ltr report``, ``ltr plot`` and ``ltr compare`` on click runs: the report's final offline
value (the last held-out evaluation) and discounted cumulative online value with their
spread over seeds, and the click model of each row; the click figures, a panel per click
model; paired tests on the final held-out value."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.learners.examples import write_data
from tests.test_plot_style import legend_labels, saved_figures

runner = CliRunner()
MODELS = ("navigational", "perfect")
ROUNDS, EVERY = 200, 50


@pytest.fixture(scope="module")
def clicks(tmp_path_factory) -> Path:
    """One experiment run under two click models (two configs), two learners, two seeds:
    ``<root>/res/clickcmp``."""
    root = tmp_path_factory.mktemp("clickreports")
    train = write_data(root / "train.txt", queries=30)
    held = write_data(root / "held.txt", queries=12, seed=5)
    for model in MODELS:
        cfg = root / f"{model}.yaml"
        cfg.write_text(f"""experiment: clickcmp
seeds: [1, 2]
dataset: {{kind: files, features: 12, files: [{train}]}}
protocol:
  feedback: clicks
  sampling: uniform
  max_rounds: {ROUNDS}
  clicks: {{model: {model}, stop: any-position, shown: 10}}
heldout: {{file: {held}, every: {EVERY}}}
metrics: {{names: [ndcg@10], no_relevant: skip}}
learners:
  ogd: {{type: ogd, surrogate: squared, step: {{rule: inv-sqrt, eta: 0.1}}}}
  random: {{type: random}}
""")
        res = runner.invoke(app, ["run", str(cfg), "--out", str(root / "res"), "-q"])
        assert res.exit_code == 0, res.stderr
    return root / "res" / "clickcmp"


def _summaries(folder: Path) -> dict[str, dict]:
    return {p.parent.name: json.loads(p.read_text()) for p in folder.glob("*/summary.json")}


def _model(run: Path) -> str:
    import yaml

    return yaml.safe_load((run / "config.yaml").read_text())["protocol"]["clicks"]["model"]


def test_the_report_gives_the_final_offline_and_discounted_online_values_per_click_model(clicks, tmp_path):
    res = runner.invoke(app, ["report", str(clicks), "--format", "csv"])
    assert res.exit_code == 0, res.stderr
    rows = list(csv.DictReader(io.StringIO(res.stdout)))
    assert len(rows) == 4  # two learners x two click models
    head = res.stdout.splitlines()[0].split(",")
    at = head.index("final")
    assert head[at + 1:at + 6] == ["click_model", "heldout_last", "heldout_last_std", "discounted_cumulative",
                                   "discounted_cumulative_std"]
    summaries = _summaries(clicks)
    for row in rows:
        runs = row["runs"].split()
        assert len(runs) == 2 and row["seeds"] == "2"
        models = {_model(clicks / r) for r in runs}
        assert models == {row["click_model"]}
        heldout = [summaries[r]["heldout"]["last"]["heldout_ndcg@10"] for r in runs]
        online = [summaries[r]["metrics"]["ndcg@10"]["discounted_cumulative"] for r in runs]
        assert float(row["heldout_last"]) == pytest.approx((heldout[0] + heldout[1]) / 2, rel=1e-12)
        assert float(row["heldout_last_std"]) == pytest.approx(abs(heldout[0] - heldout[1]) / 2 ** 0.5, rel=1e-12)
        assert float(row["discounted_cumulative"]) == pytest.approx((online[0] + online[1]) / 2, rel=1e-12)
        assert float(row["discounted_cumulative_std"]) == pytest.approx(abs(online[0] - online[1]) / 2 ** 0.5,
                                                                        rel=1e-12)
    assert [(r["learner"], r["click_model"]) for r in rows] == [(learner, model) for learner in ("ogd", "random")
                                                               for model in MODELS]
    markdown = runner.invoke(app, ["report", str(clicks)]).stdout
    assert "| click_model | heldout_last | heldout_last_std | discounted_cumulative |" in markdown
    assert "`discounted_cumulative`: the sum over rounds t of gamma^(t-1)" in markdown
    latex = runner.invoke(app, ["report", str(clicks), "--format", "latex"]).stdout
    assert "clicks & " in latex and "final offline & sd & cumulative online & sd" in latex
    html = tmp_path / "report.html"
    assert runner.invoke(app, ["report", str(clicks), "--html", "--out", str(html)]).exit_code == 0
    assert "<th>heldout_last</th>" in html.read_text() and "<th>click_model</th>" in html.read_text()


def test_a_report_of_one_click_model_has_no_click_model_column(clicks):
    one = [str(p) for p in clicks.iterdir() if p.is_dir() and _model(p) == "perfect"]
    res = runner.invoke(app, ["report", *one, "--format", "csv"])
    assert res.exit_code == 0, res.stderr
    head = res.stdout.splitlines()[0].split(",")
    assert "click_model" not in head and "heldout_last" in head and "discounted_cumulative" in head


def test_plot_draws_offline_and_online_curves_a_panel_per_click_model(clicks, tmp_path, monkeypatch):
    figures = saved_figures(monkeypatch)
    out = tmp_path / "figs"
    res = runner.invoke(app, ["plot", str(clicks), "--out", str(out)])
    assert res.exit_code == 0, res.stderr
    stems = ["clicks_clickcmp_heldout_ndcg_at_10", "clicks_clickcmp_ndcg_at_10"]
    assert sorted(p.name for p in out.iterdir()) == sorted(f"{s}.{e}" for s in stems
                                                           for e in ("caption.txt", "pdf", "png"))
    offline, online = figures
    for fig in figures:
        assert len(fig.axes) == 2  # one panel per click model
        assert [ax.get_title() for ax in fig.axes] == [f"{m} clicks" for m in MODELS]
        assert sorted(legend_labels(fig)) == ["OGD-SQUARED", "Random"]  # one shared legend, each learner once
        for ax in fig.axes:
            assert [line.get_label() for line in ax.get_lines()] == ["OGD-SQUARED", "Random"]
            assert ax.get_xlabel() == "Impressions"
    # offline: the held-out evaluations, at the rounds they were made, the seeds' mean
    runs = [p for p in clicks.iterdir() if p.is_dir() and p.name.startswith("ogd") and _model(p) == "navigational"]
    summaries = _summaries(clicks)
    ogd = offline.axes[0].get_lines()[0]
    assert ogd.get_xdata().tolist() == list(range(EVERY, ROUNDS + 1, EVERY))
    final = np.mean([summaries[r.name]["heldout"]["last"]["heldout_ndcg@10"] for r in runs])
    assert ogd.get_ydata()[-1] == pytest.approx(final, rel=1e-12)
    assert len(online.axes[0].get_lines()[0].get_xdata()) == ROUNDS
    caption = (out / f"{stems[0]}.caption.txt").read_text()
    assert "a panel per click model, left to right: (a) navigational; (b) perfect" in caption


def test_compare_pairs_the_final_heldout_value_over_seeds_with_holm(clicks):
    res = runner.invoke(app, ["compare", str(clicks), "--metric", "heldout_ndcg@10", "--json"])
    assert res.exit_code == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["metric"] == "heldout_ndcg@10" and out["unit"] == "seed" and out["adjustment"] == "holm"
    # four learners (two per click model): the pairs across click models are not tested
    assert len(out["pairs"]) == 6 and out["comparisons"] == 2
    summaries = _summaries(clicks)
    by_seed: dict[str, dict[int, float]] = {}
    for run, s in summaries.items():
        name = f"{s['learner']} (protocol.clicks.model: {_model(clicks / run)})"
        by_seed.setdefault(name, {})[s["seed"]] = s["heldout"]["last"]["heldout_ndcg@10"]
    from scipy import stats

    ps, tested = [], []
    for i, pair in enumerate(out["pairs"]):
        if pair["a"].split(": ")[1] != pair["b"].split(": ")[1]:  # another click model
            assert pair["p"] is None and pair["n"] == 0
            models = (pair["a"].split(": ")[1].rstrip(")"), pair["b"].split(": ")[1].rstrip(")"))
            assert pair["note"] == (f"not paired: {pair['a']} and {pair['b']} learned from other users' clicks "
                                    f"(click model: model {models[0]} against {models[1]}); no test")
            continue
        a, b = by_seed[pair["a"]], by_seed[pair["b"]]
        diffs = [a[k] - b[k] for k in (1, 2)]
        assert pair["n"] == 2 and pair["mean_difference"] == pytest.approx(np.mean(diffs), rel=1e-12)
        assert 0 <= pair["p"] <= 1 and pair["p"] == pytest.approx(stats.ttest_rel([a[1], a[2]], [b[1], b[2]]).pvalue,
                                                                  rel=1e-9)
        ps.append(pair["p"])
        tested.append(i)
    assert len(ps) == 2 and all(p < 1 for p in ps)  # OGD against Random, under each click model
    order = np.argsort(ps)
    holm = np.minimum(1, np.maximum.accumulate([ps[i] * (len(ps) - k) for k, i in enumerate(order)]))
    assert [out["pairs"][tested[i]]["p_holm"] for i in order] == pytest.approx(holm.tolist(), rel=1e-12)
    text = runner.invoke(app, ["compare", str(clicks), "--metric", "heldout_ndcg@10"]).stdout
    assert "a seed's value: the last held-out evaluation" in text


def test_compare_on_a_heldout_metric_the_runs_did_not_evaluate_is_one_line(clicks):
    res = runner.invoke(app, ["compare", str(clicks), "--metric", "heldout_ndcg@5"])
    assert res.exit_code == 1
    assert "no held-out metric 'heldout_ndcg@5' (it has heldout_ndcg@10)" in res.stderr
    errors = [line for line in res.stderr.splitlines() if not line.startswith("ltr: note:")]
    assert len(errors) == 1 and "Traceback" not in res.stderr


@pytest.fixture(scope="module")
def protocols(tmp_path_factory) -> Path:
    """Two click learners of one experiment, each run alone: under another horizon
    (``rounds``), or another gamma (``gammas``); two seeds each."""
    root = tmp_path_factory.mktemp("clickprotocols")
    train = write_data(root / "train.txt", queries=30)
    cfg = root / "c.yaml"
    cfg.write_text(f"""experiment: proto
seeds: [1, 2]
dataset: {{kind: files, features: 12, files: [{train}]}}
protocol:
  feedback: clicks
  sampling: uniform
  max_rounds: 120
  clicks: {{model: navigational, shown: 10, gamma: 0.9995}}
metrics: {{names: [ndcg@10], no_relevant: skip}}
learners:
  fast: {{type: pdgd, learning_rate: 0.1}}
  slow: {{type: pdgd, learning_rate: 0.01}}
""")
    for folder, setting in (("rounds", "protocol.max_rounds=60"), ("gammas", "protocol.clicks.gamma=0.9")):
        for learner, extra in (("fast", []), ("slow", ["--set", setting])):
            res = runner.invoke(app, ["run", str(cfg), "--learner", learner, "--out", str(root / folder), "-q", *extra])
            assert res.exit_code == 0, res.stderr
    return root


def test_compare_refuses_click_runs_of_other_horizons_and_notes_another_gamma(protocols):
    """Once paired with a p-value and no word: runs of 120 and 60 rounds (not paired), and
    runs discounted by other gammas (paired: the compared values do not depend on it, a note)."""
    res = runner.invoke(app, ["compare", str(protocols / "rounds" / "proto"), "--metric", "ndcg@10", "--json"])
    (pair,) = json.loads(res.stdout)["pairs"]
    assert pair["p"] is None and pair["note"] == ("not paired: fast and slow ran for other horizons (rounds: 120 "
                                                  "against 60); no test")
    res = runner.invoke(app, ["compare", str(protocols / "gammas" / "proto"), "--metric", "ndcg@10", "--json"])
    (pair,) = json.loads(res.stdout)["pairs"]
    assert pair["p"] is not None and pair["n"] == 2
    assert pair["note"].startswith("gamma differs (0.9995 against 0.9): only the discounted cumulative value")
    res = runner.invoke(app, ["compare", str(protocols / "gammas" / "proto"), "--metric", "ndcg@10", "--on",
                              "cumulative", "--json"])  # the discounted sums themselves: not paired
    (pair,) = json.loads(res.stdout)["pairs"]
    assert pair["p"] is None and pair["note"] == ("not paired: fast and slow discount their cumulative values by "
                                                  "other gammas (discount: 0.9995 against 0.9); no test")


def test_the_report_gives_each_gamma_its_own_discounted_column(protocols):
    """Sums discounted by different gammas once shared one column: a column per gamma, each
    row's value in its own, in CSV, markdown (whose note says so) and LaTeX."""
    folder = str(protocols / "gammas" / "proto")
    rows = list(csv.DictReader(io.StringIO(runner.invoke(app, ["report", folder, "--format", "csv"]).stdout)))
    assert "discounted_cumulative" not in rows[0]
    by = {r["learner"]: r for r in rows}
    assert by["fast"]["discounted_cumulative@0.9995"] and not by["fast"]["discounted_cumulative@0.9"]
    assert by["slow"]["discounted_cumulative@0.9"] and not by["slow"]["discounted_cumulative@0.9995"]
    summaries = _summaries(protocols / "gammas" / "proto")
    slow = [s["metrics"]["ndcg@10"]["discounted_cumulative"] for s in summaries.values() if s["learner"] == "slow"]
    assert float(by["slow"]["discounted_cumulative@0.9"]) == pytest.approx(np.mean(slow), rel=1e-12)
    markdown = runner.invoke(app, ["report", folder]).stdout
    assert "one column per gamma (`discounted_cumulative@<gamma>`)" in markdown
    latex = runner.invoke(app, ["report", folder, "--format", "latex"]).stdout
    assert r"cumulative online ($\gamma$ 0.9995) & sd & cumulative online ($\gamma$ 0.9) & sd" in latex
    one = runner.invoke(app, ["report", str(protocols / "rounds" / "proto")]).stdout
    assert "| discounted_cumulative |" in one and "(gamma 0.9995)" in one
