"""Files as a query source: registry datasets and explicit files, each file one unit, read
through :func:`ltr_cli.data.formats.open_dataset` (SVMlight/LETOR text, the Parquet table,
plugin formats) or through its binary cache (:mod:`ltr_cli.data.cache`).

Qids are namespaced by file (``<file #>:<qid>``, 1-based) when a source has several files,
because folds reuse qids by design. A file read without the cache must keep the identity
(:mod:`ltr_cli.data.identity`) recorded for the run until the pass over it ends.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from ltr_cli.data.cache import CacheInvalid
from ltr_cli.data.formats import open_dataset
from ltr_cli.data.identity import check_unchanged, file_identity, require_regular
from ltr_cli.data.provenance import marked
from ltr_cli.data.normalize import query_level
from ltr_cli.data.options import ReaderOptions
from ltr_cli.data.query import Query
from ltr_cli.data.registry import get_dataset, resolve_files
from ltr_cli.data.sources.arrays import UnitArrays, array_budget
from ltr_cli.data.sources.kinds import register_kind
from ltr_cli.data.textio import MAGIC, find_group_file
from ltr_cli.errors import DatasetNotFoundError, LtrError
from ltr_cli.pathnames import tried


SCANNER_FROM_BYTES = 16 << 20


SCANNER = "ltr_cli.data.fastscan:scan_block"


def scanner_pays(paths: list[Path]) -> bool:
    """Whether the compiled scanner reads ``paths`` (a source's files) sooner than the
    reference parser. Built ahead of time (:mod:`ltr_cli.kernels.ahead`), it always does.
    Otherwise its first use in a process costs loading numba and its kernel, about 0.5 s of
    CPU, after which it reads about 190 MB/s against the reference parser's 26 MB/s:
    plain-text files of less than :data:`SCANNER_FROM_BYTES` (16 MiB) in all are read
    sooner by the reference parser, unless numba's scanner is loaded already. Both give the
    same queries. A compressed file, or one that cannot be read here (the reader then says
    why), leaves them to the scanner."""
    import sys

    from ltr_cli.kernels import ahead

    if "ltr_cli.data.fastscan" in sys.modules or ahead.available(SCANNER):
        return True
    total = 0
    for path in paths:
        try:
            total += path.stat().st_size
            with open(path, "rb") as fh:
                head = fh.read(6)
        except OSError:
            return True
        if total >= SCANNER_FROM_BYTES or any(head.startswith(magic) for magic in MAGIC):
            return True
    return False


@dataclass
class FileSource:
    """Labelled files as a :class:`~ltr_cli.data.sources.base.QuerySource`: unit ``i`` is
    ``files[i]``; its queries have ``X`` (m, n_features) of dtype ``storage``, normalised as
    ``normalize`` says (``query-level``: each query's rows scaled to [0, 1] per feature;
    ``zscore`` is fitted and applied by the protocol)."""

    n_features: int
    description: str
    name: str  # the registry name, or "files"
    files: list[Path]
    reader_options: ReaderOptions
    group_files: list[Path] | None = None  # one per file, for qid source "group"
    storage: str = "float64"  # dtype of X
    cache_dir: Path | None = None  # binary cache of parsed files (None: parse every time)
    normalize: str = "none"  # "none", "query-level" or "zscore"
    n_queries: int | None = None  # queries per pass, once queries_per_pass() counted them
    reads: int = 1  # how many times this process will read the stream (unused for files)
    _opened: dict[int, Any] = field(default_factory=dict, repr=False)  # unit -> open CachedFile
    _identities: dict[Path, dict[str, Any]] = field(default_factory=dict, repr=False)  # uncached reads
    _arrays: dict[int, UnitArrays | None] = field(default_factory=dict, repr=False)  # unit -> block-loop arrays
    _scanner: bool | None = field(default=None, repr=False)  # scanner_pays(files), once asked

    def _scanner_pays(self) -> bool:
        """:func:`scanner_pays` for this source's files, decided once."""
        if self._scanner is None:
            self._scanner = scanner_pays(self.files)
        return self._scanner

    @property
    def ranker(self) -> None:
        """Files have no generating ranker."""
        return None

    def units(self) -> list[int]:
        """Indices of the files, in order."""
        return list(range(len(self.files)))

    def unit_options(self, unit: int) -> ReaderOptions:
        """The reader options of one file. A group file the reader would pick up next to
        it (``<file>.query`` / ``.group``, qid source auto or group) is named explicitly,
        so it is part of the cache key and of the data identity. Plain-text files small in
        all are read by the reference parser when the scanner is not built ahead
        (:func:`scanner_pays`)."""
        options = self.reader_options
        if options.engine == "auto" and not self._scanner_pays():
            options = replace(options, engine="reference")
        if self.group_files:
            return replace(options, group_file=self.group_files[unit], qid_source="group")
        if options.group_file is None and options.qid_source in ("auto", "group"):
            implicit = find_group_file(self.files[unit])
            if implicit is not None:
                options = replace(options, group_file=implicit)
        return options

    def _watched(self, unit: int) -> list[Path]:
        """The files one unit reads: the data file and its group file, if any."""
        group = self.unit_options(unit).group_file
        return [self.files[unit]] + ([Path(group)] if group is not None else [])

    def _prefix(self, unit: int) -> str:
        """``<unit + 1>:`` before every qid when the source has several files, else empty."""
        return f"{unit + 1}:" if len(self.files) > 1 else ""

    def _cached(self, unit: int) -> Any:
        """The unit's cache, built or validated once per source (every learner and pass
        of a run then maps the same files)."""
        from ltr_cli.data.cache import open_cached

        assert self.cache_dir is not None
        if unit not in self._opened:
            self._opened[unit] = open_cached(self.files[unit], self.unit_options(unit), self.cache_dir, self.storage)
        return self._opened[unit]

    def unit_arrays(self, unit: int) -> UnitArrays | None:
        """The unit's queries as arrays for the compiled block loop, built once per source
        (every learner of a run shares them): a binary cache mapped as is, or with each
        query normalised (``query-level``, a copy). None (the unit then streams query by
        query) without a cache, for ``zscore``, or when a normalised copy would take more
        than :data:`~ltr_cli.data.sources.arrays.ARRAY_BUDGET` bytes of memory."""
        if unit not in self._arrays:
            self._arrays[unit] = self._build_arrays(unit)
        return self._arrays[unit]

    def _build_arrays(self, unit: int) -> UnitArrays | None:
        if self.cache_dir is None:
            return None
        cached = self._cached(unit)
        try:
            X, y, pages = cached.mapped()
        except CacheInvalid as exc:
            _corrupt(cached, exc)
        offsets = np.asarray(cached.offsets, dtype=np.int64)
        starts, ends = offsets[:-1].copy(), offsets[1:].copy()
        if self.normalize == "query-level":
            if X.nbytes > array_budget():
                return None
            normalized = np.empty_like(X)
            row_bytes = X.shape[1] * X.itemsize
            for a, b in zip(starts.tolist(), ends.tolist()):  # as queries() does, query by query
                normalized[a:b] = query_level(X[a:b]).astype(X.dtype, copy=False)
                if pages is not None:
                    pages.read((b - a) * row_bytes)
            X, pages = normalized, None  # in memory: nothing to hand back
        elif self.normalize != "none":
            return None
        prefix = self._prefix(unit)
        qids = [prefix + q for q in cached.qids] if prefix else list(cached.qids)
        return UnitArrays(X, y, starts, ends, qids, pages)

    def queries(self, unit: int) -> Iterator[Query]:
        """The unit's queries in file order: from its validated cache, or parsed. A parsed
        file (and its group file) must keep the identity recorded for the run until the
        pass over it ends, else :class:`~ltr_cli.data.identity.DataChanged`."""
        watched: list[Path] = []
        if self.cache_dir is not None:
            cached = self._cached(unit)
            stream = self._checked_cache_stream(cached)
        else:
            watched = self._watched(unit)
            for p in watched:
                self._file_identity(p)
            stream = open_dataset(self.files[unit], self.unit_options(unit)).dense_queries(
                np.dtype(self.storage).type)
        prefix = self._prefix(unit)
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
            _corrupt(cached, exc)

    def _file_identity(self, path: Path) -> dict[str, Any]:
        if path not in self._identities:
            self._identities[path] = file_identity(path)
        return self._identities[path]

    def queries_per_pass(self) -> int:
        """Queries in one pass, counted once: from the cache (built now if missing, so the
        stream then reads it) or by one pass of the reader."""
        if self.n_queries is None:
            total = 0
            for unit in self.units():
                if self.cache_dir is not None:
                    total += self._cached(unit).n_queries
                else:
                    total += open_dataset(self.files[unit], self.unit_options(unit)).count_queries()
            self.n_queries = total
        return self.n_queries

    def identity(self) -> dict[str, Any]:
        """``{"files": [...]}``: each file's (and group file's) path, size and content digest
        with its stat key (:mod:`ltr_cli.data.identity`), in reading order, from the cache
        when there is one; a group file's entry follows its data file's and says
        ``"group": true``; a file ``ltr data synth`` generated says so (``"generated"``,
        :mod:`ltr_cli.data.provenance`)."""
        ids: list[dict[str, Any]] = []
        for unit in self.units():
            if self.cache_dir is not None:
                meta = self._cached(unit).meta
                found = [meta["source"]] + ([meta["group_source"]] if "group_source" in meta else [])
            else:
                found = [self._file_identity(p) for p in self._watched(unit)]
            ids += [marked(found[0])] + [{**group, "group": True} for group in found[1:]]
        return {"files": ids}


def _corrupt(cached: Any, exc: CacheInvalid) -> NoReturn:
    """Remove a cache that failed a check and end the run with one line."""
    shutil.rmtree(cached.directory, ignore_errors=True)
    raise LtrError(f"{cached.directory}: the cache is corrupt ({exc}); it was removed, run "
                   "again to rebuild it") from None


def spec_reader_options(spec: Any) -> ReaderOptions:
    """How a ``registry`` or ``files`` dataset spec reads each of its files: its width, index
    base and qid source (a registry dataset's own unless the spec overrides them; ``group``
    for files given with their group files), its null fill, split rule and input bounds.
    A generated kind (``separable``, ``shaped``) reads no file: the layout ``ltr data synth``
    writes (1-based, qid tokens), the reader's defaults."""
    if spec.kind == "registry":
        info = get_dataset(spec.name)
        n, base = info.n_features, info.index_base if spec.index_base is None else spec.index_base
        qid = info.qid_source if spec.qid is None else spec.qid
    elif spec.kind == "files":
        n, base, qid = spec.features, spec.index_base, "group" if spec.group_files else spec.qid
    else:
        return ReaderOptions()
    return ReaderOptions(n_features=n, index_base=base, qid_source=qid, null_value=spec.null_value,
                         split_qids=spec.split_qids, **spec.limits())


@register_kind("registry")
def registry_source(spec: Any, seed: int, cache_dir: Path | None = None) -> FileSource:
    """A registry dataset's split, one file per fold (``spec.folds``, else the single file),
    with the dataset's width, index base and qid source unless the spec overrides them."""
    info = get_dataset(spec.name)
    files = resolve_files(info, spec.root, spec.split, spec.folds)
    for p in files:
        require_regular(p)
    opts = spec_reader_options(spec)
    return FileSource(info.n_features, f"{info.name} {spec.split}", info.name, files, opts,
                      storage=spec.storage, cache_dir=cache_dir, normalize=spec.normalize)


@register_kind("files")
def files_source(spec: Any, seed: int, cache_dir: Path | None = None) -> FileSource:
    """Explicit files (and group files), each checked to exist and be a regular file."""
    for p in list(spec.files) + list(spec.group_files or []):
        if not p.exists():
            raise DatasetNotFoundError(f"dataset: {p} does not exist (tried {tried(p)})")
        require_regular(p)
    opts = spec_reader_options(spec)
    name = spec.name or "files"
    return FileSource(spec.features, f"{name} files" if spec.name else "files", name, list(spec.files), opts,
                      group_files=list(spec.group_files) if spec.group_files else None,
                      storage=spec.storage, cache_dir=cache_dir, normalize=spec.normalize)
