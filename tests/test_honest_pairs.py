"""``ltr compare`` and ``ltr report --baseline`` pair only runs made on the same data: two
learners of one experiment run on different data (``--data``, ``--set dataset...``) get no
p-value and a note that says why; folds (or seeds) only one learner has are left out of
the pairs and named."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from ltr_cli.cli.app import app
from tests.test_batch_protocol import make_letor

runner = CliRunner()
DEMO_ONLINE = """experiment: pairs
dataset: {{kind: separable, queries: 60, seed: {seed}}}
seeds: [0, 1, 2]
learners:
  slam: {{type: slam-perceptron}}
  listnet: {{type: listnet, step: {{rule: inv-sqrt, eta: 0.5}}}}
"""


def _cv_config(tmp_path: Path) -> Path:
    cfg = tmp_path / "cv.yaml"
    cfg.write_text("""experiment: pairs
dataset: {kind: registry, name: letor3-ohsumed, root: nowhere, folds: [1, 2, 3]}
cv: {select_by: map}
learners:
  ranksvm: {type: ranksvm, grid: {C: [1]}}
  adarank: {type: adarank, measure: map, grid: {rounds: [5]}}
""")
    return cfg


def _run(*args: object):
    return runner.invoke(app, [str(a) for a in args], env={"LTR_KERNELS": "0"})


def _ok(*args: object):
    res = _run(*args)
    assert res.exit_code == 0, res.stderr
    return res


def test_batch_learners_on_different_data_get_no_p_value(tmp_path):
    make_letor(tmp_path / "A", queries=6, docs=8)
    make_letor(tmp_path / "B", queries=6, docs=8)
    for f in (tmp_path / "B").rglob("*.txt"):  # other data, the same qids
        f.write_text(f.read_text().replace("\n1 qid:", "\n2 qid:"))
    cfg, out = _cv_config(tmp_path), tmp_path / "out"
    _ok("run", cfg, "--out", out, "-q", "--learner", "ranksvm", "--data", tmp_path / "A")
    _ok("run", cfg, "--out", out, "-q", "--learner", "adarank", "--data", tmp_path / "B")
    got = json.loads(_ok("compare", out, "--metric", "map", "--json").stdout)
    (row,) = got["pairs"]
    assert row["p"] is None and row["p_holm"] is None and row["n"] == 0
    assert "not paired: " in row["note"] and "different data in folds 1, 2, 3" in row["note"]
    text = _ok("compare", out, "--metric", "map").stdout
    assert "different data" in text and "0 with a p-value" in text
    import csv
    import io

    report = list(csv.DictReader(io.StringIO(_ok("report", out, "--baseline", "ranksvm", "--format", "csv").stdout)))
    other = next(r for r in report if r["learner"] == "adarank")
    assert other["vs_baseline"].startswith("not paired: ") and not other.get("marked")


def test_a_learner_without_some_folds_is_paired_on_the_others_and_says_which(tmp_path):
    make_letor(tmp_path / "A", queries=6, docs=8)
    part = tmp_path / "part"
    for fold in (1, 2):
        shutil.copytree(tmp_path / "A" / f"Fold{fold}", part / f"Fold{fold}")
    cfg, out = _cv_config(tmp_path), tmp_path / "out"
    _ok("run", cfg, "--out", out, "-q", "--learner", "ranksvm", "--data", tmp_path / "A")
    _ok("run", cfg, "--out", out, "-q", "--learner", "adarank", "--data", part)
    (row,) = json.loads(_ok("compare", out, "--metric", "map", "--json").stdout)["pairs"]
    assert row["n"] == 12  # the 6 test queries of each of folds 1 and 2
    assert "fold 3 left out (only ranksvm has it)" in row["note"]


def test_online_learners_on_different_generated_data_get_no_p_value(tmp_path):
    cfg = tmp_path / "online.yaml"
    cfg.write_text(DEMO_ONLINE.format(seed=0))
    out = tmp_path / "out"
    _ok("run", cfg, "--out", out, "-q", "--learner", "slam")
    _ok("run", cfg, "--out", out, "-q", "--learner", "listnet", "--set", "dataset.seed=7")
    (row,) = json.loads(_ok("compare", out, "--metric", "ndcg@10", "--json").stdout)["pairs"]
    assert row["p"] is None and "different data in seeds 0, 1, 2" in row["note"]
    same = tmp_path / "same"
    _ok("run", cfg, "--out", same, "-q")
    (row,) = json.loads(_ok("compare", same, "--metric", "ndcg@10", "--json").stdout)["pairs"]
    assert row["n"] == 3 and "not paired" not in (row["note"] or "")
