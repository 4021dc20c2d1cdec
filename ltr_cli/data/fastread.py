"""Fast path of the SVMlight reader: blocks of bytes -> compiled scan -> dense query rows.

The file is read in blocks of whole lines (``block_bytes``, decompressed on the fly), each
block cut into sub-blocks of at most ``row_budget_bytes`` of dense rows, and every
sub-block parsed by :func:`ltr_cli.data.fastscan.scan_block` into one zero-filled matrix;
queries are row slices of it (views, no copy) unless a query spans two sub-blocks. Memory:
one block of text plus its dense rows, whatever the file size.

Anything outside the regular grammar raises :class:`Irregular`; the public reader
(:class:`ltr_cli.data.svmlight.SVMLightReader`) then re-reads with the reference parser,
which accepts the file's quirk or raises the ``file:line`` error. This module never writes
an error message of its own, so both paths fail identically.
"""

from __future__ import annotations

import os

from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from ltr_cli.core.codes import QID_COMMENT, QID_NONE, QID_TOKEN
from ltr_cli.core.codes import SCAN_IRREGULAR as IRREGULAR
from ltr_cli.core.codes import SCAN_SLOW_FULL as SLOW_FULL
from ltr_cli.data.options import MAX_LABEL, ReaderOptions
from ltr_cli.data.textio import (
    BOM,
    DECOMPRESS_ERRORS,
    InputTooLarge,
    detect_qid_source,
    find_group_file,
    open_binary,
    read_group_sizes,
)
from ltr_cli.errors import DataFormatError
from ltr_cli.kernels import ahead


class DataFile(Protocol):
    """What the fast path reads: a file and its options (an ``SVMLightReader``)."""

    path: Path
    options: ReaderOptions


class Irregular(Exception):
    """The file leaves the fast path's grammar at ``line``: use the reference parser."""

    def __init__(self, line: int | None = None):
        super().__init__(f"irregular input at line {line}")
        self.line = line


@dataclass
class QueryRows:
    """One query from the fast path: ``X`` (m, d) of the requested dtype, labels ``y``
    (m,) float64, first line, feature tokens (explicit zeros included) and the largest
    0-based column written (-1 if none)."""

    qid: str
    X: np.ndarray
    y: np.ndarray
    line: int
    tokens: int
    max_col: int


def _first_data_line(data: bytes, start: int, end: int) -> tuple[list[bytes], bytes] | None:
    """Label/qid tokens and comment of the first data line in ``data[start:end]``."""
    while start < end:
        nl = data.find(b"\n", start, end)
        stop = end if nl < 0 else nl
        raw = data[start:stop]
        hash_at = raw.find(b"#")
        body, comment = (raw[:hash_at], raw[hash_at + 1:]) if hash_at >= 0 else (raw, b"")
        parts = body.split()
        if parts:
            return parts, comment
        start = stop + 1
    return None


def _has_long_line(data: bytes, a: int, b: int, limit: int) -> bool:
    """True if ``data[a:b]`` (starting at a line start) holds a line of more than ``limit``
    bytes before its newline. Jumps a window of ``limit + 1`` bytes at a time to the last
    newline inside it: about (b - a) / limit calls, whatever the line lengths."""
    p = a
    while b - p > limit:
        n = data.rfind(b"\n", p, p + limit + 1)
        if n < 0:
            return True
        p = n + 1
    return False


def _spans(reader: DataFile, block_bytes: int) -> Iterator[tuple[bytes, int, int]]:
    """``(data, start, end)``: ``data[start:end]`` is a run of whole lines (the file's last
    line may lack its newline); the BOM is skipped. Blocks are not copied: a line split
    by a block boundary is joined into a small separate span."""
    carry = b""
    first = True
    max_line = reader.options.max_line_bytes
    try:
        with open_binary(reader.path, reader.options.max_decompression_ratio) as fh:
            while True:
                data = fh.read(block_bytes)
                start = 0
                if first:
                    first = False
                    if data.startswith(BOM):
                        start = len(BOM)
                if not data:
                    if carry:
                        yield carry, 0, len(carry)
                    return
                if carry:
                    nl = data.find(b"\n")
                    if nl < 0:
                        carry += data
                        if len(carry) > max_line:
                            raise Irregular(None)  # the reference parser names the line
                        continue
                    head = carry + data[:nl + 1]
                    carry = b""
                    if len(head) - 1 > max_line:
                        raise Irregular(None)
                    yield head, 0, len(head)
                    start = nl + 1
                cut = data.rfind(b"\n", start) + 1
                if cut > start:
                    if _has_long_line(data, start, cut, max_line):
                        raise Irregular(None)  # the reference parser names the line
                    yield data, start, cut
                    carry = data[cut:]
                else:
                    carry = data[start:]
                if len(carry) > max_line:
                    raise Irregular(None)
    except (*DECOMPRESS_ERRORS, InputTooLarge):
        raise Irregular(None) from None


