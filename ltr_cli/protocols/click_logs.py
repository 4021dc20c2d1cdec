"""``ltr clicks log``: the click log of each fold's training queries, as a ``clicks:
generate`` block of a batch learner simulates it inside a run, written to Parquet.

Each fold's training split is read and normalised as the k-fold protocol does
(:mod:`ltr_cli.protocols.batch`), so ``log: DIR`` over the written folder and ``generate``
train on the same sessions; ``manifest.json`` names the config, the learner, the settings,
the data files and each fold's log with its fingerprint.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.clicklog.signal import GenerateSpec
from ltr_cli.data.normalize import Normalizer
from ltr_cli.errors import LtrError
from ltr_cli.protocols.cv_folds import Fold, FoldsPlan, folds_identity, named_split, open_folds


@dataclass(frozen=True)
class FoldLogsPlan:
    """The fold logs of one batch config, as ``ltr clicks log`` resolves them: the
    experiment, the learner whose ``clicks.generate`` block they follow and that block, and
    where the folds come from (read without the binary cache)."""

    experiment: str
    learner: str
    generate: GenerateSpec
    folds: FoldsPlan


def fold_training(fold: Fold, normalize: str) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[str]]:
    """A fold's training queries and their ids, normalised as the CV fits them."""
    train, ids = named_split(fold.train)
    normalizer = Normalizer.fit(normalize, train)
    if normalizer.kind == "zscore":
        train = [(normalizer.apply(X), y) for X, y in train]
    return train, ids


def write_fold_logs(plan: FoldLogsPlan, out: Path) -> dict[str, Any]:
    """Write ``out/fold<N>.parquet`` for every fold and ``out/manifest.json``; returns the manifest."""
    from ltr_cli.clicklog.logfile import write_log
    from ltr_cli.learners.batch.click_data import fold_log, log_name
    from ltr_cli.outputs import replace_text

    if out.exists() and not out.is_dir():
        raise LtrError(f"--out {out}: is a file; give a folder for the fold logs")
    folds = open_folds(plan.folds)
    out.mkdir(parents=True, exist_ok=True)
    normalize, gen = plan.folds.dataset.normalize, plan.generate
    logs = []
    for fold in folds:
        train, ids = fold_training(fold, normalize)
        sessions, meta = fold_log(train, gen, fold.number)
        path = out / log_name(fold.number)
        written = write_log(path, sessions, ids, meta)
        logs.append({"fold": fold.number, "file": path.name, "fingerprint": written["fingerprint"],
                     "sessions": int(sessions.session.max(initial=-1)) + 1, "clicks": int(sessions.click.sum()),
                     "source": meta["source"]})
    manifest = {"experiment": plan.experiment, "learner": plan.learner, "generate": gen.model_dump(mode="json"),
                "normalize": normalize, "data": folds_identity(folds), "logs": logs}
    replace_text(out / "manifest.json", json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest
