"""Identical documents tie on every path that ranks them, and the numbers a run writes are
those ``ltr score`` + ``ltr eval`` give: held-out curves, CV selection and test, saved
models' scores, the score file's precision and the convention ``ltr eval`` defaults to."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from ltr_cli import kernels
from ltr_cli.cli.app import app
from ltr_cli.data.registry import get_dataset
from ltr_cli.measures.conventions import CONVENTIONS, bind
from ltr_cli.measures.metrics import row_scores
from ltr_cli.measures.stacked import linear_scores
from ltr_cli.protocols.batch import TEST_METRICS
from ltr_cli.protocols.heldout import Heldout
from ltr_cli.results.models import LinearModel

runner = CliRunner()


def _noisy_rows(m: int = 7, d: int = 45) -> tuple[np.ndarray, np.ndarray, int]:
    """m copies of one row and weights for which BLAS's ``X @ w`` scores some copy strictly
    above the first (rounding noise), and that copy's index; skips where BLAS ties them."""
    for seed in range(200):
        rng = np.random.default_rng(seed)
        X = np.tile(rng.random(d).round(4), (m, 1))
        w = rng.standard_normal(d)
        s = X @ w
        if s.max() > s[0]:
            return X, w, int(np.argmax(s))
    pytest.skip("this BLAS scores identical rows identically")


@pytest.mark.parametrize("compiled", [True, False])
def test_identical_rows_get_identical_scores_on_both_paths(monkeypatch, compiled):
    X, w, _ = _noisy_rows()
    monkeypatch.setattr(kernels, "ENABLED", compiled)
    for x in (X, X.astype(np.float32)):
        s = LinearModel(w).scores(x)
        assert (s == s[0]).all()
        # the compiled and the reference routine give the same bits
        assert s.tobytes() == row_scores(x, w).tobytes() == linear_scores(x, w).tobytes()


@pytest.mark.parametrize("compiled", [True, False])
def test_heldout_ranks_identical_documents_by_the_tie_rule(monkeypatch, compiled):
    X, w, top = _noisy_rows()
    y = np.zeros(X.shape[0])
    y[top] = 2.0  # the copy BLAS noise would put first; input-order ties put row 0 first
    monkeypatch.setattr(kernels, "ENABLED", compiled)
    held = Heldout(1, X, y, np.array([0, X.shape[0]]), bind(["ndcg@1", "ap"], CONVENTIONS["paper"]),
                   "input-order", 0, {})
    ndcg1, ap = held.evaluate(w)
    assert ndcg1 == 0.0
    assert ap == 1 / (top + 1)  # the relevant copy stays at its place in the file


@pytest.mark.parametrize("ties", ["input-order", "reverse-input"])
@pytest.mark.parametrize("compiled", [True, False])
def test_online_rounds_rank_identical_documents_by_the_tie_rule(monkeypatch, compiled, ties):
    """An online learner's ranking of identical rows follows its tie rule, on both paths,
    under input-order as under the authors' reverse-input (not BLAS's rounding noise)."""
    from tests.conftest import make_learner

    X, w, _ = _noisy_rows()
    monkeypatch.setattr(kernels, "ENABLED", compiled)
    learner = make_learner("ogd", X.shape[1], ties=ties, surrogate="squared")
    learner.w = w.copy()
    ranking = learner.rank(X, np.random.default_rng(0))
    expected = np.arange(X.shape[0]) if ties == "input-order" else np.arange(X.shape[0])[::-1]
    assert ranking.tolist() == expected.tolist()


def test_ltr_score_writes_scores_that_read_back_exactly(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "models.json").write_text(json.dumps({"final": {"kind": "linear", "features": 1, "w": [1.0]}}))
    data = tmp_path / "data.txt"
    # the relevant document scores 1e-12 above the other: kept apart, it is ranked first
    data.write_text("0 qid:1 1:1\n2 qid:1 1:1.000000000001\n")
    scores = tmp_path / "s.txt"
    res = runner.invoke(app, ["score", str(run), str(data), "--out", str(scores)])
    assert res.exit_code == 0, res.stderr
    assert [float(v) for v in scores.read_text().split()] == [1.0, 1.000000000001]
    ev = runner.invoke(app, ["eval", str(data), str(scores), "--json"])
    assert ev.exit_code == 0, ev.stderr
    assert json.loads(ev.stdout)["average"]["ndcg@1"] == 1.0


