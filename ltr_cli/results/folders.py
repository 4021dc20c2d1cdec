"""Run directories: ``<output>/<experiment>/<run-id>/``.

Files of a finished run:

* ``config.yaml`` - the fully resolved experiment config, reduced to this run's learner;
* ``rounds.parquet`` - one row per round (see :mod:`ltr_cli.protocols.online`), or per
  fold for a batch (``cv:``) run;
* ``summary.json`` - final and last-ten averages per metric, counts, timings;
* ``manifest.json`` - versions, seed, dataset fingerprint, every convention used;
* ``models.json`` (batch runs) - the model selected in each fold, for ``ltr score``;
* ``test_queries.parquet`` (batch runs) - one row per test query of each fold (``fold``,
  ``qid``) and one column per test metric: the value the query adds to its fold's mean in
  ``rounds.parquet`` (NaN where the convention leaves it out), for paired tests. Runs
  written before it existed lack it (:func:`read_test_queries` returns None).

A run is written into a hidden temporary sibling directory and renamed into place when
all four files are complete, so an interrupted run never leaves a directory that looks
finished. ``manifest.json`` is written last and marks completeness.

Run folders are read back by ``ltr plot``, ``ltr report`` and ``ltr run --resume``, and
may come from someone else: :func:`read_run` validates every file before anything uses
it (see :class:`OnlineSummary`, :class:`BatchSummary`, :class:`ManifestFile`,
:class:`ConfigFile` and :func:`check_rounds`), so a damaged or crafted run folder is one
line naming the file and what is wrong, never a traceback, and names that end up in file
names (experiment, learner, metric columns) obey the same rule as in configs.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import numpy as np
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from ltr_cli.errors import ResultsError
from ltr_cli.measures.metrics import time_average
from ltr_cli.measures.registry import canonical_column, canonical_name, is_metric_name
from ltr_cli.names import check_label, check_name
from ltr_cli.core.yamlio import YamlProblem, dump_yaml, parse_yaml
from ltr_cli.pathnames import tried
from ltr_cli.core.round_log import REGRET, SURROGATE

if TYPE_CHECKING:  # pandas is imported where a table is read: writing an online run needs only pyarrow
    import pandas as pd

RUN_FILES = ("config.yaml", "rounds.parquet", "summary.json", "manifest.json")
TEST_QUERIES = "test_queries.parquet"  # a batch run's per-query test values (results/query_values.py)


def _dump_json(obj: Any, path: Path) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def write_run(
    run_dir: Path,
    config: dict[str, Any],
    rounds: Any,
    summary: dict[str, Any],
    manifest: dict[str, Any],
    extra: dict[str, str | bytes] | None = None,
    tables: dict[str, Any] | None = None,
) -> Path:
    """Atomically create (or replace) ``run_dir`` with the four run files (and any
    ``extra`` text files, e.g. a batch run's ``models.json``, and ``tables``, e.g. its
    ``test_queries.parquet``). ``rounds`` and ``tables``: pandas DataFrames or pyarrow
    Tables."""
    run_dir = Path(run_dir)
    try:
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{run_dir.name}.tmp-", dir=run_dir.parent))
    except OSError as exc:
        raise ResultsError(f"{run_dir.parent}: cannot create the results folder ({exc.strerror})") from None
    try:
        (tmp / "config.yaml").write_text(dump_yaml(config))
        _write_parquet(rounds, tmp / "rounds.parquet")
        for name, text in (extra or {}).items():
            (tmp / name).write_bytes(text) if isinstance(text, bytes) else (tmp / name).write_text(text)
        for name, table in (tables or {}).items():
            _write_parquet(table, tmp / name)
        _dump_json(summary, tmp / "summary.json")
        _dump_json(manifest, tmp / "manifest.json")
        for name in RUN_FILES:
            with open(tmp / name, "rb") as fh:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o755)
        old = None
        if run_dir.exists():
            old = run_dir.with_name(f".{run_dir.name}.old-{os.getpid()}")
            os.replace(run_dir, old)
        os.replace(tmp, run_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return run_dir


def _write_parquet(table: Any, path: Path) -> None:
    """A pandas DataFrame (without its index) or a pyarrow Table, as Parquet."""
    if hasattr(table, "to_parquet"):
        return table.to_parquet(path, index=False)
    import pyarrow.parquet as pq

    pq.write_table(table, path)


@dataclass
class Run:
    """A finished run read back from disk."""

    path: Path
    config: dict[str, Any]
    summary: dict[str, Any]
    manifest: dict[str, Any]
    rounds: pd.DataFrame

    @property
    def label(self) -> str:
        return str(self.manifest.get("learner_label") or self.path.name)

    @property
    def marks(self) -> list[str]:
        """What a reader of a plot or table must know about this run: weights that became
        NaN (the authors' numerics) and SmoothDCG's step direction."""
        out = []
        nonfinite = self.summary.get("nonfinite_round")
        if isinstance(nonfinite, int) and not isinstance(nonfinite, bool):
            out.append(f"NaN weights from round {nonfinite}")
        direction = (self.manifest.get("learner_conventions") or {}).get("direction")
        if direction == "descend-gain":
            out.append("descends DCG, as the paper")
        elif direction == "ascend-gain":
            out.append("ascends DCG, corrected")
        return out

    @property
    def experiment(self) -> str:
        return str(self.config["experiment"])  # validated by read_run


def group_seeds(runs: list[Run]) -> dict[tuple[str, str, str], list[Run]]:
    """Runs that differ only in their seed, keyed by (experiment, learner, config id).

    Runs of the same learner with other settings (e.g. a ``--set`` override) form their
    own group. Two runs with the same key and the same seed are refused: averaging a
    duplicate would count one seed twice.
    """
    groups: dict[tuple[str, str, str], list[Run]] = {}
    for run in runs:
        s = run.summary
        key = (run.experiment, str(s.get("learner", run.path.name)), str(s.get("config_id", run.path.name)))
        groups.setdefault(key, []).append(run)
    for (_, learner, _), members in groups.items():
        seeds = [m.summary.get("seed") for m in members]
        dup = {x for x in seeds if seeds.count(x) > 1}
        if dup:
            paths = [str(m.path) for m in members if m.summary.get("seed") in dup]
            raise ResultsError(
                f"runs {', '.join(paths)} are the same learner {learner!r} with the same settings "
                f"and seed {sorted(dup, key=str)[0]}; keep one of them"
            )
    return groups


def is_complete(run_dir: Path) -> bool:
    return all((run_dir / f).is_file() for f in RUN_FILES)


def find_runs(paths: list[Path]) -> list[Path]:
    """Complete run directories at or below each path (hidden temp dirs skipped)."""
    found: list[Path] = []
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise ResultsError(f"{p}: no such results directory (tried {tried(p)}; run 'ltr run CONFIG' first)")
        if (p / "manifest.json").is_file():
            candidates = [p]
        else:
            candidates = sorted(m.parent for m in p.rglob("manifest.json"))
        for c in candidates:
            if any(part.startswith(".") and part not in (".", "..") for part in c.relative_to(p).parts):
                continue
            if is_complete(c) and c not in found:
                found.append(c)
    return found


# --- reading run files back ---------------------------------------------------------------

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


def _validate(model: type[BaseModel], data: Any, path: Path) -> None:
    try:
        model.model_validate(data)
    except ValidationError as exc:
        raise _damaged(path, _file_problem(exc)) from None


def _damaged(path: Path, problem: str) -> ResultsError:
    return ResultsError(f"{path}: {' '.join(problem.split())}; {DAMAGED}")


def _short(exc: Exception, path: Path) -> str:
    """A library's error message, without the path (already named) and at most 120 characters."""
    text = " ".join(str(exc).split())
    text = text.replace(f"Could not open Parquet input source '{path}': ", "").replace(str(path), "the file")
    return text if len(text) <= 120 else text[:117] + "..."


def _read_text(path: Path) -> str:
    """A run's text file: a plain file (never a FIFO or device) of at most 64 MB, UTF-8."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        with os.fdopen(fd, "rb") as fh:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise _damaged(path, "is not a plain file")
            raw = fh.read(MAX_TEXT_BYTES + 1)
    except OSError as exc:
        raise ResultsError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if len(raw) > MAX_TEXT_BYTES:
        raise _damaged(path, f"is larger than {MAX_TEXT_BYTES // 2**20} MB")
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _damaged(path, f"is not UTF-8 text (byte 0x{raw[exc.start]:02x} at offset {exc.start})") from None


read_run_text = _read_text  # models.json for ltr score


def _mapping(data: Any, path: Path, kind: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        what = "empty" if data is None else f"a {type(data).__name__}"
        raise _damaged(path, f"the {kind} file is not a mapping (it is {what})")
    return data


def _read_json(path: Path, kind: str) -> dict[str, Any]:
    text = _read_text(path)
    try:
        data = json.loads(text)
    except RecursionError:
        raise _damaged(path, "is not valid JSON (nested too deeply)") from None
    except ValueError as exc:
        raise _damaged(path, f"is not valid JSON ({_short(exc, path)})") from None
    return _mapping(data, path, kind)


def read_config(path: Path) -> dict[str, Any]:
    """A run's ``config.yaml`` as a mapping (one-line :class:`ResultsError` otherwise)."""
    return _read_config(path)


def _read_config(path: Path) -> dict[str, Any]:
    try:
        data = parse_yaml(_read_text(path))
    except YamlProblem as exc:
        where = f"{path}:{exc.line}" if exc.line else str(path)
        raise ResultsError(f"{where}: {exc.problem}; {DAMAGED}") from None
    return _mapping(data, path, "config")


# rounds.parquet columns that are not metrics, and the kind of values each holds
_ROUND_COLUMNS = {"t": "integer", "pass": "integer", "m": "integer", "qid": "string",
                  "mistake": "boolean", "updated": "boolean", "no_relevant": "boolean",
                  "ranking_loss": "number", SURROGATE: "number", REGRET: "number"}


def _dtype_ok(series: pd.Series, kind: str) -> bool:
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
        raise _damaged(path, f"column {bad[0]!r} is not named by a string")
    if len(set(columns)) != len(columns):
        raise _damaged(path, "has a repeated column")
    if "t" in columns:
        t = rounds["t"].to_numpy()
        if _dtype_ok(rounds["t"], "integer") and t.size and (t[0] < 1 or (np.diff(t) <= 0).any()):
            raise _damaged(path, "column 't' must count rounds upwards from 1")
        for column in columns:
            kind = _ROUND_COLUMNS.get(column, "number")
            if column not in _ROUND_COLUMNS and not is_metric_name(column.removeprefix("heldout_")):
                shown = repr(column) if len(repr(column)) <= 40 else repr(column)[:37] + "..."
                raise _damaged(path, f"column {shown} is neither a round column nor a metric name")
            if kind is not None and not _dtype_ok(rounds[column], kind):
                what = {"integer": "integers", "boolean": "true/false values", "number": "numbers"}.get(kind, "strings")
                raise _damaged(path, f"column {column!r} must hold {what}, not {rounds[column].dtype} values")
    elif "fold" in columns:
        for column in columns:
            values = rounds[column]  # a metric no fold has (all None) is an object column
            if is_metric_name(column) and not (_dtype_ok(values, "number") or values.isna().all()):
                raise _damaged(path, f"column {column!r} must hold numbers, not {rounds[column].dtype} values")
    else:
        raise _damaged(path, "has neither a 't' (online) nor a 'fold' (batch) column")
    for column in columns:
        if is_metric_name(column.removeprefix("heldout_")) and _dtype_ok(rounds[column], "number") and \
                np.isinf(rounds[column].to_numpy(dtype=np.float64)).any():
            raise _damaged(path, f"column {column!r} holds an infinite value")


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return abs(a - b) <= 1e-12 * max(1.0, abs(a), abs(b))


def check_summary_matches(summary: dict[str, Any], rounds: pd.DataFrame, path: Path) -> None:
    """``summary.json``'s numbers are those of ``rounds.parquet``: the round count and each
    metric's final time average (online), each test metric's mean over folds (batch).
    A folder edited by hand, or put together from two runs, is refused, never reported."""
    def mismatch(what: str, stated: Any, found: Any) -> ResultsError:
        return _damaged(path, f"summary.json does not match rounds.parquet ({what}: {stated} in summary.json, "
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


def _read_rounds(path: Path) -> pd.DataFrame:
    import pandas as pd

    try:
        rounds = pd.read_parquet(path)
    except Exception as exc:  # noqa: BLE001 - arbitrary bytes can fail anywhere in the decoder
        raise _damaged(path, f"is not a readable Parquet file ({_short(exc, path)})") from None
    check_rounds(rounds, path)
    if "qid" in rounds.columns and rounds["qid"].dtype != "string":  # one dtype, whoever wrote the file
        rounds["qid"] = rounds["qid"].astype("string")
    return rounds


def read_run(run_dir: Path) -> Run:
    """A finished run, every file validated (one-line :class:`ResultsError` otherwise)."""
    run_dir = Path(run_dir)
    if not is_complete(run_dir):
        missing = [f for f in RUN_FILES if not (run_dir / f).is_file()]
        raise ResultsError(f"{run_dir}: incomplete run (missing {', '.join(missing)})")
    config = _read_config(run_dir / "config.yaml")
    _validate(ConfigFile, config, run_dir / "config.yaml")
    summary = _read_json(run_dir / "summary.json", "summary")
    batch = summary.get("protocol") == "batch-cv"
    _validate(BatchSummary if batch else OnlineSummary, summary, run_dir / "summary.json")
    manifest = _read_json(run_dir / "manifest.json", "manifest")
    _validate(ManifestFile, manifest, run_dir / "manifest.json")
    rounds = _read_rounds(run_dir / "rounds.parquet")
    if batch == ("t" in rounds.columns):
        raise _damaged(run_dir / "rounds.parquet", "does not match summary.json (online vs batch run)")
    check_summary_matches(summary, rounds, run_dir / "rounds.parquet")
    # metrics by their one spelling, whatever version wrote the folder (``map`` is ``ap``)
    rounds = rounds.rename(columns=canonical_column)
    summary["metrics"] = {canonical_name(k): v for k, v in (summary.get("metrics") or {}).items()}
    return Run(path=run_dir, config=config, summary=summary, manifest=manifest, rounds=rounds)
