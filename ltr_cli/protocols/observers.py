"""What an online run does between rounds besides learning: progress and checkpoints.

An observer's ``after_round(t, snapshot)`` is called after every recorded round with the
round number and a function that returns the run's :class:`~ltr_cli.protocols.checkpoint.RunState`
(built only when an observer needs it); ``close()`` when the run stops, however it stops.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Protocol

from ltr_cli.protocols.checkpoint import Checkpointer, RunState


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
