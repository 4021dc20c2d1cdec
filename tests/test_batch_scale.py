"""Batch runs at scale, end to end: feature normalisation (query-level, z-score fitted on
the training split and stored for ``ltr score``), convergence records and the cap warning,
and resuming an interrupted CV from its fold checkpoint."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from tests.conftest import load_queries
from ltr_cli.config.experiment import load_config
from ltr_cli.data.normalize import Normalizer, query_level
from tests.test_batch_protocol import make_letor

runner = CliRunner()


def _config(tmp_path: Path, learner: str, extra: str = "") -> Path:
    cfg = tmp_path / "cv.yaml"
    cfg.write_text(f"""experiment: scale
dataset: {{kind: registry, name: letor3-ohsumed, root: {tmp_path / 'OHSUMED'}, folds: [1, 2, 3]{extra}}}
cv: {{select_by: map}}
learners:
  {learner}
""")
    return cfg


def test_query_level_matches_letor_querylevelnorm():
    X = np.array([[1.0, 5.0, 2.0], [3.0, 5.0, -2.0], [2.0, 5.0, 0.0]])
    np.testing.assert_allclose(query_level(X), [[0, 0, 1], [1, 0, 0], [0.5, 0, 0.5]])


def test_zscore_is_fitted_on_train_only_and_ltr_score_applies_it(tmp_path):
    make_letor(tmp_path / "OHSUMED", queries=6, docs=10)
    cfg = _config(tmp_path, "r: {type: ranksvm, grid: {C: [0.1, 1]}}", ", normalize: zscore")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    run = Path(res.stdout.split()[0])
    models = json.loads((run / "models.json").read_text())
    spec = load_config(cfg)
    train = load_queries(spec, "train", 2)
    expected = Normalizer.fit("zscore", train)
    saved = models["2"]["normalize"]
    np.testing.assert_allclose(saved["mean"], expected.mean, rtol=1e-12)
    np.testing.assert_allclose(saved["std"], expected.std, rtol=1e-12)
    # vali and test statistics play no part: the stats differ from the test split's own
    test = load_queries(spec, "test", 2)
    assert not np.allclose(Normalizer.fit("zscore", test).mean, expected.mean)
    # ltr score on the raw test file scores with the normalised model
    from ltr_cli.data.registry import get_dataset

    test_file = get_dataset("letor3-ohsumed").path_for(tmp_path / "OHSUMED", "test", 2)
    out = tmp_path / "scores.txt"
    sc = runner.invoke(app, ["score", str(run), str(test_file), "--fold", "2", "--out", str(out)])
    assert sc.exit_code == 0, sc.stderr
    w = np.asarray(models["2"]["w"])
    want = np.concatenate([expected.apply(X) @ w for X, _ in test])
    np.testing.assert_allclose(np.loadtxt(out), want, rtol=1e-8, atol=1e-9)
    manifest = json.loads((run / "manifest.json").read_text())
    assert "zscore" in json.dumps(manifest)


def test_query_level_normalises_what_learners_see_and_is_saved(tmp_path):
    make_letor(tmp_path / "OHSUMED", queries=6, docs=10)
    cfg = _config(tmp_path, "r: {type: ranksvm, grid: {C: [1]}}", ", normalize: query-level")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    models = json.loads((Path(res.stdout.split()[0]) / "models.json").read_text())
    assert models["1"]["normalize"] == {"kind": "query-level"}
    for X, _ in load_queries(load_config(cfg), "train", 1):
        assert X.min() >= 0 and X.max() <= 1


def test_zscore_needs_a_cv_experiment(tmp_path):
    cfg = tmp_path / "online.yaml"
    cfg.write_text(f"""experiment: o
