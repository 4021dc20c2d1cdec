"""The data-format conformance suite shipped in the package (:mod:`ltr_cli.testing.formats`)
on every format of the registry; plugins installed in this environment are checked too."""

from __future__ import annotations

from ltr_cli.testing import parametrize_with_checks


@parametrize_with_checks("formats")
def test_format_conformance(subject, check, tmp_path):
    check(subject, tmp_path)
