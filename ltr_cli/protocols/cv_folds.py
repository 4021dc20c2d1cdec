"""The folds of a batch (k-fold) experiment, as data sources.

Each fold's train, vali and test splits are :class:`~ltr_cli.data.sources.QuerySource`
objects opened like an online run's data, so they are read through the same binary cache
(content-checked against the files) and their identity is recorded the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.config.datasets import RegistryData
from ltr_cli.data.registry import get_dataset
from ltr_cli.data.sources import QuerySource, open_source

SPLITS = ("train", "vali", "test")


@dataclass(frozen=True)
class FoldsPlan:
    """Where a batch experiment's folds come from, as the run plan resolves it: the registry
    ``dataset`` (its ``folds``, else all the dataset has), the split each role reads
    (``splits``: ``cv.splits``, role -> split), the experiment's ``seed`` and the binary
    cache folder (None: off)."""

    dataset: RegistryData
    splits: Mapping[str, str]
    seed: int
    cache_dir: Path | None = None


@dataclass
class Fold:
    """One fold: its number (None for a dataset without folds) and its three splits."""

    number: int | None
    train: QuerySource
    vali: QuerySource
    test: QuerySource


def open_folds(plan: FoldsPlan) -> list[Fold]:
    """The folds a ``cv:`` experiment reads, in order (``dataset.folds``, else all)."""
    ds = plan.dataset
    info = get_dataset(ds.name)
    numbers: list[int | None] = list(ds.folds or info.folds) or [None]
    folds = []
    for number in numbers:
        sources = [open_source(ds.model_copy(update={"split": plan.splits[split],
                                                      "folds": None if number is None else [number]}),
                               plan.seed, plan.cache_dir)
                   for split in SPLITS]
        folds.append(Fold(number, *sources))
    return folds


def folds_identity(folds: list[Fold]) -> dict[str, Any]:
    """Identity (path, size, content digest, stat key) of every file the CV reads, each
    once, in the order it reads them; ``used_as`` lists the fold and role of each use
    (``{"fold": 2, "role": "vali"}``), so a reader can tell LETOR's rotation (one fold's
    test file is the next fold's vali file) from one fold reading a file twice."""
    seen: dict[str, dict[str, Any]] = {}
    for fold in folds:
        for role in SPLITS:
            source: QuerySource = getattr(fold, role)
            for ident in source.identity()["files"]:
                entry = seen.setdefault(ident["path"], {**ident, "used_as": []})
                entry["used_as"].append({"fold": fold.number, "role": role})
    return {"files": list(seen.values())}


def split_queries(source: QuerySource) -> list[tuple[np.ndarray, np.ndarray]]:
    """Every query of one split, in memory (LETOR sets are small): ``[(X, y), ...]``."""
    return named_split(source)[0]


def named_split(source: QuerySource) -> tuple[list[tuple[np.ndarray, np.ndarray]], list[str]]:
    """Every query of one split, ``[(X, y), ...]``, and its query ids in the same order."""
    queries = [q for unit in source.units() for q in source.queries(unit)]
    return [(q.X, q.y) for q in queries], [q.qid for q in queries]
