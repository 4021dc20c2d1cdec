"""``type: neural`` through the k-fold protocol on generated LETOR-shaped folds (tiny: 8
queries of about 12 documents per split, an MLP of 8 units, 3 epochs): the run's files, the
curves, ``ltr score`` equal to what the run evaluated, byte-identical reruns in another
process, a kill -9 and ``--resume`` giving the same bytes, damaged model files refused in
one line, and the config's one-line errors."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

pytest.importorskip("jax")
pytest.importorskip("optax")
pytest.importorskip("safetensors")

from ltr_cli.cli.app import app  # noqa: E402
from tests.test_batch_protocol import make_letor  # noqa: E402

runner = CliRunner()
FILES = ("neural-fold1.safetensors", "neural-fold2.safetensors", "rounds.parquet", "test_queries.parquet",
         "epochs.parquet")
CONFIG = """experiment: nn
seed: 3
dataset: {{kind: registry, name: letor3-ohsumed, root: {root}, folds: [1, 2]}}
cv: {{select_by: ndcg@10}}
learners:
  mlp:
    type: neural
    scorer: {{kind: mlp, hidden: [8], dropout: 0.1}}
    loss: {{name: listnet}}
    train: {{epochs: {epochs}, batch_queries: 4, slate: 16, lr: 0.01}}
