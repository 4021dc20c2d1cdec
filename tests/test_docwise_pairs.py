"""RankSVM and LambdaMART on a per-document estimator's targets: the rank-sum identity of
the target pairs, RankSVM on IPS targets against the weighted pairs built by hand from
the sessions, the pairwise logistic objective's gradient against finite differences, both
learners end to end through ``ltr run``, and the refusals that stay."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from ltr_cli.clicklog.estimators import ESTIMATORS
from ltr_cli.clicklog.pairs import ClickPairs
from ltr_cli.clicklog.signal import ClickSignal, GenerateSpec
from ltr_cli.clicklog.target_pairs import pair_loss01, query_pairs, rank_sum, rank_sum_offset, target_pairs
from ltr_cli.learners.batch.click_data import fold_clicks
from ltr_cli.learners.batch.convergence import FitContext
from ltr_cli.learners.batch.ranksvm import RankSVMSpec, WeightedPairProblem, newton_ranksvm
from ltr_cli.learners.batch.target_objective import TargetPairs, rows_of

runner = CliRunner()


# --- the identity -------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(20))
def test_the_pair_objective_is_the_rank_sum_minus_its_constant(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(1, 30))
    t = rng.integers(-6, 7, size=m) / 4.0  # dyadic: every sum below is exact; ties and negatives
    s = rng.normal(size=m)  # scores without ties
    assert rank_sum(t, s) - rank_sum_offset(t) == pair_loss01(t, s)
    # the pairs, enumerated one by one
    pairs = [(i, j, t[i] - t[j]) for i in range(m) for j in range(m) if t[i] > t[j]]
    better, worse, weight = query_pairs(t)
    assert list(zip(better.tolist(), worse.tolist(), weight.tolist())) == pairs
    assert sum(c for i, j, c in pairs if s[j] > s[i]) == pair_loss01(t, s)
    # the rank sum, by sorting
    rank = np.empty(m, dtype=int)
    rank[np.argsort(-s)] = np.arange(1, m + 1)
    assert float(t @ rank) == rank_sum(t, s)


def test_the_constant_does_not_depend_on_the_scores():
    rng = np.random.default_rng(5)
    t = rng.normal(size=15)
    got = [rank_sum(t, s) - pair_loss01(t, s) for s in rng.normal(size=(50, 15))]
    assert np.allclose(got, rank_sum_offset(t), rtol=0, atol=1e-12)


def test_target_pairs_stack_the_queries_and_skip_equal_targets():
    pairs = target_pairs([np.array([0.5, -0.25, 0.5]), np.zeros(4), np.array([1.0, 2.0])])
    assert pairs.query.tolist() == [0, 0, 2] and pairs.better.tolist() == [0, 2, 1]
    assert pairs.worse.tolist() == [1, 1, 0] and pairs.weight.tolist() == [0.75, 0.75, 1.0]


# --- RankSVM on IPS targets ---------------------------------------------------------------


def _queries(rng, queries=30, docs=10, d=5):
    w = rng.normal(size=d)
    out = []
    for _ in range(queries):
        X = rng.normal(size=(docs, d))
        y = np.clip(np.round(X @ w + rng.normal(scale=0.5, size=docs)), 0, 4)
        out.append((X, y))
    return out


def test_ranksvm_on_ips_targets_is_the_hand_built_weighted_pairs():
    rng = np.random.default_rng(0)
    train = _queries(rng)
    shown, clip = 6, 4.0
    gen = GenerateSpec(model="pbm", sessions=3000, shown=shown, policy="plackett-luce", logger_fraction=0.2)
    signal = ClickSignal(generate=gen, correction="ips", clip=clip)
    data = fold_clicks(signal, train, [str(i) for i in range(len(train))], 0, "targets")
    # IPS per document by hand from the sessions: clicks at k weigh min(1/p_k, clip), per session
    examination = 1.0 / np.arange(1, shown + 1)  # pbm's (eta 1), absolute: 1 at position 1
    weight = np.minimum(1.0 / examination, clip)
    s = data.sessions
    t = [np.zeros(len(y)) for _, y in train]
    n = np.zeros(len(train))
    for k in range(len(s.session)):
        t[s.query[k]][s.doc[k]] += weight[s.position[k] - 1] * s.click[k]
    for q in range(len(train)):
        n[q] = len(np.unique(s.session[s.query == q]))
    t = [tq / max(nq, 1) for tq, nq in zip(t, n)]
    assert all(np.allclose(a, b, rtol=0, atol=1e-12) for a, b in zip(t, data.targets))
    # the pairs by hand, and RankSVM's Newton solver on them
    rows = [(q, i, j, t[q][i] - t[q][j]) for q in range(len(train)) for i in range(len(t[q]))
            for j in range(len(t[q])) if t[q][i] > t[q][j]]
    q, i, j, c = (np.array(col) for col in zip(*rows))
    hand = ClickPairs(q.astype(np.int64), i.astype(np.int64), j.astype(np.int64), c.astype(float))
    problem = WeightedPairProblem.from_pairs(train, hand, 1.0)
    w_hand, _ = newton_ranksvm(problem, 1e-10, 200)
    spec = RankSVMSpec(type="ranksvm", clicks=signal, eps=1e-10)
    model = spec.fit(train, {"C": 1.0}, FitContext(clicks=data))
    assert model.info["pairs"] == len(rows)
    assert np.allclose(model.w, w_hand, rtol=0, atol=1e-9)
    # and the objective's minimum, checked by an independent solver on the enumerated pairs
    from scipy.optimize import minimize

    centred = [X - X.mean(axis=0) for X, _ in train]
    D = np.array([centred[a][b] - centred[a][e] for a, b, e, _ in rows])
    Q = len(np.unique(q))

    def J(w):
        z = np.maximum(0.0, 1.0 - D @ w)
        return 0.5 * w @ w + (c @ (z * z)) / Q, w - 2.0 * D.T @ (c * z) / Q

    ref = minimize(J, np.zeros(D.shape[1]), jac=True, method="L-BFGS-B", options={"gtol": 1e-12, "ftol": 1e-15})
    assert np.allclose(model.w, ref.x, rtol=0, atol=1e-5)


def test_ranksvm_reads_targets_by_the_estimators_contract():
    for name, est in ESTIMATORS.items():
        if est.positions or est.pairwise:
            continue
        spec = RankSVMSpec(type="ranksvm", clicks=ClickSignal(generate=GenerateSpec(), correction=name))
        assert spec.reads_clicks == ("weights" if est.weights is not None else "targets"), name


# --- the pairwise logistic objective ------------------------------------------------------


def test_the_logistic_objective_matches_finite_differences():
    rng = np.random.default_rng(3)
    sizes = [7, 1, 12, 5]
    targets = [rng.normal(size=m) for m in sizes]
    targets[3] = np.zeros(5)  # a query without a pair
    p = target_pairs(targets)
    obj = rows_of(sizes, p.query, p.better, p.worse, p.weight)
    s = rng.normal(size=sum(sizes)) * 3
    grad, hess = obj.grad_hess(s)
    h = 1e-6
    for r in range(len(s)):
        e = np.zeros_like(s)
        e[r] = h
        assert grad[r] == pytest.approx((obj.value(s + e) - obj.value(s - e)) / (2 * h), abs=1e-6)
        g_up, _ = obj.grad_hess(s + e)
        g_down, _ = obj.grad_hess(s - e)
        assert hess[r] == pytest.approx((g_up[r] - g_down[r]) / (2 * h), abs=1e-6)
    assert np.all(grad[-5:] == 0) and np.all(hess[-5:] == 0)
    # the objective by enumeration
    start = np.cumsum([0] + sizes)
    direct = sum((targets[q][i] - targets[q][j]) * np.log1p(np.exp(-(s[start[q] + i] - s[start[q] + j])))
                 for q in range(len(sizes)) for i in range(sizes[q]) for j in range(sizes[q])
                 if targets[q][i] > targets[q][j])
    assert obj.value(s) == pytest.approx(direct, rel=1e-12)


def test_the_logistic_objective_does_not_overflow():
    obj = TargetPairs(np.array([0, 1]), np.array([1, 0]), np.array([1.0, 2.0]))
    grad, hess = obj.grad_hess(np.array([800.0, -800.0]))
    assert np.all(np.isfinite(grad)) and np.all(np.isfinite(hess)) and np.isfinite(obj.value(np.array([800.0, -800.0])))


# --- end to end ---------------------------------------------------------------------------

CONFIG = """experiment: dwp
seed: 0
dataset: {{kind: registry, name: mslr-web10k, root: {root}, folds: [1, 2]}}
cv: {{select_by: ndcg@10, convention: mslr}}
learners:
  x:
{learner}"""

SVM = "    type: ranksvm\n    grid: {C: [0.1]}\n"
GBM = ("    type: lambdamart\n    grid: {num_leaves: [7], learning_rate: [0.1], num_boost_round: [30], "
       "min_data_in_leaf: [10]}\n")
CLICKS = "    clicks: {{generate: {{model: trust-bias, sessions: 4000, logger_fraction: 0.1}}, correction: {c}{extra}}}\n"


@pytest.fixture(scope="module")
def folds(tmp_path_factory):
    from ltr_cli.cli.app import app

    root = tmp_path_factory.mktemp("dwp") / "mslr"
    res = runner.invoke(app, ["data", "synth", str(root), "--like", "mslr-web10k", "--folds", "--queries", "60",
                              "--docs-per-query", "15", "--relevance", "linear"])
    assert res.exit_code == 0, res.output
    return root


def _run(folds: Path, tmp_path: Path, learner: str):
    from ltr_cli.cli.app import app

    cfg = tmp_path / "c.yaml"
    cfg.write_text(CONFIG.format(root=folds, learner=learner))
    return runner.invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])


def _random_ndcg(folds: Path) -> float:
    """A random ranker's expected test NDCG@10 over folds 1 and 2 (mean over queries with a
    relevant document, mslr's rule: a query without one scores 0), by Monte Carlo."""
    from ltr_cli.data.options import ReaderOptions
    from ltr_cli.data.svmlight import SVMLightReader
    from ltr_cli.measures.metrics import ndcg_at_k

    rng = np.random.default_rng(0)
    means = []
    for fold in (1, 2):
        values = []
        for query in SVMLightReader(folds / f"Fold{fold}" / "test.txt", ReaderOptions(n_features=136)):
            y = np.asarray(query.y, dtype=float)
            values.append(np.mean([ndcg_at_k(rng.permutation(len(y)), y, 10) for _ in range(200)]))
        means.append(np.mean(values))
    return float(np.mean(means))


