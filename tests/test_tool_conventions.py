"""The presets named after tools (`lightgbm`, `trec_eval`, `ranx`, `allrank`) against the
tools themselves on the same scores: LightGBM's own ndcg metric (its ``Booster`` evaluated
on a ``Dataset`` whose ``init_score`` is the scores), trec_eval through pytrec_eval and ranx
where they are installed (skipped otherwise). Queries with ties, shorter than the cut-off
and without relevant documents are in every case."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.measures.conventions import CONVENTIONS, bind
from ltr_cli.measures.stacked import evaluate_stacked

runner = CliRunner()

SIZES = [12, 3, 7, 1, 15, 5, 20, 2]


def _case(seed: int, ties: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Labels 0-4, scores (rounded to one decimal: many ties), offsets; query 2 (three
    documents) has no relevant document, queries 1, 3, 5 and 7 are shorter than 10."""
    rng = np.random.default_rng(seed)
    y = np.concatenate([rng.integers(0, 5, n) for n in SIZES]).astype(np.float64)
    off = np.concatenate([[0], np.cumsum(SIZES)])
    y[off[1]:off[2]] = 0.0
    s = rng.random(y.size)
    return y, (np.round(s, 1) if ties else s), off


def _files(tmp_path: Path, y: np.ndarray, s: np.ndarray, off: np.ndarray) -> tuple[Path, Path]:
    data, scores = tmp_path / "data.txt", tmp_path / "scores.txt"
    lines = [f"{int(y[i])} qid:{q + 1} 1:{i} # docid = d{999 - i:03d}"
             for q, (a, b) in enumerate(zip(off[:-1], off[1:])) for i in range(a, b)]
    data.write_text("\n".join(lines) + "\n")
    scores.write_text("\n".join(repr(float(v)) for v in s) + "\n")
    return data, scores


def _ltr_eval(tmp_path: Path, y, s, off, convention: str, metrics: list[str]) -> dict[str, float]:
    data, scores = _files(tmp_path, y, s, off)
    args = ["eval", str(data), str(scores), "--convention", convention, "--json"]
    for m in metrics:
        args += ["--metric", m]
    res = runner.invoke(app, args)
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)["average"]


def _lightgbm_ndcg(y: np.ndarray, s: np.ndarray, off: np.ndarray, ks: list[int]) -> dict[int, float]:
    """LightGBM's own NDCG@k of scores ``s``: a Booster's evaluation before any tree, whose
    scores are the Dataset's ``init_score`` exactly."""
    lgb = pytest.importorskip("lightgbm")
    X = np.arange(y.size, dtype=np.float64)[:, None]
    train = lgb.Dataset(X, y, group=np.diff(off), init_score=s, params={"verbosity": -1})
    booster = lgb.Booster({"objective": "lambdarank", "metric": "ndcg", "eval_at": ks, "verbosity": -1}, train)
    return {int(r[1].split("@")[1]): float(r[2]) for r in booster.eval_train()}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_ltr_eval_lightgbm_equals_lightgbms_ndcg(tmp_path, seed):
    y, s, off = _case(seed, ties=True)
    ks = [1, 3, 5, 10, 20]
    theirs = _lightgbm_ndcg(y, s, off, ks)
    ours = _ltr_eval(tmp_path, y, s, off, "lightgbm", [f"ndcg@{k}" for k in ks])
    for k in ks:
        assert abs(ours[f"ndcg@{k}"] - theirs[k]) <= 1e-12, (k, ours, theirs)
    # the case tells the rules apart: ties, the empty query and short queries all matter
    conv = CONVENTIONS["lightgbm"]
    other_ties = evaluate_stacked(s, y, off, conv, ties="reverse-input", measures=bind(["ndcg@10"], conv))
    assert abs(other_ties.average(conv)["ndcg@10"] - theirs[10]) > 1e-6
    paper = _ltr_eval(tmp_path, y, s, off, "paper", ["ndcg@10"])  # the empty query counts 0
    assert abs(paper["ndcg@10"] - theirs[10]) > 1e-3
    mslr = _ltr_eval(tmp_path, y, s, off, "mslr", ["ndcg@10"])
    assert abs(mslr["ndcg@10"] - theirs[10]) > 1e-3


