"""Per-fold checkpoints of a batch (k-fold) run, so an interrupted CV resumes after the
last finished fold.

One JSON file beside the run directory, ``.<run>.folds.json``: the data identity the folds
were computed on and, per finished fold, its table row, the grid it tried (with each fit's
convergence record) and its selected model. It is written atomically after every fold and
removed once the run directory is written. Reading it runs no code; a damaged or foreign
file, or one taken on other data, is a one-line error that says to delete it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ltr_cli.data.identity import same_content
from ltr_cli.errors import LtrError
from ltr_cli.outputs import write_file

FORMAT = "ltr-cv-folds/1"
PARTS = ("row", "grid", "model")


def _number_or_none(v: Any) -> bool:
    return v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v == v)


def _record_problem(key: str, record: dict[str, Any]) -> str | None:
    """What is wrong with one restored fold, or None: its row must hold numbers (or null)
    for the fold's measures, its model must rebuild, its grid must list what it tried."""
    from ltr_cli.results.models import model_from_dict

    row, grid, model = record["row"], record["grid"], record["model"]
    if str(row.get("fold")) != key or str(grid.get("fold")) != key:
        return "its rows belong to another fold"
    if not isinstance(row.get("chosen"), str) or not all(
            _number_or_none(v) for k, v in row.items() if k not in ("fold", "chosen")):
        return "a table value is not a number"
    if not isinstance(grid.get("tried"), list):
        return "no grid"
    for name in ("odd_labels", "test_queries", "test_documents"):
        value = record.get(name, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            return f"{name} is not a count"
    try:
        model_from_dict(model)
    except (ValueError, KeyError, TypeError, AttributeError, OverflowError) as exc:
        return f"its model: {exc}"
    return None


class FoldCheckpoint:
    """The finished folds of one batch run (``run_dir``), on the data ``identity``."""

    def __init__(self, run_dir: Path, identity: dict[str, Any]):
        self.path = run_dir.parent / f".{run_dir.name}.folds.json"
        self.identity = identity
        self.folds: dict[str, dict[str, Any]] = {}

    def exists(self) -> bool:
        return self.path.is_file()

    def load(self) -> dict[str, dict[str, Any]]:
        """The finished folds, by fold key (``str(number)``); {} when there is no file."""
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            ok = (isinstance(data, dict) and data.get("format") == FORMAT and isinstance(data.get("folds"), dict)
                  and all(isinstance(rec, dict) and all(isinstance(rec.get(p), dict) for p in PARTS)
                          for rec in data["folds"].values()))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            raise LtrError(f"{self.path}: unreadable fold checkpoint ({exc}); delete it to run every "
                           "fold again") from None
        if not ok:
            raise LtrError(f"{self.path}: not a fold checkpoint of this tool ({FORMAT}); delete it to "
                           "run every fold again")
        if not same_content(data.get("data"), self.identity):
            raise LtrError(f"{self.path}: these folds were computed on other data than is now on disk; "
                           "delete the checkpoint to run every fold again on the new data")
        for key, record in data["folds"].items():
            problem = _record_problem(key, record)
            if problem:
                raise LtrError(f"{self.path}: fold {key!r} of this checkpoint is not one this tool wrote "
                               f"({problem}); delete it to run every fold again")
        self.folds = dict(data["folds"])
        return self.folds

    def save(self, key: str, record: dict[str, Any]) -> None:
        """Add one finished fold and rewrite the file atomically."""
        self.folds[key] = record
        self.path.parent.mkdir(parents=True, exist_ok=True)
        text = json.dumps({"format": FORMAT, "data": self.identity, "folds": self.folds}, indent=1)

        def write(tmp: Path) -> None:
            tmp.write_text(text, encoding="utf-8")

        write_file(self.path.parent, self.path.name, write, own_name=False)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
