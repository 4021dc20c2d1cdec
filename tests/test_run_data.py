"""``ltr run CONFIG --data PATH...``: a shipped config on the user's own copy of the data,
keeping the config's dataset identity (name, width, qid source, reader settings)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from tests.conftest import REPO, SHARED, absent

runner = CliRunner()
MSLR = SHARED / "data" / "mslr-web10k-fold1-5k" / "train.txt"


def _run(tmp_path: Path, config: str, *argv: str) -> tuple[int, str, str]:
    res = runner.invoke(app, ["run", str(REPO / "configs" / config), "--out", str(tmp_path / "out"), *argv])
    return res.exit_code, res.stdout, res.stderr


def _dataset(run_dir: Path) -> dict:
    return yaml.safe_load((run_dir / "config.yaml").read_text())["dataset"]


def test_a_single_file_keeps_the_configs_dataset(tmp_path):
    if not MSLR.is_file():
        pytest.skip(absent("data/mslr-web10k-fold1-5k"))
    code, out, err = _run(tmp_path, "mslr_slam.yaml", "--data", str(MSLR), "-q", "--learner", "slam-ndcg")
    assert code == 0, err
    run = Path(out.split()[0])
    dataset = _dataset(run)
    assert dataset["kind"] == "files" and dataset["name"] == "mslr-web10k" and dataset["features"] == 136
    assert dataset["qid"] == "token" and dataset["index_base"] == 1 and dataset["storage"] == "float64"
    assert json.loads((run / "summary.json").read_text())["dataset"] == "mslr-web10k"


def test_a_group_file_layout_reads_its_qids_from_the_group_file(tmp_path, yahoo_sample):
    code, out, err = _run(tmp_path, "yahoo_slam.yaml", "--data", str(yahoo_sample / "rank.train"), "-q",
                          "--learner", "slam-ndcg", "--set", "protocol.max_rounds=50")
    assert code == 0, err
    dataset = _dataset(Path(out.split()[0]))
    assert dataset["qid"] == "group" and dataset["name"] == "yahoo-set1" and dataset["features"] == 700


def test_a_fold_folder_runs_the_folds_it_holds_and_says_so(tmp_path):
    if not MSLR.is_file():
        pytest.skip(absent("data/mslr-web10k-fold1-5k"))
    root = tmp_path / "MSLR"
    assert runner.invoke(app, ["data", "split", str(MSLR), "--folds", "5", "--out", str(root),
                               "--dataset", "mslr-web10k"]).exit_code == 0
    for k in (3, 4, 5):
        shutil.rmtree(root / f"Fold{k}")
    code, out, err = _run(tmp_path, "mslr_slam.yaml", "--data", str(root), "--learner", "alg3")
    assert code == 0, err
    assert "holds folds [1, 2] of the config's [1, 2, 3, 4, 5]" in err
    dataset = _dataset(Path(out.split("-> ")[-1].strip()))
    assert dataset["kind"] == "registry" and dataset["folds"] == [1, 2] and dataset["root"] == str(root)


def test_a_cv_config_takes_a_fold_folder_in_its_own_layout(tmp_path):
    one = tmp_path / "ohsumed.txt"
    assert runner.invoke(app, ["data", "synth", str(one), "--like", "letor2-ohsumed", "--queries", "25",
                               "--docs-per-query", "12"]).exit_code == 0
    root = tmp_path / "OHSUMED"
    res = runner.invoke(app, ["data", "split", str(one), "--folds", "5", "--out", str(root), "--dataset", "letor2-ohsumed"])
    assert res.exit_code == 0, res.stderr
    assert (root / "Fold1" / "trainingset.txt").is_file() and (root / "Fold5" / "testset.txt").is_file()
    code, out, err = _run(tmp_path, "letor2_ohsumed.yaml", "--data", str(root), "-q", "--learner", "ranksvm",
                          "--set", "learners.ranksvm.grid={C: [1]}")
    assert code == 0, err
    assert json.loads((Path(out.split()[0]) / "summary.json").read_text())["folds"] == [1, 2, 3, 4, 5]
    code, _, err = _run(tmp_path, "letor2_ohsumed.yaml", "--data", str(one))
    assert code == 1 and "needs the dataset's folds" in err and "ltr data split" in err


def test_data_refusals_are_one_line(tmp_path):
    code, _, err = _run(tmp_path, "mslr_slam.yaml", "--data", str(tmp_path / "nowhere.txt"))
    assert code == 1 and err.count("\n") == 1 and "--data:" in err and "does not exist" in err
    code, _, err = _run(tmp_path, "simulated_separable.yaml", "--data", str(REPO / "README.md"))
    assert code == 1 and "the config's dataset is separable" in err


def test_every_shipped_config_says_how_to_run_it_on_a_copy_of_its_data():
    for path in sorted((REPO / "configs").glob("*.yaml")):
        head = path.read_text().split("\nexperiment:")[0]
        assert f"ltr run configs/{path.name} --data" in head or "Generated data" in head, path.name


def test_data_says_which_kept_settings_may_not_fit_the_files(tmp_path):
    from ltr_cli.learners.examples import write_data

    data = write_data(tmp_path / "mine.txt", queries=6)  # 12 features, index base 1
    code, out, err = _run(tmp_path, "cikm2018_yahoo.yaml", "--data", str(data), "--set", "sweep=null",
                          "--set", "seeds=[0]", "--set", "heldout=null", "--set", "protocol.max_rounds=5",
                          "--learner", "pdgd")
    assert code == 0, err
    assert "kept the config's width dataset.features: 700; mine.txt's first MB uses features up to 12" in err
    assert "--set dataset.features=12 reads it at its own width" in err
    assert "kept the config's dataset.normalize: query-level" in err
    code, out, err = _run(tmp_path, "cikm2018_yahoo.yaml", "--data", str(data), "--set", "sweep=null",
                          "--set", "seeds=[0]", "--set", "heldout=null", "--set", "protocol.max_rounds=5",
                          "--learner", "pdgd", "--set", "dataset.features=12", "--set", "dataset.normalize=none")
    assert code == 0, err
    assert "kept the config's" not in err
