"""What an online run does around its rounds besides learning: progress, checkpoints,
held-out evaluations, and the watch on the weights' finiteness.

An observer's ``after_round(t, snapshot)`` is called after every recorded round with the
round number and a function that returns the run's :class:`~ltr_cli.protocols.checkpoint.RunState`
(built only when an observer needs it); ``close()`` when the run stops, however it stops.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

import numpy as np

from ltr_cli import console, kernels
from ltr_cli.errors import LtrError
from ltr_cli.learners.online.base import OnlineLearner
from ltr_cli.protocols.checkpoint import Checkpointer, RunState
from ltr_cli.core.round_log import RoundLog

if TYPE_CHECKING:  # imported by the runs that have a held-out set
    from ltr_cli.protocols.heldout import Heldout


class RoundObserver(Protocol):
    def after_round(self, t: int, snapshot: Callable[[], RunState]) -> None: ...

    def after_block(self, t: int, n: int, snapshot: Callable[[], RunState]) -> None:
        """After a compiled block of ``n`` rounds ending with round ``t`` (blocks end at
        checkpoint rounds)."""

    def close(self) -> None: ...


class ProgressBar:
    """A tqdm bar on a terminal (none when quiet or when stderr is not a terminal)."""

    def __init__(self, total: int | None, done: int = 0, quiet: bool = False):
        self._bar = None
        if not quiet and sys.stderr.isatty():
            from tqdm import tqdm

            self._bar = tqdm(total=total, unit="round", dynamic_ncols=True, leave=False)
            if done:
                self._bar.update(done)

    @property
    def active(self) -> bool:
        """False when there is no bar to update."""
        return self._bar is not None

    def after_round(self, t: int, snapshot: Callable[[], RunState]) -> None:
        if self._bar is not None:
            self._bar.update(1)

    def after_block(self, t: int, n: int, snapshot: Callable[[], RunState]) -> None:
        if self._bar is not None:
            self._bar.update(n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


class Checkpoints:
    """Saves the run's state every ``checkpointer.every`` rounds."""

    def __init__(self, checkpointer: Checkpointer):
        self.checkpointer = checkpointer

    def after_round(self, t: int, snapshot: Callable[[], RunState]) -> None:
        if self.checkpointer.due(t):
            self.checkpointer.save(snapshot())

    def after_block(self, t: int, n: int, snapshot: Callable[[], RunState]) -> None:
        self.after_round(t, snapshot)

    def close(self) -> None:
        pass


class HeldoutEvaluations:
    """Evaluates the learner's weights on the held-out queries after every
    ``heldout.every``-th round, into that round's row of ``log`` (before a checkpoint of the
    same round is taken, so the checkpoint holds the evaluation)."""

    def __init__(self, heldout: Heldout, log: RoundLog, learner: OnlineLearner):
        self.heldout, self.log, self.learner = heldout, log, learner

    def after_round(self, t: int, snapshot: Callable[[], RunState]) -> None:
        if self.heldout.due(t):
            scorer = getattr(self.learner, "score_rows", None)  # a neural learner's own scores
            self.log.put_last(self.heldout.columns, self.heldout.evaluate(self.learner.weights, scorer))

    def after_block(self, t: int, n: int, snapshot: Callable[[], RunState]) -> None:
        self.after_round(t, snapshot)

    def close(self) -> None:
        pass


class FiniteWeights:
    """Watches the learner's weights after each update that changed them. Weights that left
    the reals are an error, except under the authors' numerics, which keep them as the
    authors' MATLAB did: then a warning, and ``nonfinite_round`` records the round (once)."""

    def __init__(self, learner: OnlineLearner, name: str | None, nonfinite_round: int | None = None):
        self.learner, self.name, self.nonfinite_round = learner, name, nonfinite_round
        self.nan_allowed = learner.numerics == "authors-code"
        self._finite = _finiteness_check()

    def after_update(self, t: int, qid: str, updated: bool) -> None:
        if not updated or self.nonfinite_round is not None or self._finite(self.learner.weights):
            return
        if not self.nan_allowed:
            raise LtrError(f"round {t} (qid {qid}): the learner's weights became NaN or infinite "
                           "after its update; lower the learning rate, add a projection radius, or "
                           "rescale the features")
        self.nonfinite_round = t
        console.warn(f"{self.name or type(self.learner).__name__}: weights became NaN or infinite in round {t} "
                     f"(qid {qid}); numerics: authors-code keeps them, as the authors' code "
                     "did: from here on it ranks NaN scores as their sort does")


def _finiteness_check() -> Callable[[np.ndarray], bool]:
    """``finite(w) -> bool``: the compiled check for float64 weights, numpy otherwise."""
    K = kernels.load() if kernels.ENABLED else None

    def finite(w: np.ndarray) -> bool:
        if K is not None and w.dtype == np.float64:
            return bool(K.core.all_finite(w))
        return bool(np.all(np.isfinite(w)))

    return finite
