"""The per-document click estimators (policy-aware, affine, DM, DR; naive and IPS per
document): unbiasedness on simulated logs whose relevance is known, DR's two limits (an
exact DM, a zero DM), the refusals of a learner that cannot read what an estimator gives,
and ``type: neural`` trained on DR targets end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.clicklog import docwise
from ltr_cli.clicklog.estimators import ESTIMATORS, ClickLog
from ltr_cli.clicklog.signal import ClickSignal, GenerateSpec
from ltr_cli.errors import LtrError
from ltr_cli.learners.batch import click_targets
from ltr_cli.learners.batch.click_data import fold_clicks, fold_log

SIGMAS = 5.0


def _log(model: str, policy: str, sessions: int = 30_000, clip: float | None = None, queries: int = 60,
         docs: int = 12, shown: int = 6, seed: int = 0) -> ClickLog:
    rng = np.random.default_rng(seed)
    train = [(rng.normal(size=(docs, 4)), rng.integers(0, 5, size=docs).astype(float)) for _ in range(queries)]
    gen = GenerateSpec(model=model, sessions=sessions, shown=shown, policy=policy, seed=seed, logger_fraction=0.2)
    s, meta = fold_log(train, gen, 0)
    return ClickLog(s, meta, shown, ClickSignal(generate=gen, clip=clip), train, 0)


def _examinable(log: ClickLog) -> np.ndarray:
    alpha, _, _ = click_targets.affine_bias(log)
    ex = docwise.exposure(log.sessions, [len(y) for _, y in log.train], log.shown, alpha, None)
    return np.concatenate([docwise.expected(d, int(n), alpha) for d, n in zip(ex.displays, ex.sessions)]) > 0


def _relevance(log: ClickLog) -> np.ndarray:
    """Each document's R: the model's P(click | examined, grade), P(relevant | grade) under trust bias."""
    table = np.asarray(log.meta["model"]["click"], dtype=float)
    return np.concatenate([table[np.asarray(y, dtype=int)] for _, y in log.train])


def _gap(kind: str, log: ClickLog, regression=None) -> tuple[float, float]:
    """(largest |mean target - R| over the grades, in standard errors; the same for naive clicks)."""
    keep = _examinable(log)
    grades = np.concatenate([np.asarray(y, dtype=int) for _, y in log.train])[keep]
    truth = _relevance(log)[keep]
    worst = []
    for k in (kind, "naive"):
        t = np.concatenate(click_targets.log_targets(k, log, regression))[keep]
        z = []
        for g in np.unique(grades):
            tg = t[grades == g]
            if len(tg) >= 10:
                gap, se = abs(tg.mean() - truth[grades == g][0]), tg.std(ddof=1) / np.sqrt(len(tg))
                z.append(gap / se if se > 0 else (0.0 if gap < 1e-12 else np.inf))
        worst.append(max(z))
    return worst[0], worst[1]


@pytest.mark.parametrize("kind, model, policy", [
    ("ips", "pbm", "shuffle"),                  # every shown document in every session: per-click IPS unbiased
    ("policy-aware", "pbm", "plackett-luce"),   # stochastic top-k logging, beta = 0
    ("affine", "trust-bias", "plackett-luce"),  # trust bias: alpha and beta
    ("dr", "trust-bias", "plackett-luce"),
])
def test_the_targets_mean_is_the_relevance(kind, model, policy):
    unbiased, naive = _gap(kind, _log(model, policy))
    assert unbiased <= SIGMAS, f"{kind}: {unbiased:.1f} standard errors from the relevance"
    assert naive > SIGMAS, f"naive clicks are only {naive:.1f} standard errors off: the log shows no bias"


def test_ips_ignores_beta_and_policy_aware_the_exposure():
    # under trust bias only the affine form is unbiased; under stochastic top-k logging
    # per-click IPS misses the sessions that did not show the document
    assert _gap("policy-aware", _log("trust-bias", "plackett-luce"))[0] > SIGMAS
    assert _gap("ips", _log("pbm", "plackett-luce"))[0] > SIGMAS


def _exact_exposure(log: ClickLog, R: np.ndarray) -> tuple[docwise.Exposure, np.ndarray, np.ndarray]:
    """The log's displays with the clicks replaced by their expectation under R."""
    alpha, beta, _ = click_targets.affine_bias(log)
    ex = docwise.exposure(log.sessions, [len(y) for _, y in log.train], log.shown, alpha, None)
    offsets = np.concatenate(([0], np.cumsum([len(y) for _, y in log.train])))
    clicks = [d @ alpha * R[a:b] + d @ beta for d, a, b in zip(ex.displays, offsets[:-1], offsets[1:])]
    return docwise.Exposure(ex.sessions, ex.displays, clicks, ex.inverse), alpha, beta


