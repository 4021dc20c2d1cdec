"""Regret against the best fixed weights in hindsight (top-k paper, Theorem 4.1), for the
runs of a config with ``protocol.log_regret: true``.

Which learners: those that descend a surrogate and say which (``regret_surrogate()``:
RTop-kF, OGD and online ListNet); others log nothing more and their manifest says why.

**Per round**, column ``surrogate``: ``phi(X_t w_t, R_t)``, the learner's surrogate at the
scores of its weights before its update, on the full labels (the protocol has them even
when the learner sees only the top k). It is computed in Python beside the round loop, by
the surrogate functions of :mod:`ltr_cli.surrogates`: a run that logs regret takes the
round-by-round path (its learner's compiled round kernels still run), because the
compiled block loop does not return the value. On the rounds where RTop-kF shows a random
permutation the value is still that of its scores (the term Theorem 4.1's proof bounds,
Eq. 5; exploring adds O(gamma T) to the loss of what was shown).

**After the run**, column ``regret``: ``sum_{s<=t} phi_s - sum_{s<=t} phi(X_s w*, R_s)`` with
``w* = argmin_{||w|| <= U} sum_{t<=T} phi(X_t w, R_t)`` over the whole run, U the learner's
projection radius (:mod:`ltr_cli.learners.online.hindsight`). At t = T it is the regret
of Theorem 4.1; before T it is the regret against that same w* (at most the regret
against the best weights of the first t rounds). The stream is rebuilt from the run's
seed with the same draws (its planned query order when its data are arrays, else streamed
again, distinct queries found by their content) and checked against the run's qids. A
learner without a radius has no comparator ball: only ``surrogate`` is logged.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr_cli.data.sources import QuerySource
from ltr_cli.protocols import sampling
from ltr_cli.data.sources.arrays import array_budget
from ltr_cli.errors import LtrError
from ltr_cli.learners.online.base import LossSpec
from ltr_cli.learners.online.hindsight import (
    Hindsight,
    Progress,
    QueryBlock,
    best_in_hindsight,
    query_values,
    surrogate_value,
)
from ltr_cli.core.round_log import REGRET, SURROGATE

if TYPE_CHECKING:
    import pandas as pd

PER_ROUND = ("the learner's surrogate at its scores X_t w_t before its update, on the full labels; "
             "computed in Python beside the round loop (ltr_cli.surrogates), its time counted in "
             "wall_seconds: the run took the round-by-round path, as the compiled block loop does not "
             "return it")
COMPARATOR = ("w* = argmin over ||w|| <= U of the run's cumulative surrogate; regret[t] = "
              "sum_{s<=t} surrogate[s] - sum_{s<=t} phi(X_s w*, R_s) (at t = T: Theorem 4.1's regret)")


def regret_loss(learner: Any, log_regret: bool) -> LossSpec | None:
    """The surrogate whose regret a run of ``learner`` logs (None: it logs none)."""
    method = getattr(learner, "regret_surrogate", None) if log_regret else None
    return method() if method is not None else None


def round_surrogate(learner: Any, loss: LossSpec) -> Callable[[np.ndarray, np.ndarray], float]:
    """``value(X, y)``: the learner's surrogate at its current scores (call it before its
    update)."""
    def value(X: np.ndarray, y: np.ndarray) -> float:
        with np.errstate(over="ignore", invalid="ignore"):  # NaN weights (authors' numerics): NaN
            return surrogate_value(loss, X @ learner.weights, y)

    return value


def not_logged(learner: Any) -> dict[str, Any]:
    """The manifest's regret entry of a learner that logs none."""
    return {"logged": False, "reason": f"{type(learner).__name__} descends no surrogate it names "
            "(regret_surrogate): nothing to compare with"}


class _Stream:
    """The run's rounds as query blocks: round t is query ``query[t]`` of block ``block[t]``."""

    def __init__(self, blocks: list[QueryBlock], block: np.ndarray, query: np.ndarray, qids: list[str], how: str):
        self.blocks, self.block, self.query, self.qids, self.how = blocks, block, query, qids, how


