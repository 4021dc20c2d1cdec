"""Generated data as a query source: the separable sets and streams shaped like a registry
dataset (:mod:`ltr_cli.data.synthetic`), one unit (0) per source.

A generated stream is a deterministic function of its parameters, so every source with the
same parameters in one process (the learners of a run, the points of a sweep in one worker)
shares one read-only copy of its arrays (:data:`_GENERATED`). Settings read at call time:
:data:`SMALL_STREAM`, :data:`KEEP_GENERATED` (set by a sweep worker) and
:data:`~ltr_cli.data.sources.arrays.ARRAY_BUDGET`.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.data.query import Query
from ltr_cli.data.relevance import DEFAULT_RELEVANCE
from ltr_cli.data.sources.arrays import UnitArrays, array_budget, stack_queries
from ltr_cli.data.sources.kinds import register_kind
from ltr_cli.data.synthetic import (
    SeparableSpec,
    ShapeSpec,
    separable_queries,
    separable_ranker,
    shaped_queries,
)

# generated streams already produced in this process, by generator parameters: every learner
# and every sweep point a worker process computes on the same stream shares one copy
_GENERATED: OrderedDict[str, UnitArrays] = OrderedDict()
# a generated stream larger than this is kept as arrays only when it is read more than once
# (several passes or learners, or a sweep worker, which sets KEEP_GENERATED): building the
# arrays costs about as much as generating the stream again (memory is touched page by page)
SMALL_STREAM = 256 << 20
KEEP_GENERATED = False


@dataclass
class GeneratedSource:
    """A generated stream (:class:`~ltr_cli.data.sources.base.QuerySource`): ``generator()``
    yields its queries, ``X`` (m, n_features) float64, each time the same ones; ``params``
    (``{"kind": "separable" | "shaped", ...}``) are what produce it and what identifies it."""

    n_features: int
    description: str  # "separable (<variant>)" or "shaped like <name>"
    name: str  # "separable-<variant>" or "shaped:<name>"
    generator: Callable[[], Iterator[Query]]
    params: dict[str, Any]
    n_queries: int  # queries per pass, known without generating
    ranker: np.ndarray | None = None  # the generating ranker (n_features,) of a separable stream
    reads: int = 1  # how many times this process will read the stream (passes x learners)
    _arrays: dict[int, UnitArrays | None] = field(default_factory=dict, repr=False)  # unit -> block-loop arrays

    @property
    def normalize(self) -> str:
        """Generated queries are used as generated."""
        return "none"

    def units(self) -> list[int]:
        """The single generated stream: ``[0]``."""
        return [0]

    def queries(self, unit: int) -> Iterator[Query]:
        """The generated queries, in order: read-only views of the stream's arrays when they
        are kept (:meth:`unit_arrays`), else generated again on every call."""
        arrays = self.unit_arrays(unit)
        if arrays is None:
            yield from self.generator()
            return
        for qid, start, end in zip(arrays.qids, arrays.starts.tolist(), arrays.ends.tolist()):
            yield Query(qid=qid, X=arrays.X[start:end], y=arrays.y[start:end], line=0)

    def unit_arrays(self, unit: int) -> UnitArrays | None:
        """The stream as arrays, produced once per process and shared read-only by every
        source with the same parameters (:func:`_generated_arrays`); None (the stream is then
        generated query by query) past the memory budget, or for a large stream read once."""
        if unit not in self._arrays:
            self._arrays[unit] = _generated_arrays(self)
        return self._arrays[unit]

    def queries_per_pass(self) -> int:
        """Queries in one pass: known from the parameters."""
        return self.n_queries

    def identity(self) -> dict[str, Any]:
        """The generator's parameters and the SHA-256 of their sorted items' ``repr``."""
        digest = hashlib.sha256(_params_key(self.params).encode()).hexdigest()
        return {"generator": self.params, "sha256": digest}


def _params_key(params: dict[str, Any]) -> str:
    """The parameters as one string: what identifies a generated stream."""
    return repr(sorted(params.items()))


def _generated_arrays(source: GeneratedSource) -> UnitArrays | None:
    """The source's generated stream as arrays, produced once per process (read-only);
    older streams are dropped when the kept ones would exceed the memory budget."""
    key = _params_key(source.params)
    if key in _GENERATED:
        _GENERATED.move_to_end(key)
        return _GENERATED[key]
    expected = _expected_docs(source.params)
    if expected * source.n_features * 8 > SMALL_STREAM and source.reads <= 1 and not KEEP_GENERATED:
        return None  # read once: streaming it is cheaper than keeping it
    budget = array_budget()
    found = stack_queries(source.generator(), budget, expected)
    if found is None:
        return None
    found.X.flags.writeable = False
    found.y.flags.writeable = False
    _GENERATED[key] = found
    while sum(u.X.nbytes for u in _GENERATED.values()) > budget and len(_GENERATED) > 1:
        _GENERATED.popitem(last=False)
    return found


def _expected_docs(params: dict[str, Any]) -> int:
    """Documents a generated stream will about have (a buffer size, not a promise)."""
    queries = int(params.get("queries") or 0)
    if params.get("kind") == "separable":
        return queries * int(params.get("docs") or 0)
    if not params.get("docs_per_query"):
        from ltr_cli.data.registry import get_dataset

        per = get_dataset(str(params.get("like"))).docs_per_query
    else:
        per = params["docs_per_query"]
    return int(queries * float(per) * 1.02) + 64


@register_kind("separable")
def separable_source(spec: Any, seed: int, cache_dir: Path | None = None) -> GeneratedSource:
    """The perceptron paper's separable set (``variant`` authors: 10 features by default,
    paper: 20), with its generating ranker; ``spec.seed`` or else the run's ``seed``."""
    features = spec.features or (10 if spec.variant == "authors" else 20)
    sep = SeparableSpec(spec.variant, spec.queries, spec.docs, features, spec.margin,
                        spec.seed if spec.seed is not None else seed)
    return GeneratedSource(features, f"separable ({spec.variant})", f"separable-{spec.variant}",
                           generator=lambda: separable_queries(sep),
                           params={"kind": "separable", **sep.__dict__},
                           n_queries=spec.queries, ranker=separable_ranker(sep))


@register_kind("shaped")
def shaped_source(spec: Any, seed: int, cache_dir: Path | None = None) -> GeneratedSource:
    """Queries shaped like the registry dataset ``spec.like`` (its width, labels and
    documents per query); ``spec.seed`` or else the run's ``seed``."""
    from ltr_cli.data.registry import get_dataset  # (the benchmarks' facts: only a shaped stream reads them)

    info = get_dataset(spec.like)
    shape = ShapeSpec(spec.queries, spec.docs_per_query,
                      seed=spec.seed if spec.seed is not None else seed, relevance=spec.relevance)
    how = "" if spec.relevance == DEFAULT_RELEVANCE else f", {spec.relevance} relevance"
    return GeneratedSource(info.n_features, f"shaped like {info.name}{how}", f"shaped:{info.name}",
                           generator=lambda: shaped_queries(info, shape),
                           params={"kind": "shaped", "like": info.name, **shape.params()},
                           n_queries=spec.queries)
