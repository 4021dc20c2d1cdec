"""Data file formats: one registry, one :func:`open_dataset` for every command that reads a
labelled file (runs, the binary cache, CV folds, ``ltr eval``, ``ltr score``, ``ltr data
inspect`` / ``convert``).

A format is a :class:`~ltr_cli.data.formats.base.DataFormat`: a name, the file suffixes it
claims, and ``reader(path, options)`` returning a
:class:`~ltr_cli.data.formats.base.QueryReader` (queries in file order, dense or as label
vectors). Built in: ``svmlight`` (SVMlight/LETOR text, the default for any other suffix) and
``parquet`` (the table ``ltr data convert`` writes). Plugins add formats through the
``ltr_cli.formats`` entry-point group (:mod:`ltr_cli.plugins`).
"""

from __future__ import annotations

from pathlib import Path

from typing import Any

from ltr_cli import plugins
from ltr_cli.data.formats.base import DataFormat, QueryReader
from ltr_cli.data.options import ReaderOptions
from ltr_cli.errors import LtrError

_FORMATS: dict[str, DataFormat] = {}
_DEFAULT = "svmlight"


def register_format(fmt: DataFormat) -> DataFormat:
    """Add a format to the registry (a built-in or a plugin's): its name must be new, and so
    must every suffix it claims (a file's format never depends on which plugins are
    installed, except for a suffix no other format claims)."""
    if not (isinstance(fmt.name, str) and fmt.name.isidentifier()):
        raise ValueError(f"a data format's name must be an identifier, not {fmt.name!r}")
    if fmt.name in _FORMATS and _FORMATS[fmt.name] is not fmt:
        raise ValueError(f"a data format named {fmt.name!r} is already registered")
    if not (isinstance(fmt.suffixes, tuple) and fmt.suffixes
            and all(isinstance(s, str) and s.startswith(".") and s == s.lower() and len(s) > 1 for s in fmt.suffixes)):
        raise ValueError(f"format {fmt.name!r}: suffixes must be a non-empty tuple of lower-case '.ext' strings")
    if not callable(fmt.reader) or not isinstance(fmt.description, str):
        raise ValueError(f"format {fmt.name!r}: needs a reader class and a one-line description")
    for other in _FORMATS.values():
        taken = set(other.suffixes) & set(fmt.suffixes)
        if other is not fmt and taken:
            raise ValueError(f"format {fmt.name!r} claims {', '.join(sorted(taken))}, already read as {other.name}")
    _FORMATS[fmt.name] = fmt
    return fmt


@plugins.registrar("formats")
def _register_plugin(obj: Any, name: str, source: str) -> None:
    """A plugin's entry point must name a :class:`DataFormat` with a new name."""
    if not isinstance(obj, DataFormat):
        raise TypeError(f"expected a DataFormat, got {type(obj).__name__}")
    _load_builtins()
    register_format(obj)


def formats() -> dict[str, DataFormat]:
    """Every registered format by name (built-ins first, then plugins)."""
    _load_builtins()
    plugins.load_group("formats")
    return dict(_FORMATS)


def format_for(path: Path, name: str | None = None) -> DataFormat:
    """The format of ``path``: ``name`` when given, else the format that claims its last
    suffix (case-insensitive), else SVMlight text (which also reads compressed text)."""
    known = formats()
    if name is not None:
        if name not in known:
            raise LtrError(f"{path}: unknown data format {name!r}; known: {', '.join(sorted(known))}")
        return known[name]
    suffixes = [s.lower() for s in Path(path).suffixes]
    for fmt in known.values():
        if fmt.name != _DEFAULT and any(s in fmt.suffixes for s in suffixes[-1:]):
            return fmt
    return known[_DEFAULT]


def open_dataset(path: Path | str, options: ReaderOptions = ReaderOptions(), fmt: str | None = None) -> QueryReader:
    """A reader of the queries of one labelled file, in file order, whatever its format."""
    p = Path(path)
    return format_for(p, fmt).reader(p, options)


def _load_builtins() -> None:
    if _DEFAULT in _FORMATS:
        return
    from ltr_cli.data.formats.parquet_table import PARQUET
    from ltr_cli.data.formats.svmlight_text import SVMLIGHT

    register_format(SVMLIGHT)
    register_format(PARQUET)


__all__ = ["DataFormat", "QueryReader", "format_for", "formats", "open_dataset", "register_format"]