def _planned(source: QuerySource, protocol: Any, rng: np.random.Generator) -> _Stream | None:
    planned = sampling.plan(source, protocol, rng)
    if planned is None:
        return None
    segments, arrays = planned
    units = list(arrays)
    counts = {u: np.zeros(len(arrays[u].qids), dtype=np.int64) for u in units}
    for seg in segments:
        np.add.at(counts[seg.unit], seg.order, 1)
    blocks = [QueryBlock(arrays[u].X, arrays[u].y, arrays[u].starts, arrays[u].ends, counts[u]) for u in units]
    index = {u: i for i, u in enumerate(units)}
    block = np.concatenate([np.full(seg.order.shape[0], index[seg.unit]) for seg in segments] or [np.zeros(0)])
    query = np.concatenate([seg.order for seg in segments] or [np.zeros(0)])
    qids = [arrays[seg.unit].qids[q] for seg in segments for q in seg.order.tolist()]
    return _Stream(blocks, block.astype(np.int64), query.astype(np.int64), qids, "planned query order over the "
                   "data's arrays, distinct queries counted")


def _streamed(source: QuerySource, protocol: Any, rng: np.random.Generator) -> _Stream:
    seen: dict[bytes, int] = {}
    Xs: list[np.ndarray] = []
    ys: list[np.ndarray] = []
    counts: list[int] = []
    query: list[int] = []
    qids: list[str] = []
    held = 0
    for _, q in sampling.stream(source, protocol, rng):
        X, y = np.ascontiguousarray(q.X), np.ascontiguousarray(q.y, dtype=np.float64)
        key = hashlib.sha256(repr(X.shape).encode() + X.tobytes() + y.tobytes()).digest()
        if key not in seen:
            held += X.nbytes
            if held > array_budget():
                raise LtrError(f"protocol.log_regret: the stream's distinct queries take more than "
                               f"{array_budget() >> 20} MiB; cache the data (cache.enabled: true) so the regret "
                               "is computed over the memory-mapped cache")
            seen[key] = len(Xs)
            Xs.append(X)
            ys.append(y)
            counts.append(0)
        counts[seen[key]] += 1
        query.append(seen[key])
        qids.append(q.qid)
    lengths = np.array([x.shape[0] for x in Xs], dtype=np.int64)
    ends = np.cumsum(lengths)
    d = source.n_features
    block = QueryBlock(np.vstack(Xs) if Xs else np.zeros((0, d)), np.concatenate(ys) if ys else np.zeros(0),
                       ends - lengths, ends, np.array(counts, dtype=np.int64))
    n = len(query)
    return _Stream([block], np.zeros(n, dtype=np.int64), np.array(query, dtype=np.int64), qids,
                   "streamed again, distinct queries found by their content")


def rebuild_stream(source: QuerySource, protocol: Any, rng: np.random.Generator, rounds: pd.DataFrame) -> _Stream:
    """The run's rounds rebuilt with ``rng``, a fresh generator of the run's stream seed (the
    same draws), checked against the run's qids."""
    state = rng.bit_generator.state
    stream = _planned(source, protocol, rng)
    if stream is None:
        rng.bit_generator.state = state  # nothing was drawn, but start from the seed regardless
        stream = _streamed(source, protocol, rng)
    if stream.qids != rounds["qid"].astype(str).tolist():
        raise LtrError("protocol.log_regret: the stream rebuilt from the seed is not the run's (its queries "
                       "differ); the data changed during the run?")
    return stream


#: comparators found in this process (the runs of one config finish in one process):
#: problem key -> the comparator (the same problem again: reused), and key without the
#: round counts -> the last comparator's weights (a warm start); the last ``_KEEP`` of each
_SOLVED: OrderedDict[bytes, Hindsight] = OrderedDict()
_WARM: OrderedDict[bytes, np.ndarray] = OrderedDict()
_KEEP = 16
_HASHED_BYTES = 1 << 26  # a block's X up to this size is hashed whole
REUSED = ("reused: the comparator of an earlier run in this process on the same data, round counts, surrogate "
          "and radius (the same problem)")
WARM = ("warm start: the comparator of an earlier run in this process on the same data, surrogate and radius "
        "(other round counts)")


