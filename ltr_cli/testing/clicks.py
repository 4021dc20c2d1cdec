"""The click-model conformance suite: every named model of the registry
(:data:`ltr_cli.clicks.base.CLICK_MODELS`, plugins included), under each stop rule it takes,
on 3- and 5-grade tables, or the subjects a test gives (a
:class:`~ltr_cli.clicks.base.ClickModel`, checked at its own grades, or a
:class:`~ltr_cli.clicks.base.ClickModelKind`, expanded as a registered one), on shown lists
of labels that cover every grade:

* the exact law is a distribution: the 2^n click patterns in 0/1-string order, each with a
  probability, summing to 1 (:func:`check_law_is_a_distribution`);
* the closed-form marginal equals the law summed over the patterns, and stays a probability
  on lists too long to enumerate (:func:`check_marginal_is_the_law_summed`);
* the law equals an independent enumeration of the browsing walk's coins (a click coin and
  a stop coin per position; a user who stops clicks nothing further down; a UBM's click
  coin reads the last click above)
  (:func:`check_law_matches_the_coins`);
* seeded samples follow the law: every pattern's frequency within a binomial tolerance of
  its probability, impossible patterns never drawn, the same seed the same clicks
  (:func:`check_sampling_matches_the_law`).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.clicks.base import CLICK_MODELS, ClickModel, ClickModelKind, check_labels
from ltr_cli.clicks.spec import build_named
from ltr_cli.testing import identified, suite

#: the tables every model is checked on
GRADES = (3, 5)
#: samples per list, and the tolerance in binomial standard deviations
DRAWS, SIGMAS = 100_000, 5.0


def expand(name: str, kind: ClickModelKind) -> list[tuple[str, ClickModel]]:
    """``(id, model)`` of a named model under each stop rule it takes, at each of :data:`GRADES`."""
    out = []
    for grades in GRADES:
        for stop in kind.stop_rules or (None,):
            tag = f"{name}-{stop}" if stop else name
            out.append((f"{tag}-{grades}g", build_named(name, kind, grades, stop)))
    return out


def subjects(given: list[Any] | None = None) -> list[tuple[str, ClickModel]]:
    """``(id, model)``: every named model of the registry expanded (:func:`expand`), or the
    models and kinds given."""
    if given is None:
        return [pair for name, kind in CLICK_MODELS.items() for pair in expand(name, kind)]
    out: list[tuple[str, ClickModel]] = []
    for ident, obj in identified(given, lambda m: f"{getattr(m, 'name', '') or type(m).__name__}"):
        if isinstance(obj, ClickModelKind):
            out += expand(ident, obj)
        elif isinstance(obj, ClickModel):
            out.append((ident if ident != obj.name else f"{obj.name}-{obj.grades}g", obj))
        else:
            raise TypeError(f"a click-model subject is a ClickModel or a ClickModelKind, not {type(obj).__name__}")
    return out


def label_lists(grades: int, seed: int = 0) -> list[np.ndarray]:
    """Shown lists of 1 to 6 labels: every grade once (best first and worst first), all top
    grade, all zero, and random ones."""
    rng = np.random.default_rng(seed)
    top = grades - 1
    fixed = [list(range(top, -1, -1)), list(range(grades)), [top] * 4, [0] * 3, [top]]
    return [np.asarray(x, dtype=np.int64) for x in fixed] + [rng.integers(0, grades, size=6) for _ in range(2)]


def _code(rows: np.ndarray) -> np.ndarray:
    """Each click vector (bool (m, n), position 1 the most significant digit) as its row
    number in 0/1-string order."""
    n = rows.shape[1]
    return rows.astype(np.int64) @ (1 << np.arange(n - 1, -1, -1, dtype=np.int64))


def check_law_is_a_distribution(model: ClickModel, tmp_path: Path) -> None:
    """``law(labels)``: patterns bool (2^n, n), every click vector once in 0/1-string order;
    probabilities finite, >= 0, summing to 1."""
    for labels in label_lists(model.grades):
        rows, probs = model.law(labels)
        n = len(labels)
        want = np.array(list(itertools.product([False, True], repeat=n)), dtype=bool).reshape(1 << n, n)
        assert rows.dtype == bool and np.array_equal(rows, want), f"{labels}: patterns not every click vector in order"
        assert probs.shape == (1 << n,) and np.all(np.isfinite(probs)) and np.all(probs >= 0), f"{labels}: {probs}"
        assert math.isclose(float(probs.sum()), 1.0, abs_tol=1e-12), f"{labels}: the law sums to {probs.sum()!r}"


def check_marginal_is_the_law_summed(model: ClickModel, tmp_path: Path) -> None:
    """``marginal(labels)[i]`` = the sum of the law over the patterns with a click at i; on a
    list of 40 (beyond enumeration) every marginal is a probability."""
    for labels in label_lists(model.grades):
        rows, probs = model.law(labels)
        summed = probs @ rows
        marginal = model.marginal(labels)
        assert marginal.shape == (len(labels),), f"{labels}: marginal shape {marginal.shape}"
        np.testing.assert_allclose(marginal, summed, rtol=0, atol=1e-12, err_msg=f"{labels}: marginal vs law")
    long = np.random.default_rng(1).integers(0, model.grades, size=40)
    m = model.marginal(long)
    assert m.shape == (40,) and np.all(np.isfinite(m)) and np.all((m >= 0) & (m <= 1)), m


def coin_law(click: np.ndarray, stop_click: np.ndarray, stop_skip: np.ndarray) -> dict[tuple[bool, ...], float]:
    """{click vector: probability} of a browsing walk, by enumerating its coins one position
    at a time: clicked with ``click[i]``, then stopping with ``stop_click[i]`` (clicked) or
    ``stop_skip[i]`` (not); after a stop, no clicks."""
    n = len(click)
    law: dict[tuple[bool, ...], float] = {}

    def walk(i: int, prefix: tuple[bool, ...], p: float) -> None:
        if i == n:
            law[prefix] = law.get(prefix, 0.0) + p
            return
        for hit, p_hit in ((True, click[i]), (False, 1.0 - click[i])):
            p_stop = stop_click[i] if hit else stop_skip[i]
            stopped = prefix + (hit,) + (False,) * (n - i - 1)
            law[stopped] = law.get(stopped, 0.0) + p * p_hit * p_stop
            walk(i + 1, prefix + (hit,), p * p_hit * (1.0 - p_stop))

    walk(0, (), 1.0)
    return law


def browsing_coin_law(cond: np.ndarray) -> dict[tuple[bool, ...], float]:
    """{click vector: probability} of a UBM, by enumerating its click coins one position at a
    time, each with P(click at r | the last click above), ``cond`` float (n, n + 1) (column
    n: no click above)."""
    n = len(cond)
    law: dict[tuple[bool, ...], float] = {}

    def walk(i: int, prefix: tuple[bool, ...], last: int, p: float) -> None:
        if i == n:
            law[prefix] = law.get(prefix, 0.0) + p
            return
        walk(i + 1, prefix + (True,), i, p * cond[i, last])
        walk(i + 1, prefix + (False,), last, p * (1.0 - cond[i, last]))

    walk(0, (), n, 1.0)
    return law


def check_law_matches_the_coins(model: ClickModel, tmp_path: Path) -> None:
    """The law equals :func:`coin_law` of the model's walk (a UBM's: :func:`browsing_coin_law`),
    pattern by pattern."""
    from ltr_cli.clicks.browsing import BrowsingModel

    for labels in label_lists(model.grades):
        rows, probs = model.law(labels)
        if isinstance(model, BrowsingModel):
            coins = browsing_coin_law(model.conditional(labels))
        else:
            walk = [np.asarray(a, dtype=float) for a in model.walk(check_labels(labels, model.grades))]
            coins = coin_law(*walk)
        got = {tuple(bool(x) for x in r): float(p) for r, p in zip(rows, probs)}
        for pattern in set(got) | set(coins):
            assert math.isclose(got.get(pattern, 0.0), coins.get(pattern, 0.0), abs_tol=1e-12), \
                f"{labels}: P{pattern} = {got.get(pattern, 0.0)!r} by the law, {coins.get(pattern, 0.0)!r} by the coins"


def check_sampling_matches_the_law(model: ClickModel, tmp_path: Path) -> None:
    """:data:`DRAWS` seeded samples per list: each pattern's frequency within
    :data:`SIGMAS` binomial standard deviations (plus one draw) of its probability; a
    pattern of probability 0 is never drawn; the same seed gives the same clicks."""
    for j, labels in enumerate(label_lists(model.grades)):
        rows, probs = model.law(labels)
        clicks = model.sample(labels, np.random.default_rng(j), DRAWS)
        assert clicks.shape == (DRAWS, len(labels)) and clicks.dtype == bool, f"{labels}: {clicks.shape}"
        assert np.array_equal(clicks, model.sample(labels, np.random.default_rng(j), DRAWS)), \
            f"{labels}: the same seed gave other clicks"
        freq = np.bincount(_code(clicks), minlength=len(rows)) / DRAWS
        slack = SIGMAS * np.sqrt(probs * (1.0 - probs) / DRAWS) + 1.0 / DRAWS
        bad = np.flatnonzero((np.abs(freq - probs) > slack) | ((probs == 0) & (freq > 0)))
        assert not bad.size, (f"{labels}: pattern {rows[bad[0]].astype(int).tolist()} drawn {freq[bad[0]]:.5f} "
                              f"of the time, its law says {probs[bad[0]]:.5f}")


CHECKS = (check_law_is_a_distribution, check_marginal_is_the_law_summed, check_law_matches_the_coins,
          check_sampling_matches_the_law)


@suite("clicks")
def _cases(given: list[Any] | None) -> list[tuple[str, Any, Any]]:
    found = subjects(given)
    return [(name, model, check) for check in CHECKS for name, model in found]