class _Grouper:
    """Turns scanned rows into queries: qid changes (token/comment) or group sizes."""

    def __init__(self, reader: DataFile, mode: int, groups: list[int] | None):
        self.reader = reader
        self.mode = mode
        self.groups = groups
        self.group_index = 0
        self.left = 0
        self.seen: dict[str, int] = {}
        self.prev_qid = np.empty(0, dtype=np.uint8)
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
        self.qid = ""
        self.line = 0
        self.n_rows = 0

    def _start(self, qid: str, line: int) -> QueryRows | None:
        done = self.flush()
        if qid in self.seen:
            if self.reader.options.split_qids == "error":
                raise Irregular(line)
        else:
            self.seen[qid] = line
        self.qid, self.line = qid, line
        return done

    def flush(self) -> QueryRows | None:
        if not self.parts:
            return None
        if sum(p[1].shape[0] for p in self.parts) > self.reader.options.max_query_rows:
            raise Irregular(self.line)  # the reference parser names the query
        if len(self.parts) == 1:
            X, y, ntok, last = self.parts[0]
        else:
            X, y, ntok, last = (np.concatenate(p) for p in zip(*self.parts))
        self.parts = []
        if y.shape[0] and y.max() > MAX_LABEL:
            raise Irregular(self.line)  # the reference parser names the line
        return QueryRows(self.qid, X, y, self.line, int(ntok.sum()), int(last.max(initial=-1)))

    def add(self, piece: "_Scanned", first_line: int) -> Generator[QueryRows, None, int]:
        """Queries completed by ``piece``, whose first line is ``first_line`` of the file;
        returns the file line number after the piece."""
        query_starts = ahead.function("ltr_cli.data.fastscan:query_starts")

        piece.lineno += first_line - 1
        buf, rows, X, label, lineno = piece.buf, piece.rows, piece.X, piece.label, piece.lineno
        qs, qe, ntok, lastcol = piece.qs, piece.qe, piece.ntok, piece.lastcol
        self.n_rows += rows
        if self.mode == 2:  # group sizes
            assert self.groups is not None
            starts = []
            r = 0
            while r < rows:
                if self.left == 0:
                    if self.group_index >= len(self.groups):
                        raise Irregular(int(lineno[r]))
                    self.left = self.groups[self.group_index]
                    self.group_index += 1
                    starts.append(r)
                step = min(self.left, rows - r)
                self.left -= step
                r += step
            names = [str(self.group_index - len(starts) + 1 + j) for j in range(len(starts))]
        else:
            starts = query_starts(buf, qs, qe, rows, self.prev_qid).tolist()
            names = [buf[qs[s]:qe[s]].tobytes().decode("latin-1") for s in starts]
            if rows:
                self.prev_qid = buf[qs[rows - 1]:qe[rows - 1]].copy()
        bounds = starts + [rows]
        if not starts or starts[0] != 0:
            end = starts[0] if starts else rows
            self.parts.append((X[:end], label[:end], ntok[:end], lastcol[:end]))
        for j, s in enumerate(starts):
            done = self._start(names[j], int(lineno[s]))
            if done is not None:
                yield done
            e = bounds[j + 1]
            self.parts.append((X[s:e], label[s:e], ntok[s:e], lastcol[s:e]))
        if sum(p[1].shape[0] for p in self.parts) > self.reader.options.max_query_rows:
            raise Irregular(self.line)  # the reference parser names the query
        return first_line + piece.newlines


@dataclass
class _Scanned:
    """One scanned piece: the bytes it came from and its outputs (``rows`` valid rows)."""

    buf: np.ndarray
    rows: int
    X: np.ndarray
    label: np.ndarray
    lineno: np.ndarray
    qs: np.ndarray
    qe: np.ndarray
    ntok: np.ndarray
    lastcol: np.ndarray
    newlines: int


def _scan_piece(buf: np.ndarray, n_lines: int, mode: int, base: int, d: int, dtype: type,
                bound: int | None = None) -> _Scanned:
    """Scan one piece of whole lines (runs in a worker thread: the kernel releases the GIL).
    Line numbers are relative to the piece (its first line is 1). ``d`` columns are kept
    (0: none); feature indices must be below ``bound`` (default ``d``)."""
    scan_block = ahead.function("ltr_cli.data.fastscan:scan_block")

    max_abs = float(np.finfo(dtype).max)
    slow_cap = 4 * n_lines + 1024
    while True:
        X: np.ndarray = np.zeros((n_lines, d), dtype=dtype)
        label = np.empty(n_lines)
        ints = np.empty((5, n_lines), dtype=np.int64)  # lineno, qid start, qid end, tokens, last col
        slow = np.empty((4, slow_cap), dtype=np.int64)
        rows, n_slow, status, end_line = scan_block(
            buf, mode, base, d if bound is None else bound, X, label, ints[0], ints[1], ints[2], ints[3], ints[4],
            slow, 1, max_abs)
        if status != SLOW_FULL:
            break
        slow_cap = int(np.count_nonzero(buf == 58)) + n_lines + 1
    if status == IRREGULAR:
        raise Irregular(int(end_line))
    for k in range(n_slow):
        r, c, s0, s1 = (int(v) for v in slow[:, k])
        try:
            value = float(buf[s0:s1].tobytes())
        except ValueError:
            raise Irregular(int(ints[0, r])) from None
        if not np.isfinite(value):
            raise Irregular(int(ints[0, r]))
        if c < 0:
            label[r] = value
        elif abs(value) > max_abs:
            raise Irregular(int(ints[0, r]))  # beyond the storage dtype's range
        elif d:
            X[r, c] = value
    X = X[:rows]
    return _Scanned(buf, rows, X, label[:rows], ints[0, :rows], ints[1], ints[2], ints[3, :rows], ints[4, :rows],
                    int(end_line) - 1)


