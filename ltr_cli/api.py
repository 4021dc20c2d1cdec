"""The public API for plugins: everything a third-party learner, metric or data format is
written against, imported from this one module (``from ltr_cli import api``).

Register a plugin through an entry point of your package (see :mod:`ltr_cli.plugins` and
``examples/ltr-averaged-perceptron``)::

    [project.entry-points."ltr_cli.learners"]
    my-learner = "my_package:MyLearnerSpec"

    [project.entry-points."ltr_cli.formats"]
    my-format = "my_package:MY_FORMAT"

**Online learners.** A config model subclasses :class:`OnlineLearnerConfig`: a ``type:
Literal["name"]`` field (the name a config's ``type:`` selects), a ``summary`` class
variable (the line ``ltr list`` shows), its own settings as pydantic fields, and
``build(n_features, ties, rng, planned_rounds, fidelity)`` returning the learner. The
learner follows :class:`OnlineLearner`: ``rank(X, rng)`` returns the shown ranking (a
permutation of ``range(m)``, best first; :func:`rank_from_scores` applies the run's tie
rule), ``update(X, feedback)`` learns from a :class:`Feedback` and returns an
:class:`UpdateInfo`, ``weights`` is the linear model saved with the run, and
``state_fields`` names every attribute of its mutable state, which checkpoints save and
``ltr run --resume`` restores.

**Batch learners.** A config model subclasses :class:`BatchLearnerConfig` (a ``grid`` of
hyper-parameters and ``fit(train, params) -> model`` with ``scores(X)``).

**Metrics.** A :class:`MetricKind` with a reference function ``f(ranking (m,), labels
(m,), meas) -> float | None`` written against ``meas.conv`` (the :class:`Convention`: gains,
discount, relevance rule, maximum grade) and ``meas.k``; the entry point's name is the
metric's kind. Plugin metrics are computed by their reference function (no kernel).

**Data formats.** A :class:`DataFormat` names the suffixes it claims and a reader class
following :class:`QueryReader`; raise :class:`DataFormatError` naming the file and row.

**Ranking losses.** :func:`ranking_loss` computes a neural ranking loss (allRank's names,
parameters and values) on numpy ``[Q, L]`` scores and labels; a plugin declares its own
:class:`LossKind` in the ``ltr_cli.losses`` group (docs/neural.md).

**Neural scorers.** A :class:`ScorerKind` in the ``ltr_cli.scorers`` group: its name, a
summary, its settings (a :class:`ScorerSettings` model of the ``scorer:`` block's keys) and
``build(settings, outputs) -> Scorer``, the pure ``init(key, d)`` and ``forward`` of a
padded batch (docs/neural.md).
"""

from __future__ import annotations

from ltr_cli.core.schema import BatchLearnerConfig, OnlineLearnerConfig, Strict
from ltr_cli.data.formats.base import DataFormat, QueryReader
from ltr_cli.data.options import MAX_LABEL, ReaderOptions
from ltr_cli.data.query import Query
from ltr_cli.errors import ConfigError, DataFormatError, LtrError
from ltr_cli.learners.online.base import NO_MISTAKE, NO_UPDATE, Feedback, OnlineLearner, UpdateInfo
from ltr_cli.measures.conventions import Convention, Measure
from ltr_cli.measures.metrics import average_precision, dcg_at_k, ndcg_at_k, precision_at_k, rank_from_scores
from ltr_cli.measures.registry import MetricKind
from ltr_cli.neural.losses.bridge import ranking_loss
from ltr_cli.neural.losses.kind import LossKind
from ltr_cli.neural.scorers import Scorer, ScorerKind, ScorerSettings

__all__ = [
    "MAX_LABEL", "NO_MISTAKE", "NO_UPDATE", "BatchLearnerConfig", "ConfigError", "DataFormat", "DataFormatError",
    "Convention", "Feedback", "LossKind", "LtrError", "Measure", "MetricKind", "OnlineLearner", "OnlineLearnerConfig", "Query", "QueryReader", "ReaderOptions",
    "Scorer", "ScorerKind", "ScorerSettings", "Strict", "UpdateInfo", "average_precision", "dcg_at_k", "ndcg_at_k", "precision_at_k", "rank_from_scores",
    "ranking_loss",
]
