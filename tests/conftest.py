from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import settings

# CI runs the property tests derandomised, so a CI result can be reproduced exactly;
# locally every run explores new examples.
settings.register_profile("ci", derandomize=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared"
YAHOO_SAMPLE = SHARED / "data" / "yahoo-sample-lightgbm"


@pytest.fixture
def yahoo_sample() -> Path:
    if not (YAHOO_SAMPLE / "rank.train").is_file():
        pytest.skip("../shared/data/yahoo-sample-lightgbm is absent")
    return YAHOO_SAMPLE


@pytest.fixture
def write(tmp_path):
    """write(name, content) -> Path; bytes or str content."""

    def _write(name: str, content) -> Path:
        p = tmp_path / name
        if isinstance(content, str):
            content = content.encode()
        p.write_bytes(content)
        return p

    return _write
