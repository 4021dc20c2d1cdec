"""Interleaving and multileaving, checked exactly: every method's randomness is enumerated
here, independently of the package (the shown lists with their probabilities, and the
probabilistic methods' assignments), together with every click vector of small lists."""

from __future__ import annotations

import itertools
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from ltr_cli.errors import LtrError
from ltr_cli.interleaving.balanced import Balanced
from ltr_cli.interleaving.base import Shown
from ltr_cli.interleaving.methods import build_method
from ltr_cli.interleaving.pairwise_preference import PairwisePreference
from ltr_cli.interleaving.probabilistic import Probabilistic
from ltr_cli.interleaving.team_draft import TeamDraft

TAU = 3.0


def all_clicks(size):
    return [np.array(c, dtype=bool) for c in itertools.product([0, 1], repeat=size)]


# --- the methods' laws, written out independently --------------------------------------

def team_draft_law(rankings, size):
    """[(probability, docs, teams)] of team-draft: the shared prefix to no team, then rounds
    in every order of the rankers, each order with probability 1/k!."""
    rankings = [list(r) for r in rankings]
    k = len(rankings)
    docs, teams = [], []
    while len(docs) < size and all(r[len(docs)] == rankings[0][len(docs)] for r in rankings):
        docs.append(rankings[0][len(docs)])
        teams.append(-1)
    out = []

    def rounds(docs, teams, p):
        if len(docs) == size:
            out.append((p, list(docs), list(teams)))
            return
        orders = list(itertools.permutations(range(k)))
        for order in orders:
            d, t = list(docs), list(teams)
            for j in order:
                if len(d) == size:
                    break
                pick = next(x for x in rankings[j] if x not in d)
                d.append(pick)
                t.append(j)
            rounds(d, t, p / len(orders))

    rounds(docs, teams, 1.0)
    return out


def balanced_law(rankings, size):
    out = []
    for lead in (0, 1):
        shown, i = [], [0, 0]
        while len(shown) < size:
            j = lead if i[0] == i[1] else (0 if i[0] < i[1] else 1)
            doc = rankings[j][i[j]]
            i[j] += 1
            if doc not in shown:
                shown.append(doc)
        out.append((0.5, shown, None))
    return out


def softmax_pick(ranking, doc, left):
    """P(ranking's softmax draws doc from the documents left)."""
    w = {d: 1.0 / (list(ranking).index(d) + 1) ** TAU for d in left}
    return w[doc] / sum(w.values())


def probabilistic_joint(rankings, docs):
    """{assignment: P(list, assignment)} for a shown list: each position a uniform ranker."""
    k, n = len(rankings), len(rankings[0])
    joint = {}
    for assign in itertools.product(range(k), repeat=len(docs)):
        p, left = 1.0, set(range(n))
        for doc, j in zip(docs, assign):
            p *= softmax_pick(rankings[j], doc, left) / k
            left.discard(doc)
        joint[assign] = p
    return joint


def probabilistic_law(rankings, size):
    n = len(rankings[0])
    return [(sum(probabilistic_joint(rankings, docs).values()), list(docs), None)
            for docs in itertools.permutations(range(n), size)]


def pairwise_law(rankings, size):
    out = []

    def walk(docs, p):
        if len(docs) == size:
            out.append((p, list(docs), None))
            return
        depth = len(docs) + 1
        offered = sorted({d for r in rankings for d in list(r)[:depth]} - set(docs))
        for d in offered:
            walk(docs + [d], p / len(offered))

    walk([], 1.0)
    return out


LAWS = {"team-draft": team_draft_law, "balanced": balanced_law, "probabilistic": probabilistic_law,
        "pairwise-preference": pairwise_law}
METHODS = {"team-draft": TeamDraft, "balanced": Balanced, "probabilistic": Probabilistic,
           "pairwise-preference": PairwisePreference}


def shown_of(rankings, docs, teams):
    return Shown(docs=np.asarray(docs, dtype=np.int64), rankings=np.asarray(rankings, dtype=np.int64),
                 teams=None if teams is None else np.asarray(teams, dtype=np.int64))


def random_rankings(seed, k, n):
    rng = np.random.default_rng(seed)
    return np.array([rng.permutation(n) for _ in range(k)])


CASES = [(name, k) for name in LAWS for k in ((2,) if name == "balanced" else (2, 3))]


# --- the tests ----------------------------------------------------------------------------