@pytest.mark.parametrize("learner, correction, extra", [
    (SVM, "dr", ""), (SVM, "affine", ""), (GBM, "dr", ""), (GBM + "    target_objective: lambdarank\n", "dr", ""),
    ("    type: ranksvm\n    grid: {C: [0.01, 1.0]}\n", "dr", ", select: clicks"),
])
def test_a_learner_on_targets_runs_end_to_end_and_beats_a_random_ranker(folds, tmp_path, learner, correction,
                                                                        extra):
    boosted = learner.startswith(GBM)
    if boosted:
        pytest.importorskip("lightgbm")
    res = _run(folds, tmp_path, learner + CLICKS.format(c=correction, extra=extra))
    assert res.exit_code == 0, res.output
    run = Path(res.stdout.split()[0])
    assert {"summary.json", "models.json", "manifest.json", "test_queries.parquet"} <= {p.name for p in run.iterdir()}
    ndcg = json.loads((run / "summary.json").read_text())["metrics"]["ndcg@10"]
    assert ndcg > _random_ndcg(folds) + 0.1, ndcg
    record = json.loads((run / "models.json").read_text())["1"]
    assert record["clicks"]["correction"] == correction and "weights" not in record["clicks"]
    assert record["clicks"]["targets"]["nonzero"] > 0
    if extra:  # chosen by the click estimate of DCG@10 from the vali log's DR targets
        summary = json.loads((run / "summary.json").read_text())
        assert summary["selected_by"].startswith("vali clicks")
        tried = [t for g in summary["grid"] for t in g["tried"]]
        assert len(tried) == 4 and all(np.isfinite(t["vali_clicks"]) for t in tried)
    if boosted:
        conventions = json.loads((run / "manifest.json").read_text())["learner_conventions"]
        assert conventions["objective"].startswith("pairwise logistic (RankNet) on the targets' pairs" if learner == GBM
                                                   else "pairwise logistic on the targets' pairs, weighing |delta DCG|")
        assert "label_gain" not in conventions
        text = next(run.glob("lightgbm-fold1.txt")).read_text()
        from ltr_cli.results.gbdt import LightGBMModel

        assert len(LightGBMModel.from_text(text, 136).trees) == 30  # the saved model reads back


