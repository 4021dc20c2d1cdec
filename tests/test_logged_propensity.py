"""``clicks.propensity: logged``: an imported log's own propensities, one per shown row, as
the IPS propensities of its clicks (:mod:`ltr_cli.clicklog.logged`)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.cli.app import app
from ltr_cli.clicklog.docwise import examination_of
from ltr_cli.clicklog.logfile import read_log
from ltr_cli.clicklog.pairs import click_pairs
from ltr_cli.clicklog.simulate import Sessions
from ltr_cli.learners.batch.click_data import ClickData
from ltr_cli.learners.batch.lambdamart import click_rows

runner = CliRunner()
HEADER = ["session", "qid", "doc", "position", "click", "propensity"]


def _csv(path: Path, rows) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(HEADER)
        w.writerows(rows)
    return path


def _invoke(*args: str):
    return runner.invoke(app, list(args))


def _config(path: Path, root: Path, learners: dict) -> Path:
    path.write_text(json.dumps({
        "experiment": "logged", "dataset": {"kind": "registry", "name": "mslr-web10k", "root": str(root),
                                            "folds": [1], "normalize": "zscore"},
        "cv": {"select_by": "ndcg@10", "convention": "mslr"}, "learners": learners}))
    return path


GEN = {"model": "pbm", "eta": 1.0, "sessions": 1500, "shown": 8}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """A generated PBM log (fold 1) and the same log exported to CSV with each row's TRUE
    examination probability as its propensity, imported with ltr clicks import."""
    tmp = tmp_path_factory.mktemp("logged")
    root = tmp / "mslr"
    res = _invoke("data", "synth", str(root), "--like", "mslr-web10k", "--folds", "--queries", "30",
                  "--docs-per-query", "12")
    assert res.exit_code == 0, res.output
    gen_cfg = _config(tmp / "gen.yaml", root, {"gen": {"type": "ranksvm", "grid": {"C": [0.1]},
                                                       "clicks": {"generate": GEN, "correction": "ips"}}})
    res = _invoke("clicks", "log", str(gen_cfg), "--out", str(tmp / "orig"))
    assert res.exit_code == 0, res.output
    log = read_log(tmp / "orig" / "fold1.parquet")
    shown = int(log.meta["shown"])
    _, exam = examination_of(log.meta["model"], shown, "test")
    assert exam[0] == 1.0  # pbm: position 1 always examined, so true (relative) = absolute
    rows = [[int(s), log.qids[q], int(d), int(p), int(c), repr(float(exam[p - 1]))]
            for s, q, d, p, c in zip(log.session, log.query, log.doc, log.position, log.click)]
    (tmp / "imported").mkdir()
    train = next(root.rglob("Fold1/train.txt"))
    res = _invoke("clicks", "import", str(_csv(tmp / "outside.csv", rows[::-1])), "--data", str(train), "--out",
                  str(tmp / "imported" / "fold1.parquet"))
    assert res.exit_code == 0, res.output
    return tmp, root


def _learners(kind: str, grid: dict, orig: Path, imported: Path, correction: str = "ips") -> dict:
    return {"true": {"type": kind, "grid": grid, "clicks": {"log": str(orig), "correction": correction,
                                                            "propensity": True, "clip": 10}},
            "logged": {"type": kind, "grid": grid, "clicks": {"log": str(imported), "correction": correction,
                                                              "propensity": "logged", "clip": 10}}}


def _run(tmp: Path, root: Path, kind: str, grid: dict, correction: str = "ips") -> tuple[dict, dict, Path]:
    cfg = _config(tmp / f"{kind}-{correction}.yaml", root,
                  _learners(kind, grid, tmp / "orig", tmp / "imported", correction))
    out = tmp / f"out-{kind}-{correction}"
    res = _invoke("run", str(cfg), "--out", str(out), "-q")
    assert res.exit_code == 0, res.output
    found = {}
    for name in ("true", "logged"):
        folder = next(out.rglob(f"{name}-*"))
        found[name] = (json.loads((folder / "models.json").read_text()),
                       json.loads((folder / "summary.json").read_text()), folder)
    return found["true"], found["logged"], out


def _metrics(summary: dict) -> dict:
    """The summary's numbers, without what names the learner or the run."""
    text = json.dumps(summary, sort_keys=True)
    return json.loads(text.replace('"logged"', '"X"').replace('"true"', '"X"'))