@pytest.mark.parametrize("name,k", CASES)
def test_each_law_sums_to_one_and_make_draws_from_it(name, k):
    """The enumerated law is the one ``make`` samples: seeded frequencies within 5 sigma."""
    rankings = random_rankings(k, k, 5)
    law = LAWS[name](rankings, 3)
    assert sum(p for p, _, _ in law) == pytest.approx(1.0, abs=1e-12)
    method, rng, draws = METHODS[name](), np.random.default_rng(7), 4000
    seen = Counter(tuple(method.make(rankings, 3, rng).docs) for _ in range(draws))
    want = Counter()
    for p, docs, _ in law:
        want[tuple(docs)] += p
    assert set(seen) <= {d for d, p in want.items() if p > 0}
    for docs, p in want.items():
        assert abs(seen[docs] / draws - p) <= 5 * np.sqrt(p * (1 - p) / draws) + 1e-9, docs


@pytest.mark.parametrize("name,k", CASES)
def test_identical_rankings_tie_on_every_click_vector(name, k):
    for seed in range(3):
        one = random_rankings(seed, 1, 5)[0]
        rankings = np.array([one] * k)
        method = METHODS[name]()
        made = [method.make(rankings, 4, np.random.default_rng(s)) for s in range(5)]
        for shown in [shown_of(rankings, docs, teams) for _, docs, teams in LAWS[name](rankings, 4)] + made:
            for clicks in all_clicks(4):
                out = method.credit(shown, clicks)
                assert np.all(out.prefer == 0.0)
                assert np.all(out.credit == out.credit[0])


def expected_credit(name, rankings, size, click_p=None):
    """E[credit] and E[prefer] under clicks that ignore the documents: each position clicked
    independently with probability ``click_p[i]`` (default 1/2: every click vector equally
    likely), summed exactly over the method's law and every click vector."""
    method = METHODS[name]()
    k = len(rankings)
    p_click = np.full(size, 0.5) if click_p is None else np.asarray(click_p)[:size]
    credit, prefer = np.zeros(k), np.zeros((k, k))
    for p, docs, teams in LAWS[name](rankings, size):
        shown = shown_of(rankings, docs, teams)
        for clicks in all_clicks(size):
            q = p * float(np.prod(np.where(clicks, p_click, 1.0 - p_click)))
            out = method.credit(shown, clicks)
            credit += q * out.credit
            prefer += q * out.prefer
    return credit, prefer


@pytest.mark.parametrize("name,k", [c for c in CASES if c[0] != "balanced"])
def test_random_clicks_give_every_ranker_the_same_expected_credit(name, k):
    for seed in range(3):
        rankings = random_rankings(10 + seed, k, 5)
        for click_p in (None, [0.9, 0.6, 0.3, 0.2]):  # uniformly random; random with a position bias
            credit, prefer = expected_credit(name, rankings, 4, click_p)
            assert np.ptp(credit) < 1e-12, credit
            if name != "pairwise-preference":  # its verdicts' expectation need not be 0 (docs/clicks.md)
                assert np.abs(prefer).max() < 1e-12, prefer


def test_balanced_interleaving_is_biased_under_random_clicks():
    """The known flaw (Radlinski et al. 2008): A = (a, b, c), B = (b, c, a) give the lists
    (a, b, c) and (b, a, c). One click uniformly at random on the three positions: A wins on
    a click on a (1/3), B on any other (2/3), so E[prefer[B, A]] = 1/3. Under every click
    vector equally likely, B's expected credit is 1 and A's 3/4, and E[prefer[B, A]] = 1/4."""
    rankings = np.array([[0, 1, 2], [1, 2, 0]])
    method = Balanced()
    wins = Fraction(0)
    for _, docs, _ in balanced_law(rankings, 3):
        for pos in range(3):
            clicks = np.arange(3) == pos
            wins += Fraction(1, 6) * int(method.credit(shown_of(rankings, docs, None), clicks).prefer[1, 0])
    assert wins == Fraction(1, 3)
    credit, prefer = expected_credit("balanced", rankings, 3)
    np.testing.assert_allclose(credit, [0.75, 1.0], atol=1e-12)
    assert prefer[1, 0] == pytest.approx(0.25, abs=1e-12)


@pytest.mark.parametrize("k", [2, 3])
def test_probabilistic_credit_is_the_expectation_over_assignments(k):
    method = Probabilistic(TAU)
    rankings = random_rankings(20 + k, k, 5)
    rng = np.random.default_rng(3)
    for _ in range(4):
        docs = list(rng.permutation(5)[:4])
        joint = probabilistic_joint(rankings, docs)
        total = sum(joint.values())
        for clicks in all_clicks(4):
            credit, prefer = np.zeros(k), np.zeros((k, k))
            for assign, p in joint.items():
                counts = np.bincount(np.asarray(assign)[clicks], minlength=k)
                credit += p / total * counts
                prefer += p / total * np.sign(counts[:, None] - counts[None, :])
            out = method.credit(shown_of(rankings, docs, None), clicks)
            np.testing.assert_allclose(out.credit, credit, atol=1e-12)
            np.testing.assert_allclose(out.prefer, prefer, atol=1e-12)


