"""``ltr clicks import``: a click log from another system, checked row by row and written in
the tool's own format (:mod:`ltr_cli.clicklog.logfile`).

The outside log is a Parquet or CSV file (by its suffix: ``.parquet``/``.pq``, or ``.csv``),
one row per shown document, with the columns

- ``session``: a whole number >= 0, the same on every row of a session;
- ``qid``: the query, as the data file names it (a string; a whole number is read as its
  digits);
- ``doc``: the document's 0-based index among its query's documents in the data file;
- ``position``: 1-based; a session's positions are 1, 2, ..., n without a gap, n at most the
  query's documents;
- ``click``: 0 or 1 (a Parquet bool too);
- ``propensity`` (optional): the logging propensity of the row, in (0, 1].

Rows may come in any order: the log is written sorted by session, then position, its
sessions renumbered 0, 1, ... in the order of their numbers. Every refusal is one line
naming the file, the row (1-based, its line for a CSV) and the column. Reads are bounded: a
regular file only, at most :data:`MAX_BYTES`, a Parquet file's decoded size bounded from its
metadata before a page is read (as a click log's).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.clicklog.simulate import MAX_SESSIONS, MAX_SHOWN, Sessions
from ltr_cli.core.bounded import decoded_bytes
from ltr_cli.errors import LtrError

#: the columns an outside log has, and the optional one
REQUIRED: tuple[str, ...] = ("session", "qid", "doc", "position", "click")
OPTIONAL: tuple[str, ...] = ("propensity",)
#: the largest outside log read, in bytes
MAX_BYTES = 4 << 30
#: what a Parquet log may decode to, as a multiple of its size (as a click log's)
MAX_DECODED_RATIO = 200.0
_INTEGER = r"^\s*[0-9]+\s*$"


@dataclass(frozen=True)
class Outside:
    """An outside log's columns, as read: ``columns`` name -> pyarrow array (strings for a
    CSV); ``csv`` whether rows are lines of a CSV (row i is line i + 2)."""

    path: Path
    columns: dict[str, Any]
    csv: bool

    def where(self, i: int) -> str:
        """How an error names row ``i`` (0-based)."""
        return f"{self.path}: row {i + 1}" + (f" (line {i + 2})" if self.csv else "")


def _open_checked(path: Path) -> int:
    """The size of ``path``, a regular file of at most MAX_BYTES; a one-line error otherwise."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise LtrError(f"{path}: no such click log") from None
    except OSError as exc:
        raise LtrError(f"{path}: cannot read the click log ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
    finally:
        os.close(fd)
    if not stat.S_ISREG(info.st_mode):
        raise LtrError(f"{path}: not a regular file (a directory, device or FIFO); give a Parquet or CSV click log")
    if info.st_size > MAX_BYTES:
        raise LtrError(f"{path}: {info.st_size:,} bytes; an imported click log is at most {MAX_BYTES:,}")
    return int(info.st_size)


def read_outside(path: Path) -> Outside:
    """The columns of the outside log at ``path``, checked for names (one-line errors)."""
    import pyarrow as pa

    suffix = path.suffix.lower()
    if suffix not in (".parquet", ".pq", ".csv"):
        raise LtrError(f"{path}: give a .parquet or .csv click log (one row per shown document)")
    size = _open_checked(path)
    try:
        if suffix == ".csv":
            import pyarrow.csv as pcsv

            table = pcsv.read_csv(path, convert_options=pcsv.ConvertOptions(
                column_types={c: pa.string() for c in REQUIRED + OPTIONAL}, strings_can_be_null=True))
        else:
            import pyarrow.parquet as pq

            file = pq.ParquetFile(path)
            if decoded_bytes(file.metadata) > MAX_DECODED_RATIO * size + (1 << 20):
                raise LtrError(f"{path}: the log decodes to more than {MAX_DECODED_RATIO:g} times its size "
                               "(a decompression bomb?); refused before reading")
            table = file.read()
    except (OSError, pa.ArrowException) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise LtrError(f"{path}: not a readable {'CSV' if suffix == '.csv' else 'Parquet'} click log ({first})") \
            from None
    names = list(table.column_names)
    for name in names:
        if name not in REQUIRED + OPTIONAL:
            raise LtrError(f"{path}: unknown column {name!r}; an imported log has {', '.join(REQUIRED)} and "
                           f"optionally {', '.join(OPTIONAL)}")
    for name in REQUIRED:
        if name not in names:
            raise LtrError(f"{path}: column {name!r} is missing; an imported log has {', '.join(REQUIRED)} and "
                           f"optionally {', '.join(OPTIONAL)}")
    if len(set(names)) != len(names):
        raise LtrError(f"{path}: a column appears twice")
    if table.num_rows > MAX_SESSIONS:
        raise LtrError(f"{path}: {table.num_rows:,} rows; an imported log has at most {MAX_SESSIONS:,}")
    cols = {name: table.column(name).combine_chunks() for name in names}
    return Outside(path, {k: (v.dictionary_decode() if pa.types.is_dictionary(v.type) else v)
                          for k, v in cols.items()}, suffix == ".csv")


def _nulls(log: Outside, name: str) -> None:
    col = log.columns[name]
    if col.null_count:
        i = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
        raise LtrError(f"{log.where(i)}: column {name!r} is empty; every row needs a {name}")


def _bad_row(log: Outside, name: str, ok: np.ndarray, want: str, values: np.ndarray | None = None) -> None:
    """A one-line error at the first row where ``ok`` fails, showing its value (as parsed,
    when ``values`` are given)."""
    bad = np.flatnonzero(~ok)
    if bad.size:
        i = int(bad[0])
        value = values[i].item() if values is not None else log.columns[name][i].as_py()
        shown = repr(value) if len(repr(value)) <= 40 else repr(value)[:37] + "..."
        raise LtrError(f"{log.where(i)}: column {name!r} holds {shown}; {want}")


def whole(log: Outside, name: str, low: int, want: str) -> np.ndarray:
    """Column ``name`` as int64, each a whole number >= ``low``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    _nulls(log, name)
    col = log.columns[name]
    if pa.types.is_integer(col.type):
        values = col.to_numpy(zero_copy_only=False).astype(np.int64)
    elif pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        ok = pc.match_substring_regex(col, _INTEGER).to_numpy(zero_copy_only=False)
        ok &= pc.utf8_length(pc.utf8_trim_whitespace(col)).to_numpy(zero_copy_only=False) <= 18
        _bad_row(log, name, ok, want)
        values = pc.cast(pc.utf8_trim_whitespace(col), pa.int64()).to_numpy(zero_copy_only=False)
    else:
        raise LtrError(f"{log.path}: column {name!r} has type {col.type}; {want}")
    _bad_row(log, name, values >= low, want, values)
    return values


def clicks(log: Outside) -> np.ndarray:
    """The ``click`` column as bool: 0 or 1 (or a Parquet bool)."""
    import pyarrow as pa

    col = log.columns["click"]
    if pa.types.is_boolean(col.type):
        _nulls(log, "click")
        return col.to_numpy(zero_copy_only=False).astype(bool)
    values = whole(log, "click", 0, "a click is 0 or 1")
    _bad_row(log, "click", values <= 1, "a click is 0 or 1", values)
    return values.astype(bool)


def propensities(log: Outside) -> np.ndarray | None:
    """The optional ``propensity`` column as float64 in (0, 1]; None when absent."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if "propensity" not in log.columns:
        return None
    _nulls(log, "propensity")
    col = log.columns["propensity"]
    want = "a logging propensity is a number in (0, 1]"
    if pa.types.is_string(col.type) or pa.types.is_large_string(col.type):
        text = pc.utf8_trim_whitespace(col)
        ok = pc.match_substring_regex(text, r"^[+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?$")
        _bad_row(log, "propensity", ok.to_numpy(zero_copy_only=False), want)
        values = pc.cast(text, pa.float64()).to_numpy(zero_copy_only=False)
    elif pa.types.is_floating(col.type) or pa.types.is_integer(col.type):
        values = col.to_numpy(zero_copy_only=False).astype(np.float64)
    else:
        raise LtrError(f"{log.path}: column 'propensity' has type {col.type}; {want}")
    _bad_row(log, "propensity", (values > 0) & (values <= 1), want, values)
    return values


def qid_strings(log: Outside) -> np.ndarray:
    """The ``qid`` column as strings (object (rows,)), a whole number read as its digits."""
    import pyarrow as pa

    _nulls(log, "qid")
    col = log.columns["qid"]
    if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type) or pa.types.is_integer(col.type)):
        raise LtrError(f"{log.path}: column 'qid' has type {col.type}; a qid is a string (or a whole number)")
    values = np.asarray(col.cast(pa.string()).to_pylist(), dtype=object)
    stripped = np.array([v.strip() for v in values], dtype=object)
    _bad_row(log, "qid", np.array([bool(v) for v in stripped]), "a qid is the data file's name of the query")
    return stripped


