"""The click-driven online learners (dbgd, pdgd, pairwise-clicks), driven directly: rank,
a click vector, update. Exact where the algorithm is: PDGD's debiased gradient against a
brute-force evaluation of the paper's formula, its Plackett-Luce law by enumeration, the
DBGD/MGD steps on fixed clicks; then seeding, state, and learning from a perfect user."""

from __future__ import annotations

import itertools
import pickle

import numpy as np
import pytest

from ltr_cli.clicks.spec import build_model
from ltr_cli.interleaving.probabilistic import Probabilistic
from ltr_cli.learners.online.base import Feedback
from ltr_cli.learners.online.dbgd import DBGDSpec
from ltr_cli.learners.online.pairwise_clicks import PairwiseClicksSpec
from ltr_cli.learners.online.pdgd import PDGDSpec
from ltr_cli.learners.registry import REGISTRY
from ltr_cli.measures.metrics import ndcg_at_k, rank_from_scores
from ltr_cli.protocols.learner_state import LearnerState
from ltr_cli.learners.examples import examples


def _perfect_clicks(learner, ranking, y, rng):
    """A perfect user's clicks (the 5-grade ``perfect`` cascade) on the shown list."""
    n = min(learner.shown, ranking.shape[0])
    grades = np.clip(y[ranking[:n]], 0, 4).astype(np.int64)
    return Feedback(ranking, clicks=build_model("perfect", grades=5).sample(grades, rng, 1)[0].astype(np.float64))


def _play(learner, queries, rng, tie_rng):
    """Rounds of ``learner`` with a perfect user's clicks: each shown ranking and the weights after it."""
    seen = []
    for X, y in queries:
        ranking = learner.rank(X, tie_rng)
        learner.update(X, _perfect_clicks(learner, ranking, y, rng))
        seen.append((ranking.tolist(), np.array(learner.weights, copy=True)))
    return seen


def _build(spec, d, seed=0):
    return spec.build(d, "input-order", np.random.default_rng(seed))


def _query(seed, m=8, d=5):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(m, d)), rng.normal(size=d)


# --- PDGD ------------------------------------------------------------------------------------

def _pl_probability(scores, prefix):
    """Plackett-Luce probability of drawing ``prefix`` first, by the product of its factors."""
    e = np.exp(scores)
    left = np.ones(len(scores), dtype=bool)
    p = 1.0
    for doc in prefix:
        p *= e[doc] / e[left].sum()
        left[doc] = False
    return p


def _brute_force_pdgd(X, w, ranking, clicks, lr):
    """The PDGD step from the paper's formula: every (clicked, unclicked-and-seen) pair,
    the score gradient of P(i > j), the reversed-pair weight from the Plackett-Luce
    probabilities of the whole shown list and of the list with the pair swapped."""
    s = X @ w
    n = len(clicks)
    shown = list(ranking[:n])
    last = max(p for p in range(n) if clicks[p])
    grad = np.zeros(X.shape[1])
    for i in range(n):
        for j in range(n):
            if not clicks[i] or clicks[j] or j > last + 1:
                continue
            di, dj = shown[i], shown[j]
            swapped = list(shown)
            swapped[i], swapped[j] = dj, di
            p, q = _pl_probability(s, shown), _pl_probability(s, swapped)
            rho = q / (p + q)
            ei, ej = np.exp(s[di]), np.exp(s[dj])
            grad += rho * ei * ej / (ei + ej) ** 2 * (X[di] - X[dj])
    return w + lr * grad


@pytest.mark.parametrize("clicks", [[0, 1, 0, 1, 0, 0], [1, 0, 0, 0, 0, 1], [0, 0, 1, 1, 0, 0],
                                    [1, 1, 1, 1, 1, 0]])
