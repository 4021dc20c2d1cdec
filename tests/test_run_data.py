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
        command = "sweep" if "\nsweep:" in path.read_text() else "run"
        assert f"ltr {command} configs/{path.name} --data" in head or "Generated data" in head, path.name


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


def test_a_click_sweep_runs_on_your_files_with_data_and_heldout(tmp_path):
    """The PDGD paper's sweep on the user's train and test files: --data and --heldout, no
    other override than the ones that make it small."""
    from ltr_cli.learners.examples import write_data

    train = write_data(tmp_path / "train.txt", queries=8)
    test = write_data(tmp_path / "test.txt", queries=4)
    small = ["--set", "seeds=[0]", "--set", "protocol.max_rounds=20", "--set", "heldout.every=10",
             "--set", "learners={pdgd: {type: pdgd}}", "--set", "sweep={protocol.clicks.model: [perfect]}"]
    base = ["sweep", str(REPO / "configs" / "cikm2018_yahoo.yaml"), "--out", str(tmp_path / "out"),
            "--data", str(train), *small]
    res = runner.invoke(app, base)
    assert res.exit_code == 1 and "heldout.file: datasets/YAHOO-LTR/set1.test.txt does not exist" in res.stderr
    errors = [line for line in res.stderr.splitlines() if line.startswith("ltr: error")]
    assert len(errors) == 1 and "give your test file with --heldout FILE" in errors[0]
    res = runner.invoke(app, [*base, "--heldout", str(test)])
    assert res.exit_code == 0, res.stderr
    (run,) = [p for p in (tmp_path / "out" / "cikm2018_yahoo").iterdir() if p.is_dir() and not p.name.startswith(".")]
    config = yaml.safe_load((run / "config.yaml").read_text())
    assert config["heldout"]["file"] == str(test) and config["dataset"]["files"] == [str(train)]
    # ltr run says the sweep takes the same options
    res = runner.invoke(app, ["run", str(REPO / "configs" / "cikm2018_yahoo.yaml"), "--data", str(train),
                              "--heldout", str(test)])
    assert res.exit_code == 1 and "it takes --data, --heldout and --set too" in res.stderr


def test_heldout_refusals_and_a_config_without_a_heldout_block(tmp_path):
    from ltr_cli.learners.examples import write_data

    test = write_data(tmp_path / "test.txt", queries=4)
    code, _, err = _run(tmp_path, "letor2_ohsumed.yaml", "--heldout", str(test))
    assert code == 1 and "a cv: config tests on each fold's test file" in err
    code, _, err = _run(tmp_path, "simulated_separable.yaml", "--heldout", str(tmp_path / "none.txt"))
    assert code == 1 and "--heldout:" in err and "is not a file" in err
    from ltr_cli.config.data_paths import with_heldout

    got = with_heldout({"protocol": {"max_rounds": 500}}, test, None, "c.yaml")
    assert got["heldout"] == {"file": str(test), "every": 50}


def test_a_folder_finds_the_heldout_file_at_the_configs_place_in_it(tmp_path):
    if not MSLR.is_file():
        pytest.skip(absent("data/mslr-web10k-fold1-5k"))
    root = tmp_path / "MSLR"
    assert runner.invoke(app, ["data", "split", str(MSLR), "--folds", "5", "--out", str(root),
                               "--dataset", "mslr-web10k"]).exit_code == 0
    res = runner.invoke(app, ["sweep", str(REPO / "configs" / "cikm2018_mslr10k.yaml"), "--out", str(tmp_path / "out"),
                              "--data", str(root), "--set", "seeds=[0]", "--set", "protocol.max_rounds=20",
                              "--set", "heldout.every=10", "--set", "learners={pdgd: {type: pdgd}}",
                              "--set", "sweep={protocol.clicks.model: [perfect]}"])
    assert res.exit_code == 0, res.stderr
    assert f"--data: heldout.file is {root / 'Fold1' / 'test.txt'}" in res.stderr
