"""The click log as a Parquet file: one row per shown document of a session.

Columns: ``session`` (int64), ``qid`` (string), ``doc`` (int32, the document's index within
its query, in the data file's order), ``position`` (int16, 1 first), ``click`` (bool),
``policy`` (string, the logging policy's identity), and, in a log imported with its logging
propensities (``ltr clicks import``), ``propensity`` (float64, in (0, 1]). The file's key-value metadata holds, under
``ltr.clicklog``, a JSON object: ``format``, ``policy``, ``model`` (the click model's
settings), ``seed``, ``sessions``, ``per_query``, ``shown``, ``source`` (what the logging
ranking came from) and ``fingerprint``, the SHA-256 of the columns' contents. The reader
checks every column, every metadata field and every row (:mod:`ltr_cli.clicklog.logcheck`)
and the fingerprint, and refuses a file with a one-line error naming it and the column,
field or row.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.clicklog.logcheck import check_meta, check_rows
from ltr_cli.core.bounded import decoded_bytes
from ltr_cli.clicklog.simulate import Sessions
from ltr_cli.errors import LtrError

KEY = b"ltr.clicklog"
FORMAT = 1
MAX_META = 1 << 20  # bytes of metadata JSON at most (a log's is a few hundred)
#: what a log may decode to, at most, as a multiple of its size (as dataset.max_decompression_ratio's
#: default for data); a log ltr writes decodes to about 40 times its size
MAX_DECODED_RATIO = 200.0
#: the columns and their Arrow types, in file order
COLUMNS: tuple[tuple[str, str], ...] = (("session", "int64"), ("qid", "string"), ("doc", "int32"),
                                        ("position", "int16"), ("click", "bool"), ("policy", "string"))


@dataclass(frozen=True)
class ClickLog:
    """A log read back: the columns as numpy arrays (``qid`` as an index into ``qids``),
    and the metadata."""

    session: np.ndarray
    query: np.ndarray
    qids: list[str]
    doc: np.ndarray
    position: np.ndarray
    click: np.ndarray
    meta: dict[str, Any]
    propensity: np.ndarray | None = None


def fingerprint(session: np.ndarray, query: np.ndarray, qids: list[str], doc: np.ndarray,
                position: np.ndarray, click: np.ndarray, policy: str, propensity: np.ndarray | None = None) -> str:
    """SHA-256 of the columns, each in a fixed little-endian type, and of the qids and policy
    (and of the propensities, when the log has them)."""
    h = hashlib.sha256()
    for arr, dtype in ((session, "<i8"), (query, "<i4"), (doc, "<i4"), (position, "<i2"), (click, "u1")):
        h.update(np.ascontiguousarray(arr, dtype=dtype).tobytes())
    if propensity is not None:
        h.update(np.ascontiguousarray(propensity, dtype="<f8").tobytes())
    h.update(json.dumps([qids, policy]).encode())
    return h.hexdigest()


def write_log(path: Path, sessions: Sessions, qids: list[str], meta: dict[str, Any],
              propensity: np.ndarray | None = None) -> dict[str, Any]:
    """Write the log to ``path`` (through a temporary file, replaced at the end); returns the
    metadata written, ``meta`` with ``format`` and ``fingerprint`` added; ``propensity``
    (float (rows,), each in (0, 1]) the logging propensities, if known."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    policy = str(meta["policy"])
    full = {"format": FORMAT, **meta,
            "fingerprint": fingerprint(sessions.session, sessions.query, qids, sessions.doc, sessions.position,
                                       sessions.click, policy, propensity)}
    n = len(sessions.session)
    names = pa.array(qids, pa.string())
    extra = {} if propensity is None else {"propensity": pa.array(np.asarray(propensity, np.float64), pa.float64())}
    table = pa.table({
        "session": pa.array(sessions.session, pa.int64()),
        "qid": pa.DictionaryArray.from_arrays(pa.array(sessions.query, pa.int32()), names),
        "doc": pa.array(sessions.doc, pa.int32()),
        "position": pa.array(sessions.position, pa.int16()),
        "click": pa.array(sessions.click, pa.bool_()),
        "policy": pa.DictionaryArray.from_arrays(pa.array(np.zeros(n, np.int32)), pa.array([policy])),
        **extra,
    }).replace_schema_metadata({KEY: json.dumps(full, sort_keys=True).encode()})
    from ltr_cli.outputs import new_temporary

    if path.is_dir():
        raise LtrError(f"{path}: is a directory; give --out a file name for the click log, e.g. {path / 'log.parquet'}")
    tmp: Path | None = None
    try:
        tmp = new_temporary(path.parent, path.name)  # created exclusively: never through a planted link
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    except OSError as exc:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        raise LtrError(f"{path}: cannot write the click log ({exc.strerror or exc})") from None
    return full


