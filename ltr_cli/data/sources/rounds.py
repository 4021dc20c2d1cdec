"""Passes over a source as rounds: streamed query by query (:func:`stream_rounds`), or
planned up front as query indices over the units' arrays (:func:`plan_rounds`, for the
compiled block loop), with the very same draws from the run's stream generator."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr_cli.data.query import Query
from ltr_cli.data.sources.arrays import UnitArrays
from ltr_cli.data.sources.base import QuerySource
from ltr_cli.errors import LtrError


@dataclass
class StreamStats:
    """What the stream left out so far: ``dropped_last``, the last queries of files that
    ``drop_last_query`` never used (one per file and pass)."""

    dropped_last: int = 0


def _without_last(queries: Iterator[Query], stats: StreamStats) -> Iterator[Query]:
    """The queries of one file except its last (one query of look-ahead)."""
    held = None
    for q in queries:
        if held is not None:
            yield held
        held = q
    if held is not None:
        stats.dropped_last += 1


def stream_rounds(
    source: QuerySource,
    passes: int,
    shuffle: bool,
    keep_probability: float,
    rng: np.random.Generator,
    drop_last: bool = False,
    stats: StreamStats | None = None,
    max_rounds: int | None = None,
) -> Iterator[tuple[int, Query]]:
    """Yield ``(pass, query)`` in round order, at most ``max_rounds`` of them (then the
    passes stop: nothing after round ``max_rounds`` is read or drawn).

    Each pass visits the source's units in order. ``drop_last`` leaves out the last query
    of every unit in every pass, as the authors' MATLAB loop does (counted in ``stats``),
    before anything else. ``shuffle`` permutes the queries of one unit (that unit is held
    in memory); ``keep_probability`` < 1 keeps each query of each pass independently with
    that probability (the Yahoo and Yandex scripts' subsampling). All draws come from
    ``rng``.
    """
    stats = stats if stats is not None else StreamStats()
    t = 0
    for p in range(1, passes + 1):
        for unit in source.units():
            queries: Any = source.queries(unit)
            if drop_last:
                queries = _without_last(queries, stats)
            if shuffle:
                queries = list(queries)
                queries = [queries[i] for i in rng.permutation(len(queries))]
            for q in queries:
                if keep_probability < 1.0 and rng.random() >= keep_probability:
                    continue
                yield p, q
                t += 1
                if max_rounds is not None and t >= max_rounds:
                    return


#: The most rounds a plan (:func:`plan_rounds`, 8 bytes a round) may hold: 1 GiB.
MAX_PLANNED_ROUNDS = 1 << 27


@dataclass
class Segment:
    """Consecutive rounds from one unit of one pass: ``order`` (int64) the unit's query
    indices in round order."""

    pass_no: int
    unit: int
    order: np.ndarray


def all_unit_arrays(source: QuerySource) -> dict[int, UnitArrays] | None:
    """Every unit's arrays (:meth:`QuerySource.unit_arrays`), in unit order; None when a unit
    has none (the source then streams query by query)."""
    arrays: dict[int, UnitArrays] = {}
    for unit in source.units():
        found = source.unit_arrays(unit)
        if found is None:
            return None
        arrays[unit] = found
    return arrays


def plan_rounds(
    source: QuerySource,
    passes: int,
    shuffle: bool,
    keep_probability: float,
    rng: np.random.Generator,
    drop_last: bool = False,
    stats: StreamStats | None = None,
    max_rounds: int | None = None,
) -> tuple[list[Segment], dict[int, UnitArrays]] | None:
    """The rounds :func:`stream_rounds` yields, as query indices computed up front over the
    units' arrays (for the compiled block loop), with the very same draws from ``rng`` in
    the same order: per pass and unit, the permutation (``shuffle``), then one uniform
    draw per query (``keep_probability`` < 1). The plan stops at ``max_rounds`` rounds (no
    later pass is planned or drawn); its size bound (:data:`MAX_PLANNED_ROUNDS`) is checked
    before anything is allocated, a one-line error naming the settings. None when a unit
    has no arrays (:meth:`QuerySource.unit_arrays`); then nothing is drawn."""
    stats = stats if stats is not None else StreamStats()
    arrays = all_unit_arrays(source)
    if arrays is None:
        return None
    per_pass = sum(max(len(a.qids) - drop_last, 0) for a in arrays.values())
    bound = per_pass * passes if max_rounds is None else min(per_pass * passes, max_rounds)
    if bound > MAX_PLANNED_ROUNDS:
        raise LtrError(
            f"protocol.passes: {passes} passes over {per_pass:,} queries plan {per_pass * passes:,} rounds, "
            f"more than the {MAX_PLANNED_ROUNDS:,} a run can plan"
            + (f" (protocol.max_rounds is {max_rounds:,})" if max_rounds is not None else "")
            + "; set protocol.max_rounds or fewer protocol.passes")
    segments = []
    planned = 0
    for p in range(1, passes + 1):
        for unit in source.units():
            n = len(arrays[unit].qids)
            order = np.arange(n, dtype=np.int64)
            if drop_last and n:
                order = order[:-1]
                stats.dropped_last += 1
            if shuffle:
                order = order[rng.permutation(order.shape[0])]
            if keep_probability < 1.0:
                order = order[rng.random(order.shape[0]) < keep_probability]
            if max_rounds is not None and planned + order.shape[0] >= max_rounds:
                segments.append(Segment(p, unit, order[:max_rounds - planned]))
                if drop_last:  # counted as before for the passes not planned (one query per unit and pass)
                    units = list(source.units())
                    later = units[units.index(unit) + 1:]
                    stats.dropped_last += sum(1 for u in later if len(arrays[u].qids)) + (passes - p) * sum(
                        1 for u in units if len(arrays[u].qids))
                return segments, arrays
            planned += order.shape[0]
            segments.append(Segment(p, unit, order))
        if per_pass == 0:
            break  # no query in any pass: the other passes plan nothing either
    return segments, arrays