dataset: {{kind: files, files: [{tmp_path / 'x.txt'}], features: 3, normalize: zscore}}
learners:
  slam: {{type: slam}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out")])
    assert res.exit_code == 1 and "zscore" in res.stderr and "Traceback" not in res.stderr


def test_every_fit_records_its_convergence_and_a_capped_fit_warns(tmp_path):
    make_letor(tmp_path / "OHSUMED", queries=6, docs=10)
    cfg = _config(tmp_path, "s: {type: svmmap, grid: {C: [1, 100]}, max_iter: 2, eps: 1.0e-9}")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    warnings = [line for line in res.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 6 and all("cap of 2 iterations" in w for w in warnings)
    run = Path(res.stdout.split()[0])
    models = json.loads((run / "models.json").read_text())
    for fold in ("1", "2", "3"):
        fits = models[fold]["fits"]
        assert [f["params"]["C"] for f in fits] == [1, 100]
        for f in fits:
            rec = f["convergence"]
            assert rec["solver"] == "BMRM" and rec["iterations"] == 2 and rec["at_cap"] and not rec["converged"]
            assert rec["gap"] > 0 and rec["seconds"] >= 0
    assert json.loads((run / "summary.json").read_text())["fits_at_cap"] == 6


def test_interrupted_cv_resumes_after_its_last_finished_fold(tmp_path, monkeypatch):
    make_letor(tmp_path / "OHSUMED", queries=6, docs=10)
    cfg = _config(tmp_path, "r: {type: ranksvm, grid: {C: [0.1, 1]}}")
    out = tmp_path / "out"
    full = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "ref"), "-q"])
    assert full.exit_code == 0, full.stderr
    reference = Path(full.stdout.split()[0])

    from ltr_cli.protocols import batch

    real_fit_grid = batch._fit_grid
    calls = []

    def failing_fit_grid(fold, *args, **kwargs):
        calls.append(fold.number)
        if fold.number == 3:
            raise KeyboardInterrupt
        return real_fit_grid(fold, *args, **kwargs)

    monkeypatch.setattr(batch, "_fit_grid", failing_fit_grid)
    monkeypatch.setattr("sys.argv", ["ltr", "run", str(cfg), "--out", str(out), "-q"])
    stopped = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"])
    assert calls == [1, 2, 3]  # fold 3 was interrupted
    assert stopped.exit_code != 0
    assert f"continue with: ltr run {cfg} --out {out} -q --resume" in stopped.stderr
    assert "folds 1, 2 saved in" in stopped.stderr
    checkpoints = list((out / "scale").glob(".*.folds.json"))
    assert len(checkpoints) == 1 and set(json.loads(checkpoints[0].read_text())["folds"]) == {"1", "2"}
    assert not [p for p in (out / "scale").iterdir() if not p.name.startswith(".")]  # no half-written run

    plain = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q"])  # neither --resume nor --fresh
    assert plain.exit_code == 1 and "start over with --fresh" in plain.stderr and checkpoints[0].exists()

    calls.clear()
    monkeypatch.setattr(batch, "_fit_grid", lambda fold, *a, **k: (calls.append(fold.number),
                                                                    real_fit_grid(fold, *a, **k))[1])
    res = runner.invoke(app, ["run", str(cfg), "--out", str(out), "-q", "--resume"])
    assert res.exit_code == 0, res.stderr
    assert calls == [3]  # folds 1 and 2 came from the checkpoint
    resumed = Path(res.stdout.split()[0])
    for name in ("rounds.parquet",):
        assert (resumed / name).read_bytes() == (reference / name).read_bytes()
    ref_models = json.loads((reference / "models.json").read_text())
    new_models = json.loads((resumed / "models.json").read_text())
    for fold in ("1", "2", "3"):
        assert new_models[fold]["w"] == ref_models[fold]["w"]
    assert not list((out / "scale").glob(".*.folds.json"))  # removed once the run is written


@pytest.mark.parametrize("content", ["{not json", '{"format": "other", "folds": {}}',
                                     '{"format": "ltr-cv-folds/1", "data": {}, "folds": {"1": {"row": {}}}}'])
