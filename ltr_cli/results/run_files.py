"""A run folder's files read back as untrusted input (:func:`ltr_cli.results.folders.read_run`
puts them together): text files bounded and decoded, ``summary.json``, ``manifest.json`` and
``config.yaml`` checked against the models of the fields that plot, report and selection
use, the round table's columns and types, and the summary's numbers against the table's.
A damaged or crafted file is one line naming it and what is wrong, never a traceback.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from ltr_cli.core.round_log import REGRET, SURROGATE
from ltr_cli.core.yamlio import YamlProblem, parse_yaml
from ltr_cli.errors import ResultsError
from ltr_cli.measures.metrics import time_average
from ltr_cli.measures.registry import is_metric_name
from ltr_cli.names import check_label, check_name

if TYPE_CHECKING:  # pandas is imported where a table is read
    import pandas as pd


DAMAGED = "the run folder is damaged: re-run it or remove it"
MAX_TEXT_BYTES = 64 * 2**20  # config.yaml, summary.json, manifest.json


def _metric_name(value: str) -> str:
    if not is_metric_name(value):
        raise ValueError("is not a metric name (e.g. ndcg@10, ap, p@5, err@10; ltr list shows them)")
    return value


_Name = Annotated[str, AfterValidator(check_name)]
_Text = Annotated[str, AfterValidator(check_label)]
_Metric = Annotated[str, AfterValidator(_metric_name)]
_Count = Annotated[int, Field(ge=0)]


class _RunFile(BaseModel):
    """Strict types (an int is not a bool or a string); keys not listed are kept unchecked."""

    model_config = ConfigDict(strict=True, extra="allow", defer_build=True)  # built when a folder is first read


class _OnlineStats(_RunFile):
    final_time_average: float | None = None
    last10_mean_of_time_average: float | None = None
    last10_mean_per_round: float | None = None


class _Bound(_RunFile):
    name: _Text
    bound: float
    applies: bool = False


class _Theory(_RunFile):
    bound: _Bound | None = None


class _SummaryBase(_RunFile):
    experiment: _Name
    learner: _Name
    seed: _Count
    config_id: _Name
    label: _Text | None = None
    role: _Text | None = None
    dataset: _Text | None = None


class OnlineSummary(_SummaryBase):
    """The fields of an online run's ``summary.json`` that plot, report and selection use."""

    rounds: _Count
    updates: _Count
    metrics: dict[_Metric, _OnlineStats]
    nonfinite_round: _Count | None = None
    theory: _Theory | None = None


class BatchSummary(_SummaryBase):
    """The fields of a batch (``cv:``) run's ``summary.json`` that report uses."""

    protocol: Literal["batch-cv"]
    folds: list[int | None]
    metrics: dict[_Metric, float | None]
    degenerate_folds: list[int | None] = []  # folds whose selected model ranks in file order

    @model_validator(mode="after")
    def _headline(self) -> "BatchSummary":
        if not any(isinstance(v, float) for v in self.metrics.values()):
            raise ValueError("'metrics' must hold a number for at least one test metric (e.g. 'ap')")
        return self


class ManifestFile(_RunFile):
    learner_label: _Text | None = None
    learner_conventions: dict[str, Any] | None = None


class ConfigFile(_RunFile):
    experiment: _Name
    learners: dict[_Name, dict[str, Any]]


_TYPE_WORDS = {
    "int_type": "must be an integer", "float_type": "must be a number",
    "string_type": "must be a string", "bool_type": "must be true or false",
    "dict_type": "must be a mapping (JSON object)", "model_type": "must be a mapping (JSON object)",
    "model_attributes_type": "must be a mapping (JSON object)", "list_type": "must be a list",
    "missing": "is missing", "greater_than_equal": "must be >= 0",
}


def _file_problem(exc: ValidationError) -> str:
    """The first problem of a run file as ``'key' must be ...``."""
    first = exc.errors(include_url=False)[0]
    loc = [str(p) for p in first["loc"]]
    if first["type"] == "value_error":
        problem = str(first["msg"]).removeprefix("Value error, ")
    else:
        problem = _TYPE_WORDS.get(first["type"], str(first["msg"]))
    if len(loc) >= 2 and loc[-1] == "[key]":  # a bad mapping key: name the key and its mapping
        return f"key {_shown(loc[-2])} of {'.'.join(loc[:-2])!r} {problem}"
    if first["type"] != "missing" and "input" in first and loc:
        problem += f" (got {_shown(first['input'])})"
    key = ".".join(loc)
    return f"{key!r} {problem}" if key else problem


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def validate_file(model: type[BaseModel], data: Any, path: Path) -> None:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        raise damaged(path, _file_problem(exc)) from None


def damaged(path: Path, problem: str) -> ResultsError:
    return ResultsError(f"{path}: {' '.join(problem.split())}; {DAMAGED}")


def short_error(exc: Exception, path: Path) -> str:
    """A library's error message, without the path (already named) and at most 120 characters."""
    text = " ".join(str(exc).split())
    text = text.replace(f"Could not open Parquet input source '{path}': ", "").replace(str(path), "the file")
    return text if len(text) <= 120 else text[:117] + "..."


