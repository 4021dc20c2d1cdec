"""``ltr score`` reads the data file with the feature index base of the data the run was
trained on (a 0-based layout scored as 1-based would shift every feature), and
``--index-base`` says otherwise for a file in another layout."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from ltr_cli.cli.app import app

runner = CliRunner()


def _write(path: Path, rows: list[tuple[int, int, list[float]]], base: int) -> None:
    path.write_text("".join(f"{y} qid:{q} " + " ".join(f"{j + base}:{v:g}" for j, v in enumerate(x)) + "\n"
                            for y, q, x in rows))


def test_score_defaults_to_the_training_index_base(tmp_path):
    rng = np.random.default_rng(0)
    rows = [(int(rng.integers(0, 3)), q, list(np.round(rng.uniform(0, 1, 3), 3))) for q in range(1, 9) for _ in range(4)]
    zero, one = tmp_path / "zero.txt", tmp_path / "one.txt"
    _write(zero, rows, 0)
    _write(one, rows, 1)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"""experiment: base0
dataset: {{kind: files, files: [{zero}], features: 3, index_base: 0}}
learners:
  slam: {{type: slam-perceptron, step: {{rule: constant, eta: 1.0}}}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    run = Path(res.stdout.split()[0])
    w = np.array(json.loads((run / "models.json").read_text())["final"]["w"])
    assert w.any()
    expected = np.array([x for _, _, x in rows]) @ w

    scored = runner.invoke(app, ["score", str(run), str(zero)])
    assert scored.exit_code == 0, scored.stderr
    np.testing.assert_allclose(np.array(scored.stdout.split(), dtype=float), expected, rtol=1e-9)
    other = runner.invoke(app, ["score", str(run), str(one), "--index-base", "1"])
    assert other.exit_code == 0, other.stderr
    assert other.stdout == scored.stdout
