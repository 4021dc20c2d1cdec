"""Query sources: turn a validated dataset spec into passes over queries.

One contract, :class:`~ltr_cli.data.sources.base.QuerySource` (feature count, units,
each unit's queries and the same queries as arrays, queries per pass, identity), and one
registry of dataset kinds (:mod:`~ltr_cli.data.sources.kinds`, :func:`open_source`) that
each kind's module registers into (imported when a spec of its kind is opened):

* :mod:`~ltr_cli.data.sources.files`: ``registry`` and ``files``, read through the format
  registry :mod:`ltr_cli.data.formats` (SVMlight/LETOR text, Parquet, plugins) or the
  binary cache (:class:`FileSource`);
* :mod:`~ltr_cli.data.sources.generated`: ``separable`` and ``shaped``
  (:class:`GeneratedSource`).

:mod:`~ltr_cli.data.sources.arrays` holds the arrays the compiled block loop maps and the
memory budget; :mod:`~ltr_cli.data.sources.rounds` turns passes into rounds (streamed or
planned). Settings a caller may change live in the module that reads them:
``arrays.ARRAY_BUDGET``, ``generated.KEEP_GENERATED``, ``generated.SMALL_STREAM``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ltr_cli.data.sources.arrays import UnitArrays
from ltr_cli.data.sources.base import QuerySource
from ltr_cli.data.sources.kinds import open_source, register_kind, source_kinds
from ltr_cli.data.sources.rounds import MAX_PLANNED_ROUNDS, Segment, StreamStats, plan_rounds, stream_rounds

if TYPE_CHECKING:
    from ltr_cli.data.sources.files import FileSource
    from ltr_cli.data.sources.generated import GeneratedSource

__all__ = ["MAX_PLANNED_ROUNDS", "FileSource", "GeneratedSource", "QuerySource", "Segment", "StreamStats",
           "UnitArrays", "open_source", "plan_rounds", "register_kind", "source_kinds", "stream_rounds"]


def __getattr__(name: str) -> Any:
    """The source classes, imported on first use (a run imports the kind it opens)."""
    if name == "FileSource":
        from ltr_cli.data.sources.files import FileSource
        return FileSource
    if name == "GeneratedSource":
        from ltr_cli.data.sources.generated import GeneratedSource
        return GeneratedSource
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
