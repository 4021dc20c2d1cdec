"""The interleaving and multileaving methods by name: the registry of the ``ltr_cli.interleaving``
entry points (:mod:`ltr_cli.plugins`), this package's declared in its ``pyproject.toml``
(``team-draft``, ``balanced``, ``probabilistic``, ``pairwise-preference``), a plugin's in its
own. ``ltr interleave --method``, ``dbgd``'s ``comparison``, ``ltr list`` and the conformance
suite read the names from it."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ltr_cli import plugins
from ltr_cli.errors import LtrError
from ltr_cli.interleaving.base import InterleavingKind, Method

#: a method's name: lower-case words of letters and digits joined by ``-``
NAME = re.compile(r"[a-z][a-z0-9]*(-[a-z0-9]+)*")

#: the interleaving and multileaving methods, built-in and plugged in
METHODS = plugins.Registry("interleaving", "interleaving method")


@plugins.name_check("interleaving")
def _check_name(name: str) -> str | None:
    if not NAME.fullmatch(name):
        return f"an interleaving method's name is lower-case words joined by '-' ({NAME.pattern}), not {name!r}"
    return None


@plugins.registrar("interleaving")
def _register(obj: Any, name: str, source: str) -> None:
    """An entry point must name an :class:`InterleavingKind` that compares two rankers, or
    several, or both."""
    if not isinstance(obj, InterleavingKind):
        raise TypeError(f"expected an InterleavingKind, got {type(obj).__name__}")
    if not (isinstance(obj.summary, str) and obj.summary.strip()) or not callable(obj.build):
        raise TypeError(f"interleaving method {name!r}: needs a one-line summary and a build(**params) function")
    if not (obj.interleaves or obj.multileaves):
        raise TypeError(f"interleaving method {name!r}: declares neither interleaves (2 rankers) nor multileaves")


def interleaving() -> tuple[str, ...]:
    """The methods that compare two rankers (each one's module imported)."""
    return tuple(n for n, k in METHODS.items() if k.interleaves)


def multileaving() -> tuple[str, ...]:
    """The methods that compare k >= 2 rankers at once."""
    return tuple(n for n, k in METHODS.items() if k.multileaves)


def method_kind(name: Any, where: str = "--method") -> InterleavingKind:
    """The kind of method ``name``; a one-line error naming ``where`` and listing the
    methods for an unknown name."""
    if not (isinstance(name, str) and name in METHODS.names() and name in METHODS):
        raise LtrError(f"{where} {name!r}: unknown method; interleaving: {', '.join(interleaving())}; "
                       f"multileaving: {', '.join(multileaving())}")
    kind: InterleavingKind = METHODS[name]
    return kind


def check_rankers(name: str, rankers: int, where: str = "--method") -> InterleavingKind:
    """The kind of ``name``, refused in one line when it cannot compare ``rankers`` rankers."""
    kind = method_kind(name, where)
    if rankers == 2 and not kind.interleaves:
        raise LtrError(f"{where} {name!r} is a multileaving method; to compare two rankers "
                       f"use {', '.join(interleaving())}")
    if rankers != 2 and not kind.multileaves:
        raise LtrError(f"{where} {name!r} compares two rankers only; for {rankers} use {', '.join(multileaving())}")
    return kind


def build_method(name: str, params: Mapping[str, Any] | None = None, rankers: int = 2,
                 where: str = "--method") -> Method:
    """The method ``name`` for ``rankers`` rankers, built with those of ``params`` it takes
    (``tau``: the probabilistic softmax exponent); a one-line error naming ``where`` for an
    unknown name or a method that cannot compare that many rankers."""
    kind = check_rankers(name, rankers, where)
    return kind.build(**{k: v for k, v in (params or {}).items() if k in kind.params})
