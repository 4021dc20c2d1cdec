"""Per-fold checkpoints of a batch (k-fold) run, so an interrupted CV resumes after the
last finished fold.

One JSON file beside the run directory, ``.<run>.folds.json``: the run id it belongs to,
the digest of the learner's resolved config (with the selection measure, convention and
normalisation the folds were computed under), the data identity and, per finished fold,
its table row, each test query's values, the grid it tried (with each fit's convergence
record) and its selected model. It is written atomically after every fold and removed once
the run directory is written. A fit that checkpoints itself between its iterations (a
neural learner's epochs) keeps one file per fold and grid point in ``.<run>.fits/``
(:class:`FitStore`: bytes the fit writes and checks itself), removed with the fold file. Reading it runs no code; a damaged file, one of another run
or learner config (renamed, or the config edited), one taken on other data, or a fold
record missing any field a resume reads, is a one-line error that says to delete it.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ltr_cli.data.identity import read_small_file, same_content
from ltr_cli.errors import LtrError
from ltr_cli.outputs import write_file

FORMAT = "ltr-cv-folds/3"  # /1 named no run and no learner config, /2 kept no per-query values
PARTS = ("row", "queries", "grid", "model")


def learner_digest(learner: dict[str, Any], **context: Any) -> str:
    """SHA-256 of a learner's resolved config (``model_dump(mode="json")``) and the settings
    its folds depend on (``context``: selection measure, convention, normalisation)."""
    text = json.dumps({"learner": learner, **context}, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


MAX_BYTES = 256 << 20  # a fold checkpoint holds models and grids, never this much
MAX_FIT_BYTES = 16 << 30  # a fit's checkpoint: its parameters, optimiser state and best parameters


def _number_or_none(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v == v)


def _record_problem(key: str, record: dict[str, Any], columns: tuple[str, ...]) -> str | None:
    """What is wrong with one restored fold, or None: its row must hold exactly the fold's
    ``columns`` as numbers (or null), its per-query values one list per test metric (the
    columns after the vali score) beside the query ids, its model must rebuild, its grid must
    list what it tried (each with its parameters and vali score)."""
    from ltr_cli.results.models import model_from_dict

    row, grid, model, queries = record["row"], record["grid"], record["model"], record["queries"]
    fold = row.get("fold")
    if not (fold is None or type(fold) is int) or str(fold) != key or grid.get("fold") != fold:
        return "its rows belong to another fold"
    if set(row) != {"fold", "chosen", *columns}:
        missing = sorted(set(columns) - set(row))
        return f"its table row lacks {', '.join(missing)}" if missing else \
            f"its table row has other columns ({', '.join(sorted(set(row) - {'fold', 'chosen', *columns}))})"
    if not isinstance(row.get("chosen"), str) or not all(_number_or_none(row[k]) for k in columns):
        return "a table value is not a number"
    problem = _queries_problem(queries, columns[1:], record.get("test_queries", 0))
    if problem:
        return problem
    tried = grid.get("tried")
    if not isinstance(tried, list) or not tried or not all(
            isinstance(t, dict) and isinstance(t.get("params"), dict) and _number_or_none(t.get("vali"))
            and isinstance(t.get("convergence"), (dict, type(None))) for t in tried):
        return "no grid"
    from ltr_cli.protocols.no_relevant_rules import rules_problem

    problem = rules_problem(record.get("no_relevant"))
    if problem:
        return problem
    if not isinstance(record.get("degenerate", False), bool):
        return "degenerate is not true or false"
    for name in ("odd_labels", "test_queries", "test_documents"):
        value = record.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"{name} is not a count"
    try:
        model_from_dict(model)
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
        return f"its model: {exc}"
    return None


def _queries_problem(queries: dict[str, Any], metrics: tuple[str, ...], count: Any) -> str | None:
    """What is wrong with a fold's per-query test values, or None."""
    qids = queries.get("qid")
    if not isinstance(qids, list) or not all(isinstance(q, str) for q in qids) or len(qids) != count:
        return "its query ids are not one string per test query"
    if set(queries) != {"qid", *metrics}:
        return "its per-query values are not one list per test metric"
    if not all(isinstance(queries[m], list) and len(queries[m]) == len(qids)
               and all(_number_or_none(v) for v in queries[m]) for m in metrics):
        return "a per-query value is not a number"
    return None


