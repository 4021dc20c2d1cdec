"""A batch run records its test metrics under all three rules for queries without a
relevant document (as 1, as 0, left out) beside its own, and ``ltr report`` shows them."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.protocols.no_relevant_rules import rules_problem

runner = CliRunner()
EMPTY = {"1", "2", "3", "13", "14", "25"}  # queries whose documents are all made label 0


def _ok(*args: str) -> str:
    res = runner.invoke(app, list(args))
    assert res.exit_code == 0, res.stderr
    return res.stdout


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("nr")
    root = tmp / "d"
    _ok("data", "synth", str(root), "--like", "mslr-web10k", "--folds", "--queries", "60", "--docs-per-query", "30")
    for path in root.glob("Fold*/*.txt"):
        lines = path.read_text().splitlines()
        path.write_text("\n".join(("0" + line[line.index(" "):]) if line.split()[1][4:] in EMPTY else line
                                  for line in lines) + "\n")
    cfg = tmp / "c.yaml"
    cfg.write_text(f"experiment: nr\ndataset: {{kind: registry, name: mslr-web10k, root: {root}, normalize: zscore}}\n"
                   "cv: {select_by: ndcg@10, convention: mslr}\nlearners:\n  rs: {type: ranksvm, grid: {C: [0.1]}}\n")
    _ok("run", str(cfg), "--out", str(tmp / "out"), "-q")
    (folder,) = (tmp / "out" / "nr").glob("rs-*")
    return folder


def test_the_three_rules_are_the_fold_means_of_the_same_rankings(run):
    summary = json.loads((run / "summary.json").read_text())
    found = summary["no_relevant"]
    assert found["rule"] == "zero" and found["queries"]["ndcg@10"] == len(EMPTY)
    assert "p@10" not in found["queries"]  # precision is 0 there by definition: no rule
    assert found["metrics"]["zero"] == {k: summary["metrics"][k] for k in found["queries"]}
    per_query = pd.read_parquet(run / "test_queries.parquet")
    empty = per_query["qid"].isin(EMPTY)
    assert (per_query.loc[empty, "ndcg@10"] == 0).all()
    for rule, fill in (("one", 1.0), ("skip", None)):
        folds = []
        for _, group in per_query.assign(empty=empty).groupby("fold"):
            values = group["ndcg@10"].where(~group["empty"], fill) if fill is not None else group.loc[~group["empty"], "ndcg@10"]
            folds.append(float(np.mean(values)))
        assert found["metrics"][rule]["ndcg@10"] == pytest.approx(float(np.mean(folds)), abs=1e-12)
    assert found["metrics"]["one"]["ndcg@10"] > found["metrics"]["skip"]["ndcg@10"] > found["metrics"]["zero"]["ndcg@10"]


def test_report_shows_the_rules_beside_the_runs(run):
    text = _ok("report", str(run.parent))
    line = next(row for row in text.splitlines() if row.startswith("| nr | rs |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    summary = json.loads((run / "summary.json").read_text())["no_relevant"]
    assert cells[3:6] == ["ndcg@10", str(len(EMPTY)), "60"]
    assert cells[6] == f"{summary['metrics']['one']['ndcg@10']:.4f}" and cells[-1] == "zero (empty as 0)"


def test_a_damaged_checkpoint_record_is_named():
    good = {"queries": {"ndcg@10": 2}, "means": {r: {"ndcg@10": 0.5} for r in ("one", "zero", "skip")}}
    assert rules_problem(good) is None and rules_problem(None) is None
    assert "not queries and means" in rules_problem({"queries": {}})
    assert "not counts" in rules_problem({**good, "queries": {"ndcg@10": -1}})
    assert "one number per rule and metric" in rules_problem({**good, "means": {"one": {"ndcg@10": "x"}}})
