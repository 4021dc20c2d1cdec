"""The metric conformance suite: every metric kind of the registry (plugins included), or
the ``(name, MetricKind)`` pairs a test gives, on random queries with graded labels, tied scores and queries without a relevant document,
under every convention preset:

* the reference function against the stacked (many queries at once, compiled when kernels
  are on) and the round (compiled when the kind has a kernel) paths
  (:func:`check_paths_agree`);
* the convention's no-relevant value on a query without relevant documents, for every
  policy (:func:`check_no_relevant_value`; kinds on raw labels define relevance
  themselves and are left out);
* bounds: finite or NaN, and within 0..1 when the kind is declared ``normalised``
  (:func:`check_bounds`);
* ties: tied scores are ranked by the tie policy, and documents with equal labels can swap
  places without changing the value (:func:`check_ties`).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli import kernels
from ltr_cli.measures.conventions import CONVENTIONS, Measure, evaluate_query
from ltr_cli.measures.metrics import no_relevant_value, rank_from_scores
from ltr_cli.measures.registry import KINDS, none_value_for
from ltr_cli.measures.stacked import evaluate_stacked
from ltr_cli.testing import suite

TIES = ("input-order", "reverse-input", "pessimistic")
POLICIES = ("zero", "one", "skip")


def names(kind: str) -> list[str]:
    """The metric names a kind is checked under: without a cut-off when it takes none or
    may go without, and at cut-offs 1, 3 and 30 when it takes one."""
    info = KINDS[kind]
    out = [kind] if info.cutoff != "required" else []
    if info.cutoff != "none":
        out += [f"{kind}@{k}" for k in (1, 3, 30)]
    return out


def queries(seed: int = 0, n: int = 40) -> list[tuple[np.ndarray, np.ndarray]]:
    """``(scores (m,), labels (m,))`` of random queries: graded labels 0..4, scores with
    ties (few distinct values), one- and two-document queries, and every seventh query
    without a relevant document."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(n):
        m = int(rng.integers(1, 14)) if q > 1 else q + 1
        labels = np.zeros(m) if q % 7 == 3 else rng.integers(0, 5, size=m).astype(np.float64)
        scores = rng.integers(0, 4, size=m).astype(np.float64) / 3.0
        out.append((scores, labels))
    return out