def test_pdgd_step_equals_the_papers_formula_by_brute_force(clicks):
    X, w = _query(3, m=9, d=4)
    learner = _build(PDGDSpec(type="pdgd"), 4)
    learner.shown = 6
    learner.w = w.copy()
    ranking = np.array([4, 0, 7, 2, 8, 1, 3, 5, 6])
    c = np.array(clicks, dtype=np.float64)
    info = learner.update(X, Feedback(ranking, clicks=c))
    assert info.updated
    np.testing.assert_allclose(learner.w, _brute_force_pdgd(X, w, ranking, c, 0.1), rtol=0, atol=1e-13)


def test_pdgd_does_not_move_without_a_pair():
    X, w = _query(4, m=5, d=3)
    learner = _build(PDGDSpec(type="pdgd"), 3)
    learner.w = w.copy()
    ranking = np.arange(5)
    for clicks in ([0, 0, 0, 0, 0], [1, 1, 1, 1, 1]):   # nothing clicked; nothing unclicked
        info = learner.update(X, Feedback(ranking, clicks=np.array(clicks, dtype=np.float64)))
        assert not info.updated
        np.testing.assert_array_equal(learner.w, w)


def test_pdgd_samples_the_plackett_luce_law():
    """m = 3: the frequencies of the six shown orders match the law by enumeration (the
    seed is fixed; the bound is five standard deviations)."""
    X = np.array([[1.0], [0.2], [-0.5]])
    learner = _build(PDGDSpec(type="pdgd"), 1, seed=7)
    learner.w = np.array([1.3])
    s = X @ learner.w
    draws = 20000
    counts: dict[tuple[int, ...], int] = {}
    tie_rng = np.random.default_rng(0)
    for _ in range(draws):
        key = tuple(learner.rank(X, tie_rng).tolist())
        counts[key] = counts.get(key, 0) + 1
    for perm in itertools.permutations(range(3)):
        p = _pl_probability(s, perm)
        freq = counts.get(perm, 0) / draws
        assert abs(freq - p) < 5 * np.sqrt(p * (1 - p) / draws), (perm, freq, p)


# --- DBGD / MGD ------------------------------------------------------------------------------

def _ranked_round(learner, X, seed=0):
    ranking = learner.rank(X, np.random.default_rng(seed))
    shown_docs, shown, U = learner._pending
    assert shown_docs is ranking
    return ranking, shown, U


def test_dbgd_team_draft_steps_by_learning_rate_times_the_winning_direction():
    X, w = _query(5, m=10, d=5)
    learner = _build(DBGDSpec(type="dbgd", comparison="team-draft"), 5, seed=2)
    learner.shown = 6
    learner.w = w.copy()
    ranking, shown, U = _ranked_round(learner, X)
    teams = shown.teams
    assert (teams == 1).any() and (teams == 0).any()
    clicks = (teams == 1).astype(np.float64)         # every click on the candidate's team
    assert learner.update(X, Feedback(ranking, clicks=clicks)).updated
    np.testing.assert_array_equal(learner.w, w + 0.01 * U[0])


@pytest.mark.parametrize("which", ["tie", "none", "current"])
def test_dbgd_does_not_move_on_a_tie_or_a_loss(which):
    X, w = _query(5, m=10, d=5)
    learner = _build(DBGDSpec(type="dbgd", comparison="team-draft"), 5, seed=2)
    learner.shown = 6
    learner.w = w.copy()
    ranking, shown, _ = _ranked_round(learner, X)
    clicks = np.zeros(6)
    if which == "tie":
        clicks[np.flatnonzero(shown.teams == 0)[0]] = clicks[np.flatnonzero(shown.teams == 1)[0]] = 1
    elif which == "current":
        clicks[shown.teams == 0] = 1
    assert not learner.update(X, Feedback(ranking, clicks=clicks)).updated
    np.testing.assert_array_equal(learner.w, w)