def _column(table: Any, path: Path, name: str, kind: str) -> Any:
    import pyarrow as pa

    if name not in table.column_names:
        raise LtrError(f"{path}: column {name!r} is missing; a click log has {', '.join(c for c, _ in COLUMNS)}")
    col = table.column(name).combine_chunks()
    if pa.types.is_dictionary(col.type):
        col = col.dictionary_decode() if kind != "string" else col
    base = col.type.value_type if pa.types.is_dictionary(col.type) else col.type
    want = {"int64": pa.int64(), "int32": pa.int32(), "int16": pa.int16(), "bool": pa.bool_(),
            "string": pa.string()}[kind]
    if not (base == want or (kind == "string" and base == pa.large_string())):
        raise LtrError(f"{path}: column {name!r} has type {base}; a click log's {name} is {kind}")
    if col.null_count:
        raise LtrError(f"{path}: column {name!r} has empty values; every row needs one")
    return col


def read_log(path: Path) -> ClickLog:
    """The log at ``path``, checked: columns, types, values and fingerprint."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    if path.is_dir() or (path.exists() and not path.is_file()):
        raise LtrError(f"{path}: not a regular file (a directory, device or FIFO); give a Parquet click log file")
    try:
        file = pq.ParquetFile(path)
        expands, size = decoded_bytes(file.metadata), path.stat().st_size
        if expands > MAX_DECODED_RATIO * size + (1 << 20):  # from the metadata, before a page is decoded
            raise LtrError(f"{path}: the click log decodes to {expands:,} bytes, more than {MAX_DECODED_RATIO:g} "
                           "times its size (a decompression bomb?); a log ltr writes stays far below that")
        table = file.read()
    except FileNotFoundError:
        raise LtrError(f"{path}: no such click log") from None
    except (OSError, pa.ArrowException) as exc:
        raise LtrError(f"{path}: not a readable Parquet click log ({str(exc).splitlines()[0] if str(exc) else exc})") from None
    raw = (table.schema.metadata or {}).get(KEY)
    try:
        meta = json.loads(raw) if raw is not None and len(raw) <= MAX_META else None
    except (ValueError, RecursionError):
        meta = None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise LtrError(f"{path}: no click-log metadata ({KEY.decode()}, format {FORMAT}, at most {MAX_META:,} "
                       "bytes of JSON); write logs with ltr clicks simulate-log")
    check_meta(path, meta)
    cols = {name: _column(table, path, name, kind) for name, kind in COLUMNS}

    def codes(col: Any) -> tuple[np.ndarray, list[str]]:
        if pa.types.is_dictionary(col.type):
            return col.indices.to_numpy(zero_copy_only=False).astype(np.int32), col.dictionary.to_pylist()
        uniq, inv = np.unique(np.asarray(col.to_pylist(), dtype=object).astype(str), return_inverse=True)
        return inv.astype(np.int32), uniq.tolist()

    query, qids = codes(cols["qid"])
    pol_codes, pol_names = codes(cols["policy"])
    policies = sorted({pol_names[i] for i in np.unique(pol_codes)})
    arrays = {name: cols[name].to_numpy(zero_copy_only=False) for name in ("session", "doc", "position", "click")}
    if arrays["position"].size and int(arrays["position"].min()) < 1:
        raise LtrError(f"{path}: column 'position' holds {int(arrays['position'].min())}; positions start at 1")
    shown = meta.get("shown")  # checked: an integer in range, or absent
    if arrays["position"].size and isinstance(shown, int) and int(arrays["position"].max()) > shown:
        raise LtrError(f"{path}: column 'position' holds {int(arrays['position'].max())}; the log's metadata "
                       f"shows {shown} documents per session")
    if arrays["doc"].size and int(arrays["doc"].min()) < 0:
        raise LtrError(f"{path}: column 'doc' holds {int(arrays['doc'].min())}; documents are indices from 0")
    if len(policies) > 1 or (policies and policies[0] != meta.get("policy")):
        raise LtrError(f"{path}: column 'policy' holds {policies}; the metadata names {meta.get('policy')!r}")
    check_rows(path, arrays["session"], query, arrays["doc"], arrays["position"], shown)
    propensity = _propensity(table, path)
    got = fingerprint(arrays["session"], query, qids, arrays["doc"], arrays["position"], arrays["click"],
                      str(meta.get("policy")), propensity)
    if got != meta.get("fingerprint"):
        raise LtrError(f"{path}: the columns do not match the log's fingerprint; the file was changed "
                       "after it was written")
    return ClickLog(arrays["session"], query, qids, arrays["doc"], arrays["position"], arrays["click"], meta,
                    propensity)


def _propensity(table: Any, path: Path) -> np.ndarray | None:
    """The optional ``propensity`` column: float64, every value in (0, 1]; None when absent."""
    if "propensity" not in table.column_names:
        return None
    import pyarrow as pa

    col = table.column("propensity").combine_chunks()
    if col.type != pa.float64() or col.null_count:
        raise LtrError(f"{path}: column 'propensity' has type {col.type}{' with empty values' if col.null_count else ''}"
                       "; a click log's propensity is a float64 in (0, 1] on every row")
    values = col.to_numpy(zero_copy_only=False)
    bad = np.flatnonzero(~((values > 0) & (values <= 1)))
    if bad.size:
        raise LtrError(f"{path}: row {int(bad[0]) + 1}: column 'propensity' holds {values[bad[0]]!r}; a logging "
                       "propensity is in (0, 1]")
    return values