@pytest.mark.parametrize("clip", [None, 2.0])
def test_dr_is_the_dm_when_the_dm_is_exact(clip):
    log = _log("trust-bias", "ranking", sessions=3000)
    R = _relevance(log)
    ex, alpha, beta = _exact_exposure(log, R)
    offsets = np.concatenate(([0], np.cumsum([len(y) for _, y in log.train])))
    dm = [R[a:b] for a, b in zip(offsets[:-1], offsets[1:])]
    dr = np.concatenate(docwise.estimates("dr", ex, alpha, beta, docwise.floor_of(clip), dm))
    assert np.allclose(dr, R, atol=1e-12)  # unexamined documents too (below the top 6: DM_d)


@pytest.mark.parametrize("clip", [None, 3.0])
def test_dr_is_the_affine_estimate_when_the_dm_is_zero(clip):
    log = _log("trust-bias", "plackett-luce", sessions=3000, clip=clip)
    zero = lambda feats, *rest: [np.zeros(len(X)) for X in feats]  # noqa: E731
    dr = np.concatenate(click_targets.log_targets("dr", log, zero))
    affine = np.concatenate(click_targets.log_targets("affine", log))
    assert np.array_equal(dr, affine)


def test_the_dm_regression_recovers_a_logistic_relevance():
    rng = np.random.default_rng(1)
    w = np.array([1.5, -1.0, 0.5])
    feats = [rng.normal(size=(10, 3)) for _ in range(200)]
    R = [1 / (1 + np.exp(-(X @ w))) for X in feats]
    n = np.full(200, 1000)
    alpha, beta = np.array([1.0, 0.5, 0.25]), np.array([0.1, 0.05, 0.0])
    displays = [np.tile(np.eye(3)[np.arange(10) % 3] * 1000, 1) for _ in feats]
    clicks = [d @ alpha * r + d @ beta for d, r in zip(displays, R)]
    from ltr_cli.clicklog.regression import fit_predict

    got = fit_predict(feats, docwise.Exposure(n, displays, clicks, [np.zeros(10)] * 200), alpha, beta, 0.0)
    assert np.abs(np.concatenate(got) - np.concatenate(R)).max() < 0.02


def test_a_query_without_sessions_gets_zero_targets():
    log = _log("pbm", "ranking", sessions=20, queries=60)
    n = docwise.exposure(log.sessions, [len(y) for _, y in log.train], log.shown, np.ones(log.shown), None).sessions
    assert (n == 0).any()
    for kind in ("naive", "ips", "policy-aware", "affine", "dm", "dr"):
        targets = click_targets.log_targets(kind, log)
        assert all(not t.any() for t, m in zip(targets, n) if m == 0), kind


def test_a_weights_learner_refuses_a_targets_estimator_and_the_reverse():
    log = _log("pbm", "ranking", sessions=500)
    train = log.train
    ids = [f"q{i}" for i in range(len(train))]
    with pytest.raises(LtrError, match=r"^clicks\.correction: dr gives per-document relevance estimates only"):
        fold_clicks(ClickSignal(generate=log.signal.generate, correction="dr"), train, ids, 0)
    with pytest.raises(LtrError, match=r"^clicks\.correction: position-bias gives per-position click weights only"):
        fold_clicks(ClickSignal(generate=log.signal.generate, correction="position-bias"), train, ids, 0, "targets")
    got = fold_clicks(ClickSignal(generate=log.signal.generate, correction="dr"), train, ids, 0, "targets")
    assert got.targets is not None and len(got.targets) == len(train)


def test_every_estimator_gives_weights_or_targets():
    kinds = {n: (e.weights is not None, e.targets is not None) for n, e in ESTIMATORS.items()}
    assert kinds["ips"] == kinds["naive"] == (True, True)
    assert all(kinds[n] == (False, True) for n in ("policy-aware", "affine", "dm", "dr"))


# --- the CLI ------------------------------------------------------------------------------

runner = CliRunner()
BASE = """experiment: dw
seed: 1
dataset: {{kind: registry, name: letor3-ohsumed, root: {root}, folds: [1]}}
cv: {{select_by: ndcg@10}}
learners:
  nn:
    type: {type}
{body}"""


@pytest.fixture(scope="module")
def letor(tmp_path_factory) -> Path:
    from tests.test_batch_protocol import make_letor

    root = tmp_path_factory.mktemp("letor") / "OHSUMED"
    make_letor(root, queries=8, docs=12)
    return root


def _run(tmp_path: Path, root: Path, kind: str, body: str):
    cfg = tmp_path / "c.yaml"
    cfg.write_text(BASE.format(root=root, type=kind, body=body))
    from ltr_cli.cli.app import app

    return runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])


CLICKS = "    clicks: {{generate: {{model: trust-bias, sessions: 2000, shown: 5}}, correction: {c}}}\n"


