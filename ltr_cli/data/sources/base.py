"""The contract every query source follows, whatever its data: files or a generator.

Runs and CV folds read a source through these members only; what a kind needs beyond
them (file paths, reader options, generator parameters) stays in its own class
(:class:`~ltr_cli.data.sources.files.FileSource`,
:class:`~ltr_cli.data.sources.generated.GeneratedSource`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol

import numpy as np

from ltr_cli.data.query import Query
from ltr_cli.data.sources.arrays import UnitArrays


class QuerySource(Protocol):
    """Where the queries of a run come from: a sequence of units (the files in order, or
    the one generated stream, unit 0), each a sequence of queries.

    * ``n_features``: the width d of every query's ``X`` (m, d).
    * ``description``: one line for notes and the manifest (``"files"``, ``"letor4-mq2007
      vali"``, ``"separable (paper)"``, ...).
    * ``name``: the dataset's name in summaries and reports: a registry name,
      ``separable-<variant>``, ``shaped:<name>`` or ``files``.
    * ``ranker``: the generating ranker (d,) of a separable stream, None otherwise.
    * ``normalize``: what :meth:`queries` applies to each query (``none``, ``query-level``)
      or leaves to the protocol (``zscore``); ``none`` for generated data.
    * ``n_queries``: queries per pass when known without reading (generated data, or files
      once :meth:`queries_per_pass` counted them), else None.
    * ``reads``: how many times this process will read the stream (passes x learners), set
      by the caller; a large generated stream is kept as arrays only when read again.
    """

    reads: int

    @property
    def n_features(self) -> int: ...

    @property
    def description(self) -> str: ...

    @property
    def name(self) -> str: ...

    @property
    def ranker(self) -> np.ndarray | None: ...

    @property
    def normalize(self) -> str: ...

    @property
    def n_queries(self) -> int | None: ...

    def units(self) -> list[int]:
        """Indices of the stream's units, in the order a pass visits them."""
        ...

    def queries(self, unit: int) -> Iterator[Query]:
        """One unit's queries in stream order: ``X`` (m, n_features), ``y`` (m,) float64;
        qids are prefixed ``<unit + 1>:`` when a source has several files (folds reuse
        qids by design)."""
        ...

    def unit_arrays(self, unit: int) -> UnitArrays | None:
        """The same queries as :meth:`queries`, as arrays (same qids, rows and order), built
        once per source; None when the unit must stream query by query."""
        ...

    def queries_per_pass(self) -> int:
        """Queries in one pass over every unit (counted from the data when not known)."""
        ...

    def identity(self) -> dict[str, Any]:
        """What the run read, for manifests, checkpoints and cache keys: ``{"files": [...]}``
        (one identity per file read) or ``{"generator": params, "sha256": digest}``."""
        ...