@pytest.mark.parametrize("name", list(LAWS))
def test_the_ranker_with_the_clicked_relevant_document_on_top_wins(name):
    """Document 0 is the only relevant one and the user clicks it whenever it is shown. A
    ranks it first, B last: over the method's whole law B never wins and A wins with
    positive probability (on every list that shows it, for all but pairwise-preference,
    which can find no pair to count)."""
    rankings = np.array([[0, 1, 2, 3], [3, 2, 1, 0]])
    method = METHODS[name]()
    p_win = 0.0
    for p, docs, teams in LAWS[name](rankings, 3):
        clicks = np.asarray(docs) == 0
        out = method.credit(shown_of(rankings, docs, teams), clicks)
        assert out.prefer[1, 0] <= 0
        if clicks.any() and name != "pairwise-preference":
            assert out.prefer[0, 1] > 0 and out.winners(over=1).tolist() == [0]
        p_win += p * (out.prefer[0, 1] > 0)
    assert p_win >= 0.5 - 1e-12


def test_team_draft_credits_the_teams_and_skips_the_shared_prefix():
    rankings = np.array([[5, 0, 1, 2, 3, 4], [5, 2, 1, 0, 4, 3]])
    shown = TeamDraft().make(rankings, 4, np.random.default_rng(0))
    assert shown.docs[0] == 5 and shown.teams is not None and shown.teams[0] == -1
    assert sorted(shown.teams[1:3].tolist()) == [0, 1]
    out = TeamDraft().credit(shown, [1, 1, 0, 0])
    assert out.credit.sum() == 1.0 and np.all(out.prefer == -out.prefer.T)


def test_pairwise_preference_pairs_and_weights_by_hand():
    """A = (0, 1, 2, 3), B = (2, 3, 0, 1): t(0) = t(2) = 0, t(1) = t(3) = 1. The list
    (2, 1, 0, 3) had choice sets of sizes 2, 3, 2, 1. A click on document 0 (position 3)
    gives the pairs 0 > 2 (t 0 and 0: weight 1), 0 > 1 and 0 > 3 (t 0 and 1: weight
    1 / (1 - 1/2) = 2). A orders all three as the click does (1 + 2 + 2), B only 0 > 1 (2)."""
    rankings = np.array([[0, 1, 2, 3], [2, 3, 0, 1]])
    out = PairwisePreference().credit(shown_of(rankings, [2, 1, 0, 3], None), [0, 0, 1, 0])
    assert out.credit.tolist() == [5.0, 2.0] and out.prefer[0, 1] == 1.0
    # a click on position 1 (document 2) over document 1 just below: document 1 (t 1) was
    # not on offer at position 1, so the order was the draws' and the pair does not count
    out = PairwisePreference().credit(shown_of(rankings, [2, 1, 0, 3], None), [1, 0, 0, 0])
    assert out.credit.tolist() == [0.0, 0.0] and np.all(out.prefer == 0.0)


def test_the_same_seed_gives_the_same_list():
    rankings = random_rankings(5, 4, 30)
    for name in ("team-draft", "probabilistic", "pairwise-preference"):
        method = build_method(name, rankers=4)
        one = method.make(rankings, 10, np.random.default_rng(11)).docs
        two = method.make(rankings, 10, np.random.default_rng(11)).docs
        assert one.tolist() == two.tolist() and len(set(one.tolist())) == 10


@pytest.mark.parametrize("call,message", [
    (lambda: TeamDraft().make([[0, 1], [1, 1]], 2, np.random.default_rng(0)), "ranking 1 is not a permutation"),
    (lambda: Balanced().make([[0, 1], [1, 0], [0, 1]], 2, np.random.default_rng(0)), "compares 2 rankings"),
    (lambda: TeamDraft().make([[0, 1]], 2, np.random.default_rng(0)), "2 or more"),
    (lambda: TeamDraft().make([[0, 1], [1, 0]], 0, np.random.default_rng(0)), "at least one document"),
    (lambda: TeamDraft().credit(TeamDraft().make([[0, 1], [1, 0]], 2, np.random.default_rng(0)), [1]),
     "one 0/1 per shown position"),
    (lambda: build_method("optimized"), "unknown method"),
    (lambda: build_method("balanced", rankers=3), "compares two rankers only"),
    (lambda: Probabilistic(0.0), "softmax exponent"),
])
def test_bad_input_is_one_line(call, message):
    with pytest.raises(LtrError, match=message):
        call()
