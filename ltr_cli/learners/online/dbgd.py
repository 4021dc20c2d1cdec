"""Dueling Bandit Gradient Descent (Yue & Joachims 2009) and Multileave Gradient Descent
(Schuth et al. 2016): linear rankers that learn from clicks by comparing themselves with
perturbed candidates online.

Each round: draw ``candidates`` directions u_1..u_c uniformly on the unit sphere (a standard
normal vector divided by its norm, from the learner's own generator), score the current
weights w and the candidates w + delta u_j in one product ``X @ W^T`` (W the (c+1, d)
matrix of their weights), rank each by its scores under the run's tie rule, and show an
interleaving (c = 1) or multileaving (c > 1) of the c+1 rankings, made by the methods of
:mod:`ltr_cli.interleaving` from the learner's generator. The clicks are credited by the
same method; the candidates that beat the current ranker (``Outcome.winners``) are the
winners, and ``w <- w + learning_rate * mean(u_j over the winners)``. No winner (no click,
or a tie): no move.

Facts from the reference code of the online learning-to-rank literature
(HarrieO/OnlineLearningToRank, commit 96712e4), restated:

* ``models/linearmodel.py``: candidates are the current weights plus a unit vector (Gaussian
  draws normalised per candidate), that is delta 1; the update moves the weights by the
  learning rate times the mean of the winners' weights minus the current weights, which at
  delta 1 is the mean of the winners' directions, as here; with no winner nothing moves.
  The learning rate decays after each update that moves (``learning_rate_decay``).
* ``algorithms/DBGD/tddbgd.py``: team-draft DBGD, learning rate 0.01;
  ``algorithms/DBGD/tdmgd.py``: team-draft MGD with 9 candidates by default.
* ``algorithms/DBGD/pdbgd.py``: P-DBGD, probabilistic interleaving with tau 3 and a learning
  rate of 0.01; the preference is estimated from 10,000 assignments sampled from their
  posterior (``multileaving/ProbabilisticMultileave.py``); so does ``preference: sampled``
  (the default), from the learner's generator. ``preference: exact`` takes the exact
  expectation instead (:mod:`ltr_cli.interleaving.probabilistic`). They differ most where the clicks cannot
  tell a candidate from the current ranker (both put the clicked documents at the same
  ranks): the exact preference is then a tie and nothing moves, while the estimate is a
  small number of either sign, so such a candidate wins about half the time. Run as an
  oracle on random queries with navigational clicks, the reference's P-DBGD updates
  differed from the exact rule in 47 of 300 rounds, 45 of them such ties.
* ``algorithms/DBGD/pmgd.py``: P-MGD, 49 candidates.
* ``multileaving/TeamDraftMultileave.py``: the winners are the candidates with more clicks
  than the current ranker (ranker 0); the shared prefix of the rankings belongs to no team.
* The reference code's DBGD sorts the documents by ascending score (``utils/rankings.py``
  sorts ascending; the DBGD learners do not negate their scores, unlike PDGD) for its shown
  and test rankings alike; as candidate directions are symmetric, that learner is this one
  with w negated.

The interleaving assignment between ``rank`` and ``update`` (the shown list, its teams and
the round's directions) is round scratch, not state: the protocol saves checkpoints between
rounds, after ``update``, when there is none.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal

import numpy as np
from pydantic import Field, field_validator, model_validator

from ltr_cli import kernels
from ltr_cli.interleaving.base import Method, Shown, inverse
from ltr_cli.interleaving.methods import build_method, check_rankers, method_kind
from ltr_cli.interleaving.probabilistic import DEFAULT_TAU, Probabilistic, sampled_preference, sign_masses
from ltr_cli.interleaving.team_draft import TeamDraft
from ltr_cli.learners.online.base import Feedback, UpdateInfo
from ltr_cli.learners.online.click_base import ClickLearner, ClickLearnerConfig
from ltr_cli.learners.online.click_pairs import shown_clicks
from ltr_cli.measures.metrics import rank_from_scores

NO_MOVE = UpdateInfo(mistake=False, updated=False)
MOVED = UpdateInfo(mistake=False, updated=True)


def rank_rows(scores: np.ndarray, ties: str, rng: np.random.Generator) -> np.ndarray:
    """int64 (k, m): each row of ``scores`` (k, m) ranked best first under the tie rule
    ``ties`` (as :func:`~ltr_cli.measures.metrics.rank_from_scores` ranks one row; the
    deterministic rules in one call for all rows)."""
    if ties == "input-order":
        return np.argsort(-scores, axis=1, kind="stable")
    if ties == "reverse-input":
        return np.ascontiguousarray(np.argsort(scores, axis=1, kind="stable")[:, ::-1])
    return np.stack([rank_from_scores(row, ties, rng) for row in scores])


def unit_directions(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    """float (count, dim): directions uniform on the unit sphere (normalised Gaussians)."""
    U = rng.standard_normal((count, dim))
    U /= np.sqrt(np.add.reduce(U * U, axis=1, keepdims=True))  # np.linalg.norm's own steps
    return U


def _compiled_masses(post: np.ndarray, over: int) -> tuple[np.ndarray, np.ndarray]:
    """:func:`~ltr_cli.interleaving.probabilistic.sign_masses`, compiled (the same numbers)."""
    c, k = post.shape
    mine, theirs = np.empty((k, 2 * c + 1)), np.empty((k, 2 * c + 1))
    (kernels.module or kernels.load()).interleave.sign_masses(np.ascontiguousarray(post), over, mine, theirs)
    return mine, theirs


def shown_first(docs: np.ndarray, order: np.ndarray) -> np.ndarray:
    """A permutation of ``order``'s documents: ``docs`` first, then the others in ``order``."""
    rest = np.ones(order.shape[0], dtype=bool)
    rest[docs] = False
    return np.concatenate([docs, order[rest[order]]])