def test_ranksvm_on_logged_dr_targets_equals_propensity_true(logs):
    """DR per document on the logged rows' propensities: the same targets' pairs as on the
    click model's (to the regression's last digits), so the same RankSVM."""
    tmp, root = logs
    (mt, st, dt), (ml, sl, dl), _ = _run(tmp, root, "ranksvm", {"C": [0.1]}, correction="dr")
    ft, fl = next(iter(mt.values())), next(iter(ml.values()))
    wt, wl = np.asarray(ft["w"]), np.asarray(fl["w"])
    assert wt.shape == wl.shape and np.max(np.abs(wt - wl)) <= 1e-6 * max(1.0, float(np.max(np.abs(wt))))
    assert fl["clicks"]["logged_propensity"]["rows"] > 0 and fl["clicks"]["correction"] == "dr"


def test_ranksvm_on_logged_true_propensities_equals_propensity_true(logs):
    tmp, root = logs
    (mt, st, dt), (ml, sl, dl), _ = _run(tmp, root, "ranksvm", {"C": [0.1, 1.0]})
    assert (dt / "test_queries.parquet").read_bytes() == (dl / "test_queries.parquet").read_bytes()
    ft, fl = next(iter(mt.values())), next(iter(ml.values()))
    wt, wl = np.asarray(ft["w"]), np.asarray(fl["w"])
    assert wt.shape == wl.shape and np.max(np.abs(wt - wl)) == 0.0  # the same pairs, the same weights, bit for bit
    assert fl["clicks"]["propensity"] == "logged" and fl["clicks"]["weights_mean"] == ft["clicks"]["weights"]
    assert fl["clicks"]["logged_propensity"]["weights"]["max"] <= 10
    assert ft["clicks"]["clicks"] == fl["clicks"]["clicks"]


def test_lambdamart_on_logged_true_propensities_equals_propensity_true(logs):
    tmp, root = logs
    (_, st, ft), (_, sl, fl), _ = _run(tmp, root, "lambdamart", {"num_leaves": [7], "num_boost_round": [20]})
    trees_t = (ft / "lightgbm-fold1.txt").read_text()
    trees_l = (fl / "lightgbm-fold1.txt").read_text()
    assert trees_t == trees_l  # the same rows and weights: the same booster
    assert (ft / "test_queries.parquet").read_bytes() == (fl / "test_queries.parquet").read_bytes()


def test_neural_ips_targets_on_logged_true_propensities_equal_propensity_true(logs):
    from ltr_cli.clicklog.signal import ClickSignal
    from ltr_cli.learners.batch.click_data import fold_clicks
    from ltr_cli.learners.batch.click_targets import IPS, POLICY_AWARE

    tmp, root = logs
    sizes: dict[str, int] = {}
    for line in next(root.rglob("Fold1/train.txt")).read_text().splitlines():
        q = line.split()[1].split(":")[1]
        sizes[q] = sizes.get(q, 0) + 1
    ids = list(sizes)
    rng = np.random.default_rng(0)  # features for the direct method's regression (dm, dr)
    train = [(rng.normal(size=(sizes[q], 3)), np.zeros(sizes[q])) for q in ids]
    for name in ("ips", "policy-aware", "dm", "dr"):
        a = fold_clicks(ClickSignal(log=tmp / "orig", correction=name, propensity=True), train, ids, 1, "targets")
        b = fold_clicks(ClickSignal(log=tmp / "imported", correction=name, propensity="logged"), train, ids, 1,
                        "targets")
        assert a.targets is not None and b.targets is not None
        diff = max(float(np.max(np.abs(x - y))) for x, y in zip(a.targets, b.targets))
        # dm, dr: the same regression on exposures summed in another order, fitted by L-BFGS
        assert diff <= (1e-12 if name in ("ips", "policy-aware") else 1e-6), (name, diff)
        assert max(float(np.max(np.abs(x))) for x in a.targets) > 0.05, name
    assert IPS.targets is not None and POLICY_AWARE.targets is not None


