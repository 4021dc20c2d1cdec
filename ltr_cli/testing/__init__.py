"""Conformance suites shipped with the package, as scikit-learn ships ``check_estimator``:
every registered extension of a kind (the built-ins and the plugins installed beside them),
or the objects a test gives, against the contract of that kind.

One pytest entry per kind::

    from ltr_cli.testing import parametrize_with_checks

    @parametrize_with_checks("learners")
    def test_learners(subject, check, tmp_path):
        check(subject, tmp_path)

    @parametrize_with_checks("clicks", subjects=[MyClickModel(grades=5)])   # objects no entry point declares
    def test_my_click_model(subject, check, tmp_path):
        check(subject, tmp_path)

Kinds: ``learners`` (online learners, :mod:`ltr_cli.testing.online`), ``metrics``
(:mod:`ltr_cli.testing.metrics`), ``formats`` (:mod:`ltr_cli.testing.formats`), ``clicks``
(click models, :mod:`ltr_cli.testing.clicks`), ``interleaving`` (interleaving and
multileaving methods, :mod:`ltr_cli.testing.interleaving`) and ``estimators``
(counterfactual click corrections, :mod:`ltr_cli.testing.estimators`). Each suite's module
says what a subject may be; a subject may also be given as ``(id, object)``.
``python -m ltr_cli.testing [KIND ...] [-k NAME]`` runs them without a checkout (pytest
needed). A new kind of extension adds its suite with :func:`suite`: a function of the
subjects (None: every registered extension) that returns ``(subject id, subject, check)``
triples, each ``check(subject, tmp_path)`` raising ``AssertionError`` when the subject
breaks the contract.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

Check = Callable[[Any, Path], None]
Cases = Callable[[list[Any] | None], Iterable[tuple[str, Any, Check]]]

# kind -> the module that declares its suite (imported when the kind is asked for)
_MODULES = {"learners": "ltr_cli.testing.online", "metrics": "ltr_cli.testing.metrics",
            "formats": "ltr_cli.testing.formats", "clicks": "ltr_cli.testing.clicks",
            "interleaving": "ltr_cli.testing.interleaving", "estimators": "ltr_cli.testing.estimators"}
_SUITES: dict[str, Cases] = {}


def suite(kind: str) -> Callable[[Cases], Cases]:
    """Decorator: ``cases(subjects)`` lists ``(id, subject, check)`` for the given subjects,
    or for every registered extension of ``kind`` when ``subjects`` is None."""
    def wrap(fn: Cases) -> Cases:
        _SUITES[kind] = fn
        return fn
    return wrap


def kinds() -> tuple[str, ...]:
    """The kinds that have a suite (the shipped ones, then any added with :func:`suite`)."""
    return tuple(dict.fromkeys([*_MODULES, *_SUITES]))


def cases(kind: str, subjects: Sequence[Any] | None = None) -> list[tuple[str, Any, Check]]:
    """``(id, subject, check)`` of every check of ``kind``: on ``subjects`` (objects of the
    kind, or ``(id, object)`` pairs), else on every registered extension of the kind."""
    if kind in _MODULES:
        importlib.import_module(_MODULES[kind])
    if kind not in _SUITES:
        raise ValueError(f"no conformance suite for {kind!r}; kinds: {', '.join(kinds())}")
    return list(_SUITES[kind](None if subjects is None else list(subjects)))


def identified(subjects: Sequence[Any], name: Callable[[Any], str]) -> list[tuple[str, Any]]:
    """``(id, object)`` of each subject: a pair as given, else ``name(object)`` (made unique
    by a ``-<n>`` suffix when two subjects share it)."""
    out: list[tuple[str, Any]] = []
    for item in subjects:
        pair = isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str)
        ident, obj = item if pair else (name(item), item)
        taken = {i for i, _ in out}
        base, n = ident, 1
        while ident in taken:
            n += 1
            ident = f"{base}-{n}"
        out.append((ident, obj))
    return out


def while_registered(group: str, name: str, obj: Any, check: Check) -> Check:
    """``check`` run while ``obj`` is registered as ``group``'s ``name`` (for a suite whose
    checks look their subject up by name, on an object no entry point declares)."""
    def run(subject: Any, tmp_path: Path) -> None:
        from ltr_cli import plugins

        with plugins.registered(group, name, obj):
            check(subject, tmp_path)
    run.__name__, run.__doc__ = check.__name__, check.__doc__
    return run


def parametrize_with_checks(kind: str, subjects: Sequence[Any] | None = None) -> Any:
    """A ``pytest.mark.parametrize`` over ``(subject, check)`` of every check of ``kind``
    (on ``subjects``, else on every registered extension of the kind), with ids
    ``<check>[<subject>]`` (``-k averaged-perceptron`` selects a plugin's)."""
    import pytest

    found = cases(kind, subjects)
    return pytest.mark.parametrize(("subject", "check"), [(subject, check) for _, subject, check in found],
                                   ids=[f"{check.__name__}[{name}]" for name, _, check in found])