class DBGDLearner(ClickLearner):
    """DBGD (one candidate) or MGD (several), configured by a :class:`DBGDSpec`. With the
    kernels on (and ``use_kernels``), a probabilistic shown list is drafted by the compiled
    :func:`ltr_cli.kernels.interleave.probabilistic_draft`, a team-draft one by
    :func:`ltr_cli.kernels.interleave.team_draft`, each from the same draws as the methods'
    own ``draft`` (their references), and the probabilistic credit's laws by
    :func:`ltr_cli.kernels.interleave.sign_masses`; any other method (a subclass of
    those included, which may draft otherwise) makes its own list."""

    use_kernels = True

    def __init__(self, spec: "DBGDSpec", n_features: int, ties: str, rng: np.random.Generator):
        super().__init__(n_features, ties, rng, spec.learning_rate, spec.learning_rate_decay)
        self.spec = spec
        self.candidates = spec.candidates
        self.delta = float(spec.delta)
        self.method: Method = build_method(spec.comparison, {"tau": spec.tau}, rankers=spec.candidates + 1,
                                           where="comparison")
        self._pending: tuple[np.ndarray, Shown, np.ndarray] | None = None
        self._inverse: np.ndarray | None = None  # the pending rankings' inverse, when the round made it

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        U = unit_directions(self.rng, self.candidates, self.w.shape[0])
        W = np.empty((self.candidates + 1, self.w.shape[0]))
        W[0] = self.w
        np.multiply(U, self.delta, out=W[1:])
        W[1:] += self.w
        scores = X @ W.T                                   # (m, c+1): every ranker in one product
        rankings = rank_rows(scores.T, self.ties, rng)
        size = min(self.shown, rankings.shape[1])
        inv = None
        compiled = self.use_kernels and kernels.ENABLED
        if compiled and type(self.method) is Probabilistic:
            picks, coins = self.method.draws(rankings.shape[0], size, self.rng)
            inv = inverse(rankings)
            docs = np.empty(size, dtype=np.int64)
            (kernels.module or kernels.load()).interleave.probabilistic_draft(
                rankings, inv, self.method.weights(rankings.shape[1]), picks, coins, docs)
            shown = Shown(docs=docs, rankings=rankings)
        elif compiled and type(self.method) is TeamDraft:
            kernel = (kernels.module or kernels.load()).interleave
            start = int(kernel.shared_prefix(rankings, size))
            perms = self.method.draws(rankings.shape[0], size - start, self.rng)
            docs, teams = np.empty(size, dtype=np.int64), np.empty(size, dtype=np.int64)
            kernel.team_draft(rankings, start, perms, docs, teams)
            shown = Shown(docs=docs, rankings=rankings, teams=teams)
        else:  # the rankings are permutations by construction: no checks
            shown = self.method.make_checked(rankings, size, self.rng)
        if compiled:
            ranking = np.empty(rankings.shape[1], dtype=np.int64)
            (kernels.module or kernels.load()).interleave.shown_first(shown.docs, rankings[0], ranking)
        else:
            ranking = shown_first(shown.docs, rankings[0])
        self._pending, self._inverse = (ranking, shown, U), inv
        return ranking

    def update(self, X: np.ndarray, feedback: Feedback) -> UpdateInfo:
        self.t += 1
        pending, self._pending = self._pending, None
        inv, self._inverse = getattr(self, "_inverse", None), None
        if pending is None or not (pending[0] is feedback.ranking or np.array_equal(pending[0], feedback.ranking)):
            raise ValueError("dbgd: update() must follow rank() and get the ranking it returned")
        ranking, shown, U = pending
        clicks = shown_clicks(feedback.clicks, ranking, self.shown, "dbgd")
        if self.spec.preference == "sampled":
            prefer = sampled_preference(shown, clicks > 0, self.spec.tau, self.rng, self.spec.samples)
            winners = np.flatnonzero(prefer > 0)
        elif isinstance(self.method, Probabilistic):
            compiled = self.use_kernels and kernels.ENABLED
            winners = self.method.winners(shown, clicks > 0, 0, _compiled_masses if compiled else sign_masses, inv)
        elif isinstance(self.method, TeamDraft):
            winners = self.method.winners(shown, clicks > 0, over=0)
        else:
            winners = self.method.credit(shown, clicks > 0).winners(over=0)
        if winners.shape[0] == 0:
            return NO_MOVE
        self._move(U[winners - 1].mean(axis=0))
        return MOVED

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_pending"] = state["_inverse"] = None  # round scratch: never kept
        return state