def test_mgd_steps_towards_the_mean_of_the_winning_directions():
    X, w = _query(6, m=12, d=5)
    learner = _build(DBGDSpec(type="dbgd", comparison="team-draft", candidates=3, learning_rate=0.5), 5, seed=4)
    learner.w = w.copy()
    ranking, shown, U = _ranked_round(learner, X)
    teams = shown.teams
    assert {1, 2, 3} <= set(teams.tolist())
    # candidates 1 and 3 get one click each, the current ranker (0) and candidate 2 none
    clicks = np.zeros(len(teams))
    clicks[np.flatnonzero(teams == 1)[0]] = clicks[np.flatnonzero(teams == 3)[0]] = 1
    assert learner.update(X, Feedback(ranking, clicks=clicks)).updated
    np.testing.assert_allclose(learner.w, w + 0.5 * (U[0] + U[2]) / 2, rtol=0, atol=1e-15)


def test_probabilistic_mgd_moves_to_the_candidates_that_beat_the_current_ranker():
    X, w = _query(7, m=12, d=5)
    learner = _build(DBGDSpec(type="dbgd", comparison="probabilistic", candidates=4, preference="exact"), 5, seed=1)
    learner.w = w.copy()
    ranking, shown, U = _ranked_round(learner, X)
    clicks = np.zeros(10)
    clicks[[0, 3]] = 1
    # the winners by the exact expected outcome of probabilistic multileaving
    prefer = Probabilistic(3.0).credit(shown, clicks > 0).prefer
    winners = np.flatnonzero(prefer[:, 0] > 0)
    assert winners.size
    learner.update(X, Feedback(ranking, clicks=clicks))
    np.testing.assert_allclose(learner.w, w + 0.01 * U[winners - 1].mean(axis=0), rtol=0, atol=1e-15)


def test_candidates_are_unit_directions_from_the_learners_own_generator():
    X, _ = _query(8, m=10, d=6)
    spec = DBGDSpec(type="dbgd", comparison="probabilistic", candidates=5, preference="exact")
    a, b, c = _build(spec, 6, seed=9), _build(spec, 6, seed=9), _build(spec, 6, seed=10)
    ra = a.rank(X, np.random.default_rng(1))
    rb = b.rank(X, np.random.default_rng(2))   # another tie generator: no ties, the same round
    c.rank(X, np.random.default_rng(1))
    np.testing.assert_array_equal(ra, rb)
    np.testing.assert_array_equal(a._pending[2], b._pending[2])
    assert not np.array_equal(a._pending[2], c._pending[2])
    np.testing.assert_allclose(np.linalg.norm(a._pending[2], axis=1), 1.0, rtol=0, atol=1e-14)


def test_update_without_its_rank_is_refused():
    X, _ = _query(8, m=6, d=3)
    learner = _build(DBGDSpec(type="dbgd"), 3)
    with pytest.raises(ValueError, match="must follow rank"):
        learner.update(X, Feedback(np.arange(6), clicks=np.zeros(6)))


def test_a_comparison_without_multileaving_is_a_config_error(tmp_path):
    from typer.testing import CliRunner

    from ltr_cli.cli.app import app

    cfg = tmp_path / "c.yaml"
    cfg.write_text("experiment: x\ndataset: {kind: separable, queries: 20}\n"
                   "learners: {d: {type: dbgd, comparison: balanced, candidates: 3}}\n")
    res = CliRunner().invoke(app, ["run", str(cfg), "--out", str(tmp_path / "out"), "-q"])
    assert res.exit_code == 1
    lines = [line for line in res.stderr.splitlines() if line.startswith("ltr: error:")]
    assert len(lines) == 1 and "learners.d: comparison 'balanced' compares two rankers only" in lines[0]
    assert not (tmp_path / "out").exists()


# --- pairwise baseline -----------------------------------------------------------------------

def test_pairwise_baseline_steps_along_the_clicked_pairs():
    X, w = _query(9, m=8, d=4)
    learner = _build(PairwiseClicksSpec(type="pairwise-clicks"), 4)
    learner.shown = 5
    learner.w = w.copy()
    ranking = np.array([3, 1, 6, 0, 2, 7, 5, 4])
    clicks = np.array([0, 1, 0, 0, 0], dtype=np.float64)   # pairs: doc 1 over docs 3 and 6
    learner.update(X, Feedback(ranking, clicks=clicks))
    np.testing.assert_allclose(learner.w, w + 0.1 * ((X[1] - X[3]) + (X[1] - X[6])), rtol=0, atol=1e-15)


