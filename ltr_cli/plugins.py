"""Entry points: the one way learners, metrics and data formats are declared, built-in or
plugged in, in the groups ``ltr_cli.learners``, ``ltr_cli.metrics`` and ``ltr_cli.formats``.

This package declares its own in its ``pyproject.toml``, in the same groups other packages
use. An entry point's name is what a config or a command names (a learner's type, a
metric's kind, a format's name); its value names an object of the public API
(:mod:`ltr_cli.api`):

* ``ltr_cli.learners``: a learner config model (a subclass of
  :class:`~ltr_cli.api.OnlineLearnerConfig` or :class:`~ltr_cli.api.BatchLearnerConfig`)
  whose ``type`` is the entry point's name;
* ``ltr_cli.metrics``: a :class:`~ltr_cli.api.MetricKind` (a plugin's without a kernel);
  the entry point's name is the metric's kind (``mymetric@10`` in a config);
* ``ltr_cli.formats``: a :class:`~ltr_cli.api.DataFormat` whose name is the entry point's;
* ``ltr_cli.losses``: a :class:`~ltr_cli.neural.losses.kind.LossKind` (a neural ranking
  loss), under its name and under each of its aliases.

The names come from the installed distributions' metadata, read once per process without
importing anything (:func:`declared`); an entry point's module is imported only when a
config or a command names it (:func:`load`), or when a listing needs every one
(:func:`load_group`). A plugin that fails to import, names the wrong kind of object or takes
a name already declared is skipped with one line on stderr naming it and its distribution;
the rest of the tool keeps working.
"""

from __future__ import annotations

import contextlib
import re
import sys
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Callable

from ltr_cli import console
from ltr_cli.errors import LtrError

GROUPS = ("learners", "metrics", "formats", "families", "losses", "scorers")
DISTRIBUTION = "ltr-cli"  # the distribution whose entry points are the built-ins
BUILT_IN = "built-in"


@dataclass(frozen=True)
class Plugin:
    """One loaded entry point of another distribution: its group, name, ``module:attr``
    and distribution."""

    group: str
    name: str
    value: str
    distribution: str
    obj: Any


@dataclass(frozen=True)
class BrokenPlugin:
    """An entry point that could not be used, and why (one line)."""

    group: str
    name: str
    value: str
    distribution: str
    error: str


@dataclass(frozen=True)
class Declared:
    """An entry point as its metadata declares it (nothing imported): ``source`` is
    ``built-in`` or ``plugin <distribution>``."""

    group: str
    name: str
    value: str
    distribution: str
    entry: Any

    @property
    def source(self) -> str:
        return BUILT_IN if self.built_in else f"plugin {self.distribution}"

    @property
    def built_in(self) -> bool:
        return _normal(self.distribution) == DISTRIBUTION


# group -> the function that checks and registers one object (set by each registry):
# ``fn(obj, name, source)`` raises TypeError/ValueError with the reason when it cannot
_REGISTRARS: dict[str, Callable[[Any, str, str], None]] = {}
# group -> the names a registry refuses before anything is imported: ``fn(name)`` returns
# the reason, or None
_NAME_CHECKS: dict[str, Callable[[str], str | None]] = {}
_DECLARED: dict[str, dict[str, Declared]] | None = None
_CHECKED: dict[str, dict[str, Declared]] = {}
_OBJECTS: dict[tuple[str, str], Any] = {}
_BROKEN: dict[str, dict[str, BrokenPlugin]] = {g: {} for g in GROUPS}


def registrar(group: str) -> Callable[[Callable[[Any, str, str], None]], Callable[[Any, str, str], None]]:
    """Decorator: ``fn(obj, name, source)`` checks an entry point's object of ``group``
    (``name``: the entry point's name, ``source``: ``built-in`` or ``plugin <dist>``) and
    registers it, raising ``TypeError``/``ValueError`` with the reason when it cannot."""
    def wrap(fn: Callable[[Any, str, str], None]) -> Callable[[Any, str, str], None]:
        _REGISTRARS[group] = fn
        return fn
    return wrap


