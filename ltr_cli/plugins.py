"""Plugins: learners, metrics and data formats that other packages register through Python
entry points, in the groups ``ltr_cli.learners``, ``ltr_cli.metrics`` and
``ltr_cli.formats``.

An entry point names an object of the public API (:mod:`ltr_cli.api`):

* ``ltr_cli.learners``: a learner config model (a subclass of
  :class:`~ltr_cli.api.OnlineLearnerConfig` or :class:`~ltr_cli.api.BatchLearnerConfig`);
* ``ltr_cli.metrics``: a :class:`~ltr_cli.api.MetricKind` without a kernel; the entry
  point's name is the metric's kind (``mymetric@10`` in a config);
* ``ltr_cli.formats``: a :class:`~ltr_cli.api.DataFormat`.

Each group is loaded once per process, the first time the registry it extends is read. A
plugin that fails to import or names the wrong kind of object is skipped with one line on
stderr naming it and its distribution; the rest of the tool keeps working.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Callable

from ltr_cli import console

GROUPS = ("learners", "metrics", "formats")


@dataclass(frozen=True)
class Plugin:
    """One loaded entry point: its group, name, ``module:attr`` and distribution."""

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


_LOADED: dict[str, list[Plugin]] = {}
_BROKEN: dict[str, list[BrokenPlugin]] = {}
# group -> the function that checks and registers one plugin object (set by each registry)
_REGISTRARS: dict[str, Callable[[Any, str, str], None]] = {}


def registrar(group: str) -> Callable[[Callable[[Any, str, str], None]], Callable[[Any, str, str], None]]:
    """Decorator: ``fn(obj, name, source)`` checks a plugin object of ``group`` (``name``: its
    entry point's name) and registers it, raising ``TypeError``/``ValueError`` with the
    reason when it cannot."""
    def wrap(fn: Callable[[Any, str, str], None]) -> Callable[[Any, str, str], None]:
        _REGISTRARS[group] = fn
        return fn
    return wrap


_SCANNED: dict[str, list[Any]] | None = None


def _entry_points(group: str) -> list[Any]:
    """The entry points of one group; the installed distributions are scanned once per
    process for all groups."""
    global _SCANNED
    if _SCANNED is None:
        found = metadata.entry_points()
        _SCANNED = {g: list(found.select(group=f"ltr_cli.{g}")) for g in GROUPS}
    return _SCANNED.get(group, [])


def load_group(group: str) -> list[Plugin]:
    """Load and register the plugins of one group (once per process)."""
    if group in _LOADED:
        return _LOADED[group]
    _LOADED[group] = []
    _BROKEN[group] = []
    register = _REGISTRARS.get(group)
    for ep in _entry_points(group):
        dist = getattr(getattr(ep, "dist", None), "name", None) or "?"
        try:
            # a plugin's prints at import go to stderr: stdout carries results (``--json``)
            with contextlib.redirect_stdout(sys.stderr):
                obj = ep.load()
            if register is None:
                raise TypeError(f"no registry reads the group ltr_cli.{group}")
            register(obj, ep.name, f"plugin {dist}")
        except (Exception, SystemExit) as exc:  # noqa: BLE001 - a broken plugin must not stop the tool
            reason = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": ")
            _BROKEN[group].append(BrokenPlugin(group, ep.name, ep.value, dist, reason))
            console.warn(f"plugin {ep.name!r} ({ep.value}, from {dist}) in ltr_cli.{group} was skipped: {reason}")
            continue
        _LOADED[group].append(Plugin(group, ep.name, ep.value, dist, obj))
    return _LOADED[group]


def loaded(group: str) -> list[Plugin]:
    """The plugins of ``group`` that loaded (loading them first)."""
    return list(load_group(group))


def broken(group: str) -> list[BrokenPlugin]:
    """The plugins of ``group`` that were skipped (loading the group first)."""
    load_group(group)
    return list(_BROKEN.get(group, []))