def sessions_of(log: Outside, doc_counts: dict[str, int], qids: list[str]) -> tuple[Sessions, np.ndarray | None,
                                                                                   list[str]]:
    """The outside log as sessions in the tool's order (module docstring), with the
    propensities in the same order and the qids the sessions' ``query`` indexes (those of
    ``qids``, the data file's order, that the log shows)."""
    session = whole(log, "session", 0, "a session is a whole number >= 0")
    qid = qid_strings(log)
    doc = whole(log, "doc", 0, "a doc is the document's 0-based index within its query in the data file")
    position = whole(log, "position", 1, "a position is a whole number from 1")
    click = clicks(log)
    propensity = propensities(log)
    n = len(session)
    if n == 0:
        raise LtrError(f"{log.path}: no rows; give one row per shown document")
    known = np.array([q in doc_counts for q in qid])
    _bad_row(log, "qid", known, "not a query of the data file (--data)")
    sizes = np.array([doc_counts[q] for q in qid], dtype=np.int64)
    _bad_row(log, "doc", doc < sizes, "beyond its query's documents in the data file (indices from 0)", doc)
    order = np.lexsort((np.arange(n), position, session))
    s, p = session[order], position[order]
    dup = np.flatnonzero((s[1:] == s[:-1]) & (p[1:] == p[:-1]))
    if dup.size:
        i = int(order[dup[0] + 1])
        raise LtrError(f"{log.where(i)}: session {int(session[i])} shows position {int(position[i])} a second time")
    start = np.ones(n, dtype=bool)
    start[1:] = s[1:] != s[:-1]
    spans = np.flatnonzero((~start[1:]) & (qid[order][1:] != qid[order][:-1]))
    if spans.size:
        i = int(order[spans[0] + 1])
        raise LtrError(f"{log.where(i)}: session {int(session[i])} spans two queries ({qid[order][spans[0]]!r} and "
                       f"{qid[i]!r}); a session shows one query's documents")
    rank = np.arange(n) - np.flatnonzero(start)[np.cumsum(start) - 1] + 1
    gap = np.flatnonzero(p != rank)
    if gap.size:
        i = int(order[gap[0]])
        raise LtrError(f"{log.where(i)}: session {int(session[i])} shows position {int(position[i])} without position "
                       f"{int(rank[gap[0]])}; a session's positions run 1, 2, ... without a gap")
    beyond = np.flatnonzero((p > sizes[order]) | (p > MAX_SHOWN))
    if beyond.size:
        i = int(order[beyond[0]])
        raise LtrError(f"{log.where(i)}: position {int(position[i])} is beyond the list: query {qid[i]!r} has "
                       f"{int(sizes[i])} documents (and a session shows at most {MAX_SHOWN})")
    d = doc[order]
    twice = np.lexsort((d, s))
    same = np.flatnonzero((s[twice][1:] == s[twice][:-1]) & (d[twice][1:] == d[twice][:-1]))
    if same.size:
        i = int(order[max(twice[same[0]], twice[same[0] + 1])])
        raise LtrError(f"{log.where(i)}: session {int(session[i])} shows document {int(doc[i])} a second time")
    present = set(qid.tolist())
    shown = [q for q in qids if q in present]
    index = {q: k for k, q in enumerate(shown)}
    query = np.array([index[q] for q in qid[order]], dtype=np.int32)
    renumbered = (np.cumsum(start) - 1).astype(np.int64)
    out = Sessions(renumbered, query, d.astype(np.int32), p.astype(np.int16), click[order])
    return out, None if propensity is None else propensity[order], shown
