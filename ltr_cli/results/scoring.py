"""``ltr score``: a saved model (a run's ``models.json``) and the scores it gives every
document of a file, in the LETOR evaluation tools' format (one score per line)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.data.options import ReaderOptions
from ltr_cli.data.formats import open_dataset
from ltr_cli.errors import LtrError, QueryTooLong
from ltr_cli.data.normalize import NormalizedModel, Normalizer
from ltr_cli.results.models import model_from_dict
from ltr_cli.results.folders import read_run_text


def load_model(model: Path, fold: str | None) -> tuple[Any, int]:
    """The scorer of one fold of a run directory (or its ``models.json``; default: the
    first fold) and its feature count; one-line LtrError for anything else (a LambdaMART
    model file beside ``models.json``: one line naming that file)."""
    scorer, n_features, _ = load_fold_model(model, fold)
    return scorer, n_features


def load_fold_model(model: Path, fold: str | None) -> tuple[Any, int, str]:
    """:func:`load_model`'s scorer and feature count, and the key of the model taken in
    ``models.json`` (a fold number, ``None`` for a dataset without folds, ``final`` for an
    online run), for messages that name it."""
    path = model / "models.json" if model.is_dir() else model
    try:
        models = json.loads(read_run_text(path))
    except (ValueError, RecursionError) as exc:
        raise LtrError(f"{path}: not a saved model file ({type(exc).__name__}); give a run "
                       "directory written by ltr run") from None
    if not isinstance(models, dict):
        raise LtrError(f"{path}: not a saved model file (expected an object of models by fold)")
    key = fold if fold is not None else next(iter(models), None)
    unnumbered = list(models) in (["None"], ["final"])  # a dataset without folds, an online run
    if key not in models and unnumbered and fold in ("1", "only"):
        key = next(iter(models))  # its one model is fold 1 of 1
    if key not in models:
        has = ("one model (" + ("an online run's final weights" if "final" in models else "its dataset has "
                                "no folds") + "): omit --fold") if unnumbered else \
            (f"folds {', '.join(map(str, models))}" if models else "no models")
        raise LtrError(f"{path}: no model for fold {fold!r}; it has {has}")
    data = models[key]
    try:
        scorer: Any = model_from_dict(data, path.parent)
        n_features = int(data["features"])
        normalizer = Normalizer.from_dict(data.get("normalize"), n_features)
        if normalizer.kind != "none":
            scorer = NormalizedModel(scorer, normalizer)
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
        raise LtrError(f"{path}: fold {key!r} is not a valid model ({exc}); give a run directory "
                       "written by ltr run") from None
    if not scorer.finite():
        raise LtrError(f"{path}: fold {key!r} has NaN or infinite weights, so its scores would be "
                       "meaningless (an authors'-numerics run that overflowed: its summary.json "
                       "gives the round in nonfinite_round)")
    return scorer, n_features, str(key)


def score_lines(scorer: Any, data_file: Path, options: ReaderOptions) -> list[str]:
    """One score per document of ``data_file``, in file order, each the shortest decimal
    that reads back to the same double (``repr``), so no two different scores print alike
    and ``ltr eval`` ranks exactly as the model does."""
    lines: list[str] = []
    for q in open_dataset(data_file, options):
        try:
            with np.errstate(over="ignore", invalid="ignore"):
                scores = scorer.scores(q.X)
        except QueryTooLong as exc:
            raise LtrError(f"{data_file}:{q.line}: query {q.qid}: {exc}") from None
        if not np.isfinite(scores).all():
            raise LtrError(f"{data_file}:{q.line}: the model's scores for query {q.qid} overflow "
                           "(NaN or infinite); the weights are too large for these features")
        lines.extend(map(repr, np.asarray(scores, dtype=np.float64).tolist()))
    return lines


def training_index_base(model: Path) -> int:
    """The feature index base of the data the run at ``model`` (its folder, or its
    ``models.json``) was trained on, from its ``config.yaml``: the dataset's ``index_base``,
    else the registry dataset's, else 1 (generated data and plain files). A model's weight
    j belongs to feature j + base of those files, so scoring another layout with another
    base silently shifts every feature."""
    from ltr_cli.data.registry import DATASETS
    from ltr_cli.results.folders import read_config

    run_dir = model if model.is_dir() else model.parent
    config = read_config(run_dir / "config.yaml") if (run_dir / "config.yaml").is_file() else {}
    found = config.get("dataset")
    dataset: dict[str, Any] = found if isinstance(found, dict) else {}
    base = dataset.get("index_base")
    if base in (0, 1) and not isinstance(base, bool):
        return int(base)
    info = DATASETS.get(dataset["name"]) if isinstance(dataset.get("name"), str) else None
    return int(info.index_base) if info is not None and dataset.get("kind") == "registry" else 1
