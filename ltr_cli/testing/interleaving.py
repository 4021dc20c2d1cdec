"""The interleaving conformance suite: every method of the registry
(:data:`ltr_cli.interleaving.methods.METHODS`, plugins included) for two rankers when it
interleaves and three when it multileaves, or the subjects a test gives (an
:class:`~ltr_cli.interleaving.base.InterleavingKind`, expanded so, or a method object, checked
at two and three rankers as its ``min_rankers`` and ``max_rankers`` allow), through the
method contract only (``make``, ``credit``):

* identical input rankings tie: on lists ``make`` draws from k copies of one ranking, every
  click vector gives every ranker the same credit and a zero ``prefer``
  (:func:`check_identical_rankings_tie`);
* clicks that ignore the documents favour no ranker: under uniformly random clicks (every
  click vector of the shown list equally likely, enumerated), each ranker's expected credit
  is the same. For the probabilistic methods this is exact: their lists are enumerated
  with the probability their documented law gives (:func:`list_law`). For the others, the
  lists are :data:`DRAWS` seeded draws of ``make`` and the mean credits must agree within
  :data:`SIGMAS` standard errors (:func:`check_random_clicks_favour_no_ranker`). A method
  that declares ``unbiased = False`` (balanced interleaving, docs/clicks.md) is known to
  fail it: the check is skipped, saying so.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.interleaving.base import InterleavingKind, Method, Shown
from ltr_cli.interleaving.methods import METHODS
from ltr_cli.interleaving.probabilistic import Probabilistic
from ltr_cli.testing import identified, suite

#: documents per ranking, and documents shown
DOCS, SHOWN = 5, 4
#: seeded lists for a method whose list law is not enumerated, and the tolerance in
#: standard errors of the mean credit difference
DRAWS, SIGMAS = 1000, 5.0


def expand(name: str, kind: InterleavingKind) -> list[tuple[str, Method, int]]:
    """``(id, method, k)`` of a method kind: for 2 rankers if it interleaves, 3 if it multileaves."""
    return [(f"{name}-{k}", kind.build(), k) for k, yes in ((2, kind.interleaves), (3, kind.multileaves)) if yes]


def subjects(given: list[Any] | None = None) -> list[tuple[str, Method, int]]:
    """``(id, method, k)``: every method of the registry expanded (:func:`expand`), or the
    kinds and methods given."""
    if given is None:
        return [case for name, kind in METHODS.items() for case in expand(name, kind)]
    out: list[tuple[str, Method, int]] = []
    for ident, obj in identified(given, lambda m: getattr(m, "name", "") or type(m).__name__):
        if isinstance(obj, InterleavingKind):
            out += expand(ident, obj)
        elif callable(getattr(obj, "make", None)) and callable(getattr(obj, "credit", None)):
            low, high = int(getattr(obj, "min_rankers", 2)), getattr(obj, "max_rankers", None)
            out += [(f"{ident}-{k}", obj, k) for k in (2, 3) if low <= k and (high is None or k <= high)]
        else:
            raise TypeError(f"an interleaving subject is a method (make, credit) or an InterleavingKind, "
                            f"not {type(obj).__name__}")
    return out


def rankings(k: int, seed: int) -> np.ndarray:
    """k random rankings of :data:`DOCS` documents, int64 (k, n)."""
    rng = np.random.default_rng(seed)
    return np.array([rng.permutation(DOCS) for _ in range(k)], dtype=np.int64)


def all_clicks(size: int) -> list[np.ndarray]:
    return [np.array(c, dtype=bool) for c in itertools.product([False, True], repeat=size)]


def expected_credit(method: Method, shown: Shown) -> np.ndarray:
    """Each ranker's credit on ``shown``, averaged over every click vector (uniformly random clicks)."""
    clicks = all_clicks(len(shown.docs))
    return sum((np.asarray(method.credit(shown, c).credit, dtype=float) for c in clicks),
               np.zeros(shown.rankings.shape[0])) / len(clicks)


def check_identical_rankings_tie(subject: tuple[Method, int], tmp_path: Path) -> None:
    """k copies of one ranking: every list drawn, every click vector, equal credits and no preference."""
    method, k = subject
    for seed in range(3):
        same = np.repeat(rankings(1, seed), k, axis=0)
        for draw in range(5):
            shown = method.make(same, SHOWN, np.random.default_rng(draw))
            for clicks in all_clicks(len(shown.docs)):
                out = method.credit(shown, clicks)
                assert np.all(out.credit == out.credit[0]), f"identical rankings, clicks {clicks.astype(int)}: " \
                                                            f"credit {out.credit}"
                assert np.all(out.prefer == 0.0), f"identical rankings, clicks {clicks.astype(int)}: " \
                                                  f"prefer {out.prefer.tolist()}"


def list_law(method: Probabilistic, ranks: np.ndarray, size: int) -> list[tuple[float, np.ndarray]]:
    """``[(probability, docs)]`` of every list a probabilistic method shows, from its
    documented law: each position picks a ranker uniformly and draws from its softmax
    P(d) ~ 1/rank(d)^tau over the documents not shown yet."""
    k, n = ranks.shape
    rank_of = np.argsort(ranks, axis=1)
    weight = 1.0 / (rank_of + 1.0) ** method.tau                     # (k, n), by document
    out = []
    for docs in itertools.permutations(range(n), size):
        p, left = 1.0, np.ones(n, dtype=bool)
        for d in docs:
            p *= float(np.mean(weight[:, d] / (weight * left).sum(axis=1)))
            left[d] = False
        out.append((p, np.asarray(docs, dtype=np.int64)))
    return out


def check_random_clicks_favour_no_ranker(subject: tuple[Method, int], tmp_path: Path) -> None:
    """Under uniformly random clicks every ranker's expected credit is the same: exactly
    over the enumerated lists of a probabilistic method; else within :data:`SIGMAS`
    standard errors over :data:`DRAWS` seeded lists."""
    method, k = subject
    if not getattr(method, "unbiased", True):
        import pytest

        pytest.skip(f"{method.name} declares itself biased under random clicks (unbiased = False)")
    for seed in range(2):
        ranks = rankings(k, 10 + seed)
        if isinstance(method, Probabilistic):
            law = list_law(method, ranks, SHOWN)
            assert abs(sum(p for p, _ in law) - 1.0) < 1e-12, "the enumerated list law does not sum to 1"
            mean = sum(p * expected_credit(method, Shown(docs=d, rankings=ranks)) for p, d in law)
            assert np.ptp(mean) < 1e-12, f"rankings {ranks.tolist()}: expected credits {mean}"
            continue
        rng = np.random.default_rng(seed)
        per_list = np.array([expected_credit(method, method.make(ranks, SHOWN, rng)) for _ in range(DRAWS)])
        diff = per_list[:, 1:] - per_list[:, :1]                       # each ranker against ranker 0
        se = diff.std(axis=0, ddof=1) / np.sqrt(DRAWS)
        assert np.all(np.abs(diff.mean(axis=0)) <= SIGMAS * se + 1e-12), \
            f"rankings {ranks.tolist()}: mean credits {per_list.mean(axis=0)} (standard errors {se})"


CHECKS = (check_identical_rankings_tie, check_random_clicks_favour_no_ranker)


@suite("interleaving")
def _cases(given: list[Any] | None) -> list[tuple[str, Any, Any]]:
    found = subjects(given)
    return [(name, (method, k), check) for check in CHECKS for name, method, k in found]
