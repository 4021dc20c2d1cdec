"""Held-out curves: ``heldout: {file, every}`` evaluates each online learner's current weights
on a held-out file every N rounds, with the run's metrics and convention, into
``heldout_<metric>`` columns; the compiled block loop and the round-by-round path agree, a
resumed run keeps them, and ``ltr plot`` draws them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.data.formats import open_dataset
from ltr_cli.data.options import ReaderOptions
from ltr_cli.data.synthetic import SeparableSpec, separable_queries, write_svmlight
from ltr_cli.measures.conventions import Measure
from ltr_cli.measures.metrics import rank_from_scores

runner = CliRunner()

CONFIG = """experiment: held
dataset: {{kind: separable, variant: paper, queries: 60, seed: 1}}
protocol: {{max_rounds: 60, checkpoint_every: {checkpoint}}}
metrics: {{names: [ndcg@10, ap, err@10], ties: {ties}}}
heldout: {{file: {file}, every: 15}}
learners:
  slam: {{type: slam-perceptron, step: {{rule: constant, eta: 1.0}}}}
  listnet: {{type: listnet, step: {{rule: inv-sqrt, eta: 0.5}}}}
"""


def _heldout_file(tmp_path: Path) -> Path:
    path = tmp_path / "heldout.txt"
    write_svmlight(path, separable_queries(SeparableSpec("paper", 25, 8, 20, 0.1, 99)), qid_style="token")
    return path


def _run(tmp_path: Path, name: str, ties: str = "input-order", checkpoint: int = 0,
         env: dict[str, str] | None = None, monkeypatch: pytest.MonkeyPatch | None = None) -> dict[str, Path]:
    cfg = tmp_path / f"{name}.yaml"
    cfg.write_text(CONFIG.format(file=_heldout_file(tmp_path), ties=ties, checkpoint=checkpoint))
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / name), "-q"])
    assert res.exit_code == 0, res.stderr
    return {Path(p).name.split("-")[0]: Path(p) for p in res.stdout.split()}


def _reference(heldout: Path, w: np.ndarray, name: str, ties: str) -> float:
    meas = Measure(name)
    values = [meas.value(rank_from_scores(q.X @ w, ties, np.random.default_rng(0)), q.y)
              for q in open_dataset(heldout, ReaderOptions(n_features=20)).dense_queries()]
    kept = [v for v in values if v is not None]
    return float(np.mean(kept))


@pytest.mark.parametrize("ties", ["input-order", "reverse-input"])
def test_heldout_columns_hold_the_current_weights_values_every_n_rounds(tmp_path, ties):
    runs = _run(tmp_path, "a", ties)
    for learner, run in runs.items():
        rounds = pd.read_parquet(run / "rounds.parquet")
        for metric in ("ndcg@10", "ap", "err@10"):
            col = rounds[f"heldout_{metric}"]
            evaluated = rounds["t"][col.notna()].tolist()
            assert evaluated == [15, 30, 45, 60], (learner, metric)
            w = np.array(json.loads((run / "models.json").read_text())["final"]["w"])
            assert col.iloc[-1] == pytest.approx(_reference(tmp_path / "heldout.txt", w, metric, ties), abs=1e-12)
        summary = json.loads((run / "summary.json").read_text())
        assert summary["heldout"]["every"] == 15 and summary["heldout"]["queries"] == 25
        assert summary["heldout"]["last"]["heldout_ndcg@10"] == rounds["heldout_ndcg@10"].iloc[-1]
        manifest = json.loads((run / "manifest.json").read_text())
        assert manifest["heldout"]["file"]["path"].endswith("heldout.txt")


def test_the_block_loop_and_the_round_by_round_path_write_the_same_heldout_values(tmp_path, monkeypatch):
    from ltr_cli.protocols import online_blocks

    blocks = _run(tmp_path, "blocks", checkpoint=7)
    monkeypatch.setattr(online_blocks, "BLOCKS", False)
    from ltr_cli.runs import online as runs_online

    monkeypatch.setattr(runs_online, "BLOCKS", False)
    rounds = _run(tmp_path, "rounds", checkpoint=7)
    for learner in blocks:
        a = pd.read_parquet(blocks[learner] / "rounds.parquet")
        b = pd.read_parquet(rounds[learner] / "rounds.parquet")
        pd.testing.assert_frame_equal(a, b)


def test_plot_draws_the_heldout_columns_and_errors_are_one_line(tmp_path):
    runs = _run(tmp_path, "p")
    res = runner.invoke(app, ["plot", str(tmp_path / "p"), "--metric", "heldout_ndcg@10"])
    assert res.exit_code == 0, res.stderr
    assert sorted(Path(p).name for p in res.stdout.split()) == ["held_heldout_ndcg_at_10.caption.txt",
                                                               "held_heldout_ndcg_at_10.pdf",
                                                               "held_heldout_ndcg_at_10.png"]
    assert runs
    cfg = tmp_path / "missing.yaml"
    cfg.write_text(CONFIG.format(file=tmp_path / "nowhere.txt", ties="input-order", checkpoint=0))
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "m")])
    assert res.exit_code == 1 and res.stderr.count("\n") == 1 and "heldout.file:" in res.stderr


def test_heldout_on_the_yahoo_sample(tmp_path, yahoo_sample):
    cfg = tmp_path / "y.yaml"
    cfg.write_text(f"""experiment: yahoo_heldout
dataset: {{kind: files, files: [{yahoo_sample / 'rank.train'}], features: 700, qid: group}}
protocol: {{max_rounds: 120}}
heldout: {{file: {yahoo_sample / 'rank.test'}, every: 40}}
learners:
  slam: {{type: slam-perceptron, measure: ndcg, mistake: ndcg@10}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "y"), "-q"])
    assert res.exit_code == 0, res.stderr
    rounds = pd.read_parquet(Path(res.stdout.split()[0]) / "rounds.parquet")
    held = rounds[["t", "heldout_ndcg@10", "heldout_ap"]].dropna()
    assert held["t"].tolist() == [40, 80, 120]
    assert ((held["heldout_ndcg@10"] > 0) & (held["heldout_ndcg@10"] <= 1)).all()


def test_a_run_interrupted_after_a_checkpoint_resumes_with_its_heldout_values(tmp_path, monkeypatch):
    from ltr_cli.protocols.checkpoint import Checkpointer

    reference = _run(tmp_path, "ref", checkpoint=20)
    real_save = Checkpointer.save
    saves = []

    def save_then_stop(self, state):
        real_save(self, state)
        saves.append(state.t)
        if len(saves) == 2:  # after round 40: the evaluations of rounds 15 and 30 are in it
            raise KeyboardInterrupt

    monkeypatch.setattr(Checkpointer, "save", save_then_stop)
    cfg = tmp_path / "ref.yaml"
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "cut"), "-q"])
    assert res.exit_code != 0 and saves[:2] == [20, 40]
    monkeypatch.setattr(Checkpointer, "save", real_save)
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "cut"), "-q", "--resume"])
    assert res.exit_code == 0, res.stderr
    for path in res.stdout.split():
        learner = Path(path).name.split("-")[0]
        pd.testing.assert_frame_equal(pd.read_parquet(Path(path) / "rounds.parquet"),
                                      pd.read_parquet(reference[learner] / "rounds.parquet"))
