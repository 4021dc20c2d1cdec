"""Binary cache of parsed data files, memory-mapped on later reads.

The first read of a file parses it (:class:`~ltr_cli.data.svmlight.SVMLightReader`) and
writes ``<cache_dir>/<file name>-<key>/``:

* ``X.bin``: the dense feature rows, ``(documents, n_features)`` in the storage dtype
  (float32 or float64), C order, raw;
* ``y.bin``: labels, float64 ``(documents,)``; ``offsets.bin``: int64 ``(queries + 1,)``
  first row of each query; ``lines.bin``: int64 ``(queries,)`` first line of each query;
* ``qids.json``: the qid strings; ``meta.json``: key, source fingerprint, parser options,
  shapes and checksums. Written last; the directory is renamed into place atomically, so
  a cache directory that exists is complete.

**Key**: SHA-256 of the format version, the source's fingerprint (path, size, mtime and a
hash of its first and last 64 KiB, likewise for a group file), the parser options and the
dtype. A changed source gets a new key (the old directory is stale and removed when the
new one is built); other options or dtype get a cache of their own.

**Validation** on every open: meta.json parses and names this key, every file has exactly
its expected size, the small arrays (labels, offsets, lines, qids) match their BLAKE2b
digests and the feature matrix matches digests of 17 sampled 4 KiB windows (full hashing
would cost as much as a parse). A cache that fails is reported on stderr, removed and
rebuilt, never used. ``ltr data cache --verify`` hashes everything.

**Memory**: reads map one window of queries (``window_bytes`` of rows) at a time, so the
resident set does not grow with the file.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.data.svmlight import Query, ReaderOptions, SVMLightReader

FORMAT_VERSION = 1
_SAMPLE = 1 << 12
_SAMPLES = 16


class CacheInvalid(Exception):
    """A cache directory that must not be used (the message says why)."""


def file_fingerprint(path: Path, chunk: int = 1 << 16) -> dict[str, Any]:
    """Quick fingerprint: resolved path, size, mtime and BLAKE2b of the first and last
    ``chunk`` bytes (a full hash would cost as much as parsing)."""
    st = path.stat()
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        h.update(fh.read(chunk))
        if st.st_size > 2 * chunk:
            fh.seek(-chunk, os.SEEK_END)
            h.update(fh.read(chunk))
    return {"path": str(path.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns,
            f"blake2b_head_tail_{chunk}": h.hexdigest()}


def _options_dict(options: ReaderOptions) -> dict[str, Any]:
    data = asdict(options)
    data.pop("engine", None)  # both engines give the same queries
    data["group_file"] = str(options.group_file) if options.group_file else None
    return data


def cache_key(path: Path, options: ReaderOptions, dtype: str) -> tuple[str, dict[str, Any]]:
    """(key, identity) of a file read with ``options`` into ``dtype`` storage."""
    identity = {"format": FORMAT_VERSION, "source": file_fingerprint(path), "options": _options_dict(options),
                "dtype": dtype}
    if options.group_file is not None:
        identity["group_source"] = file_fingerprint(options.group_file)
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:24]
    return digest, identity


def _digest(data: bytes | memoryview | np.ndarray) -> str:
    return hashlib.blake2b(memoryview(data).cast("B") if not isinstance(data, bytes) else data,
                           digest_size=16).hexdigest()


def _file_digest(path: Path) -> str:
    """BLAKE2b of a whole file, read in 16 MiB chunks."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 24):
            h.update(chunk)
    return h.hexdigest()