def test_lightgbm_map_equals_lightgbms_whole_list_map(tmp_path):
    lgb = pytest.importorskip("lightgbm")
    y, s, off = _case(3, ties=True)
    X = np.arange(y.size, dtype=np.float64)[:, None]
    train = lgb.Dataset(X, y, group=np.diff(off), init_score=s, params={"verbosity": -1})
    booster = lgb.Booster({"objective": "lambdarank", "metric": "map", "eval_at": [1000], "verbosity": -1}, train)
    theirs = float(booster.eval_train()[0][2])
    ours = _ltr_eval(tmp_path, y, s, off, "lightgbm", ["ap"])
    assert abs(ours["ap"] - theirs) <= 1e-12


def _trec(y, s, off):
    qrels, run = {}, {}
    for q, (a, b) in enumerate(zip(off[:-1], off[1:])):
        # docnos descend in file order: trec_eval's tie order (docno, descending) is file order
        qrels[f"q{q}"] = {f"d{999 - i:03d}": int(y[i]) for i in range(a, b)}
        run[f"q{q}"] = {f"d{999 - i:03d}": float(s[i]) for i in range(a, b)}
    return qrels, run


@pytest.mark.parametrize("ties", [False, True])
def test_ltr_eval_trec_eval_equals_pytrec_eval(tmp_path, ties):
    pytrec_eval = pytest.importorskip("pytrec_eval")
    y, s, off = _case(4, ties=ties)
    qrels, run = _trec(y, s, off)
    per_query = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut.5,10", "map", "P.5"}).evaluate(run)
    ours = _ltr_eval(tmp_path, y, s, off, "trec_eval", ["ndcg@5", "ndcg@10", "ap", "p@5"])
    for mine, theirs in (("ndcg@5", "ndcg_cut_5"), ("ndcg@10", "ndcg_cut_10"), ("ap", "map"), ("p@5", "P_5")):
        assert abs(ours[mine] - np.mean([v[theirs] for v in per_query.values()])) <= 1e-12, mine


def test_ltr_eval_ranx_equals_ranx(tmp_path):
    ranx = pytest.importorskip("ranx")
    y, s, off = _case(5, ties=False)  # ranx's sort leaves the order of tied scores unspecified
    qrels, run = _trec(y, s, off)
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), ["ndcg@10", "ndcg_burges@10", "map", "precision@5"])
    ours = _ltr_eval(tmp_path, y, s, off, "ranx", ["ndcg@10", "ap", "p@5"])
    assert abs(ours["ndcg@10"] - theirs["ndcg@10"]) <= 1e-12
    assert abs(ours["ap"] - theirs["map"]) <= 1e-12
    assert abs(ours["p@5"] - theirs["precision@5"]) <= 1e-12
    paper = _ltr_eval(tmp_path, y, s, off, "paper", ["ndcg@10"])  # ranx's ndcg_burges: 2^r - 1
    assert abs(paper["ndcg@10"] - theirs["ndcg_burges@10"]) <= 1e-12


def _allrank_ndcg(y: np.ndarray, s: np.ndarray, off: np.ndarray, k: int) -> float:
    """allRank's NDCG@k as its metrics.ndcg computes it, written out in numpy (allRank needs
    torch): slates padded with label -1 to the longest list, padded items scored -inf and
    gain 0, float32 discounts 1/log2(i+2), a slate whose ideal DCG is 0 filled with 1."""
    longest = int(np.diff(off).max())
    values = []
    for a, b in zip(off[:-1], off[1:]):
        yt = np.full(longest, -1.0, dtype=np.float32)
        yp = np.full(longest, -np.inf, dtype=np.float32)
        yt[:b - a], yp[:b - a] = y[a:b], s[a:b]
        g = np.where(yt == -1, 0, 2.0 ** np.maximum(yt, 0) - 1).astype(np.float32)
        disc = (1 / np.log2(np.arange(longest, dtype=np.float32) + 2)).astype(np.float32)
        at = min(k, longest)
        dcg = np.cumsum((g[np.argsort(-yp, kind="stable")] * disc))[at - 1]
        ideal = np.cumsum((np.sort(g)[::-1] * disc))[at - 1]
        values.append(1.0 if ideal == 0 else float(dcg / ideal))
    return float(np.mean(values))