@pytest.mark.parametrize("epsilon", [0.0, 1.0])
def test_pairwise_baseline_explores_with_probability_epsilon(epsilon):
    X, w = _query(10, m=30, d=4)
    learner = _build(PairwiseClicksSpec(type="pairwise-clicks", epsilon=epsilon), 4)
    learner.w = w
    exploit = rank_from_scores(X @ w, "input-order")
    shown = [learner.rank(X, np.random.default_rng(0)) for _ in range(20)]
    assert all(sorted(r.tolist()) == list(range(30)) for r in shown)
    same = [np.array_equal(r[:10], exploit[:10]) for r in shown]
    assert all(same) if epsilon == 0.0 else not any(same)


# --- seeding, state, learning ----------------------------------------------------------------

SPECS = [PDGDSpec(type="pdgd"), PairwiseClicksSpec(type="pairwise-clicks"),
         DBGDSpec(type="dbgd", comparison="team-draft"), DBGDSpec(type="dbgd", comparison="balanced"),
         DBGDSpec(type="dbgd", comparison="probabilistic", candidates=4)]
IDS = ["pdgd", "pairwise", "td-dbgd", "b-dbgd", "p-mgd"]


def _queries(seed, count, d=5, m=(6, 20)):
    rng = np.random.default_rng(seed)
    return [(rng.normal(size=(int(rng.integers(*m)), d)).round(2), rng.integers(0, 5, size=20).astype(float))
            for _ in range(count)]


@pytest.mark.parametrize("spec", SPECS, ids=IDS)
def test_state_round_trips_through_a_checkpoint_and_pickle(spec):
    queries = [(X, y[: X.shape[0]]) for X, y in _queries(11, 16)]
    learner = _build(spec, 5, seed=3)
    _play(learner, queries[:8], np.random.default_rng(1), np.random.default_rng(2))
    state = LearnerState.of(learner)
    assert set(state.extra) == {"rate"}
    restored = _build(spec, 5, seed=99)
    state.restore(restored)
    pickled = pickle.loads(pickle.dumps(learner))
    runs = [_play(x, queries[8:], np.random.default_rng(3), np.random.default_rng(4))
            for x in (learner, restored, pickled)]
    for a, b in zip(runs[0], runs[1]):
        assert a[0] == b[0]
        np.testing.assert_array_equal(a[1], b[1])
    for a, b in zip(runs[0], runs[2]):
        assert a[0] == b[0]
        np.testing.assert_array_equal(a[1], b[1])


def test_the_learning_rate_decays_after_each_move():
    X, w = _query(3, m=9, d=4)
    learner = _build(PDGDSpec(type="pdgd", learning_rate_decay=0.5), 4)
    learner.w = w.copy()
    ranking = np.arange(9)
    learner.update(X, Feedback(ranking, clicks=np.zeros(9)))
    assert learner.rate == 0.1                             # no move, no decay
    learner.update(X, Feedback(ranking, clicks=np.eye(9)[2]))
    assert learner.rate == 0.05


def _separable(seed, count, d=6, m=20):
    """Queries whose labels (0..4) are the quintiles of X w*: a perfect user's clicks are
    consistent with w*."""
    rng = np.random.default_rng(seed)
    w_star = rng.normal(size=d)
    out = []
    for _ in range(count):
        X = rng.normal(size=(m, d))
        s = X @ w_star
        out.append((X, np.searchsorted(np.quantile(s, [0.5, 0.7, 0.85, 0.95]), s).astype(float)))
    return out


def _offline_ndcg(w, queries):
    return float(np.mean([ndcg_at_k(rank_from_scores(X @ w, "input-order"), y, 10) for X, y in queries]))


