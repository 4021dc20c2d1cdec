"""A learner plugin for the sweep robustness tests: it ranks by its (never changing) zero
weights, and the worker process that first ranks with it dies when the environment asks.

``LTR_TEST_KILLER_ETA``: the ``eta`` of the runs whose process dies (``all``: every run);
``LTR_TEST_KILLER_HOW``: ``sigkill`` (default) or ``exit`` (``os._exit(3)``). The config never
changes, so a sweep re-run without the variable completes the very same runs. Registered
through an entry point by :func:`install`, like any third-party learner."""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import ClassVar, Literal

import numpy as np

from ltr_cli import api


class Killer:
    feedback_k: int | None = None
    numerics = "stable"
    state_fields = ("w",)

    def __init__(self, spec: "KillerSpec", n_features: int, ties: str):
        self.spec = spec
        self.w = np.zeros(n_features)
        self.ties = ties

    @property
    def weights(self) -> np.ndarray:
        return self.w

    def resolved_settings(self) -> dict[str, object]:
        return {}

    def rank(self, X: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        wanted = os.environ.get("LTR_TEST_KILLER_ETA")
        if wanted and (wanted == "all" or float(wanted) == self.spec.eta):
            if os.environ.get("LTR_TEST_KILLER_HOW") == "exit":
                os._exit(3)
            os.kill(os.getpid(), signal.SIGKILL)
        return api.rank_from_scores(X @ self.w, self.ties, rng)

    def update(self, X: np.ndarray, feedback: api.Feedback) -> api.UpdateInfo:
        return api.NO_UPDATE


class KillerSpec(api.OnlineLearnerConfig):
    type: Literal["killer"]
    summary: ClassVar[str] = "test plugin: a worker that dies on request"
    eta: float = 1.0

    def build(self, n_features: int, ties: str, rng: np.random.Generator,
              planned_rounds: int | None = None, fidelity: str = "paper") -> Killer:
        return Killer(self, n_features, ties)


def install(root: Path) -> Path:
    """A folder that, on PYTHONPATH, registers :class:`KillerSpec` in the ``ltr_cli.learners``
    group (a distribution's metadata only; the module is this one)."""
    info = root / "ltr_test_killer-0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ltr-test-killer\nVersion: 0\n")
    (info / "entry_points.txt").write_text("[ltr_cli.learners]\nkiller = tests.killer_plugin:KillerSpec\n")
    return root
