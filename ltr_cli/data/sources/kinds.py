"""The registry of dataset kinds: ``kind`` of a dataset spec -> the builder of its source.

Each source module registers the kinds it builds when it is imported
(:mod:`~ltr_cli.data.sources.files`: ``registry``, ``files``;
:mod:`~ltr_cli.data.sources.generated`: ``separable``, ``shaped``). The built-in modules are
imported when a spec of one of their kinds is opened (:data:`BUILT_IN_KINDS`), so a run on
generated data never loads the file readers.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ltr_cli.data.sources.base import QuerySource

#: ``builder(spec, seed, cache_dir) -> QuerySource``: ``seed`` is the run's seed (a
#: generator's own ``spec.seed`` takes precedence), ``cache_dir`` the binary cache of file
#: data (None: parse every time).
SourceBuilder = Callable[[Any, int, "Path | None"], QuerySource]

_KINDS: dict[str, SourceBuilder] = {}
#: kind -> the module that registers its builder when imported
BUILT_IN_KINDS: dict[str, str] = {"separable": "ltr_cli.data.sources.generated",
                                  "shaped": "ltr_cli.data.sources.generated",
                                  "registry": "ltr_cli.data.sources.files",
                                  "files": "ltr_cli.data.sources.files"}


def register_kind(kind: str) -> Callable[[SourceBuilder], SourceBuilder]:
    """Decorator: ``builder`` opens the sources of specs whose ``kind`` is ``kind`` (a kind
    is registered once)."""

    def add(builder: SourceBuilder) -> SourceBuilder:
        if kind in _KINDS and _KINDS[kind] is not builder:
            raise ValueError(f"a dataset kind named {kind!r} is already registered")
        _KINDS[kind] = builder
        return builder

    return add


def source_kinds() -> tuple[str, ...]:
    """Every dataset kind: the built-in ones, then any registered since."""
    return tuple(dict.fromkeys([*BUILT_IN_KINDS, *_KINDS]))


def open_source(spec: Any, seed: int, cache_dir: Path | None = None) -> QuerySource:
    """Build the query source of a dataset spec (checks that files exist); file data is
    cached in ``cache_dir`` when given.

    ``spec`` is a validated :data:`ltr_cli.config.experiment.DatasetSpec`, told apart by its ``kind``
    discriminator (``separable``, ``shaped``, ``registry``, ``files``): the data layer
    does not import the config layer above it."""
    kind = getattr(spec, "kind", None)
    if isinstance(kind, str) and kind not in _KINDS and kind in BUILT_IN_KINDS:
        importlib.import_module(BUILT_IN_KINDS[kind])
    builder = _KINDS.get(kind) if isinstance(kind, str) else None
    if builder is None:
        raise TypeError(f"unsupported dataset spec {type(spec).__name__}")
    return builder(spec, seed, cache_dir)