"""


def _config(tmp: Path, root: Path, epochs: int = 3, name: str = "nn.yaml") -> Path:
    cfg = tmp / name
    cfg.write_text(CONFIG.format(root=root, epochs=epochs))
    return cfg


def _ltr(*args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ltr_cli", *map(str, args)], capture_output=True, text=True)


def _run_dir(out: Path) -> Path:
    (d,) = [p for p in (out / "nn").iterdir() if p.is_dir() and not p.name.startswith(".")]
    return d


@pytest.fixture(scope="module")
def letor(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("letor") / "OHSUMED"
    make_letor(root, queries=8, docs=12)
    return root


@pytest.fixture(scope="module")
def run(letor, tmp_path_factory) -> Path:
    tmp = tmp_path_factory.mktemp("neural")
    res = runner.invoke(app, ["run", str(_config(tmp, letor)), "--out", str(tmp / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    return Path(res.stdout.split()[0])


def test_the_run_saves_models_curves_and_its_jax_settings(run):
    models = json.loads((run / "models.json").read_text())
    assert list(models) == ["1", "2"]
    for key, entry in models.items():
        assert entry["kind"] == "neural" and entry["features"] == 45 and "arrays" not in entry
        assert entry["file"] == f"neural-fold{key}.safetensors"
        assert entry["sha256"] == hashlib.sha256((run / entry["file"]).read_bytes()).hexdigest()
        assert entry["scorer"]["hidden"] == [8] and entry["transform"] == [{"kind": "zscore"}]
        (fit,) = entry["fits"]
        details = fit["convergence"]["details"]
        assert details["epochs"] == 3 and details["vali_metric"] == "ndcg@10" and len(details["train_loss"]) == 3
        # the fit's vali value of its best epoch is the protocol's vali score of the model it kept
        summary = json.loads((run / "summary.json").read_text())
        row = next(r for r in summary["per_fold"] if str(r["fold"]) == key)
        assert details["vali"][details["best_epoch"] - 1] == row["vali_ndcg@10"]
    curves = pd.read_parquet(run / "epochs.parquet")
    assert list(curves.columns) == ["fold", "params", "epoch", "train_loss", "vali", "vali_metric", "lr", "best"]
    assert len(curves) == 6 and curves["best"].sum() == 2
    jax_info = json.loads((run / "manifest.json").read_text())["learner_conventions"]["jax"]
    assert jax_info["dtype"] == "float32" and jax_info["device"].startswith("cpu")
    # in this pytest process another test may have started JAX first: the record says so truthfully
    assert jax_info["jax_version"] and jax_info["deterministic_ops"] == (
        "xla_gpu_deterministic_ops=true" in jax_info["xla_flags"])


def test_training_lowers_the_loss(run):
    curves = pd.read_parquet(run / "epochs.parquet")
    for _, fold in curves.groupby("fold"):
        losses = fold.sort_values("epoch")["train_loss"].to_numpy()
        assert losses[-1] < losses[0]


def test_ltr_score_gives_the_scores_the_run_evaluated(run, letor, tmp_path):
    test_file = letor / "Fold2" / "testset.txt"
    scores = tmp_path / "s.txt"
    res = runner.invoke(app, ["score", str(run), str(test_file), "--fold", "2", "--out", str(scores)])
    assert res.exit_code == 0, res.stderr
    ev = runner.invoke(app, ["eval", str(test_file), str(scores), "--convention", "letor3", "--json", "--per-query",
                             "--metric", "ndcg@10", "--metric", "ap"])
    assert ev.exit_code == 0, ev.stderr
    got = json.loads(ev.stdout)
    table = pd.read_parquet(run / "rounds.parquet").set_index("fold").loc[2]
    assert got["average"]["ndcg@10"] == table["ndcg@10"] and got["average"]["ap"] == table["ap"]
    # every test query's value in the run is ltr eval's of ltr score's scores, exactly
    queries = pd.read_parquet(run / "test_queries.parquet")
    fold2 = queries[queries["fold"] == 2]
    assert len(fold2) == len(got["per_query"])
    for _, q in fold2.iterrows():
        value = got["per_query"][q["qid"].split(":")[-1]]["ndcg@10"]
        assert (0.0 if value is None else value) == q["ndcg@10"]  # no relevant document: 0 under letor3
    for tool in (["report", str(run)], ["plot", str(run.parent), "--out", str(tmp_path / "plots")]):
        res = runner.invoke(app, tool)
        assert res.exit_code == 0, (tool, res.stderr)


def test_a_rerun_in_another_process_writes_the_same_bytes(run, letor, tmp_path):
    res = _ltr("run", _config(tmp_path, letor), "--out", tmp_path / "again", "-q")
    assert res.returncode == 0, res.stderr
    again = _run_dir(tmp_path / "again")
    for name in FILES:
        assert (again / name).read_bytes() == (run / name).read_bytes(), name
    # a fresh process starts JAX under this tool's flags, and its manifest records them
    jax_info = json.loads((again / "manifest.json").read_text())["learner_conventions"]["jax"]
    assert "xla_gpu_deterministic_ops=true" in jax_info["xla_flags"] and jax_info["deterministic_ops"]


def test_kill_during_training_then_resume_gives_the_same_bytes(letor, tmp_path):
    """kill -9 once a fit has checkpointed an epoch; --resume continues from that epoch and
    writes what an uninterrupted run writes."""
    cfg = _config(tmp_path, letor, epochs=6)
    straight = tmp_path / "straight"
    assert runner.invoke(app, ["run", str(cfg), "--out", str(straight), "-q"]).exit_code == 0
    killed = tmp_path / "killed"
    proc = subprocess.Popen([sys.executable, "-m", "ltr_cli", "run", str(cfg), "--out", str(killed), "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.time() + 120
    while time.time() < deadline and proc.poll() is None and not list(killed.glob("nn/.*.fits/*.fit")):
        time.sleep(0.05)
    finished = proc.poll() is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    if finished or any(p.is_dir() and not p.name.startswith(".") for p in (killed / "nn").iterdir()):
        pytest.skip("the run finished before it could be killed")
    line = _one_line(runner.invoke(app, ["run", str(cfg), "--out", str(killed), "-q"]))
    assert "--resume" in line and "checkpoint" in line  # without --resume the checkpoint is kept, in one line
    res = runner.invoke(app, ["run", str(cfg), "--out", str(killed), "-q", "--resume"])
    assert res.exit_code == 0, res.stderr
    a, b = _run_dir(straight), _run_dir(killed)
    for name in FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert not list((killed / "nn").glob(".*.fits"))  # removed once the run is written


def _one_line(res) -> str:
    assert res.exit_code == 1 and "Traceback" not in res.output, res.output
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ltr: error:"), res.stderr
    return lines[0]


def test_damaged_or_hostile_model_files_are_refused_in_one_line(run, letor, tmp_path):
    import shutil

    test_file = str(letor / "Fold1" / "testset.txt")

    def score(folder: Path) -> str:
        return _one_line(runner.invoke(app, ["score", str(folder), test_file, "--fold", "1"]))

    def copy(name: str) -> Path:
        folder = tmp_path / name
        shutil.copytree(run, folder)
        return folder

    cut = copy("cut")
    path = cut / "neural-fold1.safetensors"
    path.write_bytes(path.read_bytes()[:-10])
    assert "its SHA-256 is not the one models.json records" in score(cut)
    # a file whose digest models.json was made to match: checked as a model all the same
    for name, content in (("pickle", b"\x80\x04\x95\x10" + b"\x00" * 60),
                          ("nan", None), ("shape", None)):
        folder = copy(name)
        target = folder / "neural-fold1.safetensors"
        if content is None:
            from ltr_cli.neural import arrays

            found, record = arrays.decode(target.read_bytes(), 1 << 30)
            key = "params/output/b" if name == "nan" else "params/layer0/w"
            found[key] = np.full_like(found[key], np.nan) if name == "nan" else np.zeros((3, 3), np.float32)
            content = arrays.encode(found, record)
        target.write_bytes(content)
        models = json.loads((folder / "models.json").read_text())
        models["1"]["sha256"] = hashlib.sha256(content).hexdigest()
        (folder / "models.json").write_text(json.dumps(models))
        line = score(folder)
        assert "neural-fold1.safetensors: not a neural model this tool wrote" in line, line
    missing = copy("missing")
    (missing / "neural-fold1.safetensors").unlink()
    assert "missing (models.json refers to this model file)" in score(missing)
    # an entry whose architecture is not its file's (the file, hash-checked, is what scores)
    told = copy("told")
    models = json.loads((told / "models.json").read_text())
    models["1"]["scorer"] = {**models["1"]["scorer"], "hidden": [10**9]}
    (told / "models.json").write_text(json.dumps(models))
    assert "its 'scorer' is not the one its model file neural-fold1.safetensors records" in score(told)


@pytest.mark.parametrize("learner, error", [
    ("{type: neural, loss: {name: listnet}, scorer: {kind: mlp, hiden: [3]}}", "scorer kind mlp has no key 'hiden'"),
    ("{type: neural, loss: {name: nosuchloss}}", "unknown loss 'nosuchloss'"),
    ("{type: neural, loss: {name: listnet, temperature: 2}}", "loss listnet: unknown parameter 'temperature'"),
    ("{type: neural, loss: {name: listnet}, grid: {lr: [0.1]}}", "grid key 'lr' is not a dotted key of scorer, loss or train"),
    ("{type: neural, loss: {name: listnet}, grid: {train.lr: [-1]}}", "grid point train.lr=-1"),
    ("{type: neural, loss: {name: listnet}, transform: pca}", "unknown transform 'pca'"),
    ("{type: neural, loss: {name: listnet}, train: {optimizer: lbfgs}}", "optimizer"),
])
def test_config_errors_are_one_line(learner, error, tmp_path, letor):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(f"experiment: bad\ndataset: {{kind: registry, name: letor3-ohsumed, root: {letor}}}\ncv: {{}}\n"
                   f"learners:\n  a: {learner}\n")
    line = _one_line(runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out")]))
    assert error in line and "learners.a" in line, line


def test_without_jax_the_learner_says_how_to_install_it(monkeypatch, tmp_path, letor):
    from ltr_cli.neural import jaxenv

    monkeypatch.setattr(jaxenv, "_PACKAGES", ("jax", "optax", "safetensors", "no_such_package_here"))
    assert jaxenv.missing() == "no_such_package_here is not installed: pip install -e '.[neural]'"
    line = _one_line(runner.invoke(app, ["run", str(_config(tmp_path, letor)), "--out", str(tmp_path / "o")]))
    assert "learner 'mlp' (type neural): no_such_package_here is not installed: pip install -e '.[neural]'" in line
