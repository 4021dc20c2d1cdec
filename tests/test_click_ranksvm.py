"""RankSVM on a click log: the pairs and weights, the objective's derivatives, the
solution against an explicit weighted pair list, and naive clicks as click labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import minimize

from ltr_cli.clicklog.pairs import click_pairs
from ltr_cli.clicklog.signal import ClickSignal
from ltr_cli.clicklog.simulate import Sessions, simulate
from ltr_cli.learners.batch.click_data import ClickData, fold_clicks
from ltr_cli.clicks.spec import build_model
from ltr_cli.learners.batch.ranksvm import WeightedPairProblem, fit_click_ranksvm
from ltr_cli.learners.batch.ranksvm import fit_ranksvm


def _problem(seed: int = 0, queries: int = 6, docs: int = 7, d: int = 4, sessions: int = 60):
    rng = np.random.default_rng(seed)
    train = [(rng.normal(size=(docs, d)), rng.integers(0, 5, docs)) for _ in range(queries)]
    rankings = [rng.permutation(docs) for _ in range(queries)]
    s = simulate([y for _, y in train], rankings, build_model("ultra-pbm"), "shuffle", 5, sessions, seed)
    weights = np.array([1.0, 1.5, 2.0, 3.0, 4.0])
    return train, ClickData(s, weights, "ips")


def _explicit_pairs(train, data):
    """Every (session, clicked, shown and not clicked) pair, by a loop over sessions."""
    rows = {}
    for r in range(len(data.sessions.session)):
        rows.setdefault(int(data.sessions.session[r]), []).append(r)
    per_query = np.bincount([int(data.sessions.query[v[0]]) for v in rows.values()], minlength=len(train))
    pairs = []
    for rs in rows.values():
        q = int(data.sessions.query[rs[0]])
        for a in rs:
            for b in rs:
                if data.sessions.click[a] and not data.sessions.click[b]:
                    w = data.weights[data.sessions.position[a] - 1] / per_query[q]
                    pairs.append((q, int(data.sessions.doc[a]), int(data.sessions.doc[b]), w))
    return pairs


def _explicit_objective(train, pairs, C):
    queries = len({q for q, *_ in pairs})
    diffs = np.array([train[q][0][i] - train[q][0][j] for q, i, j, _ in pairs])
    c = np.array([w for *_, w in pairs])

    def J(w):
        z = np.maximum(0.0, 1.0 - diffs @ w)
        return 0.5 / C * w @ w + (c @ (z * z)) / queries

    def grad(w):
        z = np.maximum(0.0, 1.0 - diffs @ w)
        return w / C - 2.0 * diffs.T @ (c * z) / queries
    return J, grad


def test_the_pairs_are_the_sessions_pairs_summed_per_query():
    train, data = _problem()
    got = click_pairs(data.sessions, data.weights, 7, chunk=7)  # small chunks: the reduction runs
    want: dict[tuple[int, int, int], float] = {}
    for q, i, j, w in _explicit_pairs(train, data):
        want[(q, i, j)] = want.get((q, i, j), 0.0) + w
    assert len(want) == len(got.query) > 20
    for q, i, j, w in zip(got.query, got.better, got.worse, got.weight):
        assert w == pytest.approx(want[(int(q), int(i), int(j))], rel=1e-12)


def test_objective_and_gradient_match_the_explicit_pairs_and_finite_differences():
    train, data = _problem(1)
    problem = WeightedPairProblem.from_pairs(train, data.pairs(7), 0.7)
    J, grad = _explicit_objective(train, _explicit_pairs(train, data), 0.7)
    rng = np.random.default_rng(5)
    for _ in range(3):
        w = rng.normal(size=4) * 0.5
        at = problem.at(w)
        assert at.J == pytest.approx(J(w), rel=1e-10)
        assert np.allclose(at.g, grad(w), rtol=1e-9, atol=1e-12)
        h = 1e-6
        fd = np.array([(problem.at(w + h * e).J - problem.at(w - h * e).J) / (2 * h) for e in np.eye(4)])
        assert np.allclose(at.g, fd, rtol=1e-5, atol=1e-7)
        v = rng.normal(size=4)  # the Hessian product is the gradient's derivative (away from kinks)
        hv = (problem.at(w + h * v).g - problem.at(w - h * v).g) / (2 * h)
        assert np.allclose(at.hessvec(v), hv, rtol=1e-4, atol=1e-6)
        diag = np.array([at.hessvec(e) @ e for e in np.eye(4)])
        assert np.allclose(at.diagonal(), diag, rtol=1e-10)


def test_newton_solves_the_explicit_weighted_pair_objective():
    train, data = _problem(2, sessions=200)
    for C in (0.1, 3.0):
        w = fit_click_ranksvm(train, data, C, eps=1e-12).w
        J, grad = _explicit_objective(train, _explicit_pairs(train, data), C)
        ref = minimize(J, np.zeros(4), jac=grad, method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-15,
                                                                               "maxiter": 10_000})
        assert J(w) <= ref.fun + 1e-10
        assert np.allclose(w, ref.x, atol=1e-5)


def test_naive_clicks_of_one_session_per_query_are_ranksvm_on_click_labels():
    rng = np.random.default_rng(3)
    train = [(rng.normal(size=(8, 5)), rng.integers(0, 5, 8)) for _ in range(12)]
    rankings = [rng.permutation(8) for _ in range(12)]
    s = simulate([y for _, y in train], rankings, build_model("navigational"), "ranking", 6, 1, 4, per_query=True)
    data = ClickData(s, np.ones(6), "naive")
    shown = []
    for q in range(12):
        rows = s.query == q
        docs = s.doc[rows]
        shown.append((train[q][0][docs], s.click[rows].astype(float)))
    assert any(len(np.unique(y)) > 1 for _, y in shown)
    for C in (0.05, 2.0):
        a = fit_click_ranksvm(train, data, C, eps=1e-12).w
        b = fit_ranksvm(shown, C, eps=1e-12).w
        assert np.allclose(a, b, atol=1e-8)
    ips = fit_click_ranksvm(train, ClickData(s, np.linspace(1, 3, 6), "ips"), 2.0, eps=1e-12).w
    assert not np.allclose(ips, b, atol=1e-4)  # the weights change the solution


def test_a_fold_log_is_seeded_and_ips_weights_are_clipped_inverse_propensities():
    rng = np.random.default_rng(4)
    train = [(rng.normal(size=(12, 3)), rng.integers(0, 5, 12)) for _ in range(20)]
    ids = [f"q{i}" for i in range(20)]
    sig = ClickSignal.model_validate({"generate": {"model": "ultra-pbm", "sessions": 500}, "clip": 5.0})
    a, b = fold_clicks(sig, train, ids, 1), fold_clicks(sig, train, ids, 1)
    assert a.meta["fingerprint"] == b.meta["fingerprint"] != fold_clicks(sig, train, ids, 2).meta["fingerprint"]
    relative = np.array([0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06]) / 0.68
    assert np.allclose(a.weights, np.minimum(1 / relative, 5.0))
    naive = fold_clicks(sig.model_copy(update={"correction": "naive"}), train, ids, 1)
    assert (naive.weights == 1).all() and naive.meta["fingerprint"] == a.meta["fingerprint"]


def test_a_cascade_has_no_true_propensity():
    from ltr_cli.errors import LtrError

    rng = np.random.default_rng(4)
    train = [(rng.normal(size=(12, 3)), rng.integers(0, 5, 12)) for _ in range(5)]
    sig = ClickSignal.model_validate({"generate": {"model": "navigational", "sessions": 50}})
    with pytest.raises(LtrError, match="propensity: true needs a click model that examines by position"):
        fold_clicks(sig, train, [f"q{i}" for i in range(5)], 1)


def test_an_empty_log_fits_zero_weights():
    train = [(np.ones((3, 2)), np.zeros(3))]
    s = Sessions(np.zeros(3, np.int64), np.zeros(3, np.int32), np.arange(3, dtype=np.int32),
                 np.arange(1, 4, dtype=np.int16), np.zeros(3, bool))
    assert (fit_click_ranksvm(train, ClickData(s, np.ones(3), "naive"), 1.0).w == 0).all()


def test_propensities_from_a_file_and_from_a_randomised_log(tmp_path):
    import json

    from ltr_cli.errors import LtrError

    rng = np.random.default_rng(6)
    train = [(rng.normal(size=(12, 3)), rng.integers(0, 5, 12)) for _ in range(30)]
    ids = [f"q{i}" for i in range(30)]
    record = tmp_path / "p.json"
    record.write_text(json.dumps({"propensity": [0.5, 0.25, 0.2, 0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.01]}))
    sig = ClickSignal.model_validate({"generate": {"model": "ultra-pbm", "sessions": 300}, "propensity": str(record),
                                      "clip": 8.0})
    data = fold_clicks(sig, train, ids, 1)
    assert np.allclose(data.weights, np.minimum([1, 2, 2.5, 5, 5, 5, 10, 10, 10, 50], 8.0))
    record.write_text("[1, 0.5]")
    with pytest.raises(LtrError, match="give a list of at least 10 positive propensities"):
        fold_clicks(sig, train, ids, 1)
    est = ClickSignal.model_validate({"generate": {"model": "ultra-pbm", "sessions": 20_000}, "propensity": "estimated",
                                      "clip": None})
    data = fold_clicks(est, train, ids, 1)
    truth = np.array([0.68, 0.61, 0.48, 0.34, 0.28, 0.20, 0.11, 0.10, 0.08, 0.06]) / 0.68
    assert np.allclose(data.meta["propensity"], truth, atol=0.05)
    assert data.meta["estimated_from"]["policy"] == "shuffle"


@pytest.mark.parametrize("kind", ["fifo", "device", "huge", "deep"])
def test_a_propensity_file_is_read_only_when_regular_and_small(tmp_path, kind):
    """clicks.propensity: FILE names a FIFO (once a wait for ever), /dev/zero (once read
    until memory ran out), a 2 MB file or deeply nested JSON: one line naming it, at once."""
    import os
    import threading

    from ltr_cli.errors import LtrError
    from ltr_cli.learners.batch.click_data import read_propensity

    path = tmp_path / "p.json"
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "device":
        path = Path("/dev/zero")
    elif kind == "huge":
        path.write_text("[" + ", ".join(["1"] * 1_000_000) + "]")
    else:
        path.write_text("[" * 100_000 + "]" * 100_000)
    caught: list[BaseException] = []

    def read() -> None:
        try:
            read_propensity(path, 10)
        except BaseException as exc:  # noqa: BLE001 - the test inspects what was raised
            caught.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=20)
    assert not reader.is_alive(), "still reading"
    assert len(caught) == 1 and isinstance(caught[0], LtrError), caught
    assert f"clicks.propensity: {path}: not a JSON propensity file" in str(caught[0]) and "\n" not in str(caught[0])


@pytest.mark.parametrize("kind", ["fifo", "device", "folder"])
def test_a_propensity_path_that_is_no_regular_file_is_refused_by_the_config(tmp_path, kind):
    """Before any data is read: the config's own check, a stat without opening the file."""
    import os

    from ltr_cli.clicklog.signal import ClickSignal

    if kind == "fifo":
        path = tmp_path / "fifo"
        os.mkfifo(path)
    elif kind == "device":
        path = Path("/dev/zero")
    else:
        path = tmp_path
    with pytest.raises(ValueError) as err:
        ClickSignal(generate={"sessions": 10}, correction="ips", propensity=str(path))
    assert "is not a regular file (a directory, device or FIFO)" in str(err.value)
    assert ClickSignal(generate={"sessions": 10}, correction="ips", propensity=str(tmp_path / "later.json"))


