"""The contract of a data format: what ``open_dataset`` returns and what a format declares."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Protocol

import numpy as np

from ltr_cli.data.options import ReaderOptions
from ltr_cli.data.query import Query


class QueryReader(Protocol):
    """The queries of one file in file order (re-iterable).

    * ``dense_queries(dtype)``: :class:`~ltr_cli.data.query.Query` objects, ``X`` (m,
      n_features) of ``dtype``, ``y`` (m,) float64, ``line`` the place of the first document
      (a line for text, a 1-based row for tables). Needs ``options.n_features``.
    * ``labelled_queries()``: ``(qid, labels (m,) float64, line)`` without features.
    * ``summaries()``: ``(qid, labels, line, feature values stored, largest 0-based column or
      -1)`` per query, for ``ltr data inspect``.
    * ``count_queries()``: the number of queries (one pass).

    Qids are integers compared by value (:func:`ltr_cli.data.grammar.canonical_qid`), in
    every format.

    Every reader applies ``options``' bounds (documents per query, label range, finite
    values, contiguous qids unless ``split_qids: new-query``) and raises
    :class:`~ltr_cli.errors.DataFormatError` naming the file and its line or row.
    """

    path: Path
    options: ReaderOptions
    # ``(line or row, qid as written, qid as read)`` of every qid written other than
    # canonically (``01``, ``+1``), filled as the file is read, for ``ltr data inspect``
    respelt: list[tuple[int, str, str]]

    def __iter__(self) -> Iterator[Query]: ...

    def dense_queries(self, dtype: type = np.float64) -> Iterator[Query]: ...

    def labelled_queries(self) -> Iterator[tuple[str, np.ndarray, int]]: ...

    def summaries(self) -> Iterator[tuple[str, np.ndarray, int, int, int]]: ...

    def count_queries(self) -> int: ...


@dataclass(frozen=True)
class DataFormat:
    """A registered file format: ``name`` (what ``dataset.format`` and ``ltr list`` show;
    an identifier), the lower-case ``suffixes`` it claims (``.parquet``), a one-line
    ``description`` and ``reader(path, options) -> QueryReader``; optionally
    ``write(path, queries, options)``, which writes ``queries`` (:class:`Query` objects
    with ``options.n_features`` columns) as a file of the format: the conformance suite
    makes its sample file with it, and a format that declares none must claim a suffix
    ``ltr data convert`` writes (``.parquet``, ``.csv``)."""

    name: str
    suffixes: tuple[str, ...]
    description: str
    reader: Callable[[Path, ReaderOptions], QueryReader]
    write: Callable[[Path, Iterator[Query], ReaderOptions], None] | None = None
