"""A click log's sessions as a rectangular grid, and their seeded split.

A grid holds S sessions of at most K shown documents: ``pair`` int64 (S, K), the index of the
shown (query, document) pair among the log's pairs; ``click`` bool (S, K); ``valid`` bool
(S, K), True at the positions a session shows (1..its length; the rest is padding, with pair
0 and no click); ``length`` int64 (S,). Column r is position r + 1. ``last`` is the 0-based
rank of a session's last click, its length when it has none (PyClick's convention: a session
without clicks counts as examined to its end); ``first`` the rank of its first click, its
length when it has none.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ltr_cli.errors import LtrError


@dataclass(frozen=True)
class Pairs:
    """The log's distinct (query, document) pairs: ``query`` int32 (P,) (an index into
    ``qids``), ``doc`` int32 (P,)."""

    query: np.ndarray
    doc: np.ndarray
    qids: list[str]

    @property
    def size(self) -> int:
        return len(self.query)


@dataclass(frozen=True)
class Grid:
    """Sessions on a grid (module docstring)."""

    pair: np.ndarray
    click: np.ndarray
    valid: np.ndarray
    length: np.ndarray

    @property
    def sessions(self) -> int:
        return self.pair.shape[0]

    @property
    def ranks(self) -> int:
        return self.pair.shape[1]

    @property
    def last(self) -> np.ndarray:
        clicked = self.click.any(axis=1)
        back = self.ranks - 1 - np.argmax(self.click[:, ::-1], axis=1)
        return np.where(clicked, back, self.length)

    @property
    def first(self) -> np.ndarray:
        return np.where(self.click.any(axis=1), np.argmax(self.click, axis=1), self.length)

    def take(self, rows: np.ndarray) -> Grid:
        """The sessions ``rows`` (int indices), in that order."""
        return Grid(self.pair[rows], self.click[rows], self.valid[rows], self.length[rows])


def build_grid(session: np.ndarray, query: np.ndarray, doc: np.ndarray, position: np.ndarray,
               click: np.ndarray, qids: list[str]) -> tuple[Grid, Pairs]:
    """The grid of a log's rows (one per shown document, in session order, positions 1, 2,
    ... within a session, as :func:`ltr_cli.clicklog.logfile.read_log` checks them) and its
    pairs."""
    if len(session) == 0:
        raise LtrError("click log: no sessions to fit a click model on")
    starts = np.ones(len(session), dtype=bool)
    starts[1:] = session[1:] != session[:-1]
    row = np.cumsum(starts) - 1
    rank = position.astype(np.int64) - 1
    key = query.astype(np.int64) * (int(doc.max()) + 1) + doc.astype(np.int64)
    uniq, inverse = np.unique(key, return_inverse=True)
    first_of = np.zeros(len(uniq), dtype=np.int64)
    first_of[inverse[::-1]] = np.arange(len(key))[::-1]
    pairs = Pairs(query[first_of].astype(np.int32), doc[first_of].astype(np.int32), list(qids))
    s, k = int(row[-1]) + 1, int(rank.max()) + 1
    grid = Grid(np.zeros((s, k), np.int64), np.zeros((s, k), bool), np.zeros((s, k), bool),
                np.bincount(row, minlength=s).astype(np.int64))
    grid.pair[row, rank] = inverse
    grid.click[row, rank] = click.astype(bool)
    grid.valid[row, rank] = True
    return grid, pairs


def split(grid: Grid, heldout: float, seed: int) -> tuple[Grid, Grid | None]:
    """(training, held-out) sessions: a share ``heldout`` in [0, 1) of the sessions, drawn
    by a permutation of ``numpy.random.default_rng(seed)``, is held out (None when none is);
    both keep the log's order of sessions."""
    if not 0.0 <= heldout < 1.0:
        raise LtrError(f"--heldout {heldout}: give the share of sessions to hold out, in [0, 1)")
    held = int(round(heldout * grid.sessions))
    if held == 0:
        return grid, None
    if held >= grid.sessions:
        raise LtrError(f"--heldout {heldout}: leaves no session of {grid.sessions} to fit on")
    order = np.random.default_rng(seed).permutation(grid.sessions)
    return grid.take(np.sort(order[held:])), grid.take(np.sort(order[:held]))
