"""The pytest entries of the shipped conformance suites, one per kind
(``python -m ltr_cli.testing`` runs this file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ltr_cli.testing import parametrize_with_checks


@parametrize_with_checks("learners")
def test_learners(subject: Any, check: Any, tmp_path: Path) -> None:
    check(subject, tmp_path)


@parametrize_with_checks("metrics")
def test_metrics(subject: Any, check: Any, tmp_path: Path) -> None:
    check(subject, tmp_path)


@parametrize_with_checks("formats")
def test_formats(subject: Any, check: Any, tmp_path: Path) -> None:
    check(subject, tmp_path)


@parametrize_with_checks("clicks")
def test_clicks(subject: Any, check: Any, tmp_path: Path) -> None:
    check(subject, tmp_path)


@parametrize_with_checks("interleaving")
def test_interleaving(subject: Any, check: Any, tmp_path: Path) -> None:
    check(subject, tmp_path)


@parametrize_with_checks("estimators")
def test_estimators(subject: Any, check: Any, tmp_path: Path) -> None:
    check(subject, tmp_path)
