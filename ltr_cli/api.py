"""The public API for plugins: everything a third-party extension is written against,
imported from this one module (``from ltr_cli import api``).

Register a plugin through an entry point of your package, in the group of its kind, named
as configs and commands name it (see :mod:`ltr_cli.plugins`, docs/plugins.md and
``examples/ltr-averaged-perceptron``)::

    [project.entry-points."ltr_cli.learners"]
    my-learner = "my_package:MyLearnerSpec"

    [project.entry-points."ltr_cli.click_models"]
    dcm = "my_package:DCM"

**Online learners** (``ltr_cli.learners``). A config model subclasses
:class:`OnlineLearnerConfig`: a ``type: Literal["name"]`` field (the name a config's
``type:`` selects), a ``summary`` class variable (the line ``ltr list`` shows), its own
settings as pydantic fields, and ``build(n_features, ties, rng, planned_rounds, fidelity)``
returning the learner. The learner follows :class:`OnlineLearner`: ``rank(X, rng)`` returns
the shown ranking (a permutation of ``range(m)``, best first; :func:`rank_from_scores`
applies the run's tie rule), ``update(X, feedback)`` learns from a :class:`Feedback` and
returns an :class:`UpdateInfo`, ``weights`` is the linear model saved with the run, and
``state_fields`` names every attribute of its mutable state, which checkpoints save and
``ltr run --resume`` restores.

**Click learners** (``ltr_cli.learners``): an online learner whose config model subclasses
:class:`ClickLearnerConfig` (``feedback_kind = "clicks"``, ``learning_rate_decay``) runs
under ``protocol.feedback: clicks`` only; :class:`ClickLearner` holds its state (``w``,
``t``, its own generator ``rng``, ``rate``; ``_move(direction)`` steps and decays), the
protocol sets its ``shown`` before round 1, and its ``update`` reads ``feedback.clicks``
(checked by :func:`shown_clicks`; :func:`click_pairs` gives the pairs a click vector implies).

**Compiled block families** (``ltr_cli.families``). A :class:`LinearRanker` whose
``block_kernel()`` returns its :class:`BlockFamily` (named as its entry point; its round and
block kernels named ``module:function``, in a kernel module written against
``ltr_cli.kernels.loop``) and its parameter vector (``kernel_params()``, filled by
``_make_params`` into the family's slots); :class:`StepSpec` is the step-size block.

**Batch learners** (``ltr_cli.learners``). A config model subclasses
:class:`BatchLearnerConfig` (a ``grid`` of hyper-parameters and ``fit(train, params) ->
model`` with ``scores(X)``).

**Metrics** (``ltr_cli.metrics``). A :class:`MetricKind` with a reference function
``f(ranking (m,), labels (m,), meas) -> float | None`` written against ``meas.conv`` (the
:class:`Convention`: gains, discount, relevance rule, maximum grade) and ``meas.k``; the
entry point's name is the metric's kind. Plugin metrics are computed by their reference
function (no kernel).

**Data formats** (``ltr_cli.formats``). A :class:`DataFormat` names the suffixes it claims
and a reader class following :class:`QueryReader`; raise :class:`DataFormatError` naming the
file and row.

**Click models** (``ltr_cli.click_models``). A :class:`ClickModelKind`: a summary and
``build(settings: ClickSettings) -> ClickModel``. The model subclasses :class:`ClickModel`
(``name``, ``grades``, ``walk(labels)``: per position P(click | reached), P(stop | clicked),
P(stop | not clicked); ``describe()``: a dict with ``model``, ``kind`` and ``grades``); the
law, marginals and samples follow from the walk. :func:`click_table` is a named table.

**Interleaving methods** (``ltr_cli.interleaving``). An :class:`InterleavingKind`: a
summary, whether it interleaves two rankers and/or multileaves several, its parameters,
and ``build(**params)`` returning a :class:`Method` (``make(rankings, length, rng) ->
Shown``, ``credit(shown, clicks) -> Outcome``; :func:`check_rankings`,
:func:`check_length`, :func:`check_clicks` are the input checks).

**Estimators** (``ltr_cli.estimators``). An :class:`Estimator`: a summary, a label, and
``weights(log: ClickLog) -> (weights (shown,), record)``, the weight of a click at each
position of a fold's click log.

**Ranking losses** (``ltr_cli.losses``). :func:`ranking_loss` computes a neural ranking loss
(allRank's names, parameters and values) on numpy ``[Q, L]`` scores and labels; a plugin
declares its own :class:`LossKind` (docs/neural.md).

**Neural scorers** (``ltr_cli.scorers``). A :class:`ScorerKind`: its name, a summary, its
settings (a :class:`ScorerSettings` model of the ``scorer:`` block's keys) and
``build(settings, outputs) -> Scorer``, the pure ``init(key, d)`` and ``forward`` of a
padded batch (docs/neural.md).
"""

from __future__ import annotations

from ltr_cli.clicklog.estimators import ClickLog, Estimator
from ltr_cli.clicks.base import ClickModel, ClickModelKind, ClickSettings
from ltr_cli.clicks.tables import table as click_table
from ltr_cli.core.schema import BatchLearnerConfig, OnlineLearnerConfig, Strict
from ltr_cli.data.formats.base import DataFormat, QueryReader
from ltr_cli.data.options import MAX_LABEL, ReaderOptions
from ltr_cli.data.query import Query
from ltr_cli.errors import ConfigError, DataFormatError, LtrError
from ltr_cli.interleaving.base import (InterleavingKind, Method, Outcome, Shown, check_clicks, check_length,
                                      check_rankings)
from ltr_cli.learners.online.base import NO_MISTAKE, NO_UPDATE, Feedback, LinearRanker, OnlineLearner, UpdateInfo
from ltr_cli.learners.online.click_base import ClickLearner, ClickLearnerConfig
from ltr_cli.learners.online.click_pairs import click_pairs, shown_clicks
from ltr_cli.learners.online.family import BlockFamily
from ltr_cli.learners.online.schedules import StepSpec
from ltr_cli.measures.conventions import Convention, Measure
from ltr_cli.measures.metrics import average_precision, dcg_at_k, ndcg_at_k, precision_at_k, rank_from_scores
from ltr_cli.measures.registry import MetricKind
from ltr_cli.neural.losses.bridge import ranking_loss
from ltr_cli.neural.losses.kind import LossKind
from ltr_cli.neural.scorers import Scorer, ScorerKind, ScorerSettings

__all__ = [
    "MAX_LABEL", "NO_MISTAKE", "NO_UPDATE", "BatchLearnerConfig", "BlockFamily", "ClickLearner", "ClickLearnerConfig", "ClickLog",
    "ClickModel", "ClickModelKind", "ClickSettings", "ConfigError", "Convention", "DataFormat", "DataFormatError",
    "Estimator", "Feedback", "InterleavingKind", "LinearRanker", "LtrError", "Measure", "Method", "MetricKind", "OnlineLearner",
    "OnlineLearnerConfig", "Outcome", "Query", "QueryReader", "ReaderOptions", "Scorer",
    "ScorerKind", "ScorerSettings", "Shown", "StepSpec", "Strict", "UpdateInfo",
    "average_precision", "check_clicks", "check_length", "check_rankings", "click_pairs", "click_table", "dcg_at_k",
    "ndcg_at_k", "precision_at_k", "rank_from_scores", "shown_clicks", "LossKind", "ranking_loss",
]
