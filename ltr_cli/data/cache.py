"""Binary cache of parsed data files, memory-mapped on later reads.

The first read of a file parses it (:class:`~ltr_cli.data.svmlight.SVMLightReader`) and
writes ``<cache_dir>/<file name>-<key>/`` (a file name too long to leave room for the key
is cut and given a hash of itself, :func:`~ltr_cli.outputs.short_name`):

* ``X.bin``: the dense feature rows, ``(documents, n_features)`` in the storage dtype
  (float32 or float64), C order, raw;
* ``y.bin``: labels, float64 ``(documents,)``; ``offsets.bin``: int64 ``(queries + 1,)``
  first row of each query; ``lines.bin``: int64 ``(queries,)`` first line of each query;
* ``blocks.bin``: uint64 XXH3-64 digests of ``X.bin``'s consecutive ``BLOCK``-byte blocks;
* ``qids.json``: the qid strings; ``meta.json``: key, the source's identity (path, size,
  XXH3-128 of every byte, stat key; :mod:`ltr_cli.data.identity`), parser options,
  dtype, shapes and checksums. Written last; the directory is renamed into place
  atomically, so a cache directory that exists is complete.

**Key**: SHA-256 of the format version, the source's resolved path, the parser options
and the dtype (and the group file's path). The content is checked, not keyed: on open,
the source's stat key is compared with the one recorded; if it differs the source is
hashed again, and a different digest means the cache is stale and is rebuilt (same
digest: the file was only touched, the record is refreshed). A source that changes while
its cache is being built fails the build with one line.

**Validation** on every open, before any array reaches a learner: meta.json parses, names
this key, and its dtype (float32 or float64) and width equal the run's; every file has
exactly the size its shapes imply; the small arrays (labels, offsets, lines, qids, block
digests) match their digests; offsets are consistent. ``X.bin`` is verified block by block
as reads map it: each block is hashed the first time a window that covers it is mapped in
the process, so every byte a learner sees has been checked. An open cache holds what it validated: its
labels are read into memory and ``X.bin`` stays open, so a rebuild by another process (a
new directory renamed into place) never changes what a running run reads. A cache that fails at open is
reported on stderr, removed and rebuilt; a block that fails during a run is an error (the
cache is removed, so the next run rebuilds it). ``ltr data cache --verify`` hashes
everything now.

**Memory**: reads map one window of queries (``window_bytes`` of rows) at a time, so the
resident set does not grow with the file; nor does the compiled block loop's, which maps all
of X.bin and hands pages back as it reads (:meth:`CachedFile.mapped`, :mod:`ltr_cli.data.paging`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import mmap
import os
import shutil
import stat as stat_mod
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import xxhash

from ltr_cli import console
from ltr_cli.data.identity import DIGEST, NotSmallFile, check_unchanged, content_digest, read_small_file, stat_key
from ltr_cli.data.paging import MappedPages
from ltr_cli.data.options import LIMIT_OPTIONS, MAX_LABEL, ReaderOptions
from ltr_cli.data.query import Query
from ltr_cli.data.formats import open_dataset
from ltr_cli.errors import LtrError
from ltr_cli.outputs import NAME_MAX, replace_text, short_name

FORMAT_VERSION = 2
BLOCK = 1 << 20  # bytes of X.bin per block digest
DTYPES = ("float32", "float64")  # storage dtypes a cache may hold
# bytes of a data file's name kept in its cache folder's name: room for the key (25) and for
# the build folder's ".<folder>.tmp-<pid>" (at most 16 more)
_NAME_ROOM = NAME_MAX - 25 - 16


class CacheInvalid(Exception):
    """A cache directory that must not be used (the message says why)."""


def _options_dict(options: ReaderOptions) -> dict[str, Any]:
    data = asdict(options)
    data.pop("engine", None)  # both engines give the same queries
    for limit in LIMIT_OPTIONS:  # bounds decide whether a file is read, not what is read
        data.pop(limit, None)
    data["group_file"] = str(Path(options.group_file).resolve()) if options.group_file else None
    return data


def cache_key(path: Path, options: ReaderOptions, dtype: str) -> str:
    """The cache directory key of ``path`` read with ``options`` into ``dtype`` storage."""
    from ltr_cli.data.formats import format_for

    identity = {"format": FORMAT_VERSION, "path": str(Path(path).resolve()),
                "options": _options_dict(options), "dtype": dtype}
    reader = format_for(Path(path)).name
    if reader != "svmlight":  # the file format that reads it (keys of text files stay as they were)
        identity["reader"] = reader
    return hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:24]


def _digest(data: bytes | memoryview | np.ndarray) -> str:
    if isinstance(data, np.ndarray):
        data = data.data
    return xxhash.xxh3_128_hexdigest(data if isinstance(data, bytes) else data.cast("B"))


def _block_digests(path: Path, size: int) -> np.ndarray:
    """XXH3-64 of each BLOCK-byte block of a file of ``size`` bytes."""
    out = np.empty(-(-size // BLOCK), dtype=np.uint64)
    with open(path, "rb") as fh:
        for i in range(out.shape[0]):
            out[i] = xxhash.xxh3_64_intdigest(fh.read(BLOCK))
    return out


@dataclass
class CachedFile:
    """An open, validated cache directory."""

    directory: Path
    meta: dict[str, Any]
    qids: list[str]
    offsets: np.ndarray
    lines: np.ndarray
    blocks: np.ndarray  # uint64 digests of X.bin's blocks
    # what the run reads, held from the moment the cache was validated, so that a rebuild of
    # the cache by another process (a new directory renamed into place) cannot change it:
    # X.bin open (mapped window by window, each block verified once), the labels in memory
    x_file: Any = field(default=None, repr=False)
    labels: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    _checked: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=bool), repr=False)

    @property
    def n_queries(self) -> int:
        return len(self.qids)

    @property
    def n_documents(self) -> int:
        return int(self.meta["documents"])

    def _check_blocks(self, raw: np.ndarray, first: int) -> None:
        """Hash the blocks of ``raw`` (X.bin's bytes from block ``first`` on) not checked
        yet in this process; CacheInvalid on a mismatch."""
        if self._checked.shape[0] != self.blocks.shape[0]:
            self._checked = np.zeros(self.blocks.shape[0], dtype=bool)
        n = -(-raw.shape[0] // BLOCK)
        for i in range(n):
            b = first + i
            if not self._checked[b]:
                if xxhash.xxh3_64_intdigest(raw[i * BLOCK:(i + 1) * BLOCK].data) != int(self.blocks[b]):
                    raise CacheInvalid(f"X.bin block {b} (bytes {b * BLOCK}-{(b + 1) * BLOCK - 1}) "
                                       "does not match its checksum")
                self._checked[b] = True

    def queries(self, window_bytes: int = 8 << 20) -> Iterator[Query]:
        """Queries in file order; ``X`` rows are read-only plain ndarray views of a memory
        map of one window (about ``window_bytes`` of rows, at least one query), whose
        blocks are verified before the first query of the window is yielded. Plain views,
        not ``np.memmap`` slices: the subclass costs every numpy operation and every
        compiled-kernel call on ``X`` a detour through Python."""
        d = int(self.meta["n_features"])
        dtype = np.dtype(self.meta["dtype"])
        row_bytes = d * dtype.itemsize
        total = self.n_documents * row_bytes
        offsets = self.offsets
        bounds = offsets.tolist()  # Python ints: cheaper to index than numpy scalars
        lines = self.lines.tolist()
        qids = self.qids
        n = self.n_queries
        q = 0
        while q < n:
            start = bounds[q]
            end_q = int(np.searchsorted(offsets, start + max(1, window_bytes // row_bytes), side="right")) - 1
            end_q = min(max(end_q, q + 1), n)
            stop = bounds[end_q]
            # map the whole blocks that cover the window's rows, verify them, view the rows
            first = (start * row_bytes) // BLOCK
            lo = first * BLOCK
            hi = min(total, -(-(stop * row_bytes) // BLOCK) * BLOCK)
            raw = np.memmap(self.x_file, dtype=np.uint8, mode="r", offset=lo,
                            shape=(hi - lo,)).view(np.ndarray)
            self._check_blocks(raw, first)
            X = raw[start * row_bytes - lo:stop * row_bytes - lo].view(dtype).reshape(stop - start, d)
            y = self.labels[start:stop]
            for j in range(q, end_q):
                a, b = bounds[j] - start, bounds[j + 1] - start
                yield Query(qids[j], X[a:b], y[a:b], lines[j])
            del X, raw
            q = end_q

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """The whole file as ``(X (N, d), y (N,) float64)``: ``X`` a read-only view of a
        memory map of X.bin whose blocks are all verified first (CacheInvalid on a
        mismatch), ``y`` read into memory. Query ``j`` is rows ``offsets[j]:offsets[j + 1]``."""
        X, y, _ = self.mapped()
        return X, y

    def mapped(self) -> tuple[np.ndarray, np.ndarray, MappedPages | None]:
        """:meth:`arrays` and the map's :class:`~ltr_cli.data.paging.MappedPages` (None if
        empty), which bound its resident pages; the blocks are verified from the file, not the map."""
        d = int(self.meta["n_features"])
        dtype = np.dtype(self.meta["dtype"])
        n = self.n_documents
        if n == 0:
            return np.zeros((0, d), dtype=dtype), np.zeros(0), None
        size = n * d * dtype.itemsize
        self._check_file_blocks(size)
        mm = mmap.mmap(self.x_file.fileno(), size, access=mmap.ACCESS_READ)
        X = np.frombuffer(mm, dtype=dtype).reshape(n, d)  # read-only: the map is
        return X, self.labels, MappedPages(mm)

    def _check_file_blocks(self, size: int) -> None:
        """Hash every block of X.bin not checked yet in this process, read from the open
        file one block at a time; CacheInvalid on a mismatch."""
        if self._checked.shape[0] != self.blocks.shape[0]:
            self._checked = np.zeros(self.blocks.shape[0], dtype=bool)
        fd = self.x_file.fileno()
        for b in np.flatnonzero(~self._checked).tolist():
            data = os.pread(fd, min(BLOCK, size - b * BLOCK), b * BLOCK)
            if xxhash.xxh3_64_intdigest(data) != int(self.blocks[b]):
                raise CacheInvalid(f"X.bin block {b} (bytes {b * BLOCK}-{(b + 1) * BLOCK - 1}) "
                                   "does not match its checksum")
            self._checked[b] = True

    def verify(self) -> None:
        """Hash every byte of every file against meta.json (raises CacheInvalid)."""
        size = self.n_documents * int(self.meta["n_features"]) * np.dtype(self.meta["dtype"]).itemsize
        digests = _block_digests(self.directory / "X.bin", size)
        bad = np.flatnonzero(digests != self.blocks)
        if bad.size:
            raise CacheInvalid(f"X.bin block {int(bad[0])} does not match its checksum")
        self._checked = np.ones(self.blocks.shape[0], dtype=bool)
        if content_digest(self.directory / "y.bin") != self.meta["digests"]["y.bin"]:
            raise CacheInvalid("y.bin does not match its checksum")


def _int_field(meta: dict[str, Any], name: str) -> int:
    value = meta.get(name)
    if type(value) is not int or value < 0:
        raise CacheInvalid(f"meta.json: {name} must be an integer >= 0")
    return value


def _open(directory: Path, key: str, dtype: str, n_features: int) -> CachedFile:
    """Open and validate a cache directory for a run reading ``dtype`` rows of width
    ``n_features`` (CacheInvalid if anything does not check out)."""
    try:
        meta = json.loads(_read_small(directory / "meta.json", 1 << 20))
    except (ValueError, RecursionError) as exc:
        raise CacheInvalid(f"meta.json unreadable ({type(exc).__name__})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT_VERSION or meta.get("key") != key:
        raise CacheInvalid("meta.json belongs to another format or key")
    if meta.get("dtype") not in DTYPES or meta["dtype"] != dtype:
        raise CacheInvalid(f"meta.json: dtype {meta.get('dtype')!r} is not this run's {dtype}")
    d = _int_field(meta, "n_features")
    if d != n_features:
        raise CacheInvalid(f"meta.json: width {d} is not the dataset's {n_features} features")
    rows, queries = _int_field(meta, "documents"), _int_field(meta, "queries")
    digests = meta.get("digests")
    if not isinstance(digests, dict):
        raise CacheInvalid("meta.json: digests missing")
    x_bytes = rows * d * np.dtype(dtype).itemsize
    expected = {"X.bin": x_bytes, "y.bin": rows * 8, "offsets.bin": (queries + 1) * 8,
                "lines.bin": queries * 8, "blocks.bin": -(-x_bytes // BLOCK) * 8}
    try:
        for name, size in expected.items():
            st = (directory / name).lstat()
            if not stat_mod.S_ISREG(st.st_mode):
                raise CacheInvalid(f"{name} is not a plain file")
            if st.st_size != size:
                raise CacheInvalid(f"{name} has {st.st_size} bytes, expected {size}")
        small = {name: _read_small(directory / name, expected.get(name, 1 << 30))
                 for name in ("offsets.bin", "lines.bin", "qids.json", "blocks.bin", "y.bin")}
        for name, data in small.items():
            if _digest(data) != digests.get(name):
                raise CacheInvalid(f"{name} does not match its checksum")
        x_file = _open_regular(directory / "X.bin", x_bytes)
        qids = json.loads(small["qids.json"])
    except OSError as exc:
        raise CacheInvalid(f"incomplete ({type(exc).__name__}: {exc})") from None
    except (ValueError, RecursionError) as exc:
        raise CacheInvalid(f"qids.json unreadable ({type(exc).__name__})") from None
    offsets = np.frombuffer(small["offsets.bin"], dtype=np.int64)
    lines = np.frombuffer(small["lines.bin"], dtype=np.int64)
    blocks = np.frombuffer(small["blocks.bin"], dtype=np.uint64)
    if (not isinstance(qids, list) or len(qids) != queries or not all(isinstance(q, str) for q in qids)
            or offsets[0] != 0 or offsets[-1] != rows or (np.diff(offsets) <= 0).any()):
        raise CacheInvalid("query offsets are inconsistent")
    labels = np.frombuffer(small["y.bin"], dtype=np.float64)
    if not (np.isfinite(labels).all() and (labels <= MAX_LABEL).all()):  # what the readers accept
        raise CacheInvalid(f"y.bin holds a label the readers refuse (non-finite or above {MAX_LABEL:g})")
    return CachedFile(directory, meta, qids, offsets, lines, blocks, x_file, labels)


def _build(path: Path, options: ReaderOptions, dtype: str, key: str, tmp: Path) -> None:
    """Parse ``path`` into the cache directory ``tmp``. The source (and group file) is
    hashed and parsed between two stat calls: a change meanwhile raises DataChanged."""
    tmp.mkdir(parents=True)
    sources = [("source", Path(path))]
    if options.group_file is not None:
        sources.append(("group_source", Path(options.group_file)))
    before = {name: stat_key(p) for name, p in sources}
    identity = {name: {"path": str(p.resolve()), "size": before[name]["size"], DIGEST: content_digest(p),
                       "stat": before[name]} for name, p in sources}
    qids: list[str] = []
    offsets = [0]
    lines: list[int] = []
    hy = xxhash.xxh3_128()
    rows = 0
    with open(tmp / "X.bin", "wb") as fx, open(tmp / "y.bin", "wb") as fy:
        for q in open_dataset(path, options).dense_queries(np.dtype(dtype).type):
            xb = np.ascontiguousarray(q.X, dtype=dtype).data
            yb = np.ascontiguousarray(q.y, dtype=np.float64).data
            fx.write(xb)
            fy.write(yb)
            hy.update(yb)
            rows += q.m
            if len(offsets) % 256 == 0:
                _check_space(tmp, path)
            offsets.append(rows)
            qids.append(q.qid)
            lines.append(q.line)
    for name, p in sources:
        check_unchanged(p, before[name])
    assert options.n_features is not None  # a dense cache needs the width (checked by the caller)
    d = int(options.n_features)
    files = {"offsets.bin": np.asarray(offsets, dtype=np.int64).tobytes(),
             "lines.bin": np.asarray(lines, dtype=np.int64).tobytes(),
             "qids.json": json.dumps(qids).encode(),
             "blocks.bin": _block_digests(tmp / "X.bin", rows * d * np.dtype(dtype).itemsize).tobytes()}
    for name, data in files.items():
        (tmp / name).write_bytes(data)
    meta = {"format": FORMAT_VERSION, "key": key, **identity, "options": _options_dict(options),
            "dtype": dtype, "n_features": d, "documents": rows, "queries": len(qids), "block_bytes": BLOCK,
            "digests": {"y.bin": hy.hexdigest(), **{name: _digest(data) for name, data in files.items()}}}
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1))


MIN_FREE_BYTES = 1 << 30


def _check_space(directory: Path, source: Path) -> None:
    """One-line error before a cache build fills its disk (dense rows can be far larger
    than the sparse text they come from)."""
    if shutil.disk_usage(directory).free < MIN_FREE_BYTES:
        raise LtrError(f"{source}: its cache in {directory.parent} would leave less than "
                       f"{MIN_FREE_BYTES >> 30} GiB free on that disk; free space, set cache.dir "
                       "to another disk, or cache.enabled: false")


def _source_state(cached: CachedFile, path: Path, options: ReaderOptions) -> str:
    """"same" if the recorded sources are the files now on disk (same stat key, or a new
    stat key but the same content digest: then the record is refreshed), else "changed"."""
    sources = [("source", Path(path))]
    if options.group_file is not None:
        sources.append(("group_source", Path(options.group_file)))
    refreshed = False
    for name, p in sources:
        rec = cached.meta.get(name)
        if not isinstance(rec, dict):
            return "changed"
        now = stat_key(p)
        if rec.get("stat") == now:
            continue
        if rec.get("size") != now["size"] or rec.get(DIGEST) != content_digest(p):
            return "changed"
        check_unchanged(p, now)
        rec["stat"] = now
        refreshed = True
    if refreshed:  # touched, copied back or moved: same bytes; remember the new stat key
        replace_text(cached.directory / "meta.json", json.dumps(cached.meta, indent=1))
    return "same"


def open_cached(path: Path, options: ReaderOptions, cache_dir: Path, dtype: str = "float64",
                log=None) -> CachedFile:
    """The validated cache of ``path`` (built first if missing, stale or corrupt).

    Concurrent callers (sweep workers) serialise on a lock file per key: one builds, the
    others then open its result. Parse errors propagate (and leave no cache behind).
    """
    if options.n_features is None:
        raise ValueError("caching needs n_features")
    if dtype not in DTYPES:
        raise LtrError(f"storage {dtype!r}: expected one of {', '.join(DTYPES)}")
    log = log or console.note
    key = cache_key(path, options, dtype)
    cache_dir.mkdir(parents=True, exist_ok=True)
    # <file name>-<key>, its lock .<that>.lock and its build .<that>.tmp-<pid> fit NAME_MAX
    directory = cache_dir / f"{short_name(path.name, _NAME_ROOM)}-{key}"
    if cache_dir.is_symlink():
        raise LtrError(f"{cache_dir}: the cache folder is a symbolic link; refusing to write "
                       "through it: remove the link or set cache.dir to a real folder")
    with _open_lock(cache_dir / f".{directory.name}.lock") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _remove_dead_builds(cache_dir, directory.name)
        if directory.is_dir() and not directory.is_symlink():
            # a metadata refresh is written under this key's lock: one left over is a dead writer's
            for stale in directory.glob(".meta.json.*tmp*"):
                if stale.is_file() and not stale.is_symlink():
                    stale.unlink(missing_ok=True)
        if directory.exists() or directory.is_symlink():
            try:
                if directory.is_symlink() or not directory.is_dir():
                    raise CacheInvalid("not a directory")
                cached = _open(directory, key, dtype, int(options.n_features))
                if _source_state(cached, path, options) == "same":
                    return cached
                log(f"ltr: {path} changed since its cache was built; rebuilding the cache")
            except CacheInvalid as exc:
                log(f"ltr: cache {directory} is invalid ({exc}); rebuilding it")
            _remove(directory)
        tmp = cache_dir / f".{directory.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            _build(path, options, dtype, key, tmp)
            tmp.rename(directory)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        try:
            return _open(directory, key, dtype, int(options.n_features))
        except CacheInvalid as exc:  # written a moment ago: the disk is failing
            raise LtrError(f"{directory}: the cache just written does not read back ({exc}); "
                           "check the disk or set cache.dir elsewhere") from None


def _remove_dead_builds(cache_dir: Path, mine: str) -> None:
    """Delete the temporary folders (``.<file>-<key>.tmp-<pid>``) of builds whose process
    died (SIGKILL, out of memory): every one of ``mine`` (its key's lock is held by this
    process, so no other build of it runs), and of any other key whose lock nobody holds
    (a build holds its key's flock until its folder is renamed into place; the kernel
    drops it when the builder dies, whatever its pid now names)."""
    for tmp in cache_dir.glob(".*.tmp-*"):
        name, _, pid = tmp.name[1:].rpartition(".tmp-")
        if not pid.isdigit() or not tmp.is_dir() or tmp.is_symlink():
            continue
        if name != mine:
            lock_path = cache_dir / f".{name}.lock"
            try:
                fd = os.open(lock_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
            except OSError:
                continue  # no lock file: not a build of this tool's (or its lock is gone): leave it
            try:
                if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
                    continue
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: a live build of that key
            except OSError:
                continue
            finally:
                os.close(fd)  # (closing drops the probe's lock)
        shutil.rmtree(tmp, ignore_errors=True)


def _open_lock(path: Path):
    """The lock file, created if needed; never through a symbolic link, never truncated,
    never a FIFO or device (one-line error instead of writing or blocking)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        raise LtrError(f"{path}: cannot open the cache lock ({exc.strerror}); if it is a link or "
                       "not a plain file, remove it") from None
    if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise LtrError(f"{path}: the cache lock is not a plain file; remove it")
    return os.fdopen(fd, "r+")


def _open_regular(path: Path, size: int) -> Any:
    """``path`` opened for reading, checked to be a plain file of ``size`` bytes; the open
    file keeps the bytes it names even when the directory is replaced."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise CacheInvalid(f"{path.name} unreadable ({exc.strerror})") from None
    fh = os.fdopen(fd, "rb")
    st = os.fstat(fd)
    if not stat_mod.S_ISREG(st.st_mode) or st.st_size != size:
        fh.close()
        raise CacheInvalid(f"{path.name} is not a plain file of {size} bytes")
    return fh


def _read_small(path: Path, limit: int) -> bytes:
    """A cache file of at most ``limit`` bytes (:func:`~ltr_cli.data.identity.read_small_file`);
    CacheInvalid otherwise."""
    try:
        return read_small_file(path, limit)
    except NotSmallFile as exc:
        raise CacheInvalid(str(exc)) from None
    except OSError as exc:
        raise CacheInvalid(f"{path.name} unreadable ({exc.strerror})") from None


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)
