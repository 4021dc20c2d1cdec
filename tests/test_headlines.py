"""The one line ``ltr run`` prints per run answers the config's question: a batch run's
selection metric first, an online run's held-out metric when it has a held-out set."""

from __future__ import annotations

import re

from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.learners.examples import write_data
from tests.test_batch_protocol import make_letor

runner = CliRunner()


def test_batch_headline_leads_with_the_selection_metric(tmp_path):
    make_letor(tmp_path / "OHSUMED", queries=12, docs=8)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""experiment: head
dataset: {{kind: registry, name: letor3-ohsumed, root: {tmp_path / 'OHSUMED'}, folds: [1, 2, 3]}}
cv: {{select_by: ndcg@10, metrics: [map, ndcg@3, ndcg@10]}}
learners:
  ranksvm: {{type: ranksvm, grid: {{C: [1]}}}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.stderr
    line = next(x for x in res.stdout.splitlines() if x.startswith("ranksvm:"))
    assert re.search(r"test NDCG@10=\d\.\d{4} MAP=\d\.\d{4} NDCG@3=\d\.\d{4} \(mean over folds\)", line), line


def test_online_headline_leads_with_the_heldout_metric(tmp_path):
    train = write_data(tmp_path / "train.txt", queries=20)
    held = write_data(tmp_path / "held.txt", queries=6, seed=5)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""experiment: headon
dataset: {{kind: files, features: 12, files: [{train}]}}
protocol: {{max_rounds: 40}}
metrics: {{names: [ndcg@10]}}
heldout: {{file: {held}, every: 20}}
learners:
  ogd: {{type: ogd, surrogate: ranksvm, step: {{rule: inv-sqrt, eta: 0.1}}}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out")])
    assert res.exit_code == 0, res.stderr
    line = next(x for x in res.stdout.splitlines() if x.startswith("ogd:"))
    assert re.search(r"held-out NDCG@10=\d\.\d{4} \(final weights\); online time-averaged NDCG@10=", line), line
