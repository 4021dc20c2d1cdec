"""Paper numbers are looked up by the paper a config names (``paper:``), then dataset, role,
protocol: a learner two papers run (ListNet) never borrows the other paper's number."""

from __future__ import annotations

import csv
import io
from pathlib import Path

from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.reports.paper_numbers import batch_paper_value, paper_value
from tests.conftest import REPO

runner = CliRunner()


def test_lookup_is_by_paper_first():
    assert paper_value("perceptron", "yahoo-set1", "listnet", "ndcg@10") == 0.74
    assert paper_value("top-k", "yahoo-set1", "listnet", "ndcg@10") is None
    assert paper_value(None, "yahoo-set1", "listnet", "ndcg@10") is None
    assert batch_paper_value("letor2-ohsumed", "SVMmap", "map") == 0.4456
    assert batch_paper_value("letor2-ohsumed", "SVMmap", "map", "perceptron") is None


def _rows(out: Path) -> list[dict[str, str]]:
    res = runner.invoke(app, ["report", str(out), "--format", "csv"])
    assert res.exit_code == 0, res.stderr
    return list(csv.DictReader(io.StringIO(res.stdout)))


def test_yahoo_topk_on_the_yahoo_sample_shows_no_perceptron_paper_number(tmp_path, yahoo_sample):
    files = f"{{kind: files, files: [{yahoo_sample / 'rank.train'}], name: yahoo-set1, features: 700, qid: group}}"
    out = tmp_path / "topk"
    res = runner.invoke(app, ["run", str(REPO / "configs" / "yahoo_topk.yaml"), "--out", str(out), "-q",
                              "--set", f"dataset={files}", "--set", "protocol.passes=1",
                              "--set", "protocol.max_rounds=60", "--learner", "listnet"])
    assert res.exit_code == 0, res.stderr
    (row,) = [r for r in _rows(out) if r["metric"] == "ndcg@10"]
    assert row["learner"] == "listnet" and row["dataset"] == "yahoo-set1"
    assert row["paper"] == "" and row["difference"] == "" and row["vs_paper"] == ""

    slam = tmp_path / "slam"
    res = runner.invoke(app, ["run", str(REPO / "configs" / "yahoo_slam.yaml"), "--out", str(slam), "-q",
                              "--set", f"dataset={files}", "--set", "protocol.max_rounds=60", "--learner", "listnet"])
    assert res.exit_code == 0, res.stderr
    (row,) = [r for r in _rows(slam) if r["metric"] == "ndcg@10"]
    assert row["paper"] == "0.74" and row["vs_paper"].startswith("not comparable")


def test_a_config_naming_no_paper_gets_no_number_and_says_which_to_name(tmp_path, yahoo_sample):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""experiment: mine
dataset: {{kind: files, files: [{yahoo_sample / 'rank.train'}], name: yahoo-set1, features: 700, qid: group}}
protocol: {{max_rounds: 30}}
learners:
  listnet: {{type: listnet}}
""")
    out = tmp_path / "out"
    assert runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"]).exit_code == 0
    (row,) = [r for r in _rows(out) if r["metric"] == "ndcg@10"]
    assert row["paper"] == "" and "set paper: perceptron" in row["vs_paper"]
