"""``ltr export mlflow`` end to end: small online and batch runs through the CLI, exported
to the default local store, read back with MLflow's own client and compared with the run
folders; exporting again adds nothing; refusals are one line, status 1, nothing written.
MLflow is an optional extra: the tests that need it skip without it."""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.measures.metrics import time_average
from ltr_cli.reports.export_mlflow import mlflow_key, online_points, thinning
from tests.conftest import REPO
from tests.test_batch_protocol import make_letor

runner = CliRunner()
DEMO = REPO / "configs" / "simulated_separable.yaml"
BATCH_CONFIG = """experiment: cvx
dataset: {{kind: registry, name: letor3-ohsumed, root: {root}, folds: [1, 2]}}
cv: {{select_by: map}}
learners:
  ranksvm: {{type: ranksvm, label: RankSVM, grid: {{C: [1, 10]}}}}
"""
ROUNDS = 40


def ok(*args):
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == 0, (res.stdout, res.stderr)
    return res


def refused(*args) -> str:
    res = runner.invoke(app, [str(a) for a in args])
    assert res.exit_code == 1, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ltr: error: "), res.stderr
    return lines[0]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """Two online learners x two seeds (40 rounds of the demo) with their figures, and a
    batch RankSVM through two folds of generated OHSUMED-shaped data, in one results folder."""
    root = tmp_path_factory.mktemp("export")
    out = root / "out"
    ok("run", DEMO, "--out", out, "-q", "--learner", "slam-ndcg", "--learner", "listnet",
       "--set", f"protocol.max_rounds={ROUNDS}", "--set", "seeds=[0, 1]")
    ok("plot", out / "simulated_separable", "--metric", "ndcg@10")
    make_letor(root / "OHSUMED", queries=8, docs=8)
    (root / "cv.yaml").write_text(BATCH_CONFIG.format(root=root / "OHSUMED"))
    ok("run", root / "cv.yaml", "--out", out, "-q")
    return out


@pytest.fixture(scope="module")
def exported(results, tmp_path_factory):
    """The results exported once, with no network and from an empty working folder and
    home: the store is the only thing written. Yields (client, the export's stdout)."""
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    cwd, home = tmp_path_factory.mktemp("cwd"), tmp_path_factory.mktemp("home")
    before = sorted(p.relative_to(results) for p in results.rglob("*"))
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        mp.setenv("HOME", str(home))

        def no_network(self, address):
            if self.family in (socket.AF_INET, socket.AF_INET6):
                raise AssertionError(f"the export opened a network connection to {address}")
            return real_connect(self, address)

        real_connect = socket.socket.connect
        mp.setattr(socket.socket, "connect", no_network)
        res = ok("export", "mlflow", results)
    assert list(cwd.iterdir()) == [] and list(home.iterdir()) == []
    after = sorted(p.relative_to(results) for p in results.rglob("*"))
    assert [p for p in after if p not in before and p.parts[0] != ".mlflow"] == []
    uri = f"sqlite:///{(results / '.mlflow' / 'mlflow.db').resolve()}"
    assert res.stdout.strip() == f"6 exported, 0 replaced, 0 unchanged: {uri}"  # 4 online, 1 batch, figures
    return MlflowClient(tracking_uri=uri), res.stdout


def _runs(client, experiment: str) -> dict[str, object]:
    exp = client.get_experiment_by_name(experiment)
    runs = client.search_runs([exp.experiment_id])
    keys = [r.data.tags["ltr.key"] for r in runs]
    assert len(keys) == len(set(keys)), keys  # never two MLflow runs of one run folder
    return {r.info.run_name: r for r in runs}


def _history(client, run_id: str, key: str) -> tuple[list[int], list[float]]:
    hist = sorted(client.get_metric_history(run_id, key), key=lambda m: m.step)
    return [m.step for m in hist], [m.value for m in hist]