class FoldCheckpoint:
    """The finished folds of one batch run (``run_dir``), on the data ``identity``."""

    def __init__(self, run_dir: Path, identity: dict[str, Any], learner: str = "",
                 columns: tuple[str, ...] = (), fold_keys: tuple[str, ...] | None = None):
        """``learner``: :func:`learner_digest` of the run's learner; ``columns``: every
        value column of a fold's table row; ``fold_keys``: the run's folds."""
        self.path = run_dir.parent / f".{run_dir.name}.folds.json"
        self.run = run_dir.name
        self.identity = identity
        self.learner = learner
        self.columns = columns
        self.fold_keys = fold_keys
        self.folds: dict[str, dict[str, Any]] = {}

    @property
    def fits(self) -> Path:
        """The folder of the fits' own checkpoints (:meth:`fit_store`)."""
        return self.path.parent / f".{self.run}.fits"

    def exists(self) -> bool:
        return self.path.is_file() or self.fits.is_dir()

    def existing(self) -> Path:
        """The checkpoint file, or the fits' folder when only it is there (for messages)."""
        return self.path if self.path.is_file() or not self.fits.is_dir() else self.fits

    def fit_store(self, fold_key: str, params: dict[str, Any]) -> FitStore:
        """Where the fit of one fold and grid point keeps its checkpoint: a file named by the
        digest of the learner config, the fold and the grid point."""
        tag = hashlib.sha256(json.dumps({"learner": self.learner, "fold": fold_key, "params": params},
                                        sort_keys=True, default=str).encode()).hexdigest()[:20]
        return FitStore(self.fits, f"fold{fold_key if fold_key.isalnum() else 'x'}-{tag}.fit")

    def load(self) -> dict[str, dict[str, Any]]:
        """The finished folds, by fold key (``str(number)``); {} when there is no file."""
        if not (self.path.exists() or self.path.is_symlink()):
            return {}
        try:
            data = json.loads(read_small_file(self.path, MAX_BYTES).decode("utf-8"))
            ok = (isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("folds"), dict)
                  and all(isinstance(rec, dict) and all(isinstance(rec.get(p), dict) for p in PARTS)
                          for rec in data["folds"].values()))
        except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
            raise LtrError(f"{self.path}: unreadable fold checkpoint ({type(exc).__name__}: "
                           f"{str(exc)[:200]}); delete it to run every "
                           "fold again") from None
        if not ok:
            raise LtrError(f"{self.path}: not a fold checkpoint of this tool ({FORMAT}); delete it to "
                           "run every fold again")
        if data.get("run") != self.run:
            raise LtrError(f"{self.path}: a fold checkpoint of another run ({_show(data.get('run'))}), "
                           f"not {self.run}; delete it to run every fold again")
        if data.get("learner") != self.learner:
            raise LtrError(f"{self.path}: these folds were computed with another learner config (its "
                           "digest differs); delete it to run every fold again")
        if not same_content(data.get("data"), self.identity):
            raise LtrError(f"{self.path}: these folds were computed on other data than is now on disk; "
                           "delete the checkpoint to run every fold again on the new data")
        for key, record in data["folds"].items():
            if self.fold_keys is not None and key not in self.fold_keys:
                raise LtrError(f"{self.path}: fold {_show(key)} is not a fold of this run; delete it to "
                               "run every fold again")
            problem = _record_problem(key, record, self.columns)
            if problem:
                raise LtrError(f"{self.path}: fold {key!r} of this checkpoint is not one this tool wrote "
                               f"({problem}); delete it to run every fold again")
        self.folds = dict(data["folds"])
        return self.folds

    def save(self, key: str, record: dict[str, Any]) -> None:
        """Add one finished fold and rewrite the file atomically."""
        self.folds[key] = record
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"format": FORMAT, "run": self.run, "learner": self.learner, "data": self.identity,
                           "folds": self.folds}, indent=1)

        def write(tmp: Path) -> None:
            tmp.write_text(text, encoding="utf-8")

        write_file(self.path.parent, self.path.name, write, own_name=False)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        if self.fits.is_dir() and not self.fits.is_symlink():
            import shutil

            shutil.rmtree(self.fits, ignore_errors=True)
        elif self.fits.is_symlink():
            self.fits.unlink()


class FitStore:
    """One fit's checkpoint between its iterations: ``folder/name``, bytes the fit writes
    (atomically) and reads back itself, checking them as untrusted input."""

    def __init__(self, folder: Path, name: str):
        self.folder = folder
        self.name = name
        self.path = folder / name

    def load(self) -> bytes | None:
        """The saved bytes, or None when there are none."""
        from ltr_cli.data.identity import NotSmallFile

        if not (self.path.exists() or self.path.is_symlink()):
            return None
        try:
            return read_small_file(self.path, MAX_FIT_BYTES)
        except (OSError, NotSmallFile) as exc:
            raise LtrError(f"{self.path}: unreadable fit checkpoint ({exc}); delete it to train this fit from "
                           "the start") from None

    def save(self, data: bytes) -> None:
        if self.folder.is_symlink():
            raise LtrError(f"{self.folder}: a symbolic link where the fits' checkpoints go; remove it")
        self.folder.mkdir(parents=True, exist_ok=True)

        def write(tmp: Path) -> None:
            tmp.write_bytes(data)

        write_file(self.folder, self.name, write, own_name=False)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
