"""The fast paths of a click round against their references, exactly: the click sampler of
the click protocol (no per-round label checks, one draw call), the interleaving methods
without input checks, the one column of the probabilistic preference a dueling bandit
reads, and the compiled interleaving kernels. Each must give the same numbers and leave the
generators in the same state, so a run's rounds stay byte-identical."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_cli.clicks.spec import build_model
from ltr_cli.interleaving.base import inverse
from ltr_cli.interleaving.probabilistic import Probabilistic, sign_expectation, sign_expectation_column, sign_masses
from ltr_cli.interleaving.team_draft import TeamDraft, shared_prefix
from ltr_cli.learners.online.base import Feedback
from ltr_cli.learners.online.dbgd import DBGDSpec, shown_first
from ltr_cli.learners.online.pairwise_clicks import epsilon_greedy

def _models() -> list[tuple[str, str | None, float | None]]:
    """Every built-in named model under each stop rule it takes (eta 0.5 where it takes
    one), from the registry, and a custom cascade."""
    from ltr_cli import plugins
    from ltr_cli.clicks.base import CLICK_MODELS

    named = [(name, stop, 0.5 if CLICK_MODELS[name].eta else None) for name in plugins.names("click_models", True)
             for stop in CLICK_MODELS[name].stop_rules or (None,)]
    return named + [("{click: [0.1, 0.6, 0.9], stop: [0.3, 0.2, 0.1]}", "any-position", None)]


MODELS = _models()


@pytest.mark.parametrize("name,stop,eta", MODELS, ids=[m[0][:12] + str(m[1] or m[2]) for m in MODELS])
def test_the_protocols_click_sampler_draws_as_sample_does(name, stop, eta):
    rng = np.random.default_rng(1)
    for grades in ((3,) if name.startswith("{") else (2, 3, 5)):
        model = build_model(name, grades, stop, eta)
        for _ in range(300):
            labels = rng.integers(0, grades, size=int(rng.integers(1, 14)))
            seed = int(rng.integers(1 << 30))
            slow, fast = np.random.default_rng(seed), np.random.default_rng(seed)
            expected = model.sample(labels, slow, 1)[0]
            got = model.sample_shown(labels.astype(np.float64), fast)  # the protocol's labels are floats
            assert got.dtype == bool and np.array_equal(got, expected), (name, labels)
            assert fast.bit_generator.state == slow.bit_generator.state


def _rankings(rng, k, n):
    ranks = np.stack([rng.permutation(n) for _ in range(k)]).astype(np.int64)
    if rng.random() < 0.2:
        ranks[1:] = ranks[0]
    elif rng.random() < 0.3 and n > 3:  # a shared prefix
        prefix = list(ranks[0, :int(rng.integers(1, 4))])
        ranks = np.stack([np.array(prefix + [d for d in row if d not in prefix]) for row in ranks]).astype(np.int64)
    return ranks


def _methods() -> list[tuple[str, object]]:
    """Every built-in method with its defaults, from the registry, and probabilistic at tau 0.5."""
    from ltr_cli import plugins
    from ltr_cli.interleaving.methods import METHODS

    return [(n, METHODS[n].build()) for n in plugins.names("interleaving", True)] + [("probabilistic-0.5",
                                                                                      Probabilistic(0.5))]


@pytest.mark.parametrize("method", [m for _, m in _methods()], ids=[n for n, _ in _methods()])
def test_make_checked_makes_the_list_make_makes(method):
    rng = np.random.default_rng(2)
    for _ in range(300):
        k = 2 if method.max_rankers == 2 else int(rng.integers(2, 12))
        n = int(rng.integers(1, 25))
        ranks, length, seed = _rankings(rng, k, n), int(rng.integers(1, 12)), int(rng.integers(1 << 30))
        slow, fast = np.random.default_rng(seed), np.random.default_rng(seed)
        a, b = method.make(ranks, length, slow), method.make_checked(ranks, min(length, n), fast)
        assert np.array_equal(a.docs, b.docs)
        assert (a.teams is None) == (b.teams is None) and (a.teams is None or np.array_equal(a.teams, b.teams))
        assert fast.bit_generator.state == slow.bit_generator.state


def test_the_preference_column_is_that_of_the_whole_preference_matrix_exactly():
    rng = np.random.default_rng(3)
    for _ in range(400):
        c, k = int(rng.integers(1, 11)), int(rng.integers(2, 40))
        post = rng.random((c, k)) ** 3
        if rng.random() < 0.5:
            post[:, 1:k // 2 + 1] = post[:, [0]]  # rankers the clicks cannot tell apart: exact ties
        post /= post.sum(axis=1, keepdims=True)
        full = sign_expectation(post)
        for over in (0, int(rng.integers(k))):
            assert np.array_equal(sign_expectation_column(post, over), full[:, over])
    method = Probabilistic()
    for _ in range(300):
        k, n = int(rng.integers(2, 12)), int(rng.integers(1, 25))
        shown = method.make(_rankings(rng, k, n), 10, rng)
        hit = rng.random(shown.docs.shape[0]) < 0.4
        assert np.array_equal(method.winners(shown, hit), method.credit(shown, hit).winners(over=0))
        assert np.array_equal(method.winners(shown, hit, inv=inverse(shown.rankings)),
                              method.credit(shown, hit).winners(over=0))


def test_team_draft_winners_are_those_of_its_credit():
    rng = np.random.default_rng(9)
    method = TeamDraft()
    for _ in range(400):
        k, n = int(rng.integers(2, 12)), int(rng.integers(1, 25))
        shown = method.make(_rankings(rng, k, n), 10, rng)
        hit = rng.random(shown.docs.shape[0]) < 0.4
        for over in (0, int(rng.integers(k))):
            assert np.array_equal(method.winners(shown, hit, over), method.credit(shown, hit).winners(over))


def _kernels():
    from ltr_cli import kernels

    if not kernels.ENABLED:
        pytest.skip("kernels are off (LTR_KERNELS=0)")
    return kernels.load().interleave


def test_the_compiled_interleaving_kernels_equal_their_references():
    kernel = _kernels()
    rng = np.random.default_rng(4)
    for _ in range(500):
        k, n, length = int(rng.integers(2, 51)), int(rng.integers(1, 40)), int(rng.integers(1, 12))
        ranks, size = _rankings(rng, k, n), min(length, n)
        method = Probabilistic(float(rng.choice([3.0, 0.5, 30.0])))
        picks, coins = method.draws(k, size, rng)
        if rng.random() < 0.1:
            coins[:] = np.nextafter(1.0, 0.0)  # the inversion's upper edge
        docs = np.empty(size, dtype=np.int64)
        kernel.probabilistic_draft(ranks, inverse(ranks), method.weights(n), picks, coins, docs)
        assert np.array_equal(docs, method.draft(ranks, inverse(ranks), picks, coins))
        start = shared_prefix(ranks, size)
        assert kernel.shared_prefix(ranks, size) == start
        order = ranks[0]
        first = np.empty(n, dtype=np.int64)
        kernel.shown_first(order[:size][::-1].copy(), order, first)
        assert np.array_equal(first, shown_first(order[:size][::-1].copy(), order))
        perms = TeamDraft.draws(k, size - start, rng)
        docs, teams = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
        kernel.team_draft(ranks, start, perms, docs, teams)
        ref_docs, ref_teams = TeamDraft.draft(ranks, size, start, perms)
        assert np.array_equal(docs, ref_docs) and np.array_equal(teams, ref_teams)
        c = int(rng.integers(1, 11))
        post = rng.random((c, k))
        post /= post.sum(axis=1, keepdims=True)
        over = int(rng.integers(k))
        mine, theirs = np.empty((k, 2 * c + 1)), np.empty((k, 2 * c + 1))
        kernel.sign_masses(post, over, mine, theirs)
        ref_mine, ref_theirs = sign_masses(post, over)
        assert np.array_equal(mine, ref_mine) and np.array_equal(theirs, ref_theirs)
        exploit, explore = rng.permutation(n).astype(np.int64), rng.permutation(n).astype(np.int64)
        explores = rng.random(size) <= float(rng.random())
        out = np.empty(n, dtype=np.int64)
        kernel.epsilon_greedy(exploit, explore, explores, out)
        assert np.array_equal(out, epsilon_greedy(exploit, explore, explores))


@pytest.mark.parametrize("config", [{"comparison": "probabilistic"}, {"comparison": "probabilistic", "candidates": 6},
                                    {"comparison": "team-draft"}, {"comparison": "team-draft", "candidates": 5},
                                    {"comparison": "balanced"}], ids=["p-dbgd", "p-mgd", "td-dbgd", "td-mgd", "b-dbgd"])
def test_dbgd_rounds_are_the_same_compiled_and_on_the_reference_path(config):
    _kernels()
    spec = DBGDSpec.model_validate({"type": "dbgd", **config, "learning_rate": 0.5})
    model = build_model("navigational", 5, "any-position", None)
    runs = []
    for use in (True, False):
        learner = spec.build(6, "input-order", np.random.default_rng(5))
        learner.use_kernels = use
        data, clicks, ties = np.random.default_rng(6), np.random.default_rng(7), np.random.default_rng(8)
        seen = []
        for _ in range(150):
            m = int(data.integers(1, 25))
            X, y = data.normal(size=(m, 6)), data.integers(0, 5, size=m)
            ranking = learner.rank(X, ties)
            c = model.sample_shown(y[ranking[:min(learner.shown, m)]], clicks).astype(np.float64)
            info = learner.update(X, Feedback(ranking, clicks=c))
            seen.append((ranking.tolist(), info.updated, learner.weights.tobytes()))
        runs.append(seen)
    assert runs[0] == runs[1]
    assert sum(updated for _, updated, _ in runs[0]) > 10
