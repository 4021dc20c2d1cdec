"""The metric conformance suite shipped in the package (:mod:`ltr_cli.testing.metrics`) on
every metric kind of the registry; plugins installed in this environment are checked too."""

from __future__ import annotations

from ltr_cli.testing import parametrize_with_checks


@parametrize_with_checks("metrics")
def test_metric_conformance(subject, check, tmp_path):
    check(subject, tmp_path)