def test_neural_trains_on_dr_targets_end_to_end(letor, tmp_path):
    pytest.importorskip("jax")
    body = ("    scorer: {kind: linear}\n    train: {epochs: 2, batch_queries: 4, slate: 16, lr: 0.01}\n"
            + CLICKS.format(c="dr"))
    res = _run(tmp_path, letor, "neural", body)
    assert res.exit_code == 0, res.stderr
    run = Path(res.stdout.split()[0])
    summary = json.loads((run / "summary.json").read_text())
    assert 0 <= summary["metrics"]["ndcg@10"] <= 1
    conventions = json.loads((run / "manifest.json").read_text())["learner_conventions"]
    assert conventions["training_signal"] == "doubly-robust estimates (true propensities, clipped at 10)"
    record = json.loads((run / "models.json").read_text())["1"]["clicks"]
    assert record["correction"] == "dr" and "weights" not in record
    assert record["targets"]["documents"] > 0 and record["targets"]["nonzero"] > 0


@pytest.mark.parametrize("kind, body, expected", [
    ("ranksvm", "    grid: {C: [1.0]}\n" + CLICKS.format(c="position-bias"),
     "clicks.correction: position-bias models the displayed positions in the learner"),
    ("neural", "    scorer: {kind: linear}\n" + CLICKS.format(c="position-bias"),
     "clicks.correction: position-bias gives per-position click weights only"),
    ("neural", "    scorer: {kind: linear}\n    loss: {name: listnet}\n" + CLICKS.format(c="dr"),
     "loss: listnet is not linear in its labels"),
])
def test_a_mismatch_is_a_one_line_error(letor, tmp_path, kind, body, expected):
    res = _run(tmp_path, letor, kind, body)
    assert res.exit_code == 1
    assert expected in res.stderr and "clicks" in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_the_label_path_keeps_its_run_ids():
    import yaml

    from ltr_cli.config.experiment import parse_config

    cfg = parse_config(yaml.safe_load((Path(__file__).parents[1] / "configs" / "neural_synthetic.yaml").read_text()))
    assert cfg.run_id("linear") == "linear-79a1a18c29" and cfg.run_id("mlp") == "mlp-b02113a0bf"


def test_an_alpha_beta_file_gives_the_true_affine_targets(tmp_path):
    log = _log("trust-bias", "plackett-luce", sessions=2000)
    alpha, beta, _ = click_targets.affine_bias(log)
    path = tmp_path / "bias.json"
    path.write_text(json.dumps({"alpha": alpha.tolist(), "beta": beta.tolist()}))
    filed = ClickLog(log.sessions, log.meta, log.shown,
                     ClickSignal(generate=log.signal.generate, propensity=str(path), clip=None), log.train, 0)
    got = np.concatenate(click_targets.log_targets("affine", filed))
    assert np.allclose(got, np.concatenate(click_targets.log_targets("affine", log)), rtol=0, atol=1e-12)
    path.write_text(json.dumps({"alpha": [1.0] * (log.shown - 1), "beta": [0.0] * log.shown}))
    with pytest.raises(LtrError, match=r"^clicks\.propensity: .*bias\.json: 'alpha' must list at least 6 positive"):
        click_targets.log_targets("affine", filed)


def test_a_relative_propensity_file_scales_the_pbm_targets(tmp_path):
    log = _log("pbm", "plackett-luce", sessions=2000)
    path = tmp_path / "p.json"
    path.write_text(json.dumps([1.0, 0.5, 1 / 3, 0.25, 0.2, 1 / 6]))  # pbm's (1/k), relative to position 1
    filed = ClickLog(log.sessions, log.meta, log.shown,
                     ClickSignal(generate=log.signal.generate, propensity=str(path), clip=None), log.train, 0)
    true = ClickLog(log.sessions, log.meta, log.shown, ClickSignal(generate=log.signal.generate, clip=None),
                    log.train, 0)
    got, want = (np.concatenate(click_targets.log_targets("policy-aware", x)) for x in (filed, true))
    assert np.allclose(got, want, atol=1e-12)  # pbm's examination at position 1 is 1: the same numbers


def test_the_shipped_docwise_config_loads():
    from ltr_cli.config.experiment import load_config

    cfg = load_config(Path(__file__).parents[1] / "configs" / "counterfactual_docwise.yaml",
                      ["sweep=null", "dataset.root=nowhere"])
    corrections = {n: getattr(spec.clicks, "correction", None) for n, spec in cfg.learners.items()}
    assert corrections == {"linear-labels": None, "linear-naive": "naive", "linear-ips": "ips",
                           "linear-affine": "affine", "linear-dm": "dm", "linear-dr": "dr"}
    assert all(spec.loss["name"] == "softmax_ce" for spec in cfg.learners.values())


