"""Counterfactual estimators: how a batch learner corrects a click log for position bias,
the contract and the registry.

An estimator is an :class:`Estimator`, an entry point of the ``ltr_cli.estimators`` group
(:mod:`ltr_cli.plugins`) named as a ``clicks.correction`` names it: this package's in its
``pyproject.toml`` (``naive``, ``ips``, ``position-bias``; their code in
:mod:`ltr_cli.learners.batch.click_data`), a plugin's in its own. For each fold it gives the
weight of a click at each shown position, from the fold's :class:`ClickLog`; a learner
trains on the weighted clicks (Ranking SVM's weighted pairs, LambdaMART's weighted groups).
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
    without folds)."""

    sessions: Sessions
    meta: dict[str, Any]
    shown: int
    signal: Any  # a clicklog.signal.ClickSignal, which imports this module (its estimator names)
    train: list[tuple[np.ndarray, np.ndarray]]
    fold: int | None


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
    * ``weighs``: its weights are inverse propensities: it reads ``clicks.propensity``
      and ``clicks.clip``, and a learner that groups clicks (LambdaMART) takes each click
      apart with its weight;
    * ``positions``: the learner must model the displayed positions itself (LightGBM's
      position-bias model); a learner that cannot refuses it;
    * ``unbiased``: its weighted clicks, summed per position on a log whose documents are
      shown at random positions, do not depend on the position (the conformance suite
      checks it; a naive count declares False and is skipped, saying so);
    * ``pairwise``: it weighs each preference pair by the positions of both its documents,
      estimated with the ranker (pairwise debiasing): only a learner of pairs takes it, and
      ``weights`` gives the clicked positions' starting weights.
    """

    summary: str
    label: str
    weights: Callable[[ClickLog], tuple[np.ndarray, dict[str, Any]]]
    weighs: bool = False
    positions: bool = False
    unbiased: bool = False
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
    """An entry point must name an :class:`Estimator` with a summary, a label and weights."""
    if not isinstance(obj, Estimator):
        raise TypeError(f"expected an Estimator, got {type(obj).__name__}")
    if not all(isinstance(t, str) and t.strip() for t in (obj.summary, obj.label)) or not callable(obj.weights):
        raise TypeError(f"estimator {name!r}: needs a one-line summary, a label and a weights(log) function")


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
