"""Entry points: the one way every extension kind is declared, built-in or plugged in, one
group ``ltr_cli.<group>`` per kind (:data:`GROUPS`).

This package declares its own in its ``pyproject.toml``, in the same groups other packages
use. An entry point's name is what a config or a command names (a learner's type, a
metric's kind, a format's name, a click model's name, ...); its value names an object of
the public API (:mod:`ltr_cli.api`), the kind's contract, which :data:`GROUPS` states.

The names come from the installed distributions' metadata, read once per process without
importing anything (:func:`declared`); an entry point's module is imported only when a
config or a command names it (:func:`load`), or when a listing needs every one
(:func:`load_group`). Each kind's registry checks what it is given (:func:`registrar`) and
may refuse a name before anything is imported (:func:`name_check`); :class:`Registry` is a
kind's names and objects as a mapping, with the one-line refusal of an unknown name. A
plugin that fails to import, names the wrong kind of object or takes a name already
declared (a built-in's included) is skipped with one line on stderr naming it and its
distribution; the entry point that holds the name, and the rest of the tool, keep working.

A new kind is one line in :data:`GROUPS`, its registrar, and its built-ins' entry points.
"""

from __future__ import annotations

import contextlib
import re
import sys
from dataclasses import dataclass
from importlib import metadata
from collections.abc import Iterator, Mapping
from typing import Any, Callable

from ltr_cli import console
from ltr_cli.errors import LtrError

#: every extension kind: its group (entry points ``ltr_cli.<group>``) -> what an entry point
#: of the group names (the kind's contract in :mod:`ltr_cli.api`); a new kind adds its line
GROUPS: dict[str, str] = {
    "learners": "a learner config model (OnlineLearnerConfig or BatchLearnerConfig) whose type is the name",
    "metrics": "a MetricKind: the metric's kind (a config names KIND@K)",
    "formats": "a DataFormat of that name",
    "families": "a compiled block family (BlockFamily) of that name",
    "click_models": "a ClickModelKind: a named click model",
    "interleaving": "an InterleavingKind: an interleaving or multileaving method",
    "estimators": "an Estimator: a counterfactual correction of a click log",
    "losses": "a LossKind: a neural ranking loss, under its name and under each of its aliases",
    "scorers": "a ScorerKind: a neural scorer (a config's scorer: {kind: NAME})",
}
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
# group -> (name, value, distribution) of each entry point skipped -> why: keyed by the entry
# point, not by its name, so that a plugin refused for a name it takes leaves the holder alone
_BROKEN: dict[str, dict[tuple[str, str, str], BrokenPlugin]] = {g: {} for g in GROUPS}


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
    """Refuse one entry point (a built-in's is an error: the installation is broken)."""
    if _normal(dist) == DISTRIBUTION:
        raise LtrError(f"the built-in entry point {name} = {value} in ltr_cli.{group} is broken: {reason} "
                       "(reinstall: pip install -e .)")
    key = (name, value, dist)
    broken = _BROKEN.setdefault(group, {})
    if key in broken:
        return
    broken[key] = BrokenPlugin(group, name, value, dist, reason)
    console.warn(f"plugin {name!r} ({value}, from {dist}) in ltr_cli.{group} was skipped: {reason}")


def _is_broken(d: Declared) -> bool:
    return (d.name, d.value, d.distribution) in _BROKEN.get(d.group, {})


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


def names(group: str, built_in: bool = False) -> tuple[str, ...]:
    """The declared names of ``group`` (``built_in``: the built-ins' only, as the generated
    references list them), nothing imported."""
    return tuple(n for n, d in declared(group).items() if d.built_in or not built_in)


def load(group: str, name: str) -> Any:
    """The object of ``group``'s entry point ``name``, imported and registered on first use;
    None when no entry point has that name or it is broken (skipped with one line)."""
    key = (group, name)
    if key in _OBJECTS:
        return _OBJECTS[key]
    d = declared(group).get(name)
    if d is None or _is_broken(d):
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
    return list(_BROKEN.get(group, {}).values())


@contextlib.contextmanager
def registered(group: str, name: str, obj: Any, distribution: str = "explicit") -> Iterator[Any]:
    """``obj`` registered as ``group``'s entry point ``name`` while the block runs (a
    conformance suite's explicit subject, which no installed distribution declares), checked
    as a plugin's would be: ValueError when the name is taken or refused, TypeError or
    ValueError from the kind's registrar. Only this process sees it."""
    table = _scan()[group]
    if name in table:
        raise ValueError(f"{name!r} is already declared in ltr_cli.{group} ({table[name].source})")
    check = _NAME_CHECKS.get(group)
    reason = check(name) if check is not None else None
    if reason is not None:
        raise ValueError(reason)
    entry = Declared(group, name, f"<{type(obj).__name__}>", distribution, None)
    table[name] = entry
    _CHECKED.pop(group, None)
    try:
        register = _REGISTRARS.get(group)
        if register is not None:
            register(obj, name, entry.source)
        _OBJECTS[(group, name)] = obj
        yield obj
    finally:
        table.pop(name, None)
        _CHECKED.pop(group, None)
        _OBJECTS.pop((group, name), None)


class Registry(Mapping[str, Any]):
    """One kind's extensions as a mapping: name -> object, built-ins first, then plugins,
    each imported and registered when looked up (iterating imports every one: for
    listings). ``what`` names one of them in messages (``click model``).

    :meth:`names` reads the names without importing anything; :meth:`choose` is the object
    a user named, or the one-line refusal listing the names; :meth:`help` the one-line
    definitions ``ltr list`` shows (``summary``, with a plugin's source)."""

    def __init__(self, group: str, what: str):
        self.group = group
        self.what = what

    def __getitem__(self, name: str) -> Any:
        obj = load(self.group, name) if isinstance(name, str) else None
        if obj is None:
            raise KeyError(name)
        return obj

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and load(self.group, name) is not None

    def __iter__(self) -> Iterator[str]:
        return iter(load_group(self.group))

    def __len__(self) -> int:
        return len(load_group(self.group))

    def names(self, built_in: bool = False) -> tuple[str, ...]:
        """The declared names (``built_in``: the built-ins' only), nothing imported."""
        return names(self.group, built_in)

    def source(self, name: str) -> str:
        """``built-in`` or ``plugin <distribution>``."""
        return source(self.group, name)

    def unknown(self, name: Any, where: str) -> LtrError:
        """The refusal of a name that is no usable entry point: one line, the names listed."""
        usable = ", ".join(load_group(self.group))
        return LtrError(f"{where} {name!r}: unknown {self.what}; the {self.what}s are {usable}")

    def choose(self, name: Any, where: str) -> Any:
        """The object of ``name``, or :meth:`unknown`'s error naming ``where``."""
        if isinstance(name, str) and name in declared(self.group):
            obj = load(self.group, name)
            if obj is not None:
                return obj
        raise self.unknown(name, where)

    def help(self) -> dict[str, str]:
        """Name -> its one-line definition (``summary``), a plugin's with its source."""
        return {name: getattr(obj, "summary", "") + ("" if self.source(name) == BUILT_IN else
                                                     f" [{self.source(name)}]")
                for name, obj in load_group(self.group).items()}