def test_ltr_eval_keeps_its_convention_under_dataset_and_says_which(tmp_path):
    data = tmp_path / "data.txt"
    data.write_text("2 qid:1 1:1\n0 qid:1 1:0.5\n1 qid:1 1:0.2\n")
    scores = tmp_path / "s.txt"
    scores.write_text("0.1\n0.3\n0.2\n")
    ev = runner.invoke(app, ["eval", str(data), str(scores), "--dataset", "mslr-web10k", "--json"])
    assert ev.exit_code == 0, ev.stderr
    assert json.loads(ev.stdout)["convention"] == "paper"
    assert "ltr: convention paper (gain 2^r-1, " in ev.stderr and "--convention mslr for mslr-web10k's own" in ev.stderr
    plain = runner.invoke(app, ["eval", str(data), str(scores)])
    assert plain.stdout.startswith("# convention=paper ") and "): the default; --convention" in plain.stderr
    chosen = runner.invoke(app, ["eval", str(data), str(scores), "--dataset", "mslr-web10k", "--convention", "letor4"])
    assert chosen.stdout.startswith("# convention=letor4 ") and "): --convention" in chosen.stderr


def make_repeated_folds(root: Path, folds=(1, 2), queries: int = 6, seed: int = 0) -> None:
    """LETOR 3.0 OHSUMED-shaped folds in which every query repeats five feature rows three
    times each, with labels drawn apart (the duplicates LETOR data is full of)."""
    info = get_dataset("letor3-ohsumed")
    rng = np.random.default_rng(seed)
    for fold in folds:
        for i, split in enumerate(("train", "vali", "test")):
            path = info.path_for(root, split, fold)
            path.parent.mkdir(parents=True, exist_ok=True)
            lines = []
            for q in range(queries):
                rows = rng.random((5, info.n_features)).round(4)
                for k in range(15):
                    feats = " ".join(f"{j + 1}:{v:.6g}" for j, v in enumerate(rows[k % 5]))
                    lines.append(f"{rng.integers(0, 3)} qid:{fold}{i}{q} {feats}")
            path.write_text("\n".join(lines) + "\n")


