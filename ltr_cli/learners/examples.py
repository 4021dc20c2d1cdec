"""Every registered online learner's declared examples, and a small SVMlight file to run
them on: what the online conformance suite (:mod:`ltr_cli.testing.online`) checks and what
``ltr kernels build`` runs to compile the kernels a run uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.learners.registry import REGISTRY

FEATURES = 12


def examples(feedback: str | None = None) -> dict[str, dict[str, Any]]:
    """Every registered online learner's examples as ``{name: learner config}``; the name is
    the type with the example's index (``listnet1``), a valid learner name. ``feedback``
    (``labels`` or ``clicks``): only the learners that learn from that (a run of the others
    needs click feedback, or cannot use it); None: all."""
    out: dict[str, dict[str, Any]] = {}
    for type_name, cls in REGISTRY.items():
        if cls.kind != "online":
            continue
        if feedback is not None and getattr(cls, "feedback_kind", "labels") != feedback:
            continue
        for i, settings in enumerate(getattr(cls, "examples", ())):
            out[f"{type_name}{i}"] = {"type": type_name, **settings}
    return out


def write_data(path: Path, queries: int = 60, features: int = FEATURES, seed: int = 0) -> Path:
    """An SVMlight file with graded labels, tied feature values and queries without a
    relevant document."""
    rng = np.random.default_rng(seed)
    lines = []
    for q in range(queries):
        m = int(rng.integers(2, 25))
        zero = q % 7 == 3
        for _ in range(m):
            label = 0 if zero else int(rng.integers(0, 5))
            feats = rng.integers(0, 4, size=features) / 3.0 + (label * 0.2 if q % 2 else 0.0)
            lines.append(f"{label} qid:{q + 1} " + " ".join(f"{j + 1}:{v:.4f}" for j, v in enumerate(feats)))
    path.write_text("\n".join(lines) + "\n")
    return path
