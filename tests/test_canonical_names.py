"""One spelling per metric in every output (``ap``, ``ndcg@10``; typeset ``MAP``,
``NDCG@10``), the aliases accepted on input, run folders of older versions (``map``
columns) read as if new; settings in one YAML form; counts with their plurals."""

from __future__ import annotations

import csv
import io
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.measures.registry import canonical_column, display_name
from ltr_cli.names import count, setting, settings_text, setting_value
from tests.test_batch_protocol import make_letor

runner = CliRunner()


def test_canonical_and_display_names():
    assert [canonical_column(c) for c in ("map", "vali_map", "map_std", "paper_map", "heldout_map", "ndcg@3_std",
                                          "fold", "chosen", "test_queries")] == \
        ["ap", "vali_ap", "ap_std", "paper_ap", "heldout_ap", "ndcg@3_std", "fold", "chosen", "test_queries"]
    assert [display_name(m) for m in ("ap", "map", "ndcg@10", "p@5", "rr", "err@10-gmax=2", "mean_ndcg", "runs")] == \
        ["MAP", "MAP", "NDCG@10", "P@5", "MRR", "ERR@10 (gmax=2)", "MeanNDCG", "runs"]


def test_settings_and_counts_in_one_form():
    assert setting("learners.slam-ndcg.step.eta", 1.0, "slam-ndcg") == "step.eta: 1"
    assert setting("learner.step.eta", 0.1) == "step.eta: 0.1"
    assert setting("protocol.shuffle", True) == "protocol.shuffle: true"
    assert [setting_value(v) for v in (None, False, 1e-05, [0.1, 1], {"rule": "inv-sqrt", "eta": 2.0}, "true",
                                       "1", "a b", "ndcg@10", float("nan"))] == \
        ["null", "false", "1e-05", "[0.1, 1]", "{rule: inv-sqrt, eta: 2}", "'true'", "'1'", "'a b'", "ndcg@10",
         ".nan"]
    assert settings_text({"step.eta": 1.0, "protocol.passes": 4}) == "step.eta: 1, protocol.passes: 4"
    assert [count(1, "update"), count(2, "update"), count(1, "query"), count(3, "query"), count(0, "fold"),
            count(2, "data file"), count(63_800, "round")] == \
        ["1 update", "2 updates", "1 query", "3 queries", "0 folds", "2 data files", "63,800 rounds"]


def _csv(args: list[str]) -> list[dict[str, str]]:
    res = runner.invoke(app, ["report", *args, "--format", "csv"])
    assert res.exit_code == 0, res.stderr
    return list(csv.DictReader(io.StringIO(res.stdout)))


def _as_older_version(run: Path) -> None:
    """Rewrite a run folder as a version that spelled AP ``map`` would have written it."""
    rename = {"ap": "map", "vali_ap": "vali_map"}
    for name in ("rounds.parquet", "test_queries.parquet"):
        if (run / name).is_file():
            table = pd.read_parquet(run / name)
            table.rename(columns=rename).to_parquet(run / name, index=False)
    summary = json.loads((run / "summary.json").read_text())
    summary["metrics"] = {rename.get(k, k): v for k, v in summary["metrics"].items()}
    (run / "summary.json").write_text(json.dumps(summary))


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    root = tmp_path_factory.mktemp("names")
    make_letor(root / "OHSUMED", queries=12, docs=8)
    cfg = root / "c.yaml"
    cfg.write_text(f"""experiment: names
dataset: {{kind: registry, name: letor3-ohsumed, root: {root / 'OHSUMED'}, folds: [1, 2, 3]}}
cv: {{select_by: map, metrics: [map, ndcg@3]}}
learners:
  ranksvm: {{type: ranksvm, label: RankSVM, grid: {{C: [1]}}}}
  rankboost: {{type: rankboost, label: RankBoost, grid: {{rounds: [2]}}}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(root / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    return root / "out" / "names"


def test_batch_outputs_use_one_spelling(batch):
    for run in batch.iterdir():
        summary = json.loads((run / "summary.json").read_text())
        assert list(summary["metrics"]) == ["ap", "ndcg@3"] and summary["selected_by"] == "vali ap"
        assert list(pd.read_parquet(run / "rounds.parquet").columns)[2:] == ["vali_ap", "ap", "ndcg@3"]
    rows = _csv([str(batch)])
    assert {"ap", "ap_std", "paper_ap"} <= set(rows[0]) and not any("map" in c for c in rows[0])
    pivot = runner.invoke(app, ["report", str(batch), "--pivot", "--format", "csv"])
    sample = "letor3-ohsumed sample (36 of 106 queries)"  # a partial read says so, as the figures
    assert pivot.stdout.splitlines()[0] == f"learner,{sample}:ap,{sample}:ndcg@3,convention"
    latex = runner.invoke(app, ["report", str(batch), "--format", "latex"]).stdout
    assert "MAP & MAP sd & NDCG@3 & NDCG@3 sd" in latex


def test_an_older_run_folder_reads_with_the_one_spelling(batch, tmp_path):
    new = _csv([str(batch)])
    old = tmp_path / "old"
    shutil.copytree(batch, old)
    for run in old.iterdir():
        _as_older_version(run)
    assert _csv([str(old)]) == new
    res = runner.invoke(app, ["compare", str(old), "--metric", "map"])
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("ap:") and res.stdout == runner.invoke(app, ["compare", str(batch), "--metric",
                                                                              "ap"]).stdout
    marked = runner.invoke(app, ["report", str(old), "--baseline", "rankboost"])
    assert marked.exit_code == 0, marked.stderr


def test_online_alias_in_config_and_options(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("""experiment: alias
dataset: {kind: separable, queries: 30}
metrics: {names: [map, ndcg@10]}
learners:
  listnet: {type: listnet, label: ListNet, step: {rule: inv-sqrt, eta: 1.0}}
""")
    for eta in ("0.5", "1.0"):
        res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "--set",
                                  f"learners.listnet.step.eta={eta}"])
        assert res.exit_code == 0, res.stderr
        assert "30 rounds, " in res.stdout and "time-averaged MAP=" in res.stdout
    out = tmp_path / "out" / "alias"
    for run in out.iterdir():
        assert list(json.loads((run / "summary.json").read_text())["metrics"]) == ["ap", "ndcg@10"]
    rows = _csv([str(out)])
    assert sorted({r["metric"] for r in rows}) == ["ap", "ndcg@10"]
    assert sorted({r["settings"] for r in rows}) == ["step.eta: 0.5", "step.eta: 1"]
    chosen = _csv([str(out), "--select-by", "map"])
    assert chosen[0]["selected_by"].startswith("ap, last 10 rounds")
    assert chosen[0]["settings"] in ("step.eta: 0.5", "step.eta: 1")  # relative to the learner
    for run in out.iterdir():
        _as_older_version(run)
    assert sorted({r["metric"] for r in _csv([str(out)])}) == ["ap", "ndcg@10"]
