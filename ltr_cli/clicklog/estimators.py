"""Counterfactual estimators: how a batch learner corrects a click log for position bias,
the contract and the registry.

An estimator is an :class:`Estimator`, an entry point of the ``ltr_cli.estimators`` group
(:mod:`ltr_cli.plugins`) named as a ``clicks.correction`` names it: this package's in its
``pyproject.toml`` (``naive``, ``ips``, ``position-bias``; their code in
:mod:`ltr_cli.learners.batch.click_data`), a plugin's in its own. For each fold it gives the
weight of a click at each shown position, from the fold's :class:`ClickLog`; a learner
trains on the weighted clicks (Ranking SVM's weighted pairs, LambdaMART's weighted groups).
A per-document estimator (``policy-aware``, ``affine``, ``dm``, ``dr``; their code in
:mod:`ltr_cli.learners.batch.click_targets` and :mod:`ltr_cli.clicklog.docwise`) gives instead
one estimate of relevance per (training query, document), which a listwise learner
(``type: neural``) trains on, and a pairwise one on the pairs of those targets
(:mod:`ltr_cli.clicklog.target_pairs`: RankSVM, LambdaMART); ``naive`` and ``ips`` give
both (RankSVM and LambdaMART then read their weights).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr_cli import plugins

if TYPE_CHECKING:
    from ltr_cli.clicklog.simulate import Sessions


@dataclass(frozen=True)
class ClickLog:
    """One fold's click log as an estimator reads it: ``sessions`` (``query`` indexes
    ``train``), ``meta`` (the log's metadata: policy, ``model``, the click model's
    ``describe()`` record, ``path`` of a log read from a file, ...), ``shown`` (the
    positions a session shows, 1..shown), the learner's ``clicks:`` block (``signal``:
    ``propensity``, ``clip``, ``generate``, ``log``), the fold's training queries
    ``train`` (``(X (m, d), y (m,))`` each) and its number ``fold`` (None: a dataset
    without folds); ``propensity``: under ``clicks.propensity: logged``, the logging
    propensity of each row of ``sessions``, float (rows,) in (0, 1] (None otherwise)."""

    sessions: Sessions
    meta: dict[str, Any]
    shown: int
    signal: Any  # a clicklog.signal.ClickSignal, which imports this module (its estimator names)
    train: list[tuple[np.ndarray, np.ndarray]]
    fold: int | None
    propensity: np.ndarray | None = None


@dataclass(frozen=True)
class Estimator:
    """A counterfactual correction of clicks, as an entry point of ``ltr_cli.estimators``
    declares it (the entry point's name is what ``clicks.correction`` names: lower-case
    words joined by ``-``).

    * ``summary``: its one-line definition (``ltr list`` shows it);
    * ``label``: how a run's description names what it trains on (``IPS-weighted clicks``);
    * ``weights(log) -> (weights, record)``: the weight of a click at each position,
      float (``log.shown``,), finite and > 0 (``weights[k - 1]`` for position k), and what
      the fold's model record keeps of it (a JSON-able dict, such as the propensities);
      None for an estimator that gives per-document targets only;
    * ``targets(log) -> list[np.ndarray]``: the estimated relevance of each document, one
      float (m_q,) per training query of ``log.train`` (its documents' order), finite;
      None for an estimator that gives per-position weights only;
    * ``weighs``: its weights are inverse propensities: it reads ``clicks.propensity``
      and ``clicks.clip``, and a learner that groups clicks (LambdaMART) takes each click
      apart with its weight;
    * ``positions``: the learner must model the displayed positions itself (LightGBM's
      position-bias model); a learner that cannot refuses it;
    * ``unbiased``: its weighted clicks, summed per position on a log whose documents are
      shown at random positions, do not depend on the position, and its targets' mean over
      many logs is each examinable document's relevance (the conformance suite checks both;
      a naive count declares False and is skipped, saying so);
    * ``pairwise``: it weighs each preference pair by the positions of both its documents,
      estimated with the ranker (pairwise debiasing): only a learner of pairs takes it, and
      ``weights`` gives the clicked positions' starting weights.
    """

    summary: str
    label: str
    weights: Callable[[ClickLog], tuple[np.ndarray, dict[str, Any]]] | None
    weighs: bool = False
    positions: bool = False
    unbiased: bool = False
    targets: Callable[[ClickLog], list[np.ndarray]] | None = None
    pairwise: bool = False


#: an estimator's name: lower-case words of letters and digits joined by ``-``
NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")

#: the estimators, built-in and plugged in
ESTIMATORS = plugins.Registry("estimators", "estimator")


@plugins.name_check("estimators")
def _check_name(name: str) -> str | None:
    if not NAME.fullmatch(name):
        return f"an estimator's name is lower-case words joined by '-' ({NAME.pattern}), not {name!r}"
    return None


@plugins.registrar("estimators")
def _register(obj: Any, name: str, source: str) -> None:
    """An entry point must name an :class:`Estimator` with a summary, a label, and weights
    or targets."""
    if not isinstance(obj, Estimator):
        raise TypeError(f"expected an Estimator, got {type(obj).__name__}")
    if not all(isinstance(t, str) and t.strip() for t in (obj.summary, obj.label)) or not (
            callable(obj.weights) or callable(obj.targets)):
        raise TypeError(f"estimator {name!r}: needs a one-line summary, a label and a weights(log) or "
                        "targets(log) function")


def estimator(name: str) -> Estimator:
    """The estimator ``name`` (a name ``clicks.correction`` already checked)."""
    found: Estimator = ESTIMATORS.choose(name, "clicks.correction")
    return found


def check_weights(weights: Any, shown: int, name: str) -> np.ndarray:
    """An estimator's weights as float (shown,), refused in one line unless finite and > 0."""
    from ltr_cli.errors import LtrError

    try:
        w = np.asarray(weights, dtype=float)
    except (TypeError, ValueError):
        raise LtrError(f"clicks.correction {name!r}: its weights must be {shown} finite positive numbers, one per "
                       f"shown position; it gave {type(weights).__name__} values that are not numbers") from None
    if w.shape != (shown,):
        raise LtrError(f"clicks.correction {name!r}: its weights must be {shown} finite positive numbers, one per "
                       f"shown position; it gave an array of shape {w.shape}")
    bad = np.flatnonzero(~(np.isfinite(w) & (w > 0)))
    if bad.size:
        raise LtrError(f"clicks.correction {name!r}: its weights must be finite and positive; the weight of "
                       f"position {bad[0] + 1} is {float(w[bad[0]])!r}" + (f" ({bad.size} positions in all)" if bad.size > 1 else ""))
    return w