@pytest.mark.parametrize("learner, extra, words", [
    (SVM, ", pairs: query", "clicks.pairs: dr gives per-document targets"),
    (SVM, ", propensity: p.json, propensity_draw: true", "clicks.propensity_draw: drawn propensities are ips's"),
    ("    type: ranksvm\n    loss: hinge\n", "", "clicks: trains the squared-hinge RankSVM"),
    (GBM, ", propensity: p.json, propensity_draw: true", "clicks.propensity_draw: drawn propensities are ips's"),
    (GBM, ", pairs: query", "clicks.pairs: LambdaMART weighs"),
    (GBM + "    target_objective: lambdarank\n", ", correction: ips", "target_objective: lambdarank weighs the pairs"),
])
def test_what_stays_refused_is_one_line(folds, tmp_path, learner, extra, words):
    c, _, extra = ("ips", "", "") if extra == ", correction: ips" else ("dr", "", extra)
    res = _run(folds, tmp_path, learner + CLICKS.format(c=c, extra=extra))
    assert res.exit_code == 1
    assert words in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr


def test_too_many_pairs_is_one_line(monkeypatch):
    from ltr_cli.clicklog import target_pairs as module
    from ltr_cli.errors import LtrError

    monkeypatch.setattr(module, "MAX_PAIRS", 45)
    assert len(module.target_pairs([np.arange(10.0)]).query) == 45  # 10 * 9 / 2, at the cap
    monkeypatch.setattr(module, "MAX_PAIRS", 44)
    with pytest.raises(LtrError, match=r"^clicks\.correction: dr: the per-document targets would give up to 45 "):
        module.target_pairs([np.arange(10.0)], "clicks.correction: dr")