def _stack(pairs: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    offsets = np.zeros(len(pairs) + 1, dtype=np.int64)
    np.cumsum([y.shape[0] for _, y in pairs], out=offsets[1:])
    return np.concatenate([s for s, _ in pairs]), np.concatenate([y for _, y in pairs]), offsets


def _same(a: float | None, b: float | None, what: str) -> None:
    assert (a is None) == (b is None), f"{what}: {a} vs {b}"
    if a is not None and b is not None:
        assert (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12), \
            f"{what}: {a!r} vs {b!r}"


def check_paths_agree(kind: str, tmp_path: Path) -> None:
    """The reference, query by query, equals the stacked evaluation (kernels on and off)
    and the round measures (compiled when the kind has a kernel), under every convention,
    tie policy and no-relevant policy."""
    from ltr_cli.protocols.round_measures import RoundMeasures

    pairs = queries()
    s, y, offsets = _stack(pairs)
    before = kernels.ENABLED
    try:
        for conv in CONVENTIONS.values():
            for policy in POLICIES:
                measures = [Measure(n, policy, conv=conv) for n in names(kind)]
                for ties in TIES:
                    reference = [evaluate_query(sc, lab, conv, ties, measures=measures) for sc, lab in pairs]
                    for on in (True, False):
                        kernels.set_enabled(on)
                        table = evaluate_stacked(s, y, offsets, conv, ties, measures=measures)
                        for q, row in enumerate(reference):
                            for key, value in table.row(q).items():
                                _same(row[key], value, f"{key} ({conv.name}, {ties}, {policy}, kernels "
                                      f"{'on' if on else 'off'}) on query {q}: reference vs stacked")
                if conv.name != "paper":
                    continue  # the online rounds measure under the paper convention
                kernels.set_enabled(True)
                rounds = RoundMeasures(measures)
                for q, (sc, lab) in enumerate(pairs):
                    ranking = rank_from_scores(sc, "input-order", labels=lab)
                    values, _ = rounds(ranking, lab)
                    for meas, value in zip(measures, values):
                        expected = meas(ranking, lab)
                        _same(expected, value, f"{meas.name} ({policy}) on query {q}: reference vs round "
                              f"({'compiled' if rounds.compiled else 'reference'})")
    finally:
        kernels.set_enabled(before)


def check_no_relevant_value(kind: str, tmp_path: Path) -> None:
    """A query without relevant documents gets the policy's value: 0 for ``zero``, 1 for
    ``one`` (0 for a kind not declared normalised), NaN for ``skip``; a kind that defines
    that value itself (``no_relevant=False``) gives one finite value under every ranking."""
    info = KINDS[kind]
    if info.labels == "raw":
        return  # raw labels: the kind's own utility decides, there is no relevance rule
    for conv in CONVENTIONS.values():
        for policy in POLICIES:
            expected = none_value_for(kind, no_relevant_value(policy))
            for name in names(kind):
                meas = Measure(name, policy, conv=conv)
                for m in (1, 5, 40):
                    if meas.k is not None and meas.k > m:
                        continue  # the convention's rule for k beyond the list comes first
                    values = [meas.value(ranking, np.zeros(m)) for ranking in (np.arange(m), np.arange(m)[::-1])]
                    what = f"{name} ({conv.name}, no_relevant: {policy}) of a query without relevant documents"
                    assert values[0] is not None and values[1] is not None, f"{what} is not defined"
                    if not info.no_relevant:
                        assert values[0] == values[1] and math.isfinite(values[0]), f"{what}: {values}"
                        continue
                    for value in values:
                        assert value is not None
                        assert (math.isnan(value) and math.isnan(expected)) or value == expected, \
                            f"{what} is {value!r}, not {expected!r}"


def check_bounds(kind: str, tmp_path: Path) -> None:
    """Every value is finite (or NaN for a skipped query), and within 0..1 when the kind is
    declared normalised."""
    normalised = KINDS[kind].normalised
    for conv in CONVENTIONS.values():
        for policy in POLICIES:
            for name in names(kind):
                meas = Measure(name, policy, conv=conv)
                for scores, labels in queries(seed=1):
                    value = meas.value(rank_from_scores(scores, "input-order", labels=labels), labels)
                    if value is None or math.isnan(value):
                        continue
                    assert math.isfinite(value), f"{name} ({conv.name}) is {value!r}"
                    if normalised:
                        assert 0.0 <= value <= 1.0, \
                            f"{name} ({conv.name}) is {value!r}, outside 0..1 (the kind is declared normalised)"


def check_ties(kind: str, tmp_path: Path) -> None:
    """Tied scores are ranked by the tie policy (input order, its reverse, the worst order
    of the labels), and documents of equal labels swap places without changing the value."""
    rng = np.random.default_rng(2)
    for conv in CONVENTIONS.values():
        for name in names(kind):
            meas = Measure(name, conv=conv)
            for _, labels in queries(seed=3, n=15):
                m = labels.shape[0]
                tied = np.zeros(m)
                _same(meas.value(np.arange(m), labels), evaluate_query(tied, labels, conv, "input-order",
                                                                        measures=[meas])[name],
                      f"{name} ({conv.name}) of tied scores under input-order")
                _same(meas.value(np.arange(m)[::-1], labels), evaluate_query(tied, labels, conv, "reverse-input",
                                                                              measures=[meas])[name],
                      f"{name} ({conv.name}) of tied scores under reverse-input")
                worst = np.argsort(labels, kind="stable")
                _same(meas.value(worst, labels), evaluate_query(tied, labels, conv, "pessimistic",
                                                                 measures=[meas])[name],
                      f"{name} ({conv.name}) of tied scores under pessimistic")
                ranking = rng.permutation(m)
                swapped = ranking.copy()
                order = np.argsort(labels[ranking], kind="stable")  # positions grouped by label
                for a, b in zip(order[:-1], order[1:]):
                    if labels[ranking[a]] == labels[ranking[b]]:
                        swapped[a], swapped[b] = ranking[b], ranking[a]
                        break
                _same(meas.value(ranking, labels), meas.value(swapped, labels),
                      f"{name} ({conv.name}): two documents of equal labels swapped places")


CHECKS = (check_paths_agree, check_no_relevant_value, check_bounds, check_ties)


@suite("metrics")
def _cases(given: list[Any] | None) -> list[tuple[str, Any, Any]]:
    """Every kind of the registry under every check, or the kinds given as ``(name,
    MetricKind)`` pairs (a metric's name is its entry point's), each registered under its
    name while its checks run."""
    from ltr_cli.measures.registry import MetricKind
    from ltr_cli.testing import while_registered

    if given is None:
        return [(kind, kind, check) for check in CHECKS for kind in KINDS]
    out: list[tuple[str, Any, Any]] = []
    for item in given:
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
                and isinstance(item[1], MetricKind)):
            raise TypeError(f"a metric subject is a (name, MetricKind) pair, not {item!r}")
        name, kind = item
        out += [(name, name, while_registered("metrics", name, kind, check)) for check in CHECKS]
    return out
