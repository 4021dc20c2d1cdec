"""``ltr plot`` on batch runs: grouped bars of the test metrics per method (the
direct-optimisation paper's Figures 4-6), degenerate runs without bars, and one-line errors."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.reports.batch_bars import bar_plan
from ltr_cli.results.folders import find_runs, read_run
from tests.test_batch_protocol import make_letor

runner = CliRunner()


def _cv(tmp_path: Path) -> Path:
    make_letor(tmp_path / "OHSUMED", queries=6, docs=8)
    cfg = tmp_path / "cv.yaml"
    cfg.write_text(f"""experiment: bars
dataset: {{kind: registry, name: letor3-ohsumed, root: {tmp_path / 'OHSUMED'}, folds: [1, 2, 3]}}
cv: {{select_by: map}}
learners:
  ranksvm: {{type: ranksvm, grid: {{C: [1]}}}}
  adarank: {{type: adarank, measure: map, grid: {{rounds: [5]}}}}
""")
    out = tmp_path / "out"
    res = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"])
    assert res.exit_code == 0, res.stderr
    return out


def test_batch_runs_plot_as_grouped_bars_of_the_papers_metrics(tmp_path):
    out = _cv(tmp_path)
    runs = [read_run(p) for p in find_runs([out])]
    (chosen, group), = bar_plan(runs, None).values()
    assert chosen == ["ap", "ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10"] and len(group) == 2
    res = runner.invoke(app, ["plot", str(out)])
    assert res.exit_code == 0, res.stderr
    written = sorted(Path(p).name for p in res.stdout.split())
    assert written == ["bars_bars.caption.txt", "bars_bars.pdf", "bars_bars.png"]
    caption = (out / "plots" / "bars_bars.caption.txt").read_text()
    assert "Data: LETOR 3.0 OHSUMED sample (18 of 106 queries)." in caption  # 3 folds of 6 queries
    assert "RankSVM: mean over 3 test folds, error bars the sample standard deviation over folds" in caption
    assert (out / "plots" / "bars_bars.png").stat().st_size > 1000
    res = runner.invoke(app, ["plot", str(out), "--metric", "map", "--metric", "p@3", "--out", str(tmp_path / "p2")])
    assert res.exit_code == 0, res.stderr


def test_an_unknown_bar_metric_is_one_line_before_anything_is_written(tmp_path):
    out = _cv(tmp_path)
    res = runner.invoke(app, ["plot", str(out), "--metric", "err@10", "--out", str(tmp_path / "none")])
    assert res.exit_code == 1
    assert res.stderr.count("\n") == 1 and "'err@10' is not a test metric" in res.stderr
    assert not (tmp_path / "none").exists()
