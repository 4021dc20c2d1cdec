"""Conformance suites shipped with the package, as scikit-learn ships ``check_estimator``:
every registered extension of a kind (the built-ins and the plugins installed beside them)
against the contract of that kind.

One pytest entry per kind::

    from ltr_cli.testing import parametrize_with_checks

    @parametrize_with_checks("learners")
    def test_learners(subject, check, tmp_path):
        check(subject, tmp_path)

Kinds: ``learners`` (online learners, :mod:`ltr_cli.testing.online`), ``metrics``
(:mod:`ltr_cli.testing.metrics`), ``formats`` (:mod:`ltr_cli.testing.formats`), ``clicks``
(click models, :mod:`ltr_cli.testing.clicks`) and ``interleaving`` (interleaving and
multileaving methods, :mod:`ltr_cli.testing.interleaving`).
``python -m ltr_cli.testing [KIND ...] [-k NAME]`` runs them without a checkout (pytest
needed). A new kind of extension adds its suite with :func:`suite`: a function that returns
``(subject id, subject, check)`` triples, each ``check(subject, tmp_path)`` raising
``AssertionError`` when the subject breaks the contract.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

Check = Callable[[Any, Path], None]
Cases = Callable[[], Iterable[tuple[str, Any, Check]]]

# kind -> the module that declares its suite (imported when the kind is asked for)
_MODULES = {"learners": "ltr_cli.testing.online", "metrics": "ltr_cli.testing.metrics",
            "formats": "ltr_cli.testing.formats", "clicks": "ltr_cli.testing.clicks",
            "interleaving": "ltr_cli.testing.interleaving"}
_SUITES: dict[str, Cases] = {}


def suite(kind: str) -> Callable[[Cases], Cases]:
    """Decorator: ``cases()`` lists ``(id, subject, check)`` for every registered extension
    of ``kind``."""
    def wrap(fn: Cases) -> Cases:
        _SUITES[kind] = fn
        return fn
    return wrap


def kinds() -> tuple[str, ...]:
    """The kinds that have a suite (the shipped ones, then any added with :func:`suite`)."""
    return tuple(dict.fromkeys([*_MODULES, *_SUITES]))


def cases(kind: str) -> list[tuple[str, Any, Check]]:
    """``(id, subject, check)`` of every check of ``kind`` on every registered extension."""
    if kind in _MODULES:
        importlib.import_module(_MODULES[kind])
    if kind not in _SUITES:
        raise ValueError(f"no conformance suite for {kind!r}; kinds: {', '.join(kinds())}")
    return list(_SUITES[kind]())


def parametrize_with_checks(kind: str) -> Any:
    """A ``pytest.mark.parametrize`` over ``(subject, check)`` of every check of ``kind``,
    with ids ``<check>[<subject>]`` (``-k averaged-perceptron`` selects a plugin's)."""
    import pytest

    found = cases(kind)
    return pytest.mark.parametrize(("subject", "check"), [(subject, check) for _, subject, check in found],
                                   ids=[f"{check.__name__}[{name}]" for name, _, check in found])