def test_neural_selects_on_the_vali_clicks_targets(letor, tmp_path):
    pytest.importorskip("jax")
    body = ("    scorer: {kind: linear}\n    train: {epochs: 2, batch_queries: 4, slate: 16, lr: 0.01}\n"
            "    clicks: {generate: {model: trust-bias, sessions: 2000, shown: 5}, correction: affine, select: clicks}\n")
    res = _run(tmp_path, letor, "neural", body)
    assert res.exit_code == 0, res.stderr
    run = Path(res.stdout.split()[0])
    (fit,) = json.loads((run / "models.json").read_text())["1"]["fits"]
    details = fit["convergence"]["details"]
    assert details["vali_metric"] == "click estimate of dcg@10" and all(v > 0 for v in details["vali"])
    assert json.loads((run / "summary.json").read_text())["selected_by"].startswith("vali clicks")


def test_the_click_estimate_of_dcg_weighs_each_query_by_its_sessions():
    from types import SimpleNamespace

    from ltr_cli.learners.batch.click_data import ClickData, click_score
    from ltr_cli.clicklog.simulate import Sessions

    # query 0: 3 sessions, query 1: 1 session (one row per session is enough here)
    s = Sessions(np.arange(4), np.array([0, 0, 0, 1], np.int32), np.zeros(4, np.int32), np.ones(4, np.int16),
                 np.ones(4, bool))
    vali = [(np.array([[2.0], [1.0]]), np.zeros(2)), (np.array([[1.0], [2.0]]), np.zeros(2))]
    data = ClickData(s, np.ones(1), "affine", targets=[np.array([1.0, 0.5]), np.array([0.2, 0.4])])
    model = SimpleNamespace(scores=lambda X: X[:, 0])
    want = (3 * (1.0 + 0.5 / np.log2(3)) + 1 * (0.4 + 0.2 / np.log2(3))) / 4
    assert click_score(model, vali, data) == pytest.approx(want, abs=1e-12)


def test_shown_documents_keeps_what_the_log_showed_in_order_and_drops_unshown_queries():
    from ltr_cli.clicklog.simulate import Sessions
    from ltr_cli.learners.batch.neural import shown_documents

    queries = [(np.arange(8.0).reshape(4, 2), np.array([1.0, 2, 3, 4])), (np.ones((3, 2)), np.zeros(3)),
               (np.arange(6.0).reshape(3, 2), np.array([5.0, 6, 7]))]
    # query 0 shows documents 3 and 1 (twice), query 1 nothing, query 2 document 0
    s = Sessions(np.array([0, 0, 1, 2]), np.array([0, 0, 0, 2], dtype=np.int32), np.array([3, 1, 1, 0], dtype=np.int32),
                 np.array([1, 2, 1, 1], dtype=np.int16), np.array([True, False, False, True]))
    got = shown_documents(queries, s)
    assert len(got) == 2
    assert got[0][0].tolist() == [[2.0, 3.0], [6.0, 7.0]] and got[0][1].tolist() == [2.0, 4.0]
    assert got[1][0].tolist() == [[0.0, 1.0]] and got[1][1].tolist() == [5.0]


def test_neural_on_shown_documents_trains_on_the_logs_top_k_only(letor, tmp_path):
    """``click_documents: shown`` under a deterministic logger showing 5 of each query's 12
    documents: every fold trains on 5 documents a query, and the run differs from ``all``."""
    pytest.importorskip("jax")
    body = ("    scorer: {kind: linear}\n    train: {epochs: 2, batch_queries: 4, slate: 16, lr: 0.01}\n"
            + CLICKS.format(c="ips"))
    runs = {}
    for which in ("all", "shown"):
        (tmp_path / which).mkdir()
        res = _run(tmp_path / which, letor, "neural", body + f"    click_documents: {which}\n")
        assert res.exit_code == 0, res.stderr
        runs[which] = Path(res.stdout.split()[0])
    for fold in json.loads((runs["shown"] / "models.json").read_text()).values():
        chosen = fold["info"]["convergence"]["details"]["click_documents"]
        assert chosen["kind"] == "shown" and chosen["queries"] >= 1
        assert chosen["documents"] == 5 * chosen["queries"] and chosen["of_documents"] > chosen["documents"]
    every = json.loads((runs["all"] / "models.json").read_text())
    assert all("click_documents" not in f["info"]["convergence"]["details"] for f in every.values())
    assert (runs["all"] / "summary.json").read_bytes() != (runs["shown"] / "summary.json").read_bytes()


def test_click_documents_needs_clicks():
    from ltr_cli.learners.batch.neural import NeuralSpec

    with pytest.raises(ValueError, match="click_documents: shown .* needs clicks"):
        NeuralSpec.model_validate({"type": "neural", "click_documents": "shown"})
