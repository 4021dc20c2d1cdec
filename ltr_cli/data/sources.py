"""Query sources: turn a validated dataset spec into passes over queries.

A :class:`QuerySource` knows its feature count, can iterate over its queries (files in
order, each streamed by the SVMlight reader, or a generator), and can fingerprint its
data for the manifest. Qids are namespaced by source file (``<file #>:<qid>``) when a
source has several files, because folds reuse qids by design.
"""

from __future__ import annotations

import hashlib
import os
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.data.cache import CacheInvalid
from ltr_cli.data.identity import check_unchanged, file_identity, require_regular
from ltr_cli.data.normalize import query_level
from ltr_cli.data.options import ReaderOptions
from ltr_cli.data.query import Query
from ltr_cli.data.registry import get_dataset, resolve_files
from ltr_cli.data.formats import open_dataset
from ltr_cli.data.synthetic import (
    SeparableSpec,
    ShapeSpec,
    separable_queries,
    separable_ranker,
    shaped_queries,
)
from ltr_cli.data.textio import find_group_file
from ltr_cli.errors import DatasetNotFoundError, LtrError
from ltr_cli.pathnames import tried


@dataclass
class UnitArrays:
    """One unit's queries as arrays: query ``j`` is rows ``starts[j]:ends[j]`` of ``X``
    (N, d) and ``y`` (N,) float64, named ``qids[j]``."""

    X: np.ndarray
    y: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    qids: list[str]