def test_cv_test_metrics_are_those_of_ltr_score_and_ltr_eval_on_repeated_rows(tmp_path):
    root = tmp_path / "OHSUMED"
    make_repeated_folds(root)
    config = tmp_path / "ties.yaml"
    config.write_text(f"experiment: ties\ndataset: {{kind: registry, name: letor3-ohsumed, root: '{root}', "
                      "folds: [1, 2]}\ncv: {select_by: map}\n"
                      "learners:\n  ranksvm: {type: ranksvm, grid: {C: [0.01, 1]}}\n")
    res = runner.invoke(app, ["run", str(config), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    run = Path(res.stdout.split()[0])
    folds = pd.read_parquet(run / "rounds.parquet").set_index("fold")
    per_query = pd.read_parquet(run / "test_queries.parquet")
    for fold in (1, 2):
        test = get_dataset("letor3-ohsumed").path_for(root, "test", fold)
        scores = tmp_path / f"scores{fold}.txt"
        res = runner.invoke(app, ["score", str(run), str(test), "--fold", str(fold), "--out", str(scores)])
        assert res.exit_code == 0, res.stderr
        # the run's convention (letor3, the dataset's own) without naming it
        ev = runner.invoke(app, ["eval", str(test), str(scores), "--run", str(run), "--json", "--per-query"])
        assert ev.exit_code == 0, ev.stderr
        assert f"{CONVENTIONS['letor3'].title()}: cv.convention of run {run}" in ev.stderr
        out = json.loads(ev.stdout)
        for metric in TEST_METRICS:
            assert out["average"][metric] == folds.loc[fold, metric], (fold, metric)
            mine = per_query[per_query["fold"] == fold].set_index("qid")[metric]
            assert {q: v[metric] for q, v in out["per_query"].items()} == mine.to_dict(), (fold, metric)

    # a run folder whose summary names no convention this tool knows: one line, exit 1
    bad = tmp_path / "bad" / run.name
    shutil.copytree(run, bad)
    summary = json.loads((bad / "summary.json").read_text())
    (bad / "summary.json").write_text(json.dumps({**summary, "convention": "nope"}))
    ev = runner.invoke(app, ["eval", str(test), str(scores), "--run", str(bad)])
    assert ev.exit_code == 1 and "'convention' must be one of" in ev.stderr
    assert len(ev.stderr.strip().splitlines()) == 1 and "Traceback" not in ev.stderr


def _without_seconds(obj):
    """A run file's JSON without its timings (they differ between any two runs)."""
    if isinstance(obj, dict):
        return {k: _without_seconds(v) for k, v in obj.items() if k not in ("seconds", "wall_seconds")}
    if isinstance(obj, list):
        return [_without_seconds(v) for v in obj]
    return obj


def test_batch_cv_writes_the_same_numbers_on_both_paths(tmp_path, monkeypatch):
    """A CV run with LTR_KERNELS=0 and with the kernels: the per-fold and per-query tables
    byte for byte and the same models, for every batch learner with a compiled path but
    Ranking SVM's squared hinge, whose compiled Newton step (sorted pairs) agrees with the
    reference's (explicit pairs) to rounding only (docs/kernels.md)."""
    root = tmp_path / "OHSUMED"
    make_repeated_folds(root, folds=(1,), queries=5)
    config = tmp_path / "paths.yaml"
    config.write_text(f"experiment: paths\ndataset: {{kind: registry, name: letor3-ohsumed, root: '{root}', "
                      "folds: [1]}\ncv: {select_by: map}\nlearners:\n"
                      "  svmmap: {type: svmmap, grid: {C: [0.1, 10]}}\n"
                      "  adarank: {type: adarank, measure: map, grid: {rounds: [10]}}\n"
                      "  rankboost: {type: rankboost, grid: {rounds: [10]}}\n"
                      "  ca: {type: coordinate-ascent, measure: map, grid: {restarts: [1], iterations: [5]}}\n"
                      "  ranksvm: {type: ranksvm, grid: {C: [0.01, 1]}}\n")
    runs = {}
    for compiled in (False, True):
        monkeypatch.setattr(kernels, "ENABLED", compiled)
        res = runner.invoke(app, ["run", str(config), "--out", str(tmp_path / str(compiled)), "-q"])
        assert res.exit_code == 0, res.stderr
        runs[compiled] = {Path(p).name.rsplit("-", 1)[0]: Path(p) for p in res.stdout.split()}
    ref, fast = runs[False], runs[True]
    assert ref.keys() == fast.keys() == {"svmmap", "adarank", "rankboost", "ca", "ranksvm"}
    for name in ref:
        a, b = (_without_seconds(json.loads((r[name] / "models.json").read_text())) for r in (ref, fast))
        if name == "ranksvm":
            assert np.allclose(a["1"]["w"], b["1"]["w"], rtol=1e-9, atol=1e-12)
            continue
        assert a == b, name
        for table in ("rounds.parquet", "test_queries.parquet"):
            assert (ref[name] / table).read_bytes() == (fast[name] / table).read_bytes(), (name, table)


def test_eval_of_an_online_run_measures_as_that_run_did(tmp_path):
    """``ltr eval --run`` on an online run takes its metrics.convention, ties, no-relevant value
    and relevance threshold, and says so; an option given on the command line wins."""
    data = tmp_path / "d.txt"
    # query 1: two identical rows with labels 2 and 0; query 2: nothing relevant
    data.write_text("2 qid:1 1:0.5 2:0.25\n0 qid:1 1:0.5 2:0.25\n1 qid:1 1:0.1 2:0.9\n"
                    "0 qid:2 1:0.3 2:0.3\n0 qid:2 1:0.7 2:0.1\n")
    config = tmp_path / "on.yaml"
    config.write_text(f"experiment: on\ndataset: {{kind: files, files: ['{data}'], features: 2}}\n"
                      "protocol: {passes: 2}\n"
                      "metrics: {names: [ndcg@1], ties: reverse-input, no_relevant: one}\n"
                      "learners:\n  ogd: {type: ogd, surrogate: squared, step: {rule: constant, eta: 0.1}}\n")
    res = runner.invoke(app, ["run", str(config), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 0, res.stderr
    run = Path(res.stdout.split()[0])
    scores = tmp_path / "s.txt"
    assert runner.invoke(app, ["score", str(run), str(data), "--out", str(scores)]).exit_code == 0
    taken = runner.invoke(app, ["eval", str(data), str(scores), "--run", str(run), "--json", "--per-query"])
    assert taken.exit_code == 0, taken.stderr
    assert "): metrics.convention of online run" in taken.stderr and "no relevant: 1)" in taken.stderr
    assert "ties reverse-input, no_relevant one" in taken.stderr
    named = runner.invoke(app, ["eval", str(data), str(scores), "--ties", "reverse-input",
                                "--no-relevant", "one", "--json", "--per-query"])
    assert named.exit_code == 0 and json.loads(taken.stdout) == json.loads(named.stdout)
    plain = runner.invoke(app, ["eval", str(data), str(scores), "--json", "--per-query"])
    assert json.loads(plain.stdout) != json.loads(taken.stdout)  # the run's ties and no-relevant value matter here
    # a command-line option wins over the run's
    mixed = runner.invoke(app, ["eval", str(data), str(scores), "--run", str(run), "--no-relevant", "zero",
                                "--json", "--per-query"])
    assert json.loads(mixed.stdout)["per_query"]["2"] == json.loads(plain.stdout)["per_query"]["2"]
    # a damaged config: one line naming the key, exit 1
    bad = tmp_path / "bad" / run.name
    shutil.copytree(run, bad)
    text = (bad / "config.yaml").read_text().replace("ties: reverse-input", "ties: sideways")
    (bad / "config.yaml").write_text(text)
    ev = runner.invoke(app, ["eval", str(data), str(scores), "--run", str(bad)])
    assert ev.exit_code == 1 and "'metrics.ties' must be one of" in ev.stderr
    assert len(ev.stderr.strip().splitlines()) == 1 and "Traceback" not in ev.stderr
