"""The Parquet table of a ranking data set: the file ``ltr data convert`` writes and
``kind: files`` datasets, ``ltr eval``, ``ltr score`` and ``ltr data inspect`` read.

Schema (one definition, :func:`table_schema`, for writing and reading): ``qid`` (string),
``label`` (float64), then one float64 column per feature named ``f<index>`` in index
order, ``f1..fd`` for 1-based data (``f0..f(d-1)`` for 0-based). One row per document; the
rows of a query are consecutive, in the source file's order.

Reading applies the text reader's bounds: the feature columns must be exactly the ones the
dataset declares, labels finite and at most :data:`~ltr_cli.data.options.MAX_LABEL`,
features finite (a ``null_value`` replaces missing ones), at most
``max_query_rows`` documents a query, and a qid that reappears after other queries is an
error unless ``split_qids: new-query``. Errors name the file and the 1-based row.
Qids are integers compared by value, as in text files: a string column holds their decimal
spellings (``01`` is read as ``1`` and reported by ``ltr data inspect``), an integer
column the numbers; integer label columns are accepted.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.core.bounded import decoded_bytes
from ltr_cli.data.formats.base import DataFormat
from ltr_cli.data.grammar import canonical_qid
from ltr_cli.data.options import MAX_LABEL, ReaderOptions
from ltr_cli.data.query import Query
from ltr_cli.data.svmlight import query_too_large
from ltr_cli.errors import DataFormatError

BATCH_ROWS = 65536


def feature_columns(n_features: int, index_base: int) -> list[str]:
    """The names of the feature columns: ``f<base>`` .. ``f<base + d - 1>``."""
    return [f"f{j + index_base}" for j in range(n_features)]


def table_schema(n_features: int, index_base: int) -> Any:
    """The pyarrow schema of the table (qid, label, features)."""
    import pyarrow as pa

    return pa.schema([("qid", pa.string()), ("label", pa.float64())]
                     + [(name, pa.float64()) for name in feature_columns(n_features, index_base)])


def write_table(queries: Iterator[Query], tmp: Path, n_features: int, index_base: int, fmt: str = "parquet",
                batch_rows: int = BATCH_ROWS) -> dict[str, int]:
    """Stream queries into a Parquet (or CSV, same columns) file, one batch of rows at a time;
    return the counts."""
    import pyarrow as pa
    import pyarrow.csv as pcsv
    import pyarrow.parquet as pq

    schema = table_schema(n_features, index_base)
    n_queries = n_docs = 0
    batch: list[Query] = []
    rows = 0
    # dictionary-encoding float columns costs four times the rest of the write and makes the
    # file larger: only the qid column is dictionary-encoded
    opened = pq.ParquetWriter(tmp, schema, use_dictionary=["qid"]) if fmt == "parquet" else pcsv.CSVWriter(tmp, schema)
    with opened as writer:
        def flush() -> None:
            X = np.vstack([q.X for q in batch])
            cols = [pa.array(np.concatenate([np.full(q.m, q.qid, dtype=object) for q in batch]), pa.string()),
                    pa.array(np.concatenate([q.y for q in batch]))]
            cols += [pa.array(X[:, j]) for j in range(n_features)]
            writer.write_table(pa.Table.from_arrays(cols, schema=schema))

        for q in queries:
            batch.append(q)
            rows += q.m
            n_queries += 1
            n_docs += q.m
            if rows >= batch_rows:
                flush()
                batch, rows = [], 0
        if batch:
            flush()
    return {"queries": n_queries, "documents": n_docs, "features": n_features}


class ParquetReader:
    """The queries of one Parquet table in row order (see the module docstring)."""

    def __init__(self, path: str | Path, options: ReaderOptions = ReaderOptions()):
        self.path = Path(path)
        self.options = options
        self.respelt: list[tuple[int, str, str]] = []

    # -- the QueryReader contract ---------------------------------------------------------
    def __iter__(self) -> Iterator[Query]:
        return self.dense_queries(np.float64)

    def dense_queries(self, dtype: type = np.float64) -> Iterator[Query]:
        if self.options.n_features is None:
            raise ValueError("dense reading needs n_features (from the dataset registry)")
        for qid, y, row, X in self._queries(features=True):
            assert X is not None
            Xd: np.ndarray = X.astype(dtype, copy=False)
            if Xd.dtype != np.float64 and not np.isfinite(Xd).all():
                raise self._error(row, f"a feature value of the query starting here exceeds the "
                                       f"{np.dtype(dtype).name} range; use storage: float64")
            yield Query(qid=qid, X=Xd, y=y, line=row)

    def labelled_queries(self) -> Iterator[tuple[str, np.ndarray, int]]:
        for qid, y, row, _ in self._queries(features=False):
            yield qid, y, row

    def summaries(self) -> Iterator[tuple[str, np.ndarray, int, int, int]]:
        """Every value is stored in a table, so "feature values stored" counts the non-zero
        ones (what a sparse text line would have to write) and the largest column is the
        last with a non-zero value; every value is checked as a dense read checks it."""
        for qid, y, row, X in self._queries(features=True):
            assert X is not None
            nonzero = X != 0
            cols = np.flatnonzero(nonzero.any(axis=0))
            yield qid, y, row, int(nonzero.sum()), int(cols[-1]) if cols.size else -1

    def count_queries(self) -> int:
        return sum(1 for _ in self._queries(features=False))

    # -- reading ----------------------------------------------------------------------------
    def _error(self, row: int | None, message: str) -> DataFormatError:
        return DataFormatError(str(self.path), None, f"row {row}: {message}" if row is not None else message)

    def _file(self) -> Any:
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self.options.group_file is not None or self.options.qid_source in ("group", "comment"):
            raise self._error(None, "a Parquet table carries its qids in the qid column; drop the group file "
                                    "and the qid source setting")
        try:
            # qids stay dictionary-encoded as read: a long qid repeated on every row is held once
            file = pq.ParquetFile(self.path, read_dictionary=["qid"])
            expands = decoded_bytes(file.metadata)
        except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
            raise self._error(None, f"not a readable Parquet table ({str(exc).splitlines()[0]}); write one "
                                    "with ltr data convert") from None
        size = self.path.stat().st_size
        if expands > self.options.max_decompression_ratio * size + (1 << 20):  # as compressed text is bounded
            raise self._error(None, f"the table decodes to {expands:,} bytes, more than "
                                    f"{self.options.max_decompression_ratio:g} times its size (a decompression "
                                    "bomb?); if it is genuine, raise dataset.max_decompression_ratio")
        return file

    def _feature_names(self, file: Any) -> list[str]:
        """The feature columns of the open table ``file``, checked against the schema and the
        declared width."""
        names = list(file.schema_arrow.names)
        if names[:2] != ["qid", "label"]:
            raise self._error(None, f"the first columns are {names[:2]}, not ['qid', 'label']; write the "
                                    "table with ltr data convert")
        features = names[2:]
        base = self.options.index_base
        n = self.options.n_features if self.options.n_features is not None else len(features)
        expected = feature_columns(n, base)
        if features != expected:
            first = f"{features[0]}..{features[-1]}" if features else "none"
            want = f"{expected[0]}..{expected[-1]}" if expected else "none"
            raise self._error(None, f"has {len(features)} feature columns named {first}, but the dataset's "
                                    f"{n} features ({base}-based) are {want}; check the dataset's features "
                                    "and index_base settings")
        self._check_types(file.schema_arrow)
        return features

    def _check_types(self, schema: Any) -> None:
        """Every column's type, from the schema, before any page is decoded: a string or
        binary column where numbers belong would be decoded in full first (a dictionary of
        one long string repeated on every row is a bomb the row counts do not bound)."""
        import pyarrow as pa

        qid = schema.field("qid").type
        value = qid.value_type if pa.types.is_dictionary(qid) else qid
        if not (pa.types.is_integer(value) or pa.types.is_string(value) or pa.types.is_large_string(value)):
            raise self._error(None, f"the qid column has type {qid}; expected strings or integers")
        for name in schema.names[1:]:
            kind = schema.field(name).type
            if not (pa.types.is_floating(kind) or pa.types.is_integer(kind)):
                what = "the label column" if name == "label" else f"column {name}"
                raise self._error(None, f"{what} has type {kind}; expected numbers")

    def _queries(self, features: bool) -> Iterator[tuple[str, np.ndarray, int, np.ndarray | None]]:
        """``(qid, labels, first row, X or None)`` per query, rows grouped by consecutive qid."""
        import pyarrow as pa

        file = self._file()
        names = self._feature_names(file)
        columns = ["qid", "label"] + (names if features else [])
        limit = self.options.max_query_rows if self.options.n_features is not None else None
        seen: dict[str, int] = {}
        self.respelt.clear()
        held: list[tuple[np.ndarray, np.ndarray | None]] = []  # the current query's parts
        held_qid: str | None = None
        held_row = 0
        held_rows = 0
        row = 0  # rows read before this batch
        for batch in self._batches(file, columns):
            try:
                qids = self._qid_strings(batch.column(0), row)
                y = self._labels(batch.column(1), row)
                X = self._features(batch, row) if features else None
            except (pa.ArrowException, UnicodeDecodeError) as exc:
                raise self._unreadable(exc) from None
            n = len(qids)
            # boundaries of runs of equal qids inside the batch
            cuts = [0] + [i for i in range(1, n) if qids[i] != qids[i - 1]] + [n]
            for a, b in zip(cuts[:-1], cuts[1:]):
                qid = qids[a]
                if held_qid is not None and qid == held_qid:
                    held.append((y[a:b], None if X is None else X[a:b]))
                    held_rows += b - a
                else:
                    if held_qid is not None:
                        yield self._joined(held_qid, held, held_row)
                    if qid in seen and self.options.split_qids == "error":
                        raise self._error(row + a + 1, f"qid {qid} reappears here after other queries (its first "
                                                       f"row was {seen[qid]}); queries must be contiguous. To read "
                                                       "each run of rows as its own query, set split_qids: new-query")
                    seen.setdefault(qid, row + a + 1)
                    held_qid, held_row, held_rows = qid, row + a + 1, b - a
                    held = [(y[a:b], None if X is None else X[a:b])]
                if limit is not None and held_rows > limit:
                    raise query_too_large(str(self.path), held_row, qid, self.options)
            row += n
        if held_qid is None:
            raise self._error(None, "no rows (an empty table)")
        yield self._joined(held_qid, held, held_row)

    def _batches(self, file: Any, columns: list[str]) -> Iterator[Any]:
        """The table's record batches; a damaged file is one line naming it."""
        import pyarrow as pa

        batches = file.iter_batches(batch_size=BATCH_ROWS, columns=columns)
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            except (pa.ArrowException, OSError, UnicodeDecodeError) as exc:
                raise self._unreadable(exc) from None
            yield batch

    def _unreadable(self, exc: BaseException) -> DataFormatError:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return self._error(None, f"not a readable Parquet table ({reason}); write one with ltr data convert")

    @staticmethod
    def _joined(qid: str, parts: list[tuple[np.ndarray, np.ndarray | None]],
                row: int) -> tuple[str, np.ndarray, int, np.ndarray | None]:
        y = np.concatenate([p[0] for p in parts]) if len(parts) > 1 else parts[0][0]
        X = None
        if parts[0][1] is not None:
            X = np.vstack([p[1] for p in parts if p[1] is not None]) if len(parts) > 1 else parts[0][1]
        return qid, y, row, X

    def _qid_strings(self, column: Any, row: int) -> list[str]:
        """The canonical qid of each row of a batch. Strings are read dictionary-encoded and
        each distinct spelling is checked once; a row holds a reference to its qid, never a
        copy, so a long qid repeated on many rows takes its length once."""
        import pyarrow as pa

        if column.null_count:
            raise self._error(row + _first_null(column) + 1, "the qid is missing")
        if pa.types.is_integer(column.type):
            return [str(v) for v in column.to_pylist()]
        if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
            column = column.dictionary_encode()
        if not pa.types.is_dictionary(column.type) or not (
                pa.types.is_string(column.type.value_type) or pa.types.is_large_string(column.type.value_type)
                or pa.types.is_integer(column.type.value_type)):
            raise self._error(None, f"the qid column has type {column.type}; expected strings or integers")
        indices = column.indices.to_numpy(zero_copy_only=False)
        used, at = np.unique(indices, return_inverse=True)  # the dictionary entries the rows use
        spellings = column.dictionary.take(pa.array(used)).to_pylist()
        qids = np.empty(len(used), dtype=object)
        for u, v in enumerate(spellings):
            if isinstance(v, int):
                qids[u] = str(v)
                continue
            qid = canonical_qid(v.encode("utf-8", "replace")) if v else None
            if qid is None:
                first = int(np.argmax(at == u))
                shown = v if v is None or len(v) <= 40 else v[:40] + "..."
                raise self._error(row + first + 1, f"qid {shown!r} is not an integer; qids are integers compared "
                                                   "by value (1, 01 and +1 are one query): renumber the queries")
            qids[u] = qid
        respelt = np.array([isinstance(v, str) and v != q for v, q in zip(spellings, qids)], dtype=bool)
        for i in np.flatnonzero(respelt[at]).tolist():
            self.respelt.append((row + i + 1, spellings[at[i]], qids[at[i]]))
        out: list[str] = qids[at].tolist()
        return out

    def _labels(self, column: Any, row: int) -> np.ndarray:
        import pyarrow as pa

        if not (pa.types.is_floating(column.type) or pa.types.is_integer(column.type)):
            raise self._error(None, f"the label column has type {column.type}; expected numbers")
        if column.null_count:
            raise self._error(row + _first_null(column) + 1, "the label is missing")
        y = column.to_numpy(zero_copy_only=False).astype(np.float64)
        bad = ~np.isfinite(y)
        if bad.any():
            k = int(np.argmax(bad))
            raise self._error(row + k + 1, f"label {float(y[k])!r} is not a finite number")
        big = y > MAX_LABEL
        if big.any():
            k = int(np.argmax(big))
            raise self._error(row + k + 1, f"label {y[k]:g} is too large for the gain 2^r - 1 (labels up to "
                                           f"{MAX_LABEL:g} keep gains and their sums finite); rescale the labels")
        return y

    def _features(self, batch: Any, row: int) -> np.ndarray:
        import pyarrow as pa

        n = batch.num_rows
        d = batch.num_columns - 2
        X = np.empty((n, d), dtype=np.float64)
        for j in range(d):
            column = batch.column(j + 2)
            if not (pa.types.is_floating(column.type) or pa.types.is_integer(column.type)):
                raise self._error(None, f"column {batch.schema.names[j + 2]} has type {column.type}; "
                                        "expected numbers")
            values = column.to_numpy(zero_copy_only=False).astype(np.float64)
            if column.null_count:
                if self.options.null_value is None:
                    raise self._error(row + _first_null(column) + 1,
                                      f"feature {batch.schema.names[j + 2]} is missing; set null_value to "
                                      "give missing features a value")
                values[_null_mask(column)] = self.options.null_value
            X[:, j] = values
        finite = np.isfinite(X)
        if not finite.all():
            r, c = np.argwhere(~finite)[0]
            raise self._error(row + int(r) + 1, f"non-finite feature value {float(X[r, c])!r} in column "
                                                f"{batch.schema.names[int(c) + 2]}")
        return X


def _null_mask(column: Any) -> np.ndarray:
    return np.asarray(column.is_null().to_numpy(zero_copy_only=False), dtype=bool)


def _first_null(column: Any) -> int:
    return int(np.argmax(_null_mask(column)))


PARQUET = DataFormat(
    name="parquet",
    suffixes=(".parquet", ".pq"),
    description="the Parquet table 'ltr data convert' writes: qid, label, f1..fd (one row per document)",
    reader=ParquetReader,
)