def _memory_budget() -> int:
    """Bytes a unit's arrays may take: a quarter of the machine's memory, at most 8 GiB
    (1 GiB when the memory size is unknown)."""
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 1 << 30
    return int(min(8 << 30, max(1 << 30, total // 4)))


ARRAY_BUDGET = _memory_budget()  # bytes: larger generated or normalised units stream query by query

# generated streams already produced in this process, by generator parameters: every learner
# and every sweep point a worker process computes on the same stream shares one copy
_GENERATED: OrderedDict[str, UnitArrays] = OrderedDict()
# a generated stream larger than this is kept as arrays only when it is read more than once
# (several passes or learners, or a sweep worker, which sets KEEP_GENERATED): building the
# arrays costs about as much as generating the stream again (memory is touched page by page)
SMALL_STREAM = 256 << 20
KEEP_GENERATED = False


def _generated_arrays(source: "QuerySource") -> UnitArrays | None:
    """The source's generated stream as arrays, produced once per process (read-only);
    older streams are dropped when the kept ones would exceed :data:`ARRAY_BUDGET`."""
    key = repr(sorted((source.generator_params or {}).items()))
    if key in _GENERATED:
        _GENERATED.move_to_end(key)
        return _GENERATED[key]
    params = source.generator_params or {}
    expected = _expected_docs(params)
    if expected * source.n_features * 8 > SMALL_STREAM and source.reads <= 1 and not KEEP_GENERATED:
        return None  # read once: streaming it is cheaper than keeping it
    found = _stacked(source.generator(), ARRAY_BUDGET, expected)
    if found is None:
        return None
    found.X.flags.writeable = False
    found.y.flags.writeable = False
    _GENERATED[key] = found
    while sum(u.X.nbytes for u in _GENERATED.values()) > ARRAY_BUDGET and len(_GENERATED) > 1:
        _GENERATED.popitem(last=False)
    return found


def _stacked(queries: Iterator[Query], budget: int, expected_docs: int = 0) -> UnitArrays | None:
    """Generated queries as one unit's arrays, or None past ``budget`` bytes of rows. Rows
    are written into one buffer sized for ``expected_docs`` documents (grown by half when
    the stream has more), so the stream is never held twice."""
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


def _expected_docs(params: dict[str, Any]) -> int:
    """Documents a generated stream will about have (a buffer size, not a promise)."""
    queries = int(params.get("queries") or 0)
    if params.get("kind") == "separable":
        return queries * int(params.get("docs") or 0)
    per = params.get("docs_per_query") or get_dataset(str(params.get("like"))).docs_per_query
    return int(queries * float(per) * 1.02) + 64


@dataclass
class QuerySource:
    """Where the queries of a run come from."""

    n_features: int
    description: str
    files: list[Path]
    name: str = "files"  # registry name, "separable-<variant>", "shaped:<name>" or "files"
    reader_options: ReaderOptions | None = None
    generator: Any = None  # callable () -> Iterator[Query] for generated data
    generator_params: dict[str, Any] | None = None
    n_queries: int | None = None  # queries per pass, when known without reading (generated data)
    ranker: np.ndarray | None = None  # the generating ranker of a separable stream
    group_files: list[Path] | None = None  # one per file, for qid source "group"
    storage: str = "float64"  # dtype of X for file data
    cache_dir: Path | None = None  # binary cache of parsed files (None: parse every time)
    normalize: str = "none"  # "query-level": each query's rows scaled to [0, 1] per feature
    _opened: dict[int, Any] = field(default_factory=dict, repr=False)  # unit -> open CachedFile
    _identities: dict[Path, dict[str, Any]] = field(default_factory=dict, repr=False)  # uncached reads
    _arrays: dict[int, UnitArrays | None] = field(default_factory=dict, repr=False)  # unit -> block-loop arrays
    reads: int = 1  # how many times this process will read the stream (passes x learners)

    def units(self) -> list[int]:
        """Indices of the stream's units (files, or the single generator)."""
        return list(range(len(self.files))) if self.files else [0]

    def _options(self, unit: int) -> ReaderOptions:
        """The reader options of one file. A group file the reader would pick up next to
        it (``<file>.query`` / ``.group``, qid source auto or group) is named explicitly,
        so it is part of the cache key and of the data identity."""
        options = self.reader_options
        assert options is not None
        if self.group_files:
            return replace(options, group_file=self.group_files[unit], qid_source="group")
        if options.group_file is None and options.qid_source in ("auto", "group"):
            implicit = find_group_file(self.files[unit])
            if implicit is not None:
                options = replace(options, group_file=implicit)
        return options

    def _watched(self, unit: int) -> list[Path]:
        """The files one unit reads: the data file and its group file, if any."""
        group = self._options(unit).group_file
        return [self.files[unit]] + ([Path(group)] if group is not None else [])

    def _cached(self, unit: int):
        """The unit's cache, built or validated once per source (every learner and pass
        of a run then maps the same files)."""
        from ltr_cli.data.cache import open_cached

        assert self.cache_dir is not None
        if unit not in self._opened:
            self._opened[unit] = open_cached(self.files[unit], self._options(unit), self.cache_dir, self.storage)
        return self._opened[unit]

    def unit_arrays(self, unit: int) -> UnitArrays | None:
        """The unit's queries as arrays for the compiled block loop, built once per source
        (every learner of a run shares them): a binary cache mapped as is, or with each
        query normalised (``query-level``, a copy), or a generated stream produced once per
        process (shared by the runs of a sweep's worker too).
        None (the unit then streams query by query) without a cache, or when the arrays
        would take more than :data:`ARRAY_BUDGET` bytes of memory."""
        if unit not in self._arrays:
            self._arrays[unit] = self._build_arrays(unit)
        return self._arrays[unit]

    def _build_arrays(self, unit: int) -> UnitArrays | None:
        if not self.files:
            return _generated_arrays(self)
        if self.cache_dir is None:
            return None
        cached = self._cached(unit)
        try:
            X, y = cached.arrays()
        except CacheInvalid as exc:
            import shutil

            shutil.rmtree(cached.directory, ignore_errors=True)
            raise LtrError(f"{cached.directory}: the cache is corrupt ({exc}); it was removed, run "
                           "again to rebuild it") from None
        offsets = np.asarray(cached.offsets, dtype=np.int64)
        starts, ends = offsets[:-1].copy(), offsets[1:].copy()
        if self.normalize == "query-level":
            if X.nbytes > ARRAY_BUDGET:
                return None
            normalized = np.empty_like(X)
            for a, b in zip(starts.tolist(), ends.tolist()):  # as queries() does, query by query
                normalized[a:b] = query_level(X[a:b]).astype(X.dtype, copy=False)
            X = normalized
        elif self.normalize != "none":
            return None
        prefix = f"{unit + 1}:" if len(self.files) > 1 else ""
        qids = [prefix + q for q in cached.qids] if prefix else list(cached.qids)
        return UnitArrays(X, y, starts, ends, qids)

    def queries(self, unit: int) -> Iterator[Query]:
        """The unit's queries in file order: from its validated cache, or parsed. A parsed
        file (and its group file) must keep the identity recorded for the run until the
        pass over it ends, else :class:`~ltr_cli.data.identity.DataChanged`."""
        if not self.files:
            yield from self.generator()
            return
        watched: list[Path] = []
        if self.cache_dir is not None:
            cached = self._cached(unit)
            stream = self._checked_cache_stream(cached)
        else:
            watched = self._watched(unit)
            for p in watched:
                self._file_identity(p)
            stream = open_dataset(self.files[unit], self._options(unit)).dense_queries(np.dtype(self.storage).type)
        prefix = f"{unit + 1}:" if len(self.files) > 1 else ""
        for q in stream:
            if self.normalize == "query-level":
                q = Query(qid=q.qid, X=query_level(q.X).astype(q.X.dtype, copy=False), y=q.y, line=q.line)
            yield Query(qid=prefix + q.qid, X=q.X, y=q.y, line=q.line) if prefix else q
        for p in watched:
            check_unchanged(p, self._identities[p]["stat"])

    @staticmethod
    def _checked_cache_stream(cached: Any) -> Iterator[Query]:
        """A cache's queries; a block that fails its checksum while mapped removes the
        cache and ends the run with one line."""
        try:
            yield from cached.queries()
        except CacheInvalid as exc:
            import shutil

            shutil.rmtree(cached.directory, ignore_errors=True)
            raise LtrError(f"{cached.directory}: the cache is corrupt ({exc}); it was removed, run "
                           "again to rebuild it") from None

    def _file_identity(self, path: Path) -> dict[str, Any]:
        if path not in self._identities:
            self._identities[path] = file_identity(path)
        return self._identities[path]

    def queries_per_pass(self) -> int:
        """Queries in one pass: known for generated data; for files from the cache (built
        now if missing, so the stream then reads it) or one pass of the reader."""
        if self.n_queries is None:
            total = 0
            for unit in self.units():
                if self.cache_dir is not None:
                    total += self._cached(unit).n_queries
                else:
                    total += open_dataset(self.files[unit], self._options(unit)).count_queries()
            self.n_queries = total
        return self.n_queries

    def identity(self) -> dict[str, Any]:
        """What the run read: for files, each file's (and group file's) path, size and
        content digest with its stat key (:mod:`ltr_cli.data.identity`), from the cache
        when there is one; a group file's entry follows its data file's and says
        ``"group": true``. For generated data, the generator's parameters."""
        if self.files:
            ids = []
            for unit in self.units():
                if self.cache_dir is not None:
                    meta = self._cached(unit).meta
                    found = [meta["source"]] + ([meta["group_source"]] if "group_source" in meta else [])
                else:
                    found = [self._file_identity(p) for p in self._watched(unit)]
                ids += [found[0]] + [{**group, "group": True} for group in found[1:]]
            return {"files": ids}
        params = self.generator_params or {}
        digest = hashlib.sha256(repr(sorted(params.items())).encode()).hexdigest()
        return {"generator": self.generator_params, "sha256": digest}


def open_source(spec: Any, seed: int, cache_dir: Path | None = None) -> QuerySource:
    """Build the query source of a dataset spec (checks that files exist); file data is
    cached in ``cache_dir`` when given.

    ``spec`` is a validated :data:`ltr_cli.config.experiment.DatasetSpec`, told apart by its ``kind``
    discriminator (``separable``, ``shaped``, ``registry``, ``files``): the data layer
    does not import the config layer above it."""
    kind = getattr(spec, "kind", None)
    if kind == "separable":
        features = spec.features or (10 if spec.variant == "authors" else 20)
        sep = SeparableSpec(spec.variant, spec.queries, spec.docs, features, spec.margin,
                            spec.seed if spec.seed is not None else seed)
        return QuerySource(features, f"separable ({spec.variant})", [], f"separable-{spec.variant}",
                           generator=lambda: separable_queries(sep),
                           generator_params={"kind": "separable", **sep.__dict__},
                           n_queries=spec.queries, ranker=separable_ranker(sep))
    if kind == "shaped":
        info = get_dataset(spec.like)
        shape = ShapeSpec(spec.queries, spec.docs_per_query,
                          seed=spec.seed if spec.seed is not None else seed)
        return QuerySource(info.n_features, f"shaped like {info.name}", [], f"shaped:{info.name}",
                           generator=lambda: shaped_queries(info, shape),
                           generator_params={"kind": "shaped", "like": info.name, **shape.__dict__},
                           n_queries=spec.queries)
    if kind == "registry":
        info = get_dataset(spec.name)
        files = resolve_files(info, spec.root, spec.split, spec.folds)
        for p in files:
            require_regular(p)
        opts = ReaderOptions(n_features=info.n_features,
                             index_base=info.index_base if spec.index_base is None else spec.index_base,
                             qid_source=info.qid_source if spec.qid is None else spec.qid,
                             null_value=spec.null_value, split_qids=spec.split_qids, **spec.limits())
        return QuerySource(info.n_features, f"{info.name} {spec.split}", files, info.name, opts,
                           storage=spec.storage, cache_dir=cache_dir, normalize=spec.normalize)
    if kind == "files":
        for p in list(spec.files) + list(spec.group_files or []):
            if not p.exists():
                raise DatasetNotFoundError(f"dataset: {p} does not exist (tried {tried(p)})")
            require_regular(p)
        opts = ReaderOptions(n_features=spec.features, index_base=spec.index_base,
                             qid_source=spec.qid, null_value=spec.null_value,
                             split_qids=spec.split_qids, **spec.limits())
        name = spec.name or "files"
        return QuerySource(spec.features, f"{name} files" if spec.name else "files", list(spec.files), name, opts,
                           group_files=list(spec.group_files) if spec.group_files else None,
                           storage=spec.storage, cache_dir=cache_dir, normalize=spec.normalize)
    raise TypeError(f"unsupported dataset spec {type(spec).__name__}")


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
    """Consecutive rounds from one unit of one pass: ``order`` the unit's query indices in
    round order."""

    pass_no: int
    unit: int
    order: np.ndarray


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
    arrays: dict[int, UnitArrays] = {}
    for unit in source.units():
        found = source.unit_arrays(unit)
        if found is None:
            return None
        arrays[unit] = found
    per_pass = sum(max(len(a.qids) - drop_last, 0) for a in arrays.values())
    bound = per_pass * passes if max_rounds is None else min(per_pass * passes, max_rounds)
    if bound > MAX_PLANNED_ROUNDS:
        from ltr_cli.errors import LtrError

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
