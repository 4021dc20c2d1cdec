"""A unit's queries as arrays, for the compiled block loop, and the memory they may take.

:class:`UnitArrays` is what :meth:`~ltr_cli.data.sources.base.QuerySource.unit_arrays`
returns and what :func:`~ltr_cli.data.sources.rounds.plan_rounds` indexes. The budget
(:data:`ARRAY_BUDGET`) is read at call time through :func:`array_budget`, so a test or a
caller that sets ``arrays.ARRAY_BUDGET`` changes it for every kind of source.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from ltr_cli.data.paging import MappedPages
from ltr_cli.data.query import Query


@dataclass
class UnitArrays:
    """One unit's queries as arrays: query ``j`` is rows ``starts[j]:ends[j]`` of ``X``
    (N, d) and ``y`` (N,) float64, named ``qids[j]``."""

    X: np.ndarray
    y: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    qids: list[str]
    pages: MappedPages | None = None  # X's map, when X is one: report the rows read through it

    def rounds_within(self, block: np.ndarray) -> int:
        """How many of the rounds ``block`` (query indices) to take in one go: all of them,
        or, when X is a map, the most whose rows fit in one hand-back interval (at least
        one), so that a block never holds more than that of the map resident."""
        if self.pages is None or block.shape[0] <= 1:
            return int(block.shape[0])
        row_bytes = self.X.shape[1] * self.X.itemsize
        sizes = np.cumsum(self.ends[block] - self.starts[block]) * row_bytes
        return max(1, int(np.searchsorted(sizes, self.pages.limit, side="right")))

    def read(self, block: np.ndarray) -> None:
        """The rows of the queries ``block`` were read (see :attr:`pages`)."""
        if self.pages is not None:
            self.pages.read(int((self.ends[block] - self.starts[block]).sum()) * self.X.shape[1] * self.X.itemsize)


def _memory_budget() -> int:
    """Bytes a unit's arrays may take: a quarter of the machine's memory, at most 8 GiB
    (1 GiB when the memory size is unknown)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 30
    return int(min(8 << 30, max(1 << 30, total // 4)))


ARRAY_BUDGET = _memory_budget()  # bytes: larger generated or normalised units stream query by query


def array_budget() -> int:
    """The bytes a unit's arrays may take now (:data:`ARRAY_BUDGET`)."""
    return ARRAY_BUDGET


def stack_queries(queries: Iterator[Query], budget: int, expected_docs: int = 0) -> UnitArrays | None:
    """Generated queries as one unit's arrays, or None past ``budget`` bytes of rows. Rows
    are written into one buffer sized for ``expected_docs`` documents (grown by half when
    the stream has more), so the stream is never held twice. ``X`` keeps the queries'
    dtype; ``starts`` and ``ends`` are int64."""
    X: np.ndarray | None = None
    y = np.empty(0)
    lengths: list[int] = []
    qids: list[str] = []
    n = 0
    for q in queries:
        m = q.X.shape[0]
        if X is None:
            X = np.empty((max(expected_docs, m, 1), q.X.shape[1]), dtype=q.X.dtype)
            y = np.empty(X.shape[0])
        if n + m > X.shape[0]:
            rows = max(n + m, X.shape[0] + X.shape[0] // 2)
            if rows * X.shape[1] * X.itemsize > budget:
                return None
            grown = np.empty((rows, X.shape[1]), dtype=X.dtype)
            grown[:n] = X[:n]
            X = grown
            y = np.concatenate([y[:n], np.empty(rows - n)])
        X[n:n + m] = q.X
        y[n:n + m] = q.y
        n += m
        lengths.append(m)
        qids.append(q.qid)
        if n * X.shape[1] * X.itemsize > budget:
            return None
    if X is None:
        return None
    ends = np.cumsum(np.asarray(lengths, dtype=np.int64))
    return UnitArrays(X[:n], y[:n], ends - np.asarray(lengths, dtype=np.int64), ends, qids)