def test_a_damaged_fold_checkpoint_is_a_one_line_error(tmp_path, content):
    make_letor(tmp_path / "OHSUMED", queries=4, docs=8)
    cfg = _config(tmp_path, "r: {type: ranksvm, grid: {C: [1]}}")
    spec = load_config(cfg)
    from ltr_cli.runs.runner import run_name

    folder = tmp_path / "out" / "scale"
    folder.mkdir(parents=True)
    (folder / f".{run_name(spec, 'r')}.folds.json").write_text(content)
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "--resume"])
    assert res.exit_code == 1 and "checkpoint" in res.stderr and "delete it" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


def _letor_like(seed: int, n_queries: int = 12, d: int = 6) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    out = []
    for _ in range(n_queries):
        X = rng.normal(size=(int(rng.integers(5, 15)), d))
        y = np.digitize(X @ w + rng.normal(size=X.shape[0]), [-0.5, 0.8]).astype(float)
        out.append((X, y))
    return out


def test_bmrm_with_a_small_bounded_cut_set_reaches_the_same_optimum():
    from ltr_cli.learners.batch.bmrm import bmrm
    from ltr_cli.learners.batch.losses import ap_structural_hinge, mean_risk

    risk = mean_risk(_letor_like(1), ap_structural_hinge)
    full = bmrm(risk, 6, lam=0.1, eps=1e-6, max_cuts=1000)
    small = bmrm(risk, 6, lam=0.1, eps=1e-6, max_cuts=4, max_age=2)
    assert full.convergence.converged and small.convergence.converged
    # both certify gaps of at most 1e-6 x J, so their objectives agree to about that
    assert small.objective == pytest.approx(full.objective, rel=3e-6)
    assert small.lower_bound <= full.objective + 1e-12 and full.lower_bound <= small.objective + 1e-12


@pytest.mark.parametrize("learner", ["svmmap", "permurank", "ranksvm"])
def test_warm_starts_across_the_grid_reach_the_cold_optimum(learner):
    from ltr_cli.learners.batch.convergence import FitContext
    from ltr_cli.learners.registry import REGISTRY

    queries = _letor_like(2)
    spec = REGISTRY[learner].model_validate({"type": learner, "eps": 1e-7})
    previous = spec.fit(queries, {"C": 0.1})
    warm = spec.fit(queries, {"C": 10.0}, FitContext(previous))
    cold = spec.fit(queries, {"C": 10.0})
    w, c = warm.info["convergence"], cold.info["convergence"]
    if learner == "permurank":
        # each grid point starts its working sets at F = 0, whatever came before, so warm and
        # cold are the same fit (here at C = 10 the sets still change at the cap of 30 rounds)
        np.testing.assert_array_equal(warm.w, cold.w)
        assert {k: v for k, v in w.items() if k != "seconds"} == {k: v for k, v in c.items() if k != "seconds"}
        return
    assert w["converged"] and c["converged"]
    assert w["objective"] == pytest.approx(c["objective"], rel=1e-5)


def test_cv_evaluates_by_the_datasets_own_convention_and_warns_on_labels_outside_it(tmp_path):
    spec = load_config(_config(tmp_path, "r: {type: ranksvm}"))
    assert spec.cv is not None and spec.cv.convention == "letor3"
    mslr = tmp_path / "m.yaml"
    mslr.write_text(f"""experiment: m
dataset: {{kind: registry, name: mslr-web10k, root: {tmp_path}}}
cv: {{select_by: ap}}
learners: {{a: {{type: adarank, measure: ap}}}}
""")
    spec = load_config(mslr)
    assert spec.cv is not None and spec.cv.convention == "mslr" and spec.cv.select_by == "ap"
    # OHSUMED-shaped files with labels 0-2 plus some 3s and 4s, evaluated by letor3's table
    make_letor(tmp_path / "OHSUMED", queries=6, docs=10)
    from ltr_cli.data.registry import get_dataset

    info = get_dataset("letor3-ohsumed")
    for fold in (1, 2, 3):
        path = info.path_for(tmp_path / "OHSUMED", "test", fold)
        lines = path.read_text().splitlines()
        lines[0] = "4" + lines[0][1:]
        path.write_text("\n".join(lines) + "\n")
    cfg = _config(tmp_path, "r: {type: ranksvm, grid: {C: [1]}}")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    warning = [line for line in res.stderr.splitlines() if "gain table" in line]
    assert len(warning) == 1 and warning[0].startswith("ltr: warning: 3 vali and test documents")
    summary = json.loads((Path(res.stdout.split()[0]) / "summary.json").read_text())
    assert summary["labels_outside_gain_table"] == 3 and summary["convention"] == "letor3"