# --- RankSVM on pairs made block by block -------------------------------------------------------


def test_pairs_made_block_by_block_are_the_stored_pairs_and_give_the_same_ranksvm(monkeypatch):
    """Over MAX_PAIRS RankSVM makes the targets' pairs block by block, never storing them:
    the same pairs (with ties, an empty query and blocks of several queries or one), the same
    objective and gradient at any w, the same Hessian action, and the same model."""
    from ltr_cli.clicklog import target_pairs as module
    from ltr_cli.learners.batch.target_ranksvm import TargetPairProblem

    rng = np.random.default_rng(4)
    sizes = [7, 1, 0, 12, 5, 30, 3]
    train = [(rng.normal(size=(m, 4)), np.zeros(m)) for m in sizes]
    targets = [np.round(rng.normal(size=m), 1) for m in sizes]  # rounded: ties within queries
    stored = WeightedPairProblem.from_pairs(train, module.target_pairs(targets), 1.0)
    monkeypatch.setattr(module, "BLOCK_CELLS", 200)  # blocks of a few queries, and 30 x 30 alone
    blocks = TargetPairProblem.from_targets(train, targets, 1.0)
    assert len(blocks.blocks) >= 3 and blocks.pairs == len(stored.c) and blocks.queries == stored.queries
    made = np.concatenate([np.stack([i, j]) for i, j, _ in blocks.block_pairs()], axis=1)
    offsets = np.concatenate(([0], np.cumsum(sizes)))
    pairs = module.target_pairs(targets)
    assert np.array_equal(made, np.stack([offsets[pairs.query] + pairs.better, offsets[pairs.query] + pairs.worse]))
    for w in (np.zeros(4), rng.normal(size=4), 3 * rng.normal(size=4)):
        a, b = stored.at(w), blocks.at(w)
        v = rng.normal(size=4)
        assert a.J == pytest.approx(b.J, rel=1e-12) and np.allclose(a.g, b.g, rtol=1e-10, atol=1e-12)
        assert np.allclose(a.hessvec(v), b.hessvec(v), rtol=1e-10, atol=1e-12)
        assert np.allclose(a.diagonal(), b.diagonal(), rtol=1e-10, atol=1e-12)
    w_stored, _ = newton_ranksvm(stored, 1e-10, 200)
    w_blocks, _ = newton_ranksvm(blocks, 1e-10, 200)
    assert np.allclose(w_stored, w_blocks, rtol=0, atol=1e-9) and np.max(np.abs(w_stored)) > 0.05