#: what a learner reads of an estimator: per-position weights, or per-document targets
READS = {"weights": "per-position click weights", "targets": "per-document relevance estimates"}


def gives(name: str, reads: str) -> str | None:
    """None when estimator ``name`` gives what a learner ``reads`` (``weights`` or
    ``targets``); else the one-line reason, naming ``clicks.correction`` and the fix."""
    chosen = estimator(name)
    if (chosen.weights if reads == "weights" else chosen.targets) is not None:
        return None
    fit = [n for n, e in ESTIMATORS.items() if (e.weights if reads == "weights" else e.targets) is not None]
    other = "targets" if reads == "weights" else "weights"
    learner = "type: neural, ranksvm or lambdamart" if other == "targets" else "ranksvm or lambdamart"
    return (f"clicks.correction: {name} gives {READS[other]} only, and this learner trains on {READS[reads]}; "
            f"use one of {', '.join(fit)}, or train {name} with {learner}")


def check_targets(targets: Any, sizes: list[int], name: str) -> list[np.ndarray]:
    """An estimator's targets as float (m_q,) per query, refused in one line unless one
    finite array per query of the right length."""
    from ltr_cli.errors import LtrError

    if not isinstance(targets, (list, tuple)) or len(targets) != len(sizes):
        raise LtrError(f"clicks.correction {name!r}: its targets must be one array per training query "
                       f"({len(sizes)}); it gave {type(targets).__name__}")
    out = []
    for q, (t, m) in enumerate(zip(targets, sizes)):
        try:
            arr = np.asarray(t, dtype=float)
        except (TypeError, ValueError):
            raise LtrError(f"clicks.correction {name!r}: the targets of training query {q + 1} are not numbers") from None
        if arr.shape != (m,) or not np.all(np.isfinite(arr)):
            raise LtrError(f"clicks.correction {name!r}: the targets of training query {q + 1} must be {m} finite "
                           f"numbers, one per document; it gave shape {arr.shape}")
        out.append(arr)
    return out
