"""Integrity: crafted checkpoints never run code, caches cannot lie or crash a kernel,
changed data is never mixed with old results, and inputs are bounded."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest
from typer.testing import CliRunner

from ltr_cli.cli import app
from ltr_cli.sweep import expand

runner = CliRunner()


class _Exploit:
    """Unpickling this creates the file ``target``."""

    def __init__(self, target):
        self.target = target

    def __reduce__(self):
        return (open, (self.target, "w"))


SWEEP = """
experiment: grid
dataset: {kind: separable, variant: paper, queries: 30}
metrics: {names: [ndcg@10]}
learners:
  slam: {type: slam-perceptron}
sweep:
  learners.slam.step.eta: [0.1, 1.0]
"""


def test_sweep_status_never_unpickles_a_planted_checkpoint(tmp_path):
    cfg = tmp_path / "s.yaml"
    cfg.write_text(SWEEP)
    out = tmp_path / "out"
    owned = tmp_path / "OWNED"
    for task in expand(cfg, []):
        base = out / task.experiment
        base.mkdir(parents=True, exist_ok=True)
        (base / f".{task.run_id}.checkpoint").write_bytes(pickle.dumps(_Exploit(str(owned))))
    res = runner.invoke(app, ["sweep", str(cfg), "--out", str(out), "--status"])
    assert res.exit_code == 0, res.output
    assert not owned.exists()
    assert "checkpoint unusable" in res.output and "pending=2" in res.output