def _sampled_digest(path: Path, size: int) -> str:
    """BLAKE2b over 16 evenly spaced 4 KiB windows and the last one."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as fh:
        for k in range(_SAMPLES + 1):
            offset = max(0, size - _SAMPLE) if k == _SAMPLES else (size * k) // _SAMPLES
            fh.seek(offset)
            h.update(fh.read(_SAMPLE))
    return h.hexdigest()


@dataclass
class CachedFile:
    """An open, validated cache directory."""

    directory: Path
    meta: dict[str, Any]
    qids: list[str]
    offsets: np.ndarray
    lines: np.ndarray

    @property
    def n_queries(self) -> int:
        return len(self.qids)

    @property
    def n_documents(self) -> int:
        return int(self.meta["documents"])

    def queries(self, window_bytes: int = 8 << 20) -> Iterator[Query]:
        """Queries in file order; ``X`` rows are read-only plain ndarray views of a memory
        map of one window (about ``window_bytes`` of rows, at least one query). Plain
        views, not ``np.memmap`` slices: the subclass costs every numpy operation and
        every compiled-kernel call on ``X`` a detour through Python."""
        d = int(self.meta["n_features"])
        dtype = np.dtype(self.meta["dtype"])
        row_bytes = d * dtype.itemsize
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
            X = np.memmap(self.directory / "X.bin", dtype=dtype, mode="r", offset=start * row_bytes,
                          shape=(stop - start, d)).view(np.ndarray)
            y = np.fromfile(self.directory / "y.bin", dtype=np.float64, count=stop - start,
                            offset=start * 8)
            for j in range(q, end_q):
                a, b = bounds[j] - start, bounds[j + 1] - start
                yield Query(qids[j], X[a:b], y[a:b], lines[j])
            del X
            q = end_q

    def verify(self) -> None:
        """Hash every byte of every file against meta.json (raises CacheInvalid)."""
        for name, digest in self.meta["digests_full"].items():
            if _file_digest(self.directory / name) != digest:
                raise CacheInvalid(f"{name} does not match its checksum")


def _open(directory: Path, key: str) -> CachedFile:
    try:
        meta = json.loads((directory / "meta.json").read_text())
    except (OSError, ValueError) as exc:
        raise CacheInvalid(f"meta.json unreadable ({exc})") from None
    if meta.get("format") != FORMAT_VERSION or meta.get("key") != key:
        raise CacheInvalid("meta.json belongs to another format or key")
    try:
        rows, queries = int(meta["documents"]), int(meta["queries"])
        d = int(meta["n_features"])
        itemsize = np.dtype(meta["dtype"]).itemsize
        expected = {"X.bin": rows * d * itemsize, "y.bin": rows * 8, "offsets.bin": (queries + 1) * 8,
                    "lines.bin": queries * 8}
        for name, size in expected.items():
            actual = (directory / name).stat().st_size
            if actual != size:
                raise CacheInvalid(f"{name} has {actual} bytes, expected {size}")
        small = {name: (directory / name).read_bytes() for name in ("offsets.bin", "lines.bin", "qids.json")}
        for name, data in small.items():
            if _digest(data) != meta["digests_full"][name]:
                raise CacheInvalid(f"{name} does not match its checksum")
        if _file_digest(directory / "y.bin") != meta["digests_full"]["y.bin"]:
            raise CacheInvalid("y.bin does not match its checksum")
        if _sampled_digest(directory / "X.bin", expected["X.bin"]) != meta["digest_X_sampled"]:
            raise CacheInvalid("X.bin does not match its sampled checksum")
        qids = json.loads(small["qids.json"])
    except (OSError, KeyError, TypeError, ValueError) as exc:
        raise CacheInvalid(f"incomplete ({type(exc).__name__}: {exc})") from None
    offsets = np.frombuffer(small["offsets.bin"], dtype=np.int64)
    lines = np.frombuffer(small["lines.bin"], dtype=np.int64)
    if len(qids) != queries or offsets[0] != 0 or offsets[-1] != rows or (np.diff(offsets) <= 0).any():
        raise CacheInvalid("query offsets are inconsistent")
    return CachedFile(directory, meta, qids, offsets, lines)


def _build(path: Path, options: ReaderOptions, dtype: str, key: str, identity: dict[str, Any],
           tmp: Path) -> None:
    tmp.mkdir(parents=True)
    qids: list[str] = []
    offsets = [0]
    lines: list[int] = []
    hx = hashlib.blake2b(digest_size=16)
    hy = hashlib.blake2b(digest_size=16)
    rows = 0
    with open(tmp / "X.bin", "wb") as fx, open(tmp / "y.bin", "wb") as fy:
        for q in SVMLightReader(path, options).dense_queries(np.dtype(dtype).type):
            xb = np.ascontiguousarray(q.X, dtype=dtype).data
            yb = np.ascontiguousarray(q.y, dtype=np.float64).data
            fx.write(xb)
            fy.write(yb)
            hx.update(xb)
            hy.update(yb)
            rows += q.m
            offsets.append(rows)
            qids.append(q.qid)
            lines.append(q.line)
    off = np.asarray(offsets, dtype=np.int64).tobytes()
    lin = np.asarray(lines, dtype=np.int64).tobytes()
    qtext = json.dumps(qids).encode()
    (tmp / "offsets.bin").write_bytes(off)
    (tmp / "lines.bin").write_bytes(lin)
    (tmp / "qids.json").write_bytes(qtext)
    d = int(options.n_features)  # type: ignore[arg-type]
    meta = {"format": FORMAT_VERSION, "key": key, **identity, "n_features": d, "documents": rows,
            "queries": len(qids),
            "digests_full": {"X.bin": hx.hexdigest(), "y.bin": hy.hexdigest(), "offsets.bin": _digest(off),
                             "lines.bin": _digest(lin), "qids.json": _digest(qtext)},
            "digest_X_sampled": _sampled_digest(tmp / "X.bin", rows * d * np.dtype(dtype).itemsize)}
    (tmp / "meta.json").write_text(json.dumps(meta, indent=1))


def _remove_stale(cache_dir: Path, identity: dict[str, Any], keep: Path) -> None:
    """Remove caches of the same source path, options and dtype built from another version
    of the file (caches for other options stay: they are still valid)."""
    for other in cache_dir.iterdir():
        if other == keep or other.name.startswith(".") or not other.is_dir():
            continue
        try:
            meta = json.loads((other / "meta.json").read_text())
        except (OSError, ValueError):
            continue
        if (meta.get("source", {}).get("path") == identity["source"]["path"]
                and meta.get("options") == identity["options"] and meta.get("dtype") == identity["dtype"]):
            shutil.rmtree(other, ignore_errors=True)


def open_cached(path: Path, options: ReaderOptions, cache_dir: Path, dtype: str = "float64",
                log=None) -> CachedFile:
    """The validated cache of ``path`` (built first if missing, stale or corrupt).

    Concurrent callers (sweep workers) serialise on a lock file per key: one builds, the
    others then open its result. Parse errors propagate (and leave no cache behind).
    """
    if options.n_features is None:
        raise ValueError("caching needs n_features")
    log = log or (lambda msg: print(msg, file=sys.stderr))
    key, identity = cache_key(path, options, dtype)
    cache_dir.mkdir(parents=True, exist_ok=True)
    directory = cache_dir / f"{path.name}-{key}"
    with open(cache_dir / f".{path.name}-{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if directory.exists():
            try:
                return _open(directory, key)
            except CacheInvalid as exc:
                log(f"ltr: cache {directory} is invalid ({exc}); rebuilding it")
                shutil.rmtree(directory, ignore_errors=True)
        tmp = cache_dir / f".{directory.name}.tmp-{os.getpid()}"
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            _build(path, options, dtype, key, identity, tmp)
            tmp.rename(directory)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        _remove_stale(cache_dir, identity, directory)
        return _open(directory, key)
