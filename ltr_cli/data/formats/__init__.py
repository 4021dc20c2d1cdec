"""Data file formats: one registry, one :func:`open_dataset` for every command that reads a
labelled file (runs, the binary cache, CV folds, ``ltr eval``, ``ltr score``, ``ltr data
inspect`` / ``convert``).

A format is a :class:`~ltr_cli.data.formats.base.DataFormat`: a name, the file suffixes it
claims, and ``reader(path, options)`` returning a
:class:`~ltr_cli.data.formats.base.QueryReader` (queries in file order, dense or as label
vectors). Formats are entry points of the ``ltr_cli.formats`` group (:mod:`ltr_cli.plugins`),
the entry point's name being the format's: built in (declared in this package's
``pyproject.toml``) ``svmlight`` (SVMlight/LETOR text, the default for any other suffix) and
``parquet`` (the table ``ltr data convert`` writes); plugins declare theirs the same way. A
format named by ``dataset.format`` is the only one imported; a file's suffix is matched
against the built-ins' claims first, then (importing them) the plugins'.
"""

from __future__ import annotations

from pathlib import Path

from typing import Any

from ltr_cli import plugins
from ltr_cli.data.formats.base import DataFormat, QueryReader
from ltr_cli.data.options import ReaderOptions
from ltr_cli.errors import LtrError

_DEFAULT = "svmlight"


def check_format(fmt: DataFormat, name: str | None = None) -> DataFormat:
    """Check a format: an identifier for a name (its entry point's name, ``name``; a format
    no entry point declares must not take a declared name), suffixes that no format declared
    before it claims (a file's format never depends on which plugins are installed, except
    for a suffix no other format claims), a reader and a description."""
    if not (isinstance(fmt.name, str) and fmt.name.isidentifier()):
        raise ValueError(f"a data format's name must be an identifier, not {fmt.name!r}")
    declared = list(plugins.declared("formats"))
    if name is not None and fmt.name != name:
        raise ValueError(f"the data format {fmt.name!r} is declared by an entry point named {name!r}: "
                         "name the entry point as the format")
    if name is None and fmt.name in declared and _named(fmt.name) is not fmt:
        raise ValueError(f"a data format named {fmt.name!r} is already registered")
    if not (isinstance(fmt.suffixes, tuple) and fmt.suffixes
            and all(isinstance(s, str) and s.startswith(".") and s == s.lower() and len(s) > 1 for s in fmt.suffixes)):
        raise ValueError(f"format {fmt.name!r}: suffixes must be a non-empty tuple of lower-case '.ext' strings")
    if not callable(fmt.reader) or not isinstance(fmt.description, str):
        raise ValueError(f"format {fmt.name!r}: needs a reader class and a one-line description")
    if fmt.write is not None and not callable(fmt.write):
        raise ValueError(f"format {fmt.name!r}: write must be a function write(path, queries, options)")
    for other in declared[:declared.index(name)] if name is not None else declared:
        earlier = _named(other)
        taken = set(earlier.suffixes) & set(fmt.suffixes) if earlier is not None and earlier is not fmt else set()
        if taken:
            raise ValueError(f"format {fmt.name!r} claims {', '.join(sorted(taken))}, already read as {other}")
    return fmt


@plugins.registrar("formats")
def _register(obj: Any, name: str, source: str) -> None:
    """An entry point must name a :class:`DataFormat` (:func:`check_format`)."""
    if not isinstance(obj, DataFormat):
        raise TypeError(f"expected a DataFormat, got {type(obj).__name__}")
    check_format(obj, name)


def formats() -> dict[str, DataFormat]:
    """Every usable format by name (built-ins first, then plugins; all imported)."""
    return plugins.load_group("formats")


def _named(name: str) -> DataFormat | None:
    fmt: DataFormat | None = plugins.load("formats", name)
    return fmt


def format_for(path: Path, name: str | None = None) -> DataFormat:
    """The format of ``path``: ``name`` when given, else the format that claims its last
    suffix (case-insensitive), else SVMlight text (which also reads compressed text)."""
    if name is not None:
        fmt = _named(name)
        if fmt is None:
            raise LtrError(f"{path}: unknown data format {name!r}; known: {', '.join(sorted(formats()))}")
        return fmt
    suffix = [s.lower() for s in Path(path).suffixes][-1:]
    declared = plugins.declared("formats")
    # the built-ins first: a plugin may not claim their suffixes, so a file they read
    # imports no plugin
    for built_in in (True, False):
        for other, d in declared.items():
            fmt = _named(other) if d.built_in == built_in else None
            if fmt is not None and any(s in fmt.suffixes for s in suffix):
                return fmt
    default = _named(_DEFAULT)
    assert default is not None
    return default


def open_dataset(path: Path | str, options: ReaderOptions = ReaderOptions(), fmt: str | None = None) -> QueryReader:
    """A reader of the queries of one labelled file, in file order, whatever its format."""
    p = Path(path)
    return format_for(p, fmt).reader(p, options)


__all__ = ["DataFormat", "QueryReader", "format_for", "formats", "open_dataset", "check_format"]