def test_online_runs_read_back_with_mlflows_client(results, exported):
    client, _ = exported
    runs = _runs(client, "simulated_separable")
    folders = sorted((results / "simulated_separable").glob("*-seed*"))
    assert len(folders) == 4 and sorted(runs) == sorted([f.name for f in folders] + ["figures"])
    for folder in folders:
        run = runs[folder.name]
        rounds = pd.read_parquet(folder / "rounds.parquet")
        summary = json.loads((folder / "summary.json").read_text())
        manifest = json.loads((folder / "manifest.json").read_text())
        assert run.info.status == "FINISHED" and len(rounds) == ROUNDS
        tags, params, metrics = run.data.tags, run.data.params, run.data.metrics
        assert tags["ltr.run_id"] == manifest["run_id"] == folder.name
        assert tags["ltr.config_id"] == params["config_id"] == summary["config_id"]
        assert params["seed"] == str(summary["seed"]) and params["learner.name"] == summary["learner"]
        assert params["dataset.kind"] == "separable" and params["protocol.max_rounds"] == str(ROUNDS)
        assert params["dataset.sha256"] == manifest["dataset"]["fingerprint"]["sha256"]
        assert params["code.ltr_cli"] == manifest["versions"]["ltr_cli"]
        for name in ("ndcg@10", "ap"):
            key = mlflow_key(name)
            steps, values = _history(client, run.info.run_id, f"round/{key}")
            assert steps == rounds["t"].tolist() and values == rounds[name].tolist()
            steps, values = _history(client, run.info.run_id, f"time_average/{key}")
            assert steps == rounds["t"].tolist()
            np.testing.assert_allclose(values, time_average(rounds[name].to_numpy()), rtol=1e-12)
            stats = summary["metrics"][name]
            assert metrics[key] == pytest.approx(stats["final_time_average"], rel=1e-12)
            assert metrics[f"last10/{key}"] == pytest.approx(stats["last10_mean_of_time_average"], rel=1e-12)
        assert _history(client, run.info.run_id, "cumulative/updates")[1][-1] == summary["updates"]
        assert metrics["rounds"] == ROUNDS
        artifacts = {a.path for a in client.list_artifacts(run.info.run_id)}
        assert artifacts == {"config.yaml", "summary.json", "manifest.json"}
        stored = Path(run.info.artifact_uri.removeprefix("file://")) / "summary.json"
        assert stored.read_bytes() == (folder / "summary.json").read_bytes()
        assert str(results / ".mlflow") in str(stored.resolve())
    plots = sorted(p.name for p in (results / "simulated_separable" / "plots").iterdir())
    assert plots and sorted(a.path for a in client.list_artifacts(runs["figures"].info.run_id)) == plots


def test_a_batch_run_is_one_mlflow_run_with_per_fold_metrics(results, exported):
    client, _ = exported
    runs = _runs(client, "cvx")
    (folder,) = (results / "cvx").iterdir()
    assert list(runs) == [folder.name]
    run = runs[folder.name]
    rounds = pd.read_parquet(folder / "rounds.parquet")
    summary = json.loads((folder / "summary.json").read_text())
    assert run.data.tags["ltr.protocol"] == "batch-cv" and run.data.params["protocol.kind"] == "batch-cv"
    for name in ("ap", "ndcg@10", "p@1"):
        steps, values = _history(client, run.info.run_id, f"fold/{mlflow_key(name)}")
        assert steps == [1, 2] and values == rounds[name].tolist()
        assert run.data.metrics[mlflow_key(name)] == pytest.approx(summary["metrics"][name], rel=1e-12)
    assert _history(client, run.info.run_id, "fold/vali_ap")[1] == rounds["vali_ap"].tolist()
    for fold in summary["per_fold"]:
        assert run.data.params[f"chosen.fold{fold['fold']}"] == fold["chosen"]
    assert run.data.params["learner.grid.C"] == "[1, 10]"
    assert run.data.metrics["test_queries"] == summary["test_queries"]