class DBGDSpec(ClickLearnerConfig):
    """Dueling Bandit Gradient Descent (candidates 1, interleaving) or Multileave Gradient
    Descent (candidates > 1, multileaving), learning from clicks."""

    type: Literal["dbgd"]
    summary: ClassVar[str] = ("DBGD (1 candidate, interleaving) or MGD (several, multileaving); learns from "
                              "clicks")
    examples: ClassVar[tuple[dict[str, Any], ...]] = (
        {"comparison": "team-draft"},
        {"comparison": "probabilistic", "candidates": 3},
        {"comparison": "balanced", "delta": 0.5},
        {"comparison": "team-draft", "candidates": 4, "learning_rate_decay": 0.99},
        {"comparison": "probabilistic", "preference": "sampled", "samples": 500},
    )
    comparison: str = Field(
        "probabilistic", description="how the current ranker meets its candidates: an interleaving method "
        "(candidates 1) or a multileaving one (candidates > 1), as ltr list says of each")
    candidates: int = Field(1, ge=1, le=1000, description="candidate directions per round: 1 is DBGD, more is "
                            "MGD (the reference code's P-MGD: 49)")
    learning_rate: float = Field(0.01, gt=0, description="step towards the winning candidates' mean direction")
    delta: float = Field(1.0, gt=0, description="candidates are w + delta u, u uniform on the unit sphere")
    tau: float = Field(DEFAULT_TAU, gt=0, description="probabilistic comparison: softmax exponent")
    preference: Literal["exact", "sampled"] | None = Field(
        None, description="probabilistic comparison: sampled (the default): the outcome estimated from "
        "`samples` drawn assignments, as the reference code does | exact: its exact expectation over the "
        "assignments (deterministic and faster; a candidate the clicks cannot tell apart never wins)")
    samples: int = Field(10_000, ge=1, le=1_000_000, description="preference sampled: assignments drawn per round")

    @field_validator("comparison")
    @classmethod
    def _known(cls, v: str) -> str:
        from ltr_cli.errors import LtrError

        try:
            method_kind(v, "comparison")
        except LtrError as exc:
            raise ValueError(str(exc)) from None
        return v

    @model_validator(mode="after")
    def _multileaving(self) -> "DBGDSpec":
        from ltr_cli.errors import LtrError

        try:
            check_rankers(self.comparison, self.candidates + 1, "comparison")
        except LtrError as exc:
            raise ValueError(str(exc)) from None
        if self.preference is not None and self.comparison != "probabilistic":
            raise ValueError(f"preference: {self.preference} applies to comparison: probabilistic only")
        return self

    @model_validator(mode="before")
    @classmethod
    def _sampled_by_default(cls, data: Any) -> Any:
        """A probabilistic comparison estimates its outcome as the reference code does,
        unless the config says ``preference: exact``."""
        if isinstance(data, dict) and data.get("comparison", "probabilistic") == "probabilistic" \
                and data.get("preference") is None:
            return {**data, "preference": "sampled"}
        return data

    def paper_role(self) -> str:
        prefix = method_kind(self.comparison, "comparison").abbreviation or self.comparison
        return f"{prefix}-{'dbgd' if self.candidates == 1 else 'mgd'}"

    def default_label(self) -> str:
        return self.label or self.paper_role().upper()

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "algorithm": "DBGD" if self.candidates == 1 else "MGD",
                "comparison": self.comparison, "candidates": self.candidates, "learning_rate": self.learning_rate,
                "learning_rate_decay": self.learning_rate_decay, "delta": self.delta,
                **({"tau": self.tau, "preference": self.preference} if self.comparison == "probabilistic" else {}),
                **({"samples": self.samples} if self.preference == "sampled" else {}), "feedback": "clicks"}

    def build(self, n_features: int, ties: str, rng: np.random.Generator,
              planned_rounds: int | None = None, fidelity: str = "paper") -> DBGDLearner:
        return DBGDLearner(self, n_features, ties, rng)