def test_an_online_run_normalises_per_query_and_saves_it(tmp_path):
    from ltr_cli.data.synthetic import ShapeSpec, shaped_queries, write_svmlight
    from ltr_cli.data.registry import get_dataset

    data = tmp_path / "d.txt"
    queries = list(shaped_queries(get_dataset("mslr-web10k"), ShapeSpec(5, 8, seed=1)))
    write_svmlight(data, iter(queries), qid_style="token")
    cfg = tmp_path / "o.yaml"
    cfg.write_text(f"""experiment: o
dataset: {{kind: files, files: [{data}], features: 136, normalize: query-level}}
learners: {{s: {{type: slam-perceptron}}}}
""")
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    run = Path(res.stdout.split()[0])
    models = json.loads((run / "models.json").read_text())
    assert models["final"]["normalize"] == {"kind": "query-level"}
    assert json.loads((run / "manifest.json").read_text())["dataset"]["normalize"] == "query-level"
    out = tmp_path / "scores.txt"
    assert runner.invoke(app, ["score", str(run), str(data), "--out", str(out)]).exit_code == 0
    w = np.asarray(models["final"]["w"])
    from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader

    written = list(SVMLightReader(data, ReaderOptions(n_features=136)))  # as the file holds them
    np.testing.assert_allclose(np.loadtxt(out), np.concatenate([query_level(q.X) @ w for q in written]),
                               rtol=1e-8, atol=1e-9)


@pytest.mark.parametrize("tamper", [lambda r: r["row"].update(ap="0.9; import os"),
                                    lambda r: r["model"].update(w="evil"),
                                    lambda r: r["row"].update(fold=7)])
def test_a_crafted_fold_checkpoint_on_the_right_data_is_refused(tmp_path, tamper):
    from ltr_cli.protocols.cv_run import open_cv
    from ltr_cli.protocols.batch import row_columns
    from ltr_cli.runs.plan import plan_experiment

    make_letor(tmp_path / "OHSUMED", queries=4, docs=8)
    cfg = _config(tmp_path, "r: {type: ranksvm, grid: {C: [1]}}")
    spec = load_config(cfg)
    folder = tmp_path / "out" / "scale"
    (run,) = plan_experiment(spec)[0]
    plan = run.cv_plan(tmp_path / "out")
    checkpoint = plan.checkpoint(folder / run.run_id, open_cv(plan).identity, [1, 2, 3])
    record = {"row": {"fold": 1, "chosen": "{}", **dict.fromkeys(row_columns("map"), 0.5)},
              "queries": {"qid": [], **{m: [] for m in row_columns("map")[1:]}},
              "grid": {"fold": 1, "tried": [{"params": {"C": 1}, "vali": 0.5, "convergence": None}]},
              "model": {"kind": "linear", "features": 45, "w": [0.0] * 45}}
    tamper(record)
    checkpoint.save("1", record)
    res = runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "--resume"])
    assert res.exit_code == 1 and "not one this tool wrote" in res.stderr and "delete it" in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "Traceback" not in res.stderr
