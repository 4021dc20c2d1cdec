"""The estimator conformance suite: every counterfactual estimator of the registry
(:data:`ltr_cli.clicklog.estimators.ESTIMATORS`, plugins included), or the
:class:`~ltr_cli.clicklog.estimators.Estimator` objects a test gives, on a fold's click log
simulated as a run simulates it (a logging RankSVM, documents shuffled over the shown
positions, a position-based user who examines position k with probability 1/k):

* the weights are a table of positions: float (shown,), finite and > 0, the same on the
  same log, with a record a model file can keep (JSON) (:func:`check_weights_per_position`);
* an estimator that declares itself ``unbiased`` removes the position bias: on the
  shuffled log every position holds documents of the same mean relevance, so the weighted
  clicks per impression at each position agree within :data:`SIGMAS` standard errors
  (:func:`check_weighted_clicks_do_not_depend_on_the_position`). An estimator that
  declares ``unbiased = False`` (naive clicks) is known to fail it: the check is skipped,
  saying so;
* a per-document estimator's targets are one finite float (m_q,) per training query, the
  same on the same log (:func:`check_targets_per_document`), and, when it declares itself
  ``unbiased``, on the shuffled log their mean over the examinable documents of each grade
  equals that grade's relevance, P(click | examined, grade) of the click model, within
  :data:`SIGMAS` standard errors (:func:`check_targets_estimate_the_relevance`).

A check of a kind the estimator does not give (weights, or targets) is skipped, saying so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.clicklog.estimators import ESTIMATORS, ClickLog, Estimator
from ltr_cli.testing import identified, suite

#: queries, documents per query, shown positions, sessions, and the tolerance in standard errors
QUERIES, DOCS, SHOWN, SESSIONS, SIGMAS = 60, 8, 5, 40_000, 5.0


def click_log(seed: int = 0) -> ClickLog:
    """A fold's shuffled click log under ``pbm`` (eta 1) on random graded queries, with the
    ``clicks:`` block that simulated it (true propensities, clip 10)."""
    from ltr_cli.clicklog.signal import ClickSignal, GenerateSpec
    from ltr_cli.learners.batch.click_data import fold_log

    rng = np.random.default_rng(seed)
    train = [(rng.normal(size=(DOCS, 4)), rng.integers(0, 5, size=DOCS).astype(float)) for _ in range(QUERIES)]
    gen = GenerateSpec(model="pbm", eta=1.0, sessions=SESSIONS, shown=SHOWN, policy="shuffle", seed=seed)
    signal = ClickSignal(generate=gen)
    sessions, meta = fold_log(train, gen, 0)
    return ClickLog(sessions, meta, SHOWN, signal, train, 0)


def _skip(reason: str) -> None:
    import pytest

    pytest.skip(reason)


def check_weights_per_position(est: Estimator, tmp_path: Path) -> None:
    """``weights(log)``: float (shown,), finite, > 0, the same twice; its record is JSON."""
    if est.weights is None:
        _skip("the estimator gives per-document targets only (weights = None)")
    assert est.weights is not None
    log = click_log()
    weights, record = est.weights(log)
    w = np.asarray(weights)
    assert w.shape == (SHOWN,) and w.dtype.kind == "f", f"weights of shape {w.shape}, dtype {w.dtype}"
    assert np.all(np.isfinite(w) & (w > 0)), f"weights must be finite and > 0: {w.tolist()}"
    again, _ = est.weights(log)
    assert np.array_equal(w, np.asarray(again)), "the same log gave other weights"
    assert isinstance(record, dict), f"the record is a {type(record).__name__}, not a dict"
    json.dumps(record, allow_nan=False)


def check_weighted_clicks_do_not_depend_on_the_position(est: Estimator, tmp_path: Path) -> None:
    """On the shuffled log, the mean weighted click per impression at position k equals
    that at position 1 within :data:`SIGMAS` standard errors of their difference (and
    the naive click rates differ, so the log does carry a position bias)."""
    if est.weights is None:
        _skip("the estimator gives per-document targets only (weights = None)")
    if not est.unbiased:
        _skip("the estimator declares itself biased (unbiased = False)")
    assert est.weights is not None
    log = click_log(1)
    weights, _ = est.weights(log)
    s = log.sessions
    value = np.asarray(weights, dtype=float)[s.position - 1] * s.click
    mean = np.array([value[s.position == k].mean() for k in range(1, SHOWN + 1)])
    se = np.array([value[s.position == k].std(ddof=1) / np.sqrt((s.position == k).sum()) for k in range(1, SHOWN + 1)])
    raw = np.array([s.click[s.position == k].mean() for k in range(1, SHOWN + 1)])
    assert raw[-1] < raw[0] / 2, f"the log's click rates {raw.tolist()} show no position bias to remove"
    gap = np.abs(mean - mean[0])
    bound = SIGMAS * np.sqrt(se ** 2 + se[0] ** 2)
    assert np.all(gap <= bound), (f"weighted clicks per impression by position {np.round(mean, 4).tolist()} "
                                  f"(standard errors {np.round(se, 4).tolist()}) depend on the position")


def check_targets_per_document(est: Estimator, tmp_path: Path) -> None:
    """``targets(log)``: one finite float (m_q,) per training query, the same twice."""
    if est.targets is None:
        _skip("the estimator gives per-position weights only (targets = None)")
    assert est.targets is not None
    log = click_log()
    got = est.targets(log)
    assert isinstance(got, list) and len(got) == len(log.train), "one array of targets per training query"
    for t, (_, y) in zip(got, log.train):
        t = np.asarray(t)
        assert t.shape == y.shape and t.dtype.kind == "f", f"targets of shape {t.shape}, dtype {t.dtype}"
        assert np.all(np.isfinite(t)), "targets must be finite"
    again = est.targets(log)
    assert all(np.array_equal(a, b) for a, b in zip(got, again)), "the same log gave other targets"


def check_targets_estimate_the_relevance(est: Estimator, tmp_path: Path) -> None:
    """On the shuffled log (every document of a query's top :data:`SHOWN` examined with
    the mean of the positions' examination), the mean target of the examinable documents
    of each grade equals the click model's P(click | examined, grade) within
    :data:`SIGMAS` standard errors (the spread of the documents' targets over their
    number; naive click rates fail it, the log carrying a position bias)."""
    if est.targets is None:
        _skip("the estimator gives per-position weights only (targets = None)")
    if not est.unbiased:
        _skip("the estimator declares itself biased (unbiased = False)")
    assert est.targets is not None
    log = click_log(2)
    relevance = np.asarray(log.meta["model"]["click"], dtype=float)
    s = log.sessions
    shown = np.zeros(sum(len(y) for _, y in log.train), dtype=bool)
    offsets = np.concatenate(([0], np.cumsum([len(y) for _, y in log.train])))
    shown[offsets[s.query] + s.doc] = True
    grades = np.concatenate([np.asarray(y, dtype=int) for _, y in log.train])[shown]
    targets = np.concatenate([np.asarray(t, dtype=float) for t in est.targets(log)])[shown]
    for g in np.unique(grades):
        t = targets[grades == g]
        if len(t) < 10:
            continue
        se = t.std(ddof=1) / np.sqrt(len(t))
        assert abs(t.mean() - relevance[g]) <= SIGMAS * se + 1e-12, (
            f"grade {g}: mean target {t.mean():.4f} (standard error {se:.4f}) is not its relevance "
            f"{relevance[g]:.4f}")


CHECKS = (check_weights_per_position, check_weighted_clicks_do_not_depend_on_the_position,
          check_targets_per_document, check_targets_estimate_the_relevance)


@suite("estimators")
def _cases(given: list[Any] | None) -> list[tuple[str, Any, Any]]:
    found = list(ESTIMATORS.items()) if given is None else identified(given, lambda e: type(e).__name__)
    for _, est in found:
        if not isinstance(est, Estimator):
            raise TypeError(f"an estimator subject is an Estimator, not {type(est).__name__}")
    return [(name, est, check) for check in CHECKS for name, est in found]