def test_exporting_again_adds_nothing_and_a_changed_run_is_replaced(results, exported):
    client, _ = exported
    res = ok("export", "mlflow", results, "-q")
    assert res.stdout.startswith("0 exported, 0 replaced, 6 unchanged: ")
    assert len(_runs(client, "simulated_separable")) == 5 and len(_runs(client, "cvx")) == 1
    (folder,) = (results / "cvx").iterdir()
    manifest = json.loads((folder / "manifest.json").read_text())
    manifest["finished_at"] = "2026-01-02T03:04:05+00:00"  # the run was run again
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=2))
    res = ok("export", "mlflow", results, "-q")
    assert res.stdout.startswith("0 exported, 1 replaced, 5 unchanged: ")
    (run,) = _runs(client, "cvx").values()
    assert run.info.end_time == 1767323045000 and run.data.tags["ltr.run_id"] == folder.name


def test_long_runs_are_thinned_to_every_kth_round_and_the_last():
    rounds = pd.DataFrame({"t": np.arange(1, 24), "ndcg@10": np.linspace(0, 1, 23),
                           "mistake": np.ones(23, bool)})
    points = online_points(rounds, ["ndcg@10"], every=5)
    steps = [p.step for p in points if p.key == "time_average/ndcg_at_10"]
    assert steps == [1, 5, 10, 15, 20, 23]
    assert [p.value for p in points if p.key == "cumulative/mistakes"] == [1, 5, 10, 15, 20, 23]
    assert thinning(10_000, None) == 1 and thinning(10_001, None) == 2 and thinning(10**6, None) == 100
    assert thinning(10**6, 3) == 3
    assert mlflow_key("ndcg@10") == "ndcg_at_10" and mlflow_key("eru@5-alpha=2") == "eru_at_5-alpha_2"


# --- refusals: one line, status 1, nothing written -------------------------------------------

def test_without_mlflow_the_install_hint(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "mlflow", None)
    monkeypatch.setitem(sys.modules, "mlflow.tracking", None)
    line = refused("export", "mlflow", tmp_path)
    assert line == "ltr: error: mlflow is not installed; pip install 'ltr-cli[mlflow]'"
    assert list(tmp_path.iterdir()) == []


def test_missing_empty_and_damaged_folders_are_refused(results, tmp_path):
    pytest.importorskip("mlflow")
    assert "no such results directory" in refused("export", "mlflow", tmp_path / "nowhere")
    assert "no finished runs" in refused("export", "mlflow", tmp_path)
    damaged = tmp_path / "damaged"
    shutil.copytree(results / "cvx", damaged / "cvx")
    (run,) = (damaged / "cvx").iterdir()
    (run / "summary.json").write_text('{"experiment": "cvx", ')
    assert "summary.json: is not valid JSON" in refused("export", "mlflow", damaged)
    assert not (damaged / ".mlflow").exists()


def test_a_run_file_linked_outside_the_results_folder_is_refused(results, tmp_path):
    pytest.importorskip("mlflow")
    outside = tmp_path / "outside"
    shutil.copytree(results / "cvx", outside)
    (run,) = outside.iterdir()
    linked = tmp_path / "linked" / "cvx"
    shutil.copytree(results / "cvx", linked)
    (mine,) = linked.iterdir()
    (mine / "config.yaml").unlink()
    (mine / "config.yaml").symlink_to(run / "config.yaml")
    assert "not a plain file inside" in refused("export", "mlflow", tmp_path / "linked")
    (tmp_path / "linked2").mkdir()
    (tmp_path / "linked2" / "cvx").symlink_to(outside, target_is_directory=True)
    refused("export", "mlflow", tmp_path / "linked2")
    assert not (tmp_path / "linked" / ".mlflow").exists() and not (tmp_path / "linked2" / ".mlflow").exists()


def test_a_given_sqlite_store_keeps_its_artifacts_beside_it(results, tmp_path):
    pytest.importorskip("mlflow")
    from mlflow.tracking import MlflowClient

    uri = f"sqlite:///{tmp_path / 'store' / 'runs.db'}"
    (tmp_path / "store").mkdir()
    res = ok("export", "mlflow", results / "cvx", "--tracking-uri", uri, "-q")
    assert res.stdout.strip() == f"1 exported, 0 replaced, 0 unchanged: {uri}"
    (run,) = MlflowClient(tracking_uri=uri).search_runs(
        [MlflowClient(tracking_uri=uri).get_experiment_by_name("cvx").experiment_id])
    stored = Path(run.info.artifact_uri.removeprefix("file://"))
    assert stored.is_relative_to(tmp_path / "store" / "mlartifacts") and (stored / "manifest.json").is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]
    assert "MLFLOW_ALLOW_FILE_STORE=true" in refused("export", "mlflow", results / "cvx",
                                                     "--tracking-uri", (tmp_path / "mlruns").as_uri())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store"]