# --- (b) per-row propensities that differ within a position ---------------------------------

def _tiny() -> tuple[Sessions, np.ndarray]:
    """Two sessions of one query, its documents 0, 1, 2 shown at 1, 2, 3; session 0 clicks
    doc 1 (row 1, p 0.5), session 1 clicks doc 1 too (row 4, p 0.25: a logger whose
    examination depends on the session) and doc 0 (row 3, p 1)."""
    s = Sessions(np.array([0, 0, 0, 1, 1, 1]), np.zeros(6, np.int32), np.array([0, 1, 2, 0, 1, 2], np.int32),
                 np.array([1, 2, 3, 1, 2, 3], np.int16), np.array([0, 1, 0, 1, 1, 0], bool))
    return s, np.array([1.0, 0.5, 0.2, 1.0, 0.25, 0.2])


def test_per_row_pair_weights_are_one_over_each_rows_propensity():
    s, p = _tiny()
    pairs = click_pairs(s, np.ones(3), 3, row_weight=1.0 / p)
    got = {(int(b), int(w)): float(x) for b, w, x in zip(pairs.better, pairs.worse, pairs.weight)}
    # pairs summed over the query's 2 sessions and divided by 2: (1 -> 0) once, at 1/0.5;
    # (1 -> 2) twice, at 1/0.5 and 1/0.25; (0 -> 2) once, at 1/1
    assert got == {(1, 0): 2.0 / 2, (1, 2): (2.0 + 4.0) / 2, (0, 2): 1.0 / 2}
    per_position = click_pairs(s, np.array([1.0, 2.0, 5.0]), 3)  # position 2's weight 2 for both clicks
    assert {(int(b), int(w)): float(x) for b, w, x in zip(per_position.better, per_position.worse,
                                                          per_position.weight)}[(1, 2)] == (2.0 + 2.0) / 2


def test_per_row_lambdamart_rows_weigh_each_clicks_own_row():
    s, p = _tiny()
    X = np.arange(3, dtype=float)[:, None]
    data = ClickData(s, np.ones(3), "ips", row_weights=1.0 / p)
    rows = click_rows([(X, np.zeros(3))], data)
    # one group per click: session 0's click on doc 1 (weight 2), session 1's on doc 0 (1) and on doc 1 (4)
    starts = np.r_[0, np.cumsum(rows.group)[:-1]]
    assert sorted(float(rows.weight[i]) for i in starts) == [1.0, 2.0, 4.0]
    # two alike sessions with the same propensities merge (count 2), with other ones they do not
    twin = Sessions(np.array([0, 0, 1, 1]), np.zeros(4, np.int32), np.array([0, 1, 0, 1], np.int32),
                    np.array([1, 2, 1, 2], np.int16), np.array([0, 1, 0, 1], bool))
    same = click_rows([(X, np.zeros(3))], ClickData(twin, np.ones(2), "ips", row_weights=np.array([1, 2, 1, 2.])))
    other = click_rows([(X, np.zeros(3))], ClickData(twin, np.ones(2), "ips", row_weights=np.array([1, 2, 1, 3.])))
    assert same.group == [2] and same.weight.tolist() == [4.0, 4.0]
    assert other.group == [2, 2] and sorted(set(other.weight.tolist())) == [2.0, 3.0]