def test_ranksvm_over_the_pair_cap_trains_block_by_block(monkeypatch):
    """A fold over MAX_PAIRS is no longer refused by RankSVM: it trains on pairs made block by
    block, equal to the stored pairs' model, and its record says the pairs were not stored."""
    from ltr_cli.clicklog import target_pairs as module
    from ltr_cli.learners.batch.click_data import ClickData
    from ltr_cli.learners.batch.ranksvm import fit_click_ranksvm

    rng = np.random.default_rng(5)
    train = _queries(rng)
    targets = [rng.normal(size=len(y)) for _, y in train]
    s = fold_clicks(ClickSignal(generate=GenerateSpec(model="pbm", sessions=200, shown=4), correction="dr"), train,
                    [str(i) for i in range(len(train))], 0, "targets").sessions
    data = ClickData(s, np.ones(4), "dr", targets=targets)
    stored = fit_click_ranksvm(train, data, 1.0, 1e-10, None, None, data.target_pairs())
    monkeypatch.setattr(module, "MAX_PAIRS", 10)
    spec = RankSVMSpec(type="ranksvm", clicks=ClickSignal(generate=GenerateSpec(), correction="dr"), eps=1e-10)
    model = spec.fit(train, {"C": 1.0}, FitContext(clicks=ClickData(s, np.ones(4), "dr", targets=targets)))
    assert model.info["pairs_stored"] is False and model.info["pairs"] == stored.info["pairs"]
    assert np.allclose(model.w, stored.w, rtol=0, atol=1e-9)


# --- LambdaRank's weights on the targets ------------------------------------------------------


@pytest.mark.parametrize("weights", ["ranknet", "lambdarank"])
def test_lambdamart_over_the_pair_cap_boosts_on_pairs_made_block_by_block(monkeypatch, weights):
    """Over MAX_PAIRS LambdaMART's rows carry the block-by-block objective: at any scores
    (ties included) its gradient and Hessian are those of the stored pairs."""
    from ltr_cli.clicklog import target_pairs as module
    from ltr_cli.learners.batch.click_data import ClickData
    from ltr_cli.learners.batch.lambdamart import target_rows
    from ltr_cli.learners.batch.target_objective import BlockPairs

    rng = np.random.default_rng(6)
    sizes = [9, 1, 14, 4, 25]
    train = [(rng.normal(size=(m, 3)), np.zeros(m)) for m in sizes]
    targets = [np.round(rng.normal(size=m), 1) for m in sizes]
    from ltr_cli.clicklog.simulate import Sessions

    s = Sessions(np.zeros(1, np.int64), np.zeros(1, np.int32), np.zeros(1, np.int32), np.ones(1, np.int16),
                 np.ones(1, bool))  # the rows read only the targets
    stored = target_rows(train, ClickData(s, np.ones(2), "dr", targets=targets), weights)
    monkeypatch.setattr(module, "MAX_PAIRS", 10)
    monkeypatch.setattr(module, "BLOCK_CELLS", 150)
    blocks = target_rows(train, ClickData(s, np.ones(2), "dr", targets=targets), weights)
    assert isinstance(blocks.objective.__self__, BlockPairs) and len(blocks.objective.__self__.blocks) >= 3
    assert np.array_equal(blocks.X, stored.X) and np.array_equal(blocks.label, stored.label)
    for scores in (np.zeros(sum(sizes)), rng.normal(size=sum(sizes)), np.round(rng.normal(size=sum(sizes)))):
        (g1, h1), (g2, h2) = stored.objective(scores, None), blocks.objective(scores, None)
        assert np.allclose(g1, g2, rtol=1e-12, atol=1e-14) and np.allclose(h1, h2, rtol=1e-12, atol=1e-14)
        assert np.max(np.abs(g1)) > 0


def test_lambda_ranks_break_ties_in_row_order_within_each_query():
    pairs = rows_of([3, 2], np.array([0]), np.array([0]), np.array([1]), np.array([1.0]), "lambdarank")
    assert pairs.ranks(np.array([0.0, 0.0, 1.0, 5.0, 5.0])).tolist() == [1, 2, 0, 0, 1]
    # at equal scores (ranks 0 and 1) the weight is c |1 - 1/log2(3)|; with i at rank 2 and j at 0, c |1/log2(4) - 1|
    assert np.isclose(pairs.pair_weights(np.zeros(5))[0], 1 - 1 / np.log2(3))
    assert np.isclose(pairs.pair_weights(np.array([0.0, 1.0, 0.5, 0, 0]))[0], 1 - 1 / np.log2(4))