def test_two_copies_of_one_run_are_refused(results, tmp_path):
    pytest.importorskip("mlflow")
    for copy in ("a", "b"):
        shutil.copytree(results / "cvx", tmp_path / copy / "cvx")
    assert "are the same run (cvx/ranksvm-" in refused("export", "mlflow", tmp_path)
    assert not (tmp_path / ".mlflow").exists()


def test_mlflow_skinny_without_sqlalchemy_says_what_to_install(results, tmp_path, monkeypatch):
    pytest.importorskip("mlflow")
    shutil.copytree(results / "cvx", tmp_path / "cvx")
    monkeypatch.setitem(sys.modules, "sqlalchemy", None)
    line = refused("export", "mlflow", tmp_path)
    assert line == "ltr: error: sqlalchemy is not installed (MLflow's sqlite store needs it); pip install 'ltr-cli[mlflow]'"
    assert not (tmp_path / ".mlflow").exists()


def _outside_store(tmp_path: Path, experiment: str, artifacts: Path) -> Path:
    """A store database (made with MLflow's client) whose experiment keeps its artifacts
    in ``artifacts``."""
    from mlflow.tracking import MlflowClient

    db = tmp_path / "crafted" / "mlflow.db"
    db.parent.mkdir()
    MlflowClient(tracking_uri=f"sqlite:///{db}").create_experiment(experiment, artifact_location=artifacts.as_uri())
    return db


@pytest.mark.parametrize("plant", ["artifacts-link", "dangling-db-link", "experiment-folder-link", "journal-link",
                                   "results-link", "store-link", "hard-linked-db", "crafted-artifact-location"])
def test_links_planted_in_the_store_are_refused_and_nothing_is_written_outside(results, tmp_path, plant):
    """A received results folder may carry its own ``.mlflow``: links on the store's path
    (dangling or not, at any depth, and where MLflow will write later) and a database
    whose experiment keeps artifacts elsewhere are refused in one line; nothing is
    written outside the results folder (the artifacts link once received every run's
    config, summary and manifest; the dangling database link made MLflow create it)."""
    pytest.importorskip("mlflow")
    outside = tmp_path / "outside"
    outside.mkdir()
    received = tmp_path / "received"
    shutil.copytree(results / "cvx", received / "cvx")
    store = received / ".mlflow"
    store.mkdir()
    given = received
    if plant == "artifacts-link":
        (store / "artifacts").symlink_to(outside, target_is_directory=True)
    elif plant == "dangling-db-link":
        (store / "mlflow.db").symlink_to(outside / "new.db")
    elif plant == "experiment-folder-link":
        (store / "artifacts").mkdir()
        (store / "artifacts" / "cvx").symlink_to(outside, target_is_directory=True)
    elif plant == "journal-link":
        (store / "mlflow.db-journal").symlink_to(outside / "journal")
    elif plant == "results-link":
        given = tmp_path / "link"
        given.symlink_to(received, target_is_directory=True)
    elif plant == "store-link":
        store.rmdir()
        store.symlink_to(outside, target_is_directory=True)
    elif plant == "hard-linked-db":
        (outside / "mine.db").write_bytes(b"")
        os.link(outside / "mine.db", store / "mlflow.db")
    else:
        shutil.copy(_outside_store(tmp_path, "cvx", outside / "art"), store / "mlflow.db")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "crafted" not in p.parts)
    line = refused("export", "mlflow", given)
    assert "refusing to write" in line and "--tracking-uri" in line, line
    assert sorted(p.relative_to(outside) for p in outside.rglob("*")) == ([Path("mine.db")] if plant == "hard-linked-db"
                                                                          else [])
    if plant != "crafted-artifact-location":  # refused before MLflow opens the store
        assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*") if "crafted" not in p.parts) == before