def test_logged_docwise_targets_read_each_rows_propensity():
    from ltr_cli.clicklog.docwise import estimates, exposure

    s, p = _tiny()
    ex = exposure(s, [3], 3, np.ones(3), None, row_alpha=p)
    ips = estimates("ips", ex, np.ones(3), np.zeros(3), 0.0)[0]
    pa = estimates("policy-aware", ex, np.ones(3), np.zeros(3), 0.0)[0]
    # ips: (sum of 1/p_r over d's clicks) / 2 sessions; policy-aware: ctr_d / mean p_r of d's rows
    assert ips.tolist() == [1.0 / 2, (2.0 + 4.0) / 2, 0.0]
    assert pa.tolist() == [0.5 / 1.0, 1.0 / ((0.5 + 0.25) / 2), 0.0]
    # dr on a given DM: DM_d + (ctr_d - E[alpha_d] DM_d) / E[alpha_d], E[alpha_d] the rows' mean p_r
    dm = [np.array([0.3, 0.6, 0.1])]
    dr = estimates("dr", ex, np.ones(3), np.zeros(3), 0.0, dm)[0]
    ea = np.array([1.0, 0.375, 0.2])
    assert np.allclose(dr, dm[0] + (np.array([0.5, 1.0, 0.0]) - ea * dm[0]) / ea, rtol=0, atol=1e-15)
    clipped = estimates("ips", exposure(s, [3], 3, np.ones(3), 3.0, row_alpha=p), np.ones(3), np.zeros(3), 1 / 3)[0]
    assert clipped.tolist() == [0.5, (2.0 + 3.0) / 2, 0.0]


def test_a_run_weighs_a_session_dependent_logger_by_its_rows(logs, tmp_path):
    """Propensities that differ within a position (halved on odd sessions) reach the run:
    the record's weights are 1/p_r clipped, and the model differs from propensity: true's."""
    tmp, root = logs
    log = read_log(tmp / "orig" / "fold1.parquet")
    _, exam = examination_of(log.meta["model"], int(log.meta["shown"]), "test")
    p = exam[log.position - 1] * np.where(log.session % 2 == 1, 0.5, 1.0)
    rows = [[int(s), log.qids[q], int(d), int(k), int(c), repr(float(v))]
            for s, q, d, k, c, v in zip(log.session, log.query, log.doc, log.position, log.click, p)]
    (tmp_path / "logs").mkdir()
    train = next(root.rglob("Fold1/train.txt"))
    res = _invoke("clicks", "import", str(_csv(tmp_path / "o.csv", rows)), "--data", str(train), "--out",
                  str(tmp_path / "logs" / "fold1.parquet"))
    assert res.exit_code == 0, res.output
    cfg = _config(tmp_path / "c.yaml", root, {"logged": {"type": "ranksvm", "grid": {"C": [0.1]}, "clicks": {
        "log": str(tmp_path / "logs"), "correction": "ips", "propensity": "logged", "clip": None}}})
    res = _invoke("run", str(cfg), "--out", str(tmp_path / "out"), "-q")
    assert res.exit_code == 0, res.output
    rec = next(iter(json.loads(next((tmp_path / "out").rglob("models.json")).read_text()).values()))["clicks"]
    want = 1.0 / p
    assert rec["logged_propensity"]["weights"]["max"] == pytest.approx(want.max(), rel=1e-12)
    assert rec["logged_propensity"]["weights"]["mean"] == pytest.approx(want.mean(), rel=1e-12)
    assert rec["weights_mean"][0] == pytest.approx(1.5, rel=1e-12)  # 1 on even sessions, 2 on odd ones


# --- (c) refusals through the CLI ---------------------------------------------------------

def _refused(res, *words: str) -> None:
    assert res.exit_code == 1, res.output
    assert res.output.count("\n") == 1 and "Traceback" not in res.output, res.output
    for w in words:
        assert w in res.output, res.output


