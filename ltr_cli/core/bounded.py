"""Reading files the tool did not write within bounds fixed before anything is decoded.

:func:`read_json` reads a small JSON file (a sidecar, a propensity file): only a regular file
(a FIFO is never waited on, a device never read), at most ``limit`` bytes, nested at most
``nesting`` deep (counted before it is parsed, so no parser recursion is ever deep).
:func:`decoded_bytes` bounds what a Parquet table's columns decode to from its metadata alone,
so a table of dictionary- or run-length-encoded columns is refused before a page is read
(the data layer's tables and the click logs).
"""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import Any

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


class Unreadable(ValueError):
    """A file refused by a bound; the message says which (``not a regular file ...``)."""


def read_json(path: Path, limit: int = 1 << 20, nesting: int = 16) -> Any:
    """The JSON value in ``path``; :class:`Unreadable` when it is not a regular file, is over
    ``limit`` bytes, is nested deeper than ``nesting`` or is not JSON (an ``OSError``, such as
    a missing file, is raised as it is)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise Unreadable("not a regular file (a directory, device or FIFO)")
        raw = f.read(limit + 1)
    if len(raw) > limit:
        raise Unreadable(f"over {limit:,} bytes")
    depth = 0
    for bracket in _BRACKET.finditer(_STRING.sub(b'""', raw)):
        depth += 1 if bracket.group() in (b"[", b"{") else -1
        if depth > nesting:
            raise Unreadable(f"nested deeper than {nesting} levels")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise Unreadable(f"not JSON ({str(exc).splitlines()[0][:80] if str(exc) else type(exc).__name__})") from None


def decoded_bytes(meta: Any) -> int:
    """A bound on the bytes a Parquet table's columns decode to, from its metadata alone
    (``pyarrow.parquet.FileMetaData``): every row of every column chunk as a float64 (the
    readers' arrays; a string as a reference to it), and a string column's encoded bytes
    besides (its distinct strings). The row counts are what the decoder produces whatever
    the encoding, so a dictionary- or run-length-encoded column of millions of equal values
    counts its millions of rows, not its few encoded bytes."""
    total = 0
    for i in range(meta.num_row_groups):
        group = meta.row_group(i)
        for j in range(group.num_columns):
            chunk = group.column(j)
            values = max(group.num_rows, chunk.num_values, 0) * 8
            encoded = max(chunk.total_uncompressed_size, 0)
            total += values + encoded if chunk.physical_type == "BYTE_ARRAY" else max(values, encoded)
    return total
