"""A batch run's per-query test values (``test_queries.parquet``), read back and checked.

The table has one row per test query of each fold: ``fold`` (the fold's number, null for a
dataset without folds), ``qid`` (the query id as the data names it) and one column per test
metric holding what the query adds to its fold's mean in ``rounds.parquet`` (NaN where the
convention leaves it out of that mean). A results folder is untrusted input: the file is
checked like the other run files (a plain Parquet file, the columns and their types) and
against ``rounds.parquet`` (each fold's mean of a column is that fold's value there), so a
damaged or edited table is one line naming the file.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import numpy as np
import pandas as pd

from ltr_cli.errors import ResultsError
from ltr_cli.measures.registry import canonical_column, is_metric_name
from ltr_cli.results.folders import TEST_QUERIES, Run
from ltr_cli.results.run_files import damaged, dtype_ok, short_error

TOLERANCE = 1e-9  # the fold means are the same numbers summed in the same order: only an edit moves them


def fold_key(value: object) -> int | None:
    """A ``fold`` cell as the fold's number (None: a dataset without folds)."""
    return None if value is None or pd.isna(value) else int(value)  # type: ignore[call-overload]


def read_test_queries(run: Run) -> pd.DataFrame | None:
    """The run's per-query test table, checked; None when the run has none (an online run,
    or a batch run written before runs recorded it)."""
    path = run.path / TEST_QUERIES
    if not (path.exists() or path.is_symlink()):
        return None
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise damaged(path, "is not a plain file")
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    try:
        table = pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - arbitrary bytes can fail anywhere in the decoder
        raise damaged(path, f"is not a readable Parquet file ({short_error(exc, path)})") from None
    _check_columns(table, path)
    table = table.rename(columns=canonical_column)  # as the run's rounds are read (``map`` is ``ap``)
    _check_means(table, run.rounds, path)
    return table


def _check_columns(table: pd.DataFrame, path: Path) -> None:
    columns = list(table.columns)
    if columns[:2] != ["fold", "qid"]:
        raise damaged(path, "does not start with the columns 'fold' and 'qid'")
    metrics = columns[2:]
    bad = [c for c in metrics if not isinstance(c, str) or not is_metric_name(c)]
    if bad:
        shown = repr(bad[0]) if len(repr(bad[0])) <= 40 else repr(bad[0])[:37] + "..."
        raise damaged(path, f"column {shown} is not a metric name")
    if len(set(metrics)) != len(metrics):
        raise damaged(path, "has a repeated column")
    if not (dtype_ok(table["fold"], "integer") or table["fold"].isna().all()):
        raise damaged(path, f"column 'fold' must hold integers, not {table['fold'].dtype} values")
    if not table["qid"].map(lambda q: isinstance(q, str)).all():
        raise damaged(path, "column 'qid' must hold strings")
    for column in metrics:
        if not dtype_ok(table[column], "number"):
            raise damaged(path, f"column {column!r} must hold numbers, not {table[column].dtype} values")


def _check_means(table: pd.DataFrame, rounds: pd.DataFrame, path: Path) -> None:
    """Each fold's mean of each column is that fold's value in ``rounds.parquet``."""
    if "fold" not in rounds.columns:
        raise damaged(path, "belongs to a batch run, but rounds.parquet has no 'fold' column")
    folds = [fold_key(f) for f in rounds["fold"]]
    stored = [fold_key(f) for f in table["fold"]]
    if set(stored) - set(folds):
        raise damaged(path, f"has fold {sorted(set(stored) - set(folds), key=str)[0]}, which rounds.parquet lacks")
    masks = {fold: np.array([f == fold for f in stored], dtype=bool) for fold in set(folds)}
    for column in table.columns[2:]:
        if column not in rounds.columns:
            raise damaged(path, f"column {column!r} is not a test metric of rounds.parquet")
        values = table[column].to_numpy(dtype=np.float64)
        for fold, expected in zip(folds, rounds[column]):
            mine = values[masks[fold]]
            kept = mine[~np.isnan(mine)]
            if expected is None or pd.isna(expected):
                same = kept.size == 0
            else:
                same = kept.size > 0 and abs(float(kept.mean()) - float(expected)) <= TOLERANCE
            if not same:
                raise damaged(path, f"its {column} values of fold {fold} do not average to rounds.parquet's")
