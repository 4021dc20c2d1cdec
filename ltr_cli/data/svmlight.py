"""Streaming reader for SVMlight / LETOR ranking files, one query at a time.

Line format: ``<label> [qid:<qid>] <idx>:<val> ... [# comment]``.

* Labels are real numbers (Yandex has 0.5; semi-supervised LETOR has -1); never cast.
* The qid comes from (``qid_source``) a ``qid:`` token right after the label (``token``),
  the trailing ``# <qid>`` comment (``comment``, Yandex IMAT 2009), or a group file with
  one document count per line (``group``, LightGBM ``<file>.query`` / XGBoost
  ``<file>.group``). ``auto`` decides from the first data line: token if present, else a
  group file next to the data file, else a numeric comment.
* Feature indices are ``index_base``-based (1 for every registry dataset) and must lie in
  ``[base, base + n_features)``; missing features are 0 (sparse and dense lines alike).
  The width is fixed by the caller (the dataset registry), never guessed from one file.
* Everything after ``#`` is a comment (LETOR: ``#docid = ... inc = ... prob = ...``).
* gz / bz2 / xz files are recognised by their magic bytes. CRLF, tabs, blank lines,
  a UTF-8 byte-order mark, and scientific notation are accepted. Separators, numbers and
  qids follow :mod:`ltr_cli.data.grammar`: spaces and tabs only, ASCII outside comments,
  no ``_`` in numbers, integer qids compared by value (``qid:01`` is ``qid:1``).
* LETOR's literal ``NULL`` value is an error unless ``null_value`` gives a fill number.
* A qid that reappears after another qid is an error naming both line numbers, unless
  ``split_qids="new-query"`` (then each run of lines is its own query, same qid).

Memory: one query's rows at a time (plus the set of qids seen, to detect split queries).
Input is bounded, each limit a reader option (and a dataset key) named in its error:
``max_line_bytes`` (a line, 1 MiB by default: a newline-free stream fails at its first
MiB), ``max_query_mb`` (one query's dense rows, documents x width x 8 bytes, checked
before they are allocated; 1024 by default) and ``max_decompression_ratio`` (a compressed
file may expand to at most this many times its size, 200 by default: a gz bomb fails).
Each query is converted with one vectorised call; a slow per-token pass runs only to name
the exact problem when that call fails, so every error says ``file:line: what``.

Layers: :mod:`ltr_cli.data.options` (:class:`ReaderOptions`, bounds), :mod:`ltr_cli.data.query`
(:class:`Query`) and :mod:`ltr_cli.data.textio` (opening, decompression bound, BOM, bounded
lines, group files, qid source) are shared with the compiled fast path
(:mod:`ltr_cli.data.fastread`), which this reader tries first; the fast path imports
nothing from this module. ``Query``, ``ReaderOptions``, ``LIMIT_OPTIONS``, ``find_group_file`` and
``iter_lines`` stay importable from here.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.data.fastread import Irregular, fast_query_rows
from ltr_cli.data.grammar import bad_character, bad_character_message, canonical_qid, parse_number, strip_eol
from ltr_cli.data.options import (
    LIMIT_OPTIONS,
    MAX_LABEL,
    QidSource,
    ReaderOptions,
)
from ltr_cli.data.query import Query
from ltr_cli.data.textio import (
    detect_qid_source,
    find_group_file,
    iter_lines,
    read_group_sizes,
    show,
)
from ltr_cli.data.tokens import consecutive_indices, count_tokens, two_colons_in_a_token
from ltr_cli.errors import DataFormatError

__all__ = ["LIMIT_OPTIONS", "Query", "ReaderOptions", "SVMLightReader", "SparseQuery",
           "find_group_file", "iter_lines"]

def query_too_large(path: str, line: int, qid: str, options: ReaderOptions) -> DataFormatError:
    return DataFormatError(
        path, line,
        f"query {qid} has more than {options.max_query_rows} documents: at {options.n_features} "
        f"features its dense rows exceed dataset.max_query_mb ({options.max_query_mb:g} MB); "
        "check the declared feature count, or raise the limit")


@dataclass
class SparseQuery:
    """A query before densification: CSR rows with 0-based column indices."""

    qid: str
    y: np.ndarray
    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    line: int
    last_line: int

    @property
    def m(self) -> int:
        return int(self.y.shape[0])

    def dense(self, n_features: int) -> np.ndarray:
        X = np.zeros((self.m, n_features), dtype=np.float64)
        rows = np.repeat(np.arange(self.m), np.diff(self.indptr))
        X[rows, self.indices] = self.values
        return X


@dataclass
class _Line:
    lineno: int
    label: float
    features: bytes  # the idx:val tokens as written (spaces and tabs between them)
    n_tokens: int


@dataclass
class _Pending:
    qid: str
    lines: list[_Line] = field(default_factory=list)


class SVMLightReader:
    """Iterate over the queries of one file. Construct, then iterate (re-iterable)."""

    def __init__(self, path: str | Path, options: ReaderOptions = ReaderOptions()):
        self.path = Path(path)
        self.options = options
        # (line, qid as written, canonical qid) of qids not written canonically, as the
        # reference parse meets them (the compiled scanner leaves such lines to it)
        self.respelt: list[tuple[int, str, str]] = []

    # -- public iteration -------------------------------------------------------------
    def sparse_queries(self) -> Iterator[SparseQuery]:
        """Queries in file order as CSR rows (no feature-count bound needed)."""
        for pending in self._grouped_lines():
            yield self._convert(pending)

    def __iter__(self) -> Iterator[Query]:
        return self.dense_queries(np.float64)

    def dense_queries(self, dtype: type = np.float64) -> Iterator[Query]:
        """Queries with dense ``X`` (m, n_features) of ``dtype``, in file order.

        Uses the compiled scanner (:mod:`ltr_cli.data.fastread`) and falls back to the
        reference parse at the first irregular line, skipping the queries already given;
        both produce the same queries (values converted exactly, then cast to ``dtype``).
        """
        n = self.options.n_features
        if n is None:
            raise ValueError("dense reading needs n_features (from the dataset registry)")
        if self.options.max_query_rows < 1:
            raise DataFormatError(
                str(self.path), None,
                f"one document of {n} features takes {n * 8 / (1 << 20):,.0f} MB, over "
                f"dataset.max_query_mb ({self.options.max_query_mb:g}); check the feature count")
        for item in self._fast_or_reference(dtype):
            if isinstance(item, SparseQuery):
                X: np.ndarray = item.dense(n).astype(dtype, copy=False)
                if X.dtype != np.float64 and not np.isfinite(X).all():
                    raise DataFormatError(
                        str(self.path), item.line,
                        f"a feature value of the query starting here exceeds the {np.dtype(dtype).name} "
                        "range; use storage: float64")
                yield Query(qid=item.qid, X=X, y=item.y, line=item.line)
            else:
                yield Query(qid=item.qid, X=item.X, y=item.y, line=item.line)

    def labelled_queries(self) -> Iterator[tuple[str, np.ndarray, int]]:
        """``(qid, labels, first line)`` per query in file order: the compiled scanner
        checks every line as :meth:`sparse_queries` would but keeps no features (so no
        width is needed), and the reference parse takes over at the first irregular line."""
        for item in self._fast_or_reference(np.float64, labels_only=True):
            yield item.qid, item.y, item.line

    def summaries(self) -> Iterator[tuple[str, np.ndarray, int, int, int]]:
        """``(qid, labels, first line, feature tokens, largest 0-based column or -1)`` per
        query, for inspection (explicit zeros count as tokens)."""
        for item in self._fast_or_reference(np.float32):
            if isinstance(item, SparseQuery):
                yield (item.qid, item.y, item.line, int(item.indices.size),
                       int(item.indices.max()) if item.indices.size else -1)
            else:
                yield item.qid, item.y, item.line, item.tokens, item.max_col

    def _fast_or_reference(self, dtype: type, labels_only: bool = False) -> Iterator[Any]:
        """Fast-path ``QueryRows`` while the file is regular, then reference
        :class:`SparseQuery` objects for the rest (the same queries either way).
        ``labels_only``: fast rows keep no features (no width needed)."""
        done = 0
        if self.options.engine == "auto" and (labels_only or self.options.n_features is not None):
            try:
                for rows in fast_query_rows(self, dtype, labels_only=labels_only):
                    yield rows
                    done += 1
                return
            except Irregular:
                pass
        for i, sq in enumerate(self.sparse_queries()):
            if i >= done:
                yield sq

    def count_queries(self) -> int:
        """Number of queries (one pass; the compiled scanner when the width is known)."""
        if self.options.n_features is not None and self.options.engine == "auto":
            return sum(1 for _ in self.dense_queries(np.float32))
        return sum(1 for _ in self._grouped_lines())

    # -- line splitting and grouping -------------------------------------------------
    def _grouped_lines(self) -> Iterator[_Pending]:
        opts = self.options
        path = str(self.path)
        source: QidSource | None = None
        groups: list[int] | None = None
        group_path: Path | None = None
        group_index = 0
        left_in_group = 0
        seen: dict[str, int] = {}
        current: _Pending | None = None
        any_line = False
        n_lines = 0
        self.respelt.clear()

        for lineno, raw in iter_lines(self.path, opts.max_line_bytes, opts.max_decompression_ratio):
            raw = strip_eol(raw)
            hash_at = raw.find(b"#")
            if hash_at >= 0:
                body, comment = raw[:hash_at], raw[hash_at + 1:]
            else:
                body, comment = raw, b""
            bad = bad_character(body)
            if bad is not None:
                raise DataFormatError(path, lineno, bad_character_message(bad))
            parts = body.split(None, 2)  # label, qid token, the rest (spaces and tabs only are left)
            if not parts:
                continue  # blank or comment-only line
            any_line = True
            if source is None:
                source = detect_qid_source(opts, self.path, parts, comment)
                if source == "group":
                    group_path = opts.group_file or find_group_file(self.path)
                    if group_path is None:
                        raise DataFormatError(
                            path, lineno,
                            f"no qid: token and no group file; expected {self.path.name}.query "
                            f"or {self.path.name}.group next to it, or pass --group FILE",
                        )
                    groups = read_group_sizes(group_path)

            label = _parse_label(path, lineno, parts[0])
            has_qid_token = len(parts) > 1 and parts[1].startswith(b"qid:")
            if source == "token":
                if not has_qid_token:
                    found = find_group_file(self.path)
                    hint = (f"a group file {found.name} is next to it: read it with qid "
                            "source 'group' (--qid group)" if found is not None else
                            "for '# <qid>' comments (Yandex) use qid source 'comment'; for "
                            "LightGBM/XGBoost files give the group file (--group FILE)")
                    raise DataFormatError(
                        path, lineno, f"missing qid: expected 'qid:<id>' after the label; {hint}"
                    )
                qid = self._qid(lineno, parts[1][4:], "'qid:' token")
            elif source == "comment":
                words = comment.replace(b"\t", b" ").split(b" ")
                words = [w for w in words if w]
                if not words:
                    raise DataFormatError(
                        path, lineno, "missing qid: expected a trailing '# <qid>' comment"
                    )
                qid = self._qid(lineno, words[0], "'# <qid>' comment")
            else:  # group
                assert groups is not None and group_path is not None
                if left_in_group == 0:
                    if group_index >= len(groups):
                        raise DataFormatError(
                            path, lineno,
                            f"more data lines than the {sum(groups)} documents declared in "
                            f"{group_path}",
                        )
                    left_in_group = groups[group_index]
                    group_index += 1
                left_in_group -= 1
                qid = str(group_index)
            if has_qid_token:
                features = parts[2] if len(parts) > 2 else b""
            else:
                features = body.split(None, 1)[1] if len(parts) > 1 else b""
            line = _Line(lineno, label, features, count_tokens(features))

            n_lines += 1
            if current is not None and qid == current.qid:
                current.lines.append(line)
                if opts.n_features is not None and len(current.lines) > opts.max_query_rows:
                    raise query_too_large(path, current.lines[0].lineno, qid, opts)
                continue
            if current is not None:
                yield current
            if qid in seen:
                if opts.split_qids == "error":
                    raise DataFormatError(
                        path, lineno,
                        f"qid {qid} reappears here after other queries (its first line was "
                        f"{seen[qid]}); queries must be contiguous. To read each run of lines "
                        "as its own query, set split_qids: new-query",
                    )
            else:
                seen[qid] = lineno
            current = _Pending(qid, [line])

        if groups is not None and n_lines != sum(groups):
            raise DataFormatError(
                path, None,
                f"the group file {group_path} declares {sum(groups)} documents in "
                f"{len(groups)} groups but the data file has {n_lines} data lines",
            )
        if not any_line:
            raise DataFormatError(path, None, "no data lines (empty file or only comments)")
        if current is not None:
            yield current

    def _qid(self, lineno: int, token: bytes, where: str) -> str:
        """The canonical qid of ``token`` (see :mod:`ltr_cli.data.grammar`); a respelt one
        (``01``, ``+1``) is noted in :attr:`respelt` for ``ltr data inspect``."""
        if not token:
            raise DataFormatError(str(self.path), lineno, f"empty qid in {where}")
        qid = canonical_qid(token)
        if qid is None:
            raise DataFormatError(
                str(self.path), lineno,
                f"qid {show(token)} in {where} is not an integer; qids are integers compared by "
                "value (qid:1, qid:01 and qid:+1 are one query): renumber the queries")
        if len(qid) != len(token):
            self.respelt.append((lineno, token.decode("ascii"), qid))
        return qid

    # -- numeric conversion ----------------------------------------------------------
    def _convert(self, pending: _Pending) -> SparseQuery:
        lines = pending.lines
        counts = np.fromiter((ln.n_tokens for ln in lines), dtype=np.int64, count=len(lines))
        total = int(counts.sum())
        joined = b" ".join(ln.features for ln in lines)
        # every token must hold exactly one ':' so that numbers pair up as (idx, value):
        # as many colons as tokens, and no token with two (then none can have zero)
        idx = vals = None
        increasing = False  # every line's indices a run k, k+1, ...: no duplicate possible
        if joined.count(b":") == total and not two_colons_in_a_token(joined) and b"_" not in joined:
            tokens = joined.replace(b":", b" ").split()
            if len(tokens) == 2 * total:
                try:
                    keys = tokens[0::2]
                    idx = consecutive_indices(keys, counts)
                    increasing = idx is not None
                    if idx is None:
                        idx = np.array(keys, dtype=np.float64) if total else np.empty(0)
                    vals = np.array(tokens[1::2], dtype=np.float64) if total else np.empty(0)
                except ValueError:
                    idx = vals = None
        if idx is None or vals is None:
            idx, vals = self._slow_parse(lines)
            increasing = False
        indices = self._check_values(lines, counts, idx, vals, increasing)
        y = np.fromiter((ln.label for ln in lines), dtype=np.float64, count=len(lines))
        indptr = np.concatenate(([0], np.cumsum(counts)))
        return SparseQuery(
            qid=pending.qid, y=y, indptr=indptr, indices=indices, values=vals,
            line=lines[0].lineno, last_line=lines[-1].lineno,
        )

    def _slow_parse(self, lines: list[_Line]) -> tuple[np.ndarray, np.ndarray]:
        """Token-by-token parse that names the first bad token (and fills NULLs)."""
        path = str(self.path)
        idx_out: list[float] = []
        val_out: list[float] = []
        for ln in lines:
            for token in ln.features.split():
                key, sep, value = token.partition(b":")
                if not sep or not key or not value or b":" in value:
                    raise DataFormatError(
                        path, ln.lineno, f"bad feature token {show(token)}; expected idx:value"
                    )
                try:
                    index = parse_number(key)  # integrality is checked with the fast path's rule
                except ValueError:
                    raise DataFormatError(
                        path, ln.lineno,
                        f"bad feature index {show(key)} in {show(token)}; expected an integer",
                    ) from None
                if value == b"NULL":
                    if self.options.null_value is None:
                        raise DataFormatError(
                            path, ln.lineno,
                            f"NULL value in {show(token)} (a LETOR 'Feature_null' file); set "
                            "null_value to a number to fill it, or use the Feature_min files",
                        )
                    number = float(self.options.null_value)
                else:
                    try:
                        number = parse_number(value)
                    except ValueError:
                        raise DataFormatError(
                            path, ln.lineno,
                            f"bad feature value {show(value)} in {show(token)}; expected a number",
                        ) from None
                idx_out.append(index)
                val_out.append(number)
        return np.asarray(idx_out, dtype=np.float64), np.asarray(val_out, dtype=np.float64)

    def _check_values(
        self, lines: list[_Line], counts: np.ndarray, idx: np.ndarray, vals: np.ndarray,
        increasing: bool = False,
    ) -> np.ndarray:
        """Validate indices and values; return 0-based int64 column indices. ``increasing``:
        every line's indices are known to increase (no line can repeat one)."""
        path = str(self.path)
        base = self.options.index_base
        n = self.options.n_features
        row_of = np.repeat(np.arange(len(lines)), counts)
        bad_int = idx != np.floor(idx)
        if bad_int.any():
            r = int(row_of[np.argmax(bad_int)])
            raise DataFormatError(path, lines[r].lineno, "feature index is not an integer")
        too_low = idx < base
        if too_low.any():
            k = int(np.argmax(too_low))
            raise DataFormatError(
                path, lines[int(row_of[k])].lineno,
                f"feature index {int(idx[k])} is below the index base {base} of this dataset",
            )
        if n is not None:
            too_high = idx >= base + n
            if too_high.any():
                k = int(np.argmax(too_high))
                raise DataFormatError(
                    path, lines[int(row_of[k])].lineno,
                    f"feature index {idx[k]:.0f} is beyond the declared feature count {n} "
                    f"({base}-based); check the dataset's features setting",
                )
        finite = np.isfinite(vals)
        if not finite.all():
            k = int(np.argmin(finite))
            raise DataFormatError(
                path, lines[int(row_of[k])].lineno,
                f"non-finite feature value {float(vals[k])!r} at index {int(idx[k])}",
            )
        if n is None and idx.size and idx.max() >= 2**53:
            k = int(np.argmax(idx))
            raise DataFormatError(
                path, lines[int(row_of[k])].lineno, f"feature index {idx[k]:.0f} is implausibly large"
            )
        cols = (idx - base).astype(np.int64)
        if not increasing:
            _check_duplicates(path, lines, row_of, cols, base)
        return cols


