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


# --- the suite leaves the working tree as it found it ------------------------------------------

_BEFORE: set[str] = set()


def _working_tree() -> set[str]:
    """Top-level entries of the checkout and of its results/ folder (hidden names aside)."""
    entries = {p.name for p in REPO.iterdir() if not p.name.startswith(".")}
    results = REPO / "results"
    if results.is_dir():
        entries |= {f"results/{p.name}" for p in results.iterdir() if not p.name.startswith(".")}
    return entries


def pytest_sessionstart(session: pytest.Session) -> None:
    _BEFORE.update(_working_tree())


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Fail the run if a test wrote into the checkout (e.g. results/<experiment>/ of a run
    without --out): tests write under tmp_path only."""
    left = sorted(_working_tree() - _BEFORE)
    if left:
        print(f"\nERROR: the tests left files in the working tree: {', '.join(left)}")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def load_queries(spec, split: str, fold: int | None) -> list:
    """The queries ``[(X, y), ...]`` of one split (``train``, ``vali``, ``test``) of one fold
    of a batch config, uncached."""
    from ltr_cli.config.experiment import RegistryData
    from ltr_cli.protocols.cv_folds import open_folds, split_queries

    ds = spec.dataset
    assert isinstance(ds, RegistryData)
    one = spec.model_copy(update={"dataset": ds.model_copy(update={"folds": None if fold is None else [fold]})})
    (chosen,) = open_folds(one)
    return split_queries(getattr(chosen, split))


def make_learner(type_: str, n_features: int, ties: str = "input-order", rng=None, planned_rounds: int | None = None,
                 fidelity: str = "paper", **settings):
    """An online learner built from its validated config (``{type: type_, **settings}``), as a
    run builds it; ``rng`` its own stream (default: seed 0)."""
    import numpy as np

    from ltr_cli.learners.registry import REGISTRY

    spec = REGISTRY[type_].model_validate({"type": type_, **settings})
    return spec.build(n_features, ties, rng if rng is not None else np.random.default_rng(0), planned_rounds,
                      fidelity)


# The suite's tests of the compiled path run small configs, which `ltr run` would otherwise
# plan onto the reference path (ltr_cli.runs.kernel_plan); tests of the planning itself ask
# for `--kernels auto` (or clear LTR_KERNELS).
os.environ.setdefault("LTR_KERNELS", "1")