def test_allrank_preset_follows_allranks_rules(tmp_path):
    y, s, off = _case(6, ties=False)
    ours = _ltr_eval(tmp_path, y, s, off, "allrank", ["ndcg@10", "ndcg@5"])
    for k in (5, 10):
        assert abs(ours[f"ndcg@{k}"] - _allrank_ndcg(y, s, off, k)) <= 1e-6  # allRank sums in float32


def test_every_preset_states_its_rules():
    for name, conv in CONVENTIONS.items():
        text = conv.summary()
        assert text.startswith("gain ") and ", discount " in text and "@k beyond the list: " in text \
            and "no relevant: " in text, name
        assert conv.source, name
    assert CONVENTIONS["lightgbm"].summary() == \
        "gain 2^r-1, discount 1/log2(i+1), @k beyond the list: over the list, no relevant: 1"
    assert CONVENTIONS["mslr"].summary() == \
        "gain 0,1,3,7,15 for labels 0-4, discount 1,1,1/log2(i), @k beyond the list: 0, no relevant: 0"
    assert CONVENTIONS["trec_eval"].summary("skip").endswith("no relevant: dropped")


def test_ltr_eval_names_the_rules_in_its_table_and_on_stderr(tmp_path):
    y, s, off = _case(7, ties=False)
    data, scores = _files(tmp_path, y, s, off)
    res = runner.invoke(app, ["eval", str(data), str(scores), "--convention", "lightgbm"])
    assert res.exit_code == 0, res.stderr
    rules = CONVENTIONS["lightgbm"].summary()
    assert res.stdout.startswith(f"# convention=lightgbm ({rules}) ")
    assert f"ltr: convention lightgbm ({rules}): --convention" in res.stderr
    as_json = json.loads(runner.invoke(app, ["eval", str(data), str(scores), "--json"]).stdout)
    assert as_json["rules"] == CONVENTIONS["paper"].summary()


def test_dataset_does_not_change_the_convention_and_says_how_to_take_its_own(tmp_path):
    """`--dataset` says how to read the file: adding it leaves the numbers alone."""
    data = tmp_path / "data.txt"
    data.write_text("2 qid:1 1:1\n0 qid:1 1:0.5\n1 qid:1 1:0.2\n0 qid:2 1:1\n")
    scores = tmp_path / "s.txt"
    scores.write_text("0.1\n0.3\n0.2\n0.5\n")
    plain = runner.invoke(app, ["eval", str(data), str(scores), "--json"])
    with_dataset = runner.invoke(app, ["eval", str(data), str(scores), "--dataset", "yahoo-set1", "--json"])
    assert with_dataset.exit_code == 0, with_dataset.stderr
    assert json.loads(with_dataset.stdout) == json.loads(plain.stdout)
    said = [line for line in with_dataset.stderr.splitlines() if line.startswith("ltr: convention")]
    assert said == [f"ltr: convention {CONVENTIONS['paper'].title()}: the default, whatever --dataset says; "
                    f"--convention mslr for yahoo-set1's own script ({CONVENTIONS['mslr'].summary()}), "
                    "--run RUN_DIR for a run's"]
    own = runner.invoke(app, ["eval", str(data), str(scores), "--dataset", "yahoo-set1", "--convention", "mslr",
                              "--json"])
    assert json.loads(own.stdout)["convention"] == "mslr"