def test_the_query_pairs_set_each_click_against_every_other_document_of_its_query():
    """Joachims et al.'s estimator: a click on document 0 (position 2, weight 3) of a
    4-document query gives (0, 1), (0, 2), (0, 3), each weighing 3 / the query's sessions;
    the click-vs-unclicked pairs give only (0, 2), the shown and unclicked one."""
    from ltr_cli.clicklog.pairs import click_pairs

    # query 0: session 0 shows [2, 0], clicks 0; session 1 shows [1, 3], no click; query 1: one session
    s = Sessions(np.array([0, 0, 1, 1, 2, 2], np.int64), np.array([0, 0, 0, 0, 1, 1], np.int32),
                 np.array([2, 0, 1, 3, 0, 1], np.int32), np.array([1, 2, 1, 2, 1, 2], np.int16),
                 np.array([False, True, False, False, True, True]))
    weights = np.array([1.0, 3.0])
    unclicked = click_pairs(s, weights, 4)
    assert list(zip(unclicked.query, unclicked.better, unclicked.worse)) == [(0, 0, 2)]
    assert np.allclose(unclicked.weight, [3.0 / 2])
    every = click_pairs(s, weights, 4, versus="query", documents=np.array([4, 3]))
    got = {(int(q), int(b), int(w)): float(x) for q, b, w, x in zip(every.query, every.better, every.worse, every.weight)}
    assert got == {(0, 0, 1): 1.5, (0, 0, 2): 1.5, (0, 0, 3): 1.5,
                   (1, 0, 1): 1.0, (1, 0, 2): 1.0, (1, 1, 0): 3.0, (1, 1, 2): 3.0}
    with pytest.raises(ValueError, match="needs each query's number of documents"):
        click_pairs(s, weights, 4, versus="query")