def _executor():
    """A process-wide pool of two scanner threads (this project's machines have 2 cores).
    A process forked from one that had the pool (a sweep worker) makes its own: the
    parent's threads do not exist in the child, and work queued to them would wait forever."""
    global _POOL, _POOL_PID
    if _POOL is None or _POOL_PID != os.getpid():
        from concurrent.futures import ThreadPoolExecutor

        _POOL = ThreadPoolExecutor(max_workers=SCAN_THREADS, thread_name_prefix="ltr-scan")
        _POOL_PID = os.getpid()
    return _POOL


SCAN_THREADS = 2
_POOL = None
_POOL_PID = -1


def fast_query_rows(
    reader: DataFile,
    dtype: type = np.float64,
    block_bytes: int = 16 << 20,
    piece_bytes: int | None = None,
    row_budget_bytes: int = 32 << 20,
    labels_only: bool = False,
) -> Iterator[QueryRows]:
    """Queries of ``reader``'s file in order, parsed by the compiled scanner.

    Blocks of ``block_bytes`` are cut into pieces (``piece_bytes`` of text, by default
    about ``row_budget_bytes`` of dense rows and at most 4 MB) that worker threads scan
    while earlier pieces are grouped into queries; at most a few pieces are in flight, so memory does not grow with
    the file. Raises :class:`Irregular` where the reference parser must take over (the
    caller has to skip the queries already yielded). ``labels_only``: rows without
    features (``X`` has no columns; features are still checked, against ``n_features``
    when it is known).
    """
    from collections import deque


    opts = reader.options
    d = opts.n_features
    bound = d
    if labels_only:
        d, bound = 0, d if d is not None else (1 << 31)
    elif d is None:
        raise ValueError("the fast path needs n_features")
    cap_rows = max(1, row_budget_bytes // (max(d, 1) * np.dtype(dtype).itemsize))
    grouper: _Grouper | None = None
    line = 1
    pool = _executor()
    pending: deque = deque()
    try:
        for data, begin, finish in _spans(reader, block_bytes):
            if grouper is None:
                first = _first_data_line(data, begin, finish)
                if first is None:  # only blank/comment lines so far
                    line += data.count(b"\n", begin, finish)
                    continue
                try:
                    source = detect_qid_source(opts, reader.path, *first)
                except DataFormatError:
                    raise Irregular(None) from None
                groups = None
                if source == "group":
                    group_path = opts.group_file or find_group_file(reader.path)
                    if group_path is None:
                        raise Irregular(None)
                    try:
                        groups = read_group_sizes(group_path)
                    except DataFormatError:
                        raise Irregular(None) from None
                mode = {"token": QID_TOKEN, "comment": QID_COMMENT, "group": QID_NONE}[source]
                grouper = _Grouper(reader, mode, groups)
            if piece_bytes is None:  # ~row_budget_bytes of dense rows per piece, at most 4 MB of text
                head = min(finish, begin + (1 << 20))
                per_line = (head - begin) / max(1, data.count(b"\n", begin, head))
                piece_bytes = int(min(4 << 20, max(1 << 16, per_line * cap_rows)))
            arr = np.frombuffer(data, dtype=np.uint8)
            a = begin
            while a < finish:
                b = data.rfind(b"\n", a, a + piece_bytes) + 1 if a + piece_bytes < finish else finish
                if b <= a:  # one line longer than a piece
                    b = data.find(b"\n", a + piece_bytes, finish) + 1 or finish
                n_lines = data.count(b"\n", a, b) + 1
                if n_lines > 2 * cap_rows:  # short lines: cut the piece, its dense rows stay bounded
                    b = a
                    for _ in range(2 * cap_rows):
                        b = data.find(b"\n", b, finish) + 1
                    n_lines = 2 * cap_rows + 1
                pending.append(pool.submit(_scan_piece, arr[a:b], n_lines, grouper.mode, opts.index_base, d,
                                           dtype, bound))
                a = b
                while len(pending) > SCAN_THREADS + 1:
                    line = yield from grouper.add(pending.popleft().result(), line)
        while pending:
            assert grouper is not None  # pieces are submitted only once the grouper exists
            line = yield from grouper.add(pending.popleft().result(), line)
    finally:
        for fut in pending:
            fut.cancel()
    if grouper is None:
        raise Irregular(None)  # no data lines: the reference parser names the problem
    if grouper.groups is not None and (grouper.n_rows != sum(grouper.groups) or grouper.left):
        raise Irregular(None)
    last = grouper.flush()
    if last is not None:
        yield last