def test_lambdarank_on_whole_number_targets_is_lightgbms_lambdarank():
    """On grades as targets, the pairs' weights (t_i - t_j) / max DCG_q times |delta D| at the
    current ranks are LightGBM's own lambdarank (label_gain 0, 1, 2, ..., no norm, no
    truncation, sigmoid 1): the same trees, up to LightGBM's tabulated sigmoid."""
    lgb = pytest.importorskip("lightgbm")
    rng = np.random.default_rng(3)
    sizes = [40, 25, 60, 7]
    X = rng.normal(size=(sum(sizes), 5))
    y = rng.integers(0, 5, size=sum(sizes)).astype(float)
    query, better, worse, c = [], [], [], []
    start = 0
    for q, m in enumerate(sizes):
        t = y[start:start + m]
        i, j = np.nonzero(t[:, None] > t[None, :])
        top = np.sum(np.sort(t)[::-1] / np.log2(2 + np.arange(m)))
        query += [q] * len(i)
        better += i.tolist()
        worse += j.tolist()
        c += ((t[i] - t[j]) / top).tolist()
        start += m
    pairs = rows_of(sizes, np.array(query), np.array(better), np.array(worse), np.array(c), "lambdarank")
    common = {"num_leaves": 7, "learning_rate": 0.1, "min_data_in_leaf": 5, "seed": 0, "deterministic": True,
              "force_row_wise": True, "num_threads": 1, "verbose": -1}
    theirs = lgb.train({**common, "objective": "lambdarank", "label_gain": list(range(5)), "lambdarank_norm": False,
                        "lambdarank_truncation_level": max(sizes) + 1, "sigmoid": 1.0},
                       lgb.Dataset(X, y, group=sizes, params={"verbose": -1}), num_boost_round=15)
    ours = lgb.Booster({**common, "objective": "none"}, lgb.Dataset(X, y, group=sizes, params={"verbose": -1}))
    ranknet = lgb.Booster({**common, "objective": "none"}, lgb.Dataset(X, y, group=sizes, params={"verbose": -1}))
    plain = rows_of(sizes, np.array(query), np.array(better), np.array(worse), np.array(c))
    for _ in range(15):
        ours.update(fobj=pairs.objective)
        ranknet.update(fobj=plain.objective)
    a, b = theirs.predict(X, raw_score=True), ours.predict(X, raw_score=True)
    assert np.max(np.abs(a)) > 0.1
    assert np.max(np.abs(a - b)) <= 1e-4 * np.max(np.abs(a)), np.max(np.abs(a - b))
    assert np.max(np.abs(a - ranknet.predict(X, raw_score=True))) > 1e-2  # RankNet's weights are another model


def test_active_pair_sums_equal_the_pairs_at_the_hinge_boundary_and_in_chunks(monkeypatch):
    """The O(m log m) sums over each row's active pairs are the pairs' own sums: with integer
    scores (pairs exactly at the margin, z = 0, are not active), tied targets and scores, and
    the Hessian diagonal taken a few rows at a time."""
    from ltr_cli.clicklog import target_pairs as module
    from ltr_cli.kernels.dominance import pair_sums
    from ltr_cli.learners.batch import target_ranksvm
    from ltr_cli.learners.batch.target_ranksvm import TargetPairProblem

    rng = np.random.default_rng(11)
    sizes = [9, 0, 2, 40, 1, 17]
    starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
    t = rng.integers(0, 4, size=starts[-1]).astype(np.float64)
    s = rng.integers(-3, 4, size=starts[-1]).astype(np.float64)
    V = rng.normal(size=(starts[-1], 3))
    below, above = np.zeros_like(V), np.zeros_like(V)
    for q in range(len(sizes)):
        for i in range(starts[q], starts[q + 1]):
            for j in range(starts[q], starts[q + 1]):
                if t[i] > t[j] and 1.0 - (s[i] - s[j]) > 0:
                    below[i] += V[j]
                    above[j] += V[i]
    assert np.allclose(pair_sums(t, s, starts, V, True), below, rtol=1e-12, atol=1e-12)
    assert np.allclose(pair_sums(t, s, starts, V, False), above, rtol=1e-12, atol=1e-12)

    train = [(rng.normal(size=(m, 3)), np.zeros(m)) for m in sizes]
    targets = [t[starts[q]:starts[q + 1]] for q in range(len(sizes))]
    stored = WeightedPairProblem.from_pairs(train, module.target_pairs(targets), 1.0)
    monkeypatch.setattr(target_ranksvm, "DIAGONAL_ROWS", 12)
    sums = TargetPairProblem.from_targets(train, targets, 1.0)
    for w in (np.zeros(3), 2 * rng.normal(size=3)):
        a, b = stored.at(w), sums.at(w)
        assert a.J == pytest.approx(b.J, rel=1e-12) and np.allclose(a.g, b.g, rtol=1e-10, atol=1e-12)
        assert np.allclose(a.diagonal(), b.diagonal(), rtol=1e-10, atol=1e-12)