def name_check(group: str) -> Callable[[Callable[[str], str | None]], Callable[[str], str | None]]:
    """Decorator: ``fn(name)`` returns why an entry point of ``group`` may not take that
    name (None: it may); checked on the metadata, before anything is imported."""
    def wrap(fn: Callable[[str], str | None]) -> Callable[[str], str | None]:
        _NAME_CHECKS[group] = fn
        _CHECKED.pop(group, None)  # declared again with the check
        return fn
    return wrap


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _skip(group: str, name: str, value: str, dist: str, reason: str) -> None:
    if name in _BROKEN[group] or _normal(dist) == DISTRIBUTION:
        if _normal(dist) == DISTRIBUTION:
            raise LtrError(f"the built-in entry point {name} = {value} in ltr_cli.{group} is broken: {reason} "
                           "(reinstall: pip install -e .)")
        return
    _BROKEN[group][name] = BrokenPlugin(group, name, value, dist, reason)
    console.warn(f"plugin {name!r} ({value}, from {dist}) in ltr_cli.{group} was skipped: {reason}")


def _scan() -> dict[str, dict[str, Declared]]:
    """Every group's entry points by name, built-ins first (from the metadata only)."""
    global _DECLARED
    if _DECLARED is not None:
        return _DECLARED
    found = metadata.entry_points()
    out: dict[str, dict[str, Declared]] = {}
    for group in GROUPS:
        eps = [Declared(group, ep.name, ep.value, getattr(getattr(ep, "dist", None), "name", None) or "?", ep)
               for ep in found.select(group=f"ltr_cli.{group}")]
        eps.sort(key=lambda d: not d.built_in)  # stable: each distribution's own order
        if not any(d.built_in for d in eps):
            raise LtrError(f"no built-in entry points in ltr_cli.{group}: ltr-cli declares its {group} as entry "
                           "points, so it must be installed (pip install -e .), not only put on the path")
        table: dict[str, Declared] = {}
        for d in eps:
            if d.name in table:
                _skip(group, d.name, d.value, d.distribution,
                      f"ValueError: the name {d.name!r} is already declared ({table[d.name].source})")
                continue
            table[d.name] = d
        out[group] = table
    _DECLARED = out
    return out


def declared(group: str) -> dict[str, Declared]:
    """The entry points of ``group`` by name, built-ins first, those whose name the group's
    :func:`name_check` refuses left out (skipped with one line); nothing is imported."""
    if group not in _CHECKED:
        check = _NAME_CHECKS.get(group)
        table = {}
        for name, d in _scan()[group].items():
            reason = check(name) if check is not None else None
            if reason is not None:
                _skip(group, name, d.value, d.distribution, f"ValueError: {reason}")
                continue
            table[name] = d
        _CHECKED[group] = table
    return _CHECKED[group]


def load(group: str, name: str) -> Any:
    """The object of ``group``'s entry point ``name``, imported and registered on first use;
    None when no entry point has that name or it is broken (skipped with one line)."""
    key = (group, name)
    if key in _OBJECTS:
        return _OBJECTS[key]
    d = declared(group).get(name)
    if d is None or name in _BROKEN[group]:
        return None
    try:
        # a plugin's prints at import go to stderr: stdout carries results (``--json``)
        with contextlib.redirect_stdout(sys.stderr):
            obj = d.entry.load()
        register = _REGISTRARS.get(group)  # after the import: a kind's package may hold its registry
        if register is None:
            raise TypeError(f"no registry reads the group ltr_cli.{group}")
        register(obj, name, d.source)
    except (Exception, SystemExit) as exc:  # noqa: BLE001 - a broken plugin must not stop the tool
        if isinstance(exc, LtrError) and d.built_in:
            raise
        reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
        _skip(group, name, d.value, d.distribution, reason)
        return None
    _OBJECTS[key] = obj
    return obj


def load_group(group: str) -> dict[str, Any]:
    """Every usable entry point of ``group``, imported (for listings): name -> object."""
    out = {}
    for name in declared(group):
        obj = load(group, name)
        if obj is not None:
            out[name] = obj
    return out


def source(group: str, name: str) -> str:
    """Where ``name`` of ``group`` comes from: ``built-in`` or ``plugin <distribution>``."""
    return declared(group)[name].source


def loaded(group: str) -> list[Plugin]:
    """The plugins (other distributions' entry points) of ``group`` that loaded (loading
    the group first)."""
    objs = load_group(group)
    return [Plugin(group, d.name, d.value, d.distribution, objs[d.name])
            for d in declared(group).values() if not d.built_in and d.name in objs]


def broken(group: str) -> list[BrokenPlugin]:
    """The plugins of ``group`` that were skipped (loading the group first)."""
    load_group(group)
    return list(_BROKEN[group].values())