def test_logged_is_refused_without_a_propensity_column(logs, tmp_path):
    tmp, root = logs
    cfg = _config(tmp_path / "c.yaml", root, {"x": {"type": "ranksvm", "grid": {"C": [0.1]}, "clicks": {
        "log": str(tmp / "orig"), "correction": "ips", "propensity": "logged"}}})
    _refused(_invoke("run", str(cfg), "--out", str(tmp_path / "out"), "-q"), "clicks.propensity: logged",
             "has no propensity column", "ltr clicks import")


@pytest.mark.parametrize("kind,clicks,words", [
    ("ranksvm", {"generate": GEN, "correction": "ips", "propensity": "logged"},
     ["propensity: logged", "clicks.generate", "give propensity: true"]),
    ("ranksvm", {"log": "L", "correction": "naive", "propensity": "logged"},
     ["correction naive", "read no propensity"]),
    ("lambdamart", {"log": "L", "correction": "position-bias", "propensity": "logged"},
     ["correction position-bias", "learns its own position biases"]),
    ("ranksvm", {"log": "L", "correction": "pairwise-debias", "propensity": "logged"},
     ["correction pairwise-debias", "per position pair"]),
    ("neural", {"log": "L", "correction": "affine", "propensity": "logged"}, ["correction affine", "beta"]),
    ("dla", {"log": "L", "correction": "naive", "propensity": "logged"}, ["propensity: logged", "naive"]),
    ("ranksvm", {"log": "L", "correction": "ips", "propensity": "logged", "propensity_draw": True},
     ["propensity_draw", "no standard error"]),
])
def test_logged_is_refused_where_it_means_nothing(logs, tmp_path, kind, clicks, words):
    tmp, root = logs
    clicks = {k: (str(tmp / "imported") if v == "L" else v) for k, v in clicks.items()}
    learner = {"type": kind, "grid": {"C": [0.1]} if kind in ("ranksvm", "dla") else {}, "clicks": clicks}
    if kind == "lambdamart":
        learner["grid"] = {"num_leaves": [7]}
    if not learner["grid"]:
        learner.pop("grid")
    cfg = _config(tmp_path / "c.yaml", root, {"x": learner})
    _refused(_invoke("run", str(cfg), "--out", str(tmp_path / "out"), "-q"), *words)


# --- (d) a damaged propensity column at import ---------------------------------------------

@pytest.mark.parametrize("value,words", [("0", "holds 0.0"), ("1.5", "holds 1.5"), ("nan", "column 'propensity' is empty"),
                                         ("abc", "'abc'"), ("-0.2", "-0.2"), ("", "empty")])
def test_a_damaged_propensity_is_refused_at_import_naming_the_row(tmp_path, value, words):
    data = tmp_path / "d.txt"
    data.write_text("2 qid:7 1:0.1\n0 qid:7 1:0.2\n1 qid:7 1:0.3\n")
    rows = [[1, "7", 0, 1, 1, "1.0"], [1, "7", 1, 2, 0, value], [1, "7", 2, 3, 0, "0.3"]]
    out = tmp_path / "log.parquet"
    res = _invoke("clicks", "import", str(_csv(tmp_path / "a.csv", rows)), "--data", str(data), "--out", str(out))
    _refused(res, f"{tmp_path / 'a.csv'}: row 2 (line 3)", "propensity", words)
    assert not out.exists()


def test_a_nan_propensity_in_a_parquet_log_is_refused_naming_the_row(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "d.txt"
    data.write_text("2 qid:7 1:0.1\n0 qid:7 1:0.2\n")
    log = tmp_path / "a.parquet"
    pq.write_table(pa.table({"session": [1, 1], "qid": ["7", "7"], "doc": [0, 1], "position": [1, 2],
                             "click": [True, False], "propensity": [1.0, float("nan")]}), log)
    res = _invoke("clicks", "import", str(log), "--data", str(data), "--out", str(tmp_path / "out.parquet"))
    _refused(res, f"{log}: row 2", "propensity", "nan")
