"""The smaller findings of a new user's first day, each kept fixed: plain --help text, data
inspect without Python syntax, CSV from data convert, ltr score on a dataset without
folds, no empty folder after a failed batch run, one error at the key for a grid value
that is no number, whole-number grids for boosting rounds, Yahoo's valid split in CV."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app

runner = CliRunner()

COMMANDS = [[], ["run"], ["plot"], ["sweep"], ["report"], ["bench"], ["list"], ["score"], ["eval"],
            ["data"], ["data", "inspect"], ["data", "cache"], ["data", "convert"], ["data", "synth"],
            ["export"], ["export", "mlflow"], ["clicks"], ["clicks", "probabilities"], ["clicks", "sample"]]


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c) or "ltr")
def test_help_is_plain_text(command):
    res = runner.invoke(app, [*command, "--help"], env={"COLUMNS": "100"})
    assert res.exit_code == 0
    text = res.stdout
    assert "<bool>" not in text and "``" not in text
    assert "{" not in text.splitlines()[0] and "Usage: " in text  # "ltr run [OPTIONS] CONFIG"


def test_usage_names_required_arguments_in_capitals():
    res = runner.invoke(app, ["run", "--help"])
    assert "ltr run [OPTIONS] CONFIG" in res.stdout
    res = runner.invoke(app, ["score", "--help"])
    assert "RUN_DIR DATA_FILE" in res.stdout


def _letor_file(path: Path, queries: int = 3, features: int = 4) -> Path:
    rng = np.random.default_rng(1)
    lines = [f"{int(rng.integers(0, 3))} qid:{q} " + " ".join(f"{j + 1}:{rng.random():.3f}" for j in range(features))
             for q in range(1, queries + 1) for _ in range(4)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_data_inspect_prints_no_python_syntax(tmp_path):
    f = _letor_file(tmp_path / "d.txt")
    res = runner.invoke(app, ["data", "inspect", str(f), "--features", "4"])
    assert res.exit_code == 0
    assert "{" not in res.stdout and "[" not in res.stdout and "'" not in res.stdout
    line = next(x for x in res.stdout.splitlines() if x.startswith("docs_per_query:"))
    assert line == "docs_per_query: min 4, mean 4.0, max 4"


def test_data_convert_writes_csv(tmp_path):
    f = _letor_file(tmp_path / "d.txt")
    out = tmp_path / "d.csv"
    res = runner.invoke(app, ["data", "convert", str(f), str(out), "--features", "4"])
    assert res.exit_code == 0, res.stderr
    rows = list(csv.DictReader(out.open()))
    assert list(rows[0]) == ["qid", "label", "f1", "f2", "f3", "f4"] and len(rows) == 12
    first = f.read_text().splitlines()[0].split()
    assert rows[0]["qid"] == "1" and float(rows[0]["label"]) == float(first[0])
    assert float(rows[0]["f2"]) == float(first[3].split(":")[1])
    res = runner.invoke(app, ["data", "convert", str(f), str(tmp_path / "d.tsv"), "--features", "4"])
    assert res.exit_code == 1 and ".parquet, .csv or .npz" in res.stderr


def _yahoo(root: Path) -> None:
    root.mkdir()
    rng = np.random.default_rng(0)
    for s, split in enumerate(("train", "valid", "test")):
        lines = []
        for q in range(5):
            for _ in range(5):
                label = int(rng.integers(0, 3))
                lines.append(f"{label} qid:{100 * s + q} 1:{rng.random():.3f} 2:{label * 0.3 + rng.random() * 0.1:.3f}")
        (root / f"set1.{split}.txt").write_text("\n".join(lines) + "\n")


def test_cv_on_a_dataset_without_folds_then_score_fold_1(tmp_path):
    """Yahoo has no folds and calls its validation split 'valid': CV reads it by default,
    and 'ltr score --fold 1' takes the run's one model."""
    _yahoo(tmp_path / "y")
    cfg = tmp_path / "y.yaml"
    cfg.write_text(f"experiment: fy\ndataset: {{kind: registry, name: yahoo-set1, root: {tmp_path / 'y'}}}\n"
                   "cv: {}\nlearners: {rs: {type: ranksvm, grid: {C: [1]}}}\n")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "res"), "-q"])
    assert res.exit_code == 0, res.stderr
    run_dir = Path(res.stdout.strip())
    test = tmp_path / "y" / "set1.test.txt"
    one = runner.invoke(app, ["score", str(run_dir), str(test), "--fold", "1"])
    default = runner.invoke(app, ["score", str(run_dir), str(test)])
    assert one.exit_code == 0 and one.stdout == default.stdout and len(one.stdout.split()) == 25
    res = runner.invoke(app, ["score", str(run_dir), str(test), "--fold", "2"])
    assert res.exit_code == 1 and "one model (its dataset has no folds): omit --fold" in res.stderr
    bad = runner.invoke(app, ["run", str(cfg), "--set", "cv.splits.valid=x"])
    assert bad.exit_code == 1 and "cv.splits: unknown role 'valid'" in bad.stderr


def test_failed_batch_run_leaves_no_empty_folder(tmp_path, monkeypatch):
    from ltr_cli.errors import LtrError
    from ltr_cli.protocols import cv_run

    _yahoo(tmp_path / "y")
    cfg = tmp_path / "y.yaml"
    cfg.write_text(f"experiment: fy\ndataset: {{kind: registry, name: yahoo-set1, root: {tmp_path / 'y'}}}\n"
                   "cv: {}\nlearners: {rs: {type: ranksvm, grid: {C: [1]}}}\n")

    def fail(*args, **kwargs):
        raise LtrError("the fit failed")

    monkeypatch.setattr(cv_run, "run_cv", fail)
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "res"), "-q"])
    assert res.exit_code == 1 and "the fit failed" in res.stderr
    assert not (tmp_path / "res" / "fy").exists()


def test_a_grid_value_that_is_no_number_is_one_error_at_its_key(tmp_path):
    from ltr_cli.config.experiment import ConfigError, parse_config

    base = {"experiment": "e", "dataset": {"kind": "registry", "name": "letor3-ohsumed", "root": "x"}, "cv": {}}
    with pytest.raises(ConfigError) as err:
        parse_config({**base, "learners": {"rs": {"type": "ranksvm", "grid": {"C": ["x"]}}}}, "c.yaml")
    text = str(err.value)
    assert "learners.rs.grid.C.0: Input should be a number (got 'x'" in text
    assert ".int" not in text and ".float" not in text and "more problem" not in text
    with pytest.raises(ConfigError, match="grid 'rounds': values must be whole numbers"):
        parse_config({**base, "learners": {"ada": {"type": "adarank", "grid": {"rounds": [1.5]}}}}, "c.yaml")
    spec = parse_config({**base, "learners": {"ada": {"type": "adarank", "grid": {"rounds": [5]}}}}, "c.yaml")
    assert json.dumps(spec.resolved()["learners"]["ada"]["grid"]) == '{"rounds": [5]}'