def _keys(loss: LossSpec, stream: _Stream, n_features: int, data_key: str) -> tuple[bytes, bytes]:
    """The problem's key and its key without the round counts."""
    h = hashlib.sha256(repr((loss.surrogate, sorted(loss.params.items()), loss.radius, loss.convex, n_features,
                             data_key, [b.X.shape for b in stream.blocks])).encode())
    for b in stream.blocks:  # the arrays themselves (a strided sample of a large X's rows), beside the identity
        step = max(1, b.X.nbytes // _HASHED_BYTES + 1)
        h.update(str(b.X.dtype).encode() + np.ascontiguousarray(b.X[::step]).tobytes())
        h.update(np.ascontiguousarray(b.y, dtype=np.float64).tobytes())
        h.update(np.ascontiguousarray(b.starts).tobytes() + np.ascontiguousarray(b.ends).tobytes())
    warm = h.copy()
    for b in stream.blocks:
        h.update(np.ascontiguousarray(b.counts).tobytes())
    return h.digest(), warm.digest()


def _remember(store: OrderedDict, key: bytes, value: Any) -> None:
    store[key] = value
    store.move_to_end(key)
    while len(store) > _KEEP:
        store.popitem(last=False)


def find_comparator(loss: LossSpec, stream: _Stream, n_features: int, progress: Progress | None = None,
               data_key: str = "") -> tuple[Hindsight, str]:
    """The best fixed weights over ``stream`` and how they were started: solved from 0, from a
    warm start, or reused. ``data_key`` identifies the data (its identity in the manifest);
    empty: nothing is reused or kept."""
    if not data_key:
        return best_in_hindsight(loss, stream.blocks, n_features, progress=progress), "w = 0"
    key, warm_key = _keys(loss, stream, n_features, data_key)
    if key in _SOLVED:
        return _SOLVED[key], REUSED
    start = _WARM.get(warm_key)
    found = best_in_hindsight(loss, stream.blocks, n_features, start=start, progress=progress)
    _remember(_SOLVED, key, found)
    _remember(_WARM, warm_key, found.w)
    return found, ("w = 0" if start is None else WARM)


def regret(loss: LossSpec, stream: _Stream, surrogates: np.ndarray, n_features: int,
           progress: Progress | None = None, data_key: str = ""
           ) -> tuple[np.ndarray | None, dict[str, Any], dict[str, Any]]:
    """The regret column (None without a radius), the manifest's record of how it was
    computed, and the summary's numbers. ``progress`` and ``data_key``: as
    :func:`find_comparator` takes them."""
    record: dict[str, Any] = {"logged": True, "surrogate": loss.surrogate, "params": loss.params,
                              "radius": loss.radius, "convex": loss.convex, "per_round": PER_ROUND}
    total = float(np.sum(surrogates))
    if loss.radius is None:
        record["comparator"] = None
        record["reason"] = "no projection radius U: no ball to take the best fixed weights from"
        return None, record, {"learner_cumulative_surrogate": total, "regret": None}
    found, start = find_comparator(loss, stream, n_features, progress, data_key)
    values = [query_values(loss, b, found.w) for b in stream.blocks]
    offsets = np.cumsum([0] + [v.shape[0] for v in values[:-1]])
    comparator = np.concatenate(values)[offsets[stream.block] + stream.query] if values else np.zeros(0)
    column = np.cumsum(surrogates) - np.cumsum(comparator)
    record.update({"comparator": COMPARATOR, "stream": stream.how, **found.describe(), "start": start,
                   "note": ("" if loss.convex else "not convex: w* is the stationary point the method reached, "
                            "not necessarily the minimum, so the regret may be overstated")})
    final = float(column[-1]) if column.size else 0.0
    summary = {"learner_cumulative_surrogate": total, "best_in_hindsight": found.value, "regret": final,
               "regret_at_most": (total - found.lower_bound) if found.lower_bound is not None else None,
               "optimizer_gap": found.gap, "converged": found.converged}
    return column, record, summary


def with_regret(rounds: pd.DataFrame, column: np.ndarray | None) -> pd.DataFrame:
    """The round table with the regret column after ``surrogate`` (unchanged without one)."""
    if column is None:
        return rounds
    out = rounds.copy()
    out.insert(list(out.columns).index(SURROGATE) + 1, REGRET, column.astype(np.float64))
    return out