def test_ranksvm_fits_the_query_pairs_and_the_other_learners_refuse_them():
    from ltr_cli.learners.batch.dla import DLASpec
    from ltr_cli.learners.batch.lambdamart import LambdaMARTSpec

    rng = np.random.default_rng(8)
    train = [(rng.normal(size=(12, 3)), rng.integers(0, 5, 12)) for _ in range(20)]
    ids = [f"q{i}" for i in range(20)]
    plain = fold_clicks(ClickSignal.model_validate({"generate": {"model": "ultra-pbm", "sessions": 400}}),
                        train, ids, 1)
    every = fold_clicks(ClickSignal.model_validate({"generate": {"model": "ultra-pbm", "sessions": 400},
                                                    "pairs": "query"}), train, ids, 1)
    assert every.versus == "query" and plain.versus == "unclicked"
    a, b = fit_click_ranksvm(train, plain, 1.0), fit_click_ranksvm(train, every, 1.0)
    assert a.info["pairs"] < b.info["pairs"] and not np.allclose(a.w, b.w)
    for spec, name in ((LambdaMARTSpec, "lambdamart"), (DLASpec, "dla")):
        with pytest.raises(ValueError, match="pairs: query is RankSVM's"):
            spec.model_validate({"type": name, "clicks": {"generate": {"sessions": 10}, "correction": "naive",
                                                          "pairs": "query"}})
