"""How a run's queries become rounds: ``protocol.sampling``.

``passes`` (the default) visits the data's queries in order, pass after pass
(:func:`ltr_cli.data.sources.stream_rounds` / :func:`~ltr_cli.data.sources.plan_rounds`).
``uniform`` draws each round's query uniformly with replacement from the data's queries, as
the click literature's online experiments do: the queries are those of one pass over the
source (its units in order, each unit's queries in order), numbered 0..N-1, and the whole
run's draws are one call ``rng.integers(0, N, size=max_rounds)`` on the run's data-order
generator before round 1 (:func:`uniform_draws`). The streamed and the planned forms make
that same call, so they give the same rounds; every round's ``pass`` is 1.

The streamed form holds the data's queries in memory (as ``shuffle`` holds a file's); the
planned form indexes the units' arrays.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from ltr_cli.data.query import Query
from ltr_cli.data.sources import MAX_PLANNED_ROUNDS, QuerySource, Segment, StreamStats, UnitArrays, plan_rounds
from ltr_cli.data.sources import stream_rounds
from ltr_cli.data.sources.rounds import all_unit_arrays
from ltr_cli.errors import LtrError


def uniform_draws(n_queries: int, rounds: int, rng: np.random.Generator) -> np.ndarray:
    """The index (0..n_queries-1) of each round's query, int64 (rounds,): one draw from
    ``rng`` for the whole run (none when there is no query)."""
    if rounds > MAX_PLANNED_ROUNDS:
        raise LtrError(f"protocol.max_rounds: {rounds:,} rounds of uniform sampling are more than the "
                       f"{MAX_PLANNED_ROUNDS:,} a run can draw; lower protocol.max_rounds")
    if n_queries == 0:
        return np.zeros(0, dtype=np.int64)
    return rng.integers(0, n_queries, size=rounds, dtype=np.int64)


def _uniform_stream(source: QuerySource, rounds: int, rng: np.random.Generator) -> Iterator[tuple[int, Query]]:
    held = [q for unit in source.units() for q in source.queries(unit)]
    for i in uniform_draws(len(held), rounds, rng).tolist():
        yield 1, held[i]


def _uniform_plan(source: QuerySource, rounds: int,
                  rng: np.random.Generator) -> tuple[list[Segment], dict[int, UnitArrays]] | None:
    arrays = all_unit_arrays(source)
    if arrays is None:
        return None
    units = list(arrays)
    sizes = np.array([len(arrays[u].qids) for u in units], dtype=np.int64)
    ends = np.cumsum(sizes)
    draws = uniform_draws(int(ends[-1]) if len(ends) else 0, rounds, rng)
    owner = np.searchsorted(ends, draws, side="right")  # the unit each draw falls in
    local = draws - (ends[owner] - sizes[owner]) if draws.size else draws
    cuts = [0, *(np.flatnonzero(np.diff(owner)) + 1).tolist(), int(draws.shape[0])]
    segments = [Segment(1, units[int(owner[a])], local[a:b].copy()) for a, b in zip(cuts[:-1], cuts[1:]) if b > a]
    return segments, arrays


def stream(source: QuerySource, protocol: Any, rng: np.random.Generator,
           stats: StreamStats | None = None) -> Iterator[tuple[int, Query]]:
    """The run's rounds ``(pass, query)`` under ``protocol`` (a ``ProtocolSpec``), one by one."""
    if getattr(protocol, "sampling", "passes") == "uniform":
        return _uniform_stream(source, protocol.max_rounds, rng)
    return stream_rounds(source, protocol.passes, protocol.shuffle, protocol.keep_probability, rng,
                         protocol.drop_last_query, stats, protocol.max_rounds)


def plan(source: QuerySource, protocol: Any, rng: np.random.Generator,
         stats: StreamStats | None = None) -> tuple[list[Segment], dict[int, UnitArrays]] | None:
    """The same rounds as :func:`stream`, planned over the units' arrays (None, nothing
    drawn, when a unit has none)."""
    if getattr(protocol, "sampling", "passes") == "uniform":
        return _uniform_plan(source, protocol.max_rounds, rng)
    return plan_rounds(source, protocol.passes, protocol.shuffle, protocol.keep_probability, rng,
                       protocol.drop_last_query, stats, protocol.max_rounds)