def read_run_text(path: Path) -> str:
    """A run's text file (``models.json`` too, for ``ltr score``): a plain file (never a
    FIFO or device) of at most 64 MB, UTF-8."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise damaged(path, "is not a plain file")
            raw = fh.read(MAX_TEXT_BYTES + 1)
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if len(raw) > MAX_TEXT_BYTES:
        raise damaged(path, f"is larger than {MAX_TEXT_BYTES // 2**20} MB")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise damaged(path, f"is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None


def _mapping(data: Any, path: Path, kind: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        what = "empty" if data is None else f"a {type(data).__name__}"
        raise damaged(path, f"the {kind} file is not a mapping (it is {what})")
    return data


def read_json(path: Path, kind: str) -> dict[str, Any]:
    text = read_run_text(path)
    try:
        data = json.loads(text)
    except RecursionError:
        raise damaged(path, "is not valid JSON (nested too deeply)") from None
    except ValueError as exc:
        raise damaged(path, f"is not valid JSON ({short_error(exc, path)})") from None
    return _mapping(data, path, kind)


def read_config(path: Path) -> dict[str, Any]:
    """A run's ``config.yaml`` as a mapping (one-line :class:`ResultsError` otherwise)."""
    try:
        data = parse_yaml(read_run_text(path))
    except YamlProblem as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise ResultsError(f"{where}: {exc.problem}; {DAMAGED}") from None
    return _mapping(data, path, "config")


# rounds.parquet columns that are not metrics, and the kind of values each holds
_ROUND_COLUMNS = {"t": "integer", "pass": "integer", "m": "integer", "qid": "string",
                  "mistake": "boolean", "updated": "boolean", "no_relevant": "boolean",
                  "ranking_loss": "number", SURROGATE: "number", REGRET: "number"}


def dtype_ok(series: pd.Series, kind: str) -> bool:
    from pandas.api import types as api

    if kind == "integer":
        return api.is_integer_dtype(series.dtype) and not api.is_bool_dtype(series.dtype)
    if kind == "boolean":
        return api.is_bool_dtype(series.dtype)
    if kind == "string":  # every value a string (an object column is looked into)
        return api.infer_dtype(series, skipna=True) in ("string", "empty")
    return api.is_numeric_dtype(series.dtype) and not api.is_bool_dtype(series.dtype)


def check_rounds(rounds: pd.DataFrame, path: Path) -> None:
    """An online run's table: ``t`` and the known columns with their types, every other
    column a metric name holding numbers. A batch run's (``fold``): metric columns hold
    numbers. Anything else is a damaged run."""
    columns = list(rounds.columns)
    bad = [c for c in columns if not isinstance(c, str)]
    if bad:
        raise damaged(path, f"column {bad[0]!r} is not named by a string")
    if len(set(columns)) != len(columns):
        raise damaged(path, "has a repeated column")
    if "t" in columns:
        t = rounds["t"].to_numpy()
        if dtype_ok(rounds["t"], "integer") and t.size and (t[0] < 1 or (np.diff(t) <= 0).any()):
            raise damaged(path, "column 't' must count rounds upwards from 1")
        for column in columns:
            kind = _ROUND_COLUMNS.get(column, "number")
            if column not in _ROUND_COLUMNS and not is_metric_name(column.removeprefix("heldout_")):
                shown = repr(column) if len(repr(column)) <= 40 else repr(column)[:37] + "..."
                raise damaged(path, f"column {shown} is neither a round column nor a metric name")
            if kind is not None and not dtype_ok(rounds[column], kind):
                what = {"integer": "integers", "boolean": "true/false values", "number": "numbers"}.get(kind, "strings")
                raise damaged(path, f"column {column!r} must hold {what}, not {rounds[column].dtype} values")
    elif "fold" in columns:
        for column in columns:
            values = rounds[column]  # a metric no fold has (all None) is an object column
            if is_metric_name(column) and not (dtype_ok(values, "number") or values.isna().all()):
                raise damaged(path, f"column {column!r} must hold numbers, not {rounds[column].dtype} values")
    else:
        raise damaged(path, "has neither a 't' (online) nor a 'fold' (batch) column")
    for column in columns:
        if is_metric_name(column.removeprefix("heldout_")) and dtype_ok(rounds[column], "number") and \
                np.isinf(rounds[column].to_numpy(dtype=np.float64)).any():
            raise damaged(path, f"column {column!r} holds an infinite value")


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))


def check_summary_matches(summary: dict[str, Any], rounds: pd.DataFrame, path: Path) -> None:
    """``summary.json``'s numbers are those of ``rounds.parquet``: the round count and each
    metric's final time average (online), each test metric's mean over folds (batch).
    A folder edited by hand, or put together from two runs, is refused, never reported."""
    def mismatch(what: str, stated: Any, found: Any) -> ResultsError:
        return damaged(path, f"summary.json does not match rounds.parquet ({what}: {stated} in summary.json, "
                              f"{found} in rounds.parquet)")

    if summary.get("protocol") == "batch-cv":
        for name, stated in (summary.get("metrics") or {}).items():
            if name in rounds.columns:
                kept = rounds[name].dropna().to_numpy(dtype=np.float64)
                found = float(np.mean(kept)) if kept.size else None
                if not _same(stated, found):
                    raise mismatch(f"mean over folds of {name}", stated, found)
        return
    if summary.get("rounds") != len(rounds):
        raise mismatch("rounds", summary.get("rounds"), len(rounds))
    for name, stats in (summary.get("metrics") or {}).items():
        if name in rounds.columns and len(rounds):
            curve = time_average(rounds[name].to_numpy(dtype=np.float64))
            found = None if np.isnan(curve[-1]) else float(curve[-1])
            if not _same(stats.get("final_time_average"), found):
                raise mismatch(f"final time average of {name}", stats.get("final_time_average"), found)


def read_rounds(path: Path) -> pd.DataFrame:
    import pandas as pd

    try:
        rounds = pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - arbitrary bytes can fail anywhere in the decoder
        raise damaged(path, f"is not a readable Parquet file ({short_error(exc, path)})") from None
    check_rounds(rounds, path)
    if "qid" in rounds.columns and rounds["qid"].dtype != "string":  # one dtype, whoever wrote the file
        rounds["qid"] = rounds["qid"].astype("string")
    return rounds
