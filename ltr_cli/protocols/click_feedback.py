"""Click feedback (``protocol.feedback: clicks``): what a round shows, measures and reveals.

Each round the learner ranks the query; the user sees the shown list ``ranking[:shown]``;
the click model (:mod:`ltr_cli.clicks`) samples one click vector on the true labels of the
shown list, from the run's click generator (the fourth stream of the run's seed, so the
data order, ties and the learner's own draws are those of the same run without clicks).

What the learner gets (:meth:`ClickFeedback.feedback`):

* a learner whose ``feedback_kind`` is ``clicks`` (DBGD, MGD, PDGD, ...): ``Feedback(ranking,
  clicks=c)`` only, ``c`` float64 0/1 (n,) over ``ranking[:n]``, n = min(shown, len(ranking));
  its ``shown`` attribute is set before round 1 (:meth:`ClickFeedback.prepare`);
* every other learner: the clicked documents of the shown list as label 1 and every other
  document (unclicked, or not shown) as label 0, in ``labels`` (full feedback) or
  ``top_labels`` (a top-k learner: the 0/1 labels of its top k), and ``clicks``.

The round's metrics are computed on the list the user saw (:meth:`ClickFeedback.seen`): the
shown documents in their order, then the others in document order so the measures get a
whole ranking. The config accepts under clicks only metrics with a cut-off K <= shown, whose
value reads no position below K: each is the metric of the shown list, with its ideal from
all the query's labels. (The round measures on a ranking cut to n documents would take
NDCG@K's cut-off as min(K, n), so NDCG@K with K > shown would divide by the ideal DCG@shown,
and RR would give a query whose relevant documents were not shown the no-relevant value
instead of 0: hence the whole ranking, and the refusal of K > shown.)

Grades: the click table follows the data's largest label unless ``clicks.grades`` is set
(:func:`resolve_model`).
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from ltr_cli.clicks.base import ClickModel
from ltr_cli.clicks.spec import build_model
from ltr_cli.clicks.tables import grades_for_max_label
from ltr_cli.errors import LtrError
from ltr_cli.learners.online.base import Feedback


def feedback_kind(learner: Any) -> str:
    """``clicks`` for a learner that learns only from clicks, else ``labels``."""
    return getattr(learner, "feedback_kind", "labels")


class ClickFeedback:
    """The click protocol of one run: its click ``model``, how many documents are ``shown``
    and its click generator ``rng`` (saved in checkpoints). ``kind``: the learner's
    ``feedback_kind`` as its config declares it (None: read from the learner object,
    ``labels`` when it has none)."""

    def __init__(self, model: ClickModel, shown: int, rng: np.random.Generator, kind: str | None = None):
        self.model = model
        self.shown = shown
        self.rng = rng
        self.kind = kind

    def _kind(self, learner: Any) -> str:
        return self.kind if self.kind is not None else feedback_kind(learner)

    def prepare(self, learner: Any) -> None:
        """Before round 1: a click learner is told how many documents the user sees."""
        if self._kind(learner) == "clicks":
            learner.shown = self.shown

    def twin(self) -> "ClickFeedback":
        """A copy with its own generator in the same state (for a warm-up round that must
        not draw from the run's)."""
        return ClickFeedback(self.model, self.shown, copy.deepcopy(self.rng), self.kind)

    def seen(self, ranking: np.ndarray, m: int) -> np.ndarray:
        """The list the round's metrics are computed on: the shown documents first, then
        the rest in document order (the ranking itself when it is a whole ranking)."""
        if ranking.shape[0] >= m:
            return ranking
        rest = np.ones(m, dtype=bool)
        rest[ranking] = False
        return np.concatenate([ranking, np.flatnonzero(rest)]).astype(ranking.dtype, copy=False)

    def clicks(self, ranking: np.ndarray, labels: np.ndarray) -> np.ndarray:
        """One click vector, float64 0/1 (n,), on the shown list ``ranking[:n]`` (the labels
        were checked against the model before round 1, :func:`resolve_model`)."""
        shown = ranking[:self.shown]
        return self.model.sample_shown(labels[shown], self.rng).astype(np.float64)

    def feedback(self, learner: Any, ranking: np.ndarray, labels: np.ndarray, k: int | None) -> Feedback:
        """The round's clicks, as ``learner`` takes them (``k``: how many top labels a
        label learner reads; None: all)."""
        c = self.clicks(ranking, labels)
        if self._kind(learner) == "clicks":
            return Feedback(ranking, clicks=c)
        clicked = np.zeros(labels.shape[0])
        clicked[ranking[:c.shape[0]][c > 0]] = 1.0
        if k is None:
            return Feedback(ranking, clicked, clicks=c)
        return Feedback(ranking, None, clicked[ranking[:k]], clicks=c)


def max_label(queries: Any) -> int:
    """The largest label of the queries (0 without any); a one-line error for a label that
    is not a grade (a whole number >= 0), naming its query."""
    top = 0
    for q in queries:
        y = np.asarray(q.y)
        if y.size == 0:
            continue
        if not np.all(np.isfinite(y) & (y == np.round(y)) & (y >= 0)):
            raise LtrError(f"protocol.feedback: clicks: query {q.qid} has a label that is not a relevance grade "
                           "(a whole number 0, 1, 2, ...); a click model clicks by grade")
        top = max(top, int(y.max()))
    return top


def resolve_model(clicks: Any, data_max_label: Any) -> ClickModel:
    """The run's click model from its ``protocol.clicks`` spec. Without ``grades``, a named
    table follows the data's largest label (``data_max_label()``, called only then:
    binary, 3 or 5 grades, :func:`~ltr_cli.clicks.tables.grades_for_max_label`); a custom
    table has its own grades. A label beyond the table is refused naming the key."""
    grades = clicks.grades
    named = isinstance(clicks.model, str)
    top = None
    if grades is None and named:
        top = data_max_label()
        try:
            grades = grades_for_max_label(top)
        except LtrError:
            raise LtrError(f"protocol.clicks: the data's labels reach {top}, beyond every named click table "
                           "(grades 0..4); give protocol.clicks.model a custom table with one probability per "
                           "grade") from None
    model = build_model(clicks.model, grades, clicks.stop, clicks.eta, where="protocol.clicks.model",
                        hint="protocol.clicks.grades")
    if top is None:
        top = data_max_label()
    if top >= model.grades:
        raise LtrError(f"protocol.clicks: the data's labels reach {top}, beyond the click table's {model.grades} "
                       f"grades (0..{model.grades - 1}); set protocol.clicks.grades, or give a table that covers it")
    return model
