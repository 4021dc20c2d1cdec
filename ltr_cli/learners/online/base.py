"""Interfaces between the online protocol and the learners.

The protocol, not the learner, decides what is revealed: it builds a :class:`Feedback`
from the shown ranking and hands only that to ``update``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import numpy as np

from ltr_cli import kernels
from ltr_cli.core import codes
from ltr_cli.learners.online.schedules import StepSchedule
from ltr_cli.measures.registry import parse_metric
from ltr_cli.measures.metrics import average_precision, ndcg_at_k, rank_from_scores, row_scores

if TYPE_CHECKING:
    from ltr_cli.learners.online.family import BlockFamily


# Feedback and UpdateInfo are immutable named tuples rather than frozen dataclasses: two are
# built every round, and a frozen dataclass's __init__ costs more than a learner's update.
class Feedback(NamedTuple):
    """What the learner may see after showing ``ranking``.

    ``labels`` is the full label vector (m,) in document order under full feedback, and
    then ``top_labels`` is None (the shown order's labels are ``labels[ranking]``). Under
    top-k feedback ``labels`` is None and ``top_labels`` (k,) holds the labels of
    ``ranking[:k]``.

    Under click feedback (``protocol.feedback: clicks``) a learner whose ``feedback_kind``
    is ``clicks`` gets only ``clicks``: a float64 0/1 vector (n,) of the clicks on the shown
    list ``ranking[:n]``, n = min(shown, len(ranking)); ``labels`` and ``top_labels`` are
    None. A learner that learns from labels gets, under click feedback, the clicked
    documents of the shown list as label 1 and every other document as label 0 (in
    ``labels`` or ``top_labels``, as it asks), and ``clicks`` too.
    """

    ranking: np.ndarray
    labels: np.ndarray | None = None
    top_labels: np.ndarray | None = None
    clicks: np.ndarray | None = None


class UpdateInfo(NamedTuple):
    """What happened in ``update``: a ranking-loss mistake, a weight change, the surrogate
    value and the round's ranking loss (RML) under the learner's mistake measure."""

    mistake: bool
    updated: bool
    surrogate: float = float("nan")
    ranking_loss: float = float("nan")


class LossSpec(NamedTuple):
    """The surrogate a learner descends, as its regret needs it (``regret_surrogate()`` of a
    learner that has one): a key of :data:`ltr_cli.surrogates.SURROGATES` and its keyword
    arguments, the radius U of the ball its weights are projected on (None: no projection,
    so no comparator ball) and whether the surrogate is convex in the scores."""

    surrogate: str
    params: dict[str, Any]
    radius: float | None
    convex: bool


NO_MISTAKE = UpdateInfo(mistake=False, updated=False, ranking_loss=0.0)
NO_UPDATE = UpdateInfo(mistake=False, updated=False)

# tie policies the compiled ranking kernel implements (reverse flag); others rank in Python
_KERNEL_TIES = {"input-order": False, "reverse-input": True}


def as_labels(y: np.ndarray) -> np.ndarray:
    """Labels as the kernels take them: float64 (no copy when they already are)."""
    return y if y.dtype == np.float64 else np.asarray(y, dtype=np.float64)


class OnlineLearner(Protocol):
    """A linear online ranker. Holds only its weights and schedule state.

    ``feedback_k``: how many top labels of the shown ranking it learns from (None: all);
    ``feedback_kind`` (optional, default ``labels``): ``clicks`` for a learner that learns
    only from clicks (DBGD, MGD, PDGD): it runs only under ``protocol.feedback: clicks``, its
    ``rank`` returns the list to show (at least its ``shown`` first documents, ``shown``
    being set by the protocol before round 1) and its ``update`` reads ``feedback.clicks``;
    ``numerics``: ``stable`` (non-finite weights are an error) or ``authors-code`` (they
    are kept and reported, as the authors' MATLAB did).

    The round-by-round protocol and the checkpoints read nothing else of a learner (the
    compiled block families read their own learners' fields):

    * ``state_fields``: the names of the attributes that are its whole mutable state
      (float/int/bool arrays, numbers, booleans, numpy Generators); a checkpoint saves them
      and ``--resume`` puts them back into a freshly built learner of the same config.
      Without it, the state is whichever of ``w`` (weights), ``t`` (round counter) and
      ``rng`` (its own generator) the learner has.
    * the tie rule is the learner's own business: ``rank`` returns the shown ranking.
    * ``block_kernel()`` (optional): the compiled block family that runs whole blocks of its
      rounds (:mod:`ltr_cli.protocols.online_blocks`); a learner without it runs round by
      round.
    * ``regret_surrogate()`` (optional): the :class:`LossSpec` of the surrogate it descends,
      for ``protocol.log_regret`` (:mod:`ltr_cli.protocols.regret`); None or absent: no
      regret is logged for it."""

    feedback_k: int | None
    numerics: str
    state_fields: tuple[str, ...]

    def resolved_settings(self) -> dict[str, object]:
        """Settings the learner resolved from defaults and the stream (for the manifest)."""

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Ranking (permutation of range(m), best first) for the query matrix X (m, d)."""

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        """Learn from the feedback on the ranking just shown."""

    @property
    def weights(self) -> np.ndarray:
        """Current weight vector w (d,)."""


class KernelScores:
    """Mixin: the compiled fast path of a linear learner (:mod:`ltr_cli.kernels`).

    ``rank`` computes the scores ``X w`` once, into a buffer the learner owns, and
    remembers the query matrix and weight vector they came from; ``update`` reuses them
    while both are the same objects (weights are replaced, never modified in place, so
    identity is a safe key). ``use_kernels = False`` on an instance (or ``LTR_KERNELS=0``)
    selects the slow reference code, which the tests compare the kernels with.
    """

    use_kernels = True
    w: np.ndarray  # the learner's weights and tie policy (set by the learner)
    ties: str
    _seen: tuple[np.ndarray, np.ndarray] | None = None
    _sbuf: np.ndarray = np.empty(0)
    _params: np.ndarray | None = None

    @property
    def fast(self) -> bool:
        return self.use_kernels and kernels.ENABLED

    def _score_buffer(self, m: int) -> np.ndarray:
        """The learner's score buffer, grown to at least m entries."""
        if self._sbuf.shape[0] < m:
            self._sbuf = np.empty(max(m, 256))
        return self._sbuf

    def _rank_fast(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Scores and ranking by the compiled kernel; tie policies the kernel does not
        implement (random) rank the same scores in Python."""
        m = X.shape[0]
        buf = self._score_buffer(m)
        w = self.w
        ranking = np.empty(m, dtype=np.int64)
        reverse = _KERNEL_TIES.get(self.ties)
        (kernels.module or kernels.load()).core.score_rank(X, w, reverse is True, buf, ranking)
        self._seen = (X, w)
        if reverse is None:
            return rank_from_scores(buf[:m], self.ties, rng)
        return ranking

    def _ranked_code(self) -> int:
        """How this learner's rankings are sorted from their scores (``codes.RANKED_*``),
        for kernels that can reuse a ranking's order; they check the claim before using it
        (the ranking ``update`` receives may come from elsewhere)."""
        reverse = _KERNEL_TIES.get(self.ties)
        if reverse is None:
            return codes.RANKED_UNKNOWN
        return codes.RANKED_REVERSE_INPUT if reverse else codes.RANKED_INPUT_ORDER

    def _scores_fast(self, X: np.ndarray) -> np.ndarray:
        """A buffer whose first m entries are the scores of X under the current weights:
        those ``rank`` computed when X and w are the same objects, else computed now (by
        the same kernel)."""
        seen = self._seen
        w = self.w
        if seen is not None and seen[0] is X and seen[1] is w:
            return self._sbuf
        buf = self._score_buffer(X.shape[0])
        (kernels.module or kernels.load()).core.row_scores_into(X, w, buf)  # what scores_into does
        self._seen = (X, w)
        return buf

    def _reference_scores(self, X: np.ndarray) -> np.ndarray:
        """``X @ w`` (m,) for the slow reference code, summed row by row in one order
        (:func:`~ltr_cli.measures.metrics.row_scores`, as the kernels do) under every tie
        rule, so equal rows tie and the rule orders them, not rounding noise."""
        return row_scores(X, self.w)

    def kernel_params(self) -> np.ndarray:
        """The learner's fixed configuration as the kernel's float64 parameter vector."""
        if self._params is None:
            self._params = self._make_params()
        return self._params

    def _make_params(self) -> np.ndarray:
        raise NotImplementedError

    def __getstate__(self) -> dict:
        state = self.__dict__.copy()
        for cache in ("_seen", "_sbuf", "_params"):  # this round's scratch (holds X): not state
            state.pop(cache, None)
        return state


class LinearRanker(KernelScores):
    """State and ranking shared by the linear learners: weights w (d,), round counter t,
    step schedule; the shown ranking sorts ``X w`` under the run's tie policy."""

    feedback_k: int | None = None  # full labels
    numerics = "stable"

    def resolved_settings(self) -> dict[str, object]:
        return {}

    def __init__(self, n_features: int, step: StepSchedule, ties: str):
        self.w = np.zeros(n_features)
        self.t = 0
        self.step = step
        self.ties = ties

    @property
    def weights(self) -> np.ndarray:
        return self.w

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        if self.use_kernels and kernels.ENABLED:
            return self._rank_fast(X, rng)
        with np.errstate(over="ignore"):  # infinite scores still sort; updates check finiteness
            scores = self._reference_scores(X)
        return rank_from_scores(scores, self.ties, rng)

    def block_kernel(self) -> "tuple[BlockFamily, np.ndarray] | None":
        """``(family, parameter vector)`` of the compiled block loop
        (:mod:`ltr_cli.kernels.loop`) that runs whole blocks of this learner's rounds, or
        None when its rounds run one by one (no compiled step, or kernels switched off)."""
        return None

    def _put_step(self, P: np.ndarray, rule_slot: int, eta_slot: int, scaled_slot: int) -> None:
        """The step schedule into its slots of a kernel parameter vector."""
        if self.step.rule not in codes.STEP_RULES:
            raise ValueError(f"unknown step rule {self.step.rule!r}")
        P[rule_slot] = codes.STEP_RULES[self.step.rule]
        P[eta_slot] = float(self.step.eta)
        P[scaled_slot] = float(self.step.loss_scaled)


def round_result(status: int, surrogate: float = float("nan"), ranking_loss: float = float("nan"),
                 mistake_driven: bool = False) -> UpdateInfo:
    """What a round kernel's status means for the protocol (one decoding for every
    learner; ``NOT_FINITE`` is the caller's to handle before): a mistake-driven learner
    reports its mistakes and ranking loss, the others only whether they moved."""
    if status == codes.UNCHANGED:
        return NO_MISTAKE if mistake_driven else UpdateInfo(False, False, surrogate)
    return UpdateInfo(mistake_driven, status == codes.UPDATED, surrogate, ranking_loss)


@dataclass(frozen=True)
class RankingMeasure:
    """The measure whose induced loss ``1 - measure`` drives a perceptron's updates (RML).

    ``name``: ``ndcg`` (k = m), ``ndcg@K`` or ``ap`` (labels > ``threshold`` relevant).
    A query without relevant documents has loss 0 (nothing can be ranked wrongly).
    """

    name: str = "ndcg"
    threshold: float = 0.0

    @property
    def kind(self) -> str:
        return self.name.partition("@")[0]

    @property
    def k(self) -> int | None:
        cut = self.name.partition("@")[2]
        return int(cut) if cut else None

    def loss(self, ranking: np.ndarray, labels: np.ndarray) -> float:
        if self.kind == "ap":
            return 1.0 - average_precision(ranking, labels, self.threshold, "one")
        return 1.0 - ndcg_at_k(ranking, labels, self.k, "one")


def parse_measure(name: str) -> str:
    """Validate a learner measure name (``ndcg``, ``ndcg@K``, ``ap``: the registry's metrics
    the perceptrons' kernels compute, in their one spelling); return it."""
    try:
        spec = parse_metric(name)
    except ValueError:
        spec = None
    if spec is not None and spec.kind in ("ndcg", "ap") and spec.name == name:
        return name
    raise ValueError(f"unknown ranking measure {name!r}; expected ndcg, ndcg@K (K a positive integer "
                     "in ASCII digits) or ap")