@pytest.mark.parametrize("spec", [PDGDSpec(type="pdgd"), PairwiseClicksSpec(type="pairwise-clicks"),
                                  DBGDSpec(type="dbgd", comparison="team-draft", learning_rate=0.1),
                                  DBGDSpec(type="dbgd", comparison="probabilistic", learning_rate=0.1),
                                  DBGDSpec(type="dbgd", comparison="probabilistic", candidates=9, learning_rate=0.1)],
                         ids=["pdgd", "pairwise", "td-dbgd", "p-dbgd", "p-mgd"])
def test_each_learner_learns_from_a_perfect_user(spec):
    queries = _separable(0, 350)
    train, test = queries[:300], queries[300:]
    rng = np.random.default_rng(5)
    randomly = float(np.mean([ndcg_at_k(rng.permutation(20), y, 10) for X, y in test for _ in range(20)]))
    learner = _build(spec, 6, seed=6)
    model = build_model("perfect", grades=5)
    for X, y in train:
        ranking = learner.rank(X, rng)
        clicks = model.sample(y[ranking[:10]].astype(np.int64), rng, 1)[0].astype(np.float64)
        learner.update(X, Feedback(ranking, clicks=clicks))
    assert _offline_ndcg(learner.w, test) > randomly + 0.4


# --- the conformance suite's configs ---------------------------------------------------------

def test_click_learners_are_registered_with_click_feedback():
    for name in ("dbgd", "pdgd", "pairwise-clicks"):
        assert REGISTRY[name].feedback_kind == "clicks"


def test_the_label_only_example_list_leaves_the_click_learners_out():
    """The examples split by what the registry says each learner learns from (a click
    learner added later, built in or plugged in, falls on its side without a list here)."""
    clicky = {spec["type"] for spec in examples(feedback="clicks").values()}
    assert clicky >= {"dbgd", "pdgd", "pairwise-clicks"}
    assert all(REGISTRY[t].feedback_kind == "clicks" for t in clicky)
    assert not clicky & {spec["type"] for spec in examples(feedback="labels").values()}
    assert set(examples()) == set(examples(feedback="clicks")) | set(examples(feedback="labels"))


def test_dbgd_builds_each_comparison_from_the_interleaving_package():
    from ltr_cli.interleaving.balanced import Balanced
    from ltr_cli.interleaving.team_draft import TeamDraft

    assert isinstance(_build(DBGDSpec(type="dbgd", comparison="balanced"), 3).method, Balanced)
    assert isinstance(_build(DBGDSpec(type="dbgd", comparison="team-draft", candidates=5), 3).method, TeamDraft)
    with pytest.raises(ValueError, match="compares two rankers only"):
        DBGDSpec.model_validate({"type": "dbgd", "comparison": "balanced", "candidates": 2})


# --- probabilistic preference: exact or sampled as the reference code does --------------------

def _shown_of_two(identical):
    from ltr_cli.interleaving.probabilistic import Probabilistic

    a = np.arange(12)
    b = a.copy() if identical else np.array([3, 0, 1, 2, 7, 4, 5, 6, 11, 8, 9, 10])
    return Probabilistic(3.0).make(np.stack([a, b]), 10, np.random.default_rng(0))


def test_the_sampled_preference_estimates_the_exact_one():
    from ltr_cli.interleaving.probabilistic import sampled_preference

    shown = _shown_of_two(identical=False)
    clicks = np.zeros(10, dtype=bool)
    clicks[[0, 2, 5]] = True
    exact = Probabilistic(3.0).credit(shown, clicks).prefer[:, 0]
    sampled = sampled_preference(shown, clicks, 3.0, np.random.default_rng(1), 10_000)
    assert sampled[0] == 0.0
    assert abs(sampled[1] - exact[1]) < 0.05   # five standard deviations of a 10,000-draw mean in [-1, 1]


def test_the_sampled_preference_breaks_exact_ties_either_way():
    from ltr_cli.interleaving.probabilistic import sampled_preference

    shown = _shown_of_two(identical=True)
    clicks = np.zeros(10, dtype=bool)
    clicks[[1, 4]] = True
    assert Probabilistic(3.0).credit(shown, clicks).prefer[1, 0] == 0.0
    signs = {np.sign(sampled_preference(shown, clicks, 3.0, np.random.default_rng(s), 1000)[1]) for s in range(20)}
    assert {-1.0, 1.0} <= signs