def _check_duplicates(
    path: str, lines: list[_Line], row_of: np.ndarray, cols: np.ndarray, base: int
) -> None:
    """Raise if a feature index repeats within one line. Cheap when lines are sorted."""
    if cols.size < 2:
        return
    same_row = row_of[1:] == row_of[:-1]
    if (np.diff(cols)[same_row] > 0).all():
        return  # strictly increasing within every line: no duplicates
    order = np.lexsort((cols, row_of))
    r, c = row_of[order], cols[order]
    dup = (r[1:] == r[:-1]) & (c[1:] == c[:-1])
    if dup.any():
        k = int(np.argmax(dup))
        raise DataFormatError(
            path, lines[int(r[k])].lineno, f"feature {int(c[k]) + base} appears twice in this line"
        )


def _parse_label(path: str, lineno: int, token: bytes) -> float:
    try:
        value = parse_number(token)
    except ValueError:
        raise DataFormatError(path, lineno, f"bad label {show(token)}; expected a number") from None
    if not math.isfinite(value):
        raise DataFormatError(path, lineno, f"label {show(token)} is not a finite number")
    if value > MAX_LABEL:
        raise DataFormatError(path, lineno, f"label {show(token)} is too large for the gain 2^r - 1 "
                              f"(labels up to {MAX_LABEL:g} keep gains and their sums finite); "
                              "rescale the labels")
    return value
