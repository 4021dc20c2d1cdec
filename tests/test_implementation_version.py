"""A finished run or fold checkpoint written by an earlier implementation of its learner's
algorithm (PermuRank before it followed the paper's Fig. 2) keeps its run id, so
``ltr run --resume`` must refuse it rather than count its numbers as this version's."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.learners.batch.permurank import PermuRankSpec
from ltr_cli.learners.batch.ranksvm import RankSVMSpec
from tests.test_batch_protocol import make_letor

runner = CliRunner()


def _config(root: Path) -> Path:
    cfg = root / "p.yaml"
    cfg.write_text(f"""experiment: versions
dataset: {{kind: registry, name: letor3-ohsumed, root: {root / 'OHSUMED'}, folds: [1]}}
cv: {{select_by: map}}
learners:
  p: {{type: permurank, grid: {{C: [1.0]}}, rounds: 3}}
""")
    return cfg


def _run(cfg: Path, out: Path, *extra: str):
    return runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q", *extra])


def test_permurank_declares_its_fourth_implementation_and_others_their_first():
    assert PermuRankSpec.implementation == 4 and RankSVMSpec.implementation == 1
    spec = PermuRankSpec(type="permurank")
    assert spec.describe()["implementation"] == 4
    assert "implementation" not in RankSVMSpec(type="ranksvm").describe()


def test_resume_refuses_a_finished_run_of_the_older_algorithm(tmp_path):
    make_letor(tmp_path / "OHSUMED", queries=4, docs=6)
    cfg, out = _config(tmp_path), tmp_path / "out"
    assert _run(cfg, out).exit_code == 0
    (manifest,) = (out / "versions").glob("*/manifest.json")
    record = json.loads(manifest.read_text())
    assert record["learner_conventions"]["implementation"] == 4
    assert _run(cfg, out, "--resume").exit_code == 0  # this version's run: skipped as done

    del record["learner_conventions"]["implementation"]  # as the older PermuRank wrote it
    manifest.write_text(json.dumps(record))
    res = _run(cfg, out, "--resume")
    assert res.exit_code == 1 and "Traceback" not in res.output
    (line,) = res.stderr.strip().splitlines()
    assert "version 1 of permurank's algorithm" in line and "version 4" in line
    assert "remove the run directory" in line