def test_dbgd_with_a_sampled_preference_moves_to_the_sampled_winners():
    from ltr_cli.interleaving.probabilistic import sampled_preference

    X, w = _query(12, m=15, d=5)
    spec = DBGDSpec(type="dbgd", comparison="probabilistic", candidates=6, preference="sampled", samples=2000)
    learner = _build(spec, 5, seed=0)
    learner.w = w.copy()
    ranking, shown, U = _ranked_round(learner, X)
    twin = np.random.Generator(type(learner.rng.bit_generator)())
    twin.bit_generator.state = learner.rng.bit_generator.state
    clicks = np.zeros(10)
    clicks[[1, 2]] = 1
    winners = np.flatnonzero(sampled_preference(shown, clicks > 0, 3.0, twin, 2000) > 0)
    assert winners.size
    learner.update(X, Feedback(ranking, clicks=clicks))
    np.testing.assert_allclose(learner.w, w + 0.01 * U[winners - 1].mean(axis=0), rtol=0, atol=1e-15)


def test_a_sampled_preference_needs_the_probabilistic_comparison():
    with pytest.raises(ValueError, match="preference: sampled applies to comparison: probabilistic only"):
        DBGDSpec.model_validate({"type": "dbgd", "comparison": "team-draft", "preference": "sampled"})


@pytest.mark.parametrize("ties", ["input-order", "reverse-input"])
def test_pairwise_baseline_ranks_alike_compiled_and_on_the_reference_path(ties):
    from ltr_cli import kernels

    if not kernels.ENABLED:
        pytest.skip("kernels are off (LTR_KERNELS=0)")
    rng = np.random.default_rng(12)
    queries = []
    for _ in range(40):  # coarse feature values: tied rows, ordered by the tie rule
        X = rng.integers(0, 3, size=(int(rng.integers(3, 25)), 4)) / 2.0
        queries.append((X, rng.integers(0, 5, size=X.shape[0]).astype(float)))
    spec = PairwiseClicksSpec(type="pairwise-clicks", epsilon=0.3)
    fast = spec.build(4, ties, np.random.default_rng(1))
    slow = spec.build(4, ties, np.random.default_rng(1))
    slow.use_kernels = False
    a = _play(fast, queries, np.random.default_rng(2), np.random.default_rng(3))
    b = _play(slow, queries, np.random.default_rng(2), np.random.default_rng(3))
    for (ra, wa), (rb, wb) in zip(a, b):
        assert ra == rb
        np.testing.assert_array_equal(wa, wb)


def test_the_compiled_pdgd_step_equals_its_reference():
    """The kernel (ltr_cli.kernels.pdgd) against the numpy reference, on random queries and
    clicks, float64 and float32 rows."""
    from ltr_cli import kernels
    from ltr_cli.learners.online.pdgd import pdgd_gradient

    if not kernels.ENABLED:
        pytest.skip("kernels are off (LTR_KERNELS=0)")
    kernel = kernels.load().pdgd.pdgd_gradient
    rng = np.random.default_rng(21)
    moved = 0
    for case in range(200):
        m, d = int(rng.integers(1, 30)), int(rng.integers(1, 8))
        X = rng.normal(size=(m, d)) * (5.0 if case % 3 == 0 else 1.0)
        if case % 2:
            X = X.astype(np.float32)
        scores = X @ rng.normal(size=d)
        ranking = rng.permutation(m).astype(np.int64)
        clicks = (rng.random(min(10, m)) < 0.3).astype(np.float64)
        expected = pdgd_gradient(X, scores, ranking, clicks)
        out = np.full(d, np.nan)
        found = kernel(X, scores, ranking, clicks, out)
        assert found == (expected is not None)
        if expected is not None:
            moved += 1
            np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-13)
    assert moved > 50
