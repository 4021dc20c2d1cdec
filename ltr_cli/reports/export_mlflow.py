"""What ``ltr export mlflow`` records of each finished run, as plain data (no MLflow here:
:mod:`ltr_cli.reports.mlflow_store` writes it).

One MLflow experiment per ltr experiment; in it one MLflow run per run folder (a learner's
settings and one seed: ``<learner>-seed<N>-<hash>`` online, ``<learner>-<hash>`` batch),
named by the run id, so learners and seeds sit side by side in the runs table and charts;
and, when the experiment has figures from ``ltr plot``, one run named ``figures`` holding
them. Names MLflow does not accept (``ndcg@10``) are spelt as plot file names are
(``ndcg_at_10``).

An online run's metrics, with ``step`` = round ``t``:

* ``round/<metric>``: the round's value (``rounds.parquet``; NaN rounds left out), also
  ``round/ranking_loss``, ``round/surrogate``, ``round/regret`` where logged;
* ``time_average/<metric>``: the cumulative mean over rounds, the curve ``ltr plot`` draws;
* ``cumulative/mistakes``, ``cumulative/updates``; ``heldout/<metric>`` where evaluated.

Long runs are thinned: rounds 1, every ``every``-th round and the last round are logged
(``every`` = 1 when the run has at most :data:`FULL_ROUNDS` rounds, else the smallest step
that keeps each series within :data:`FULL_ROUNDS` points). A batch (``cv:``) run's metrics
are per fold, ``fold/<metric>`` and ``fold/vali_<metric>`` with ``step`` = fold number.

Scalars (step 0): ``<metric>`` is the run's headline, the final time average (online) or
the mean over the test folds (batch); ``last10/<metric>`` and
``last10_per_round/<metric>`` the report's last-ten averages (online); every other number
at the top of ``summary.json`` (rounds, mistakes, wall_seconds, ...) under its own name.
Params: the run's config flattened (``dataset.kind``, ``protocol.passes``, the learner's
settings as ``learner.<key>``, ...), the run id, seed, config hash, the dataset's identity
and the versions of ltr-cli and Python; a batch run's selected settings per fold as
``chosen.fold<k>``. Tags ``ltr.*`` name the run; ``ltr.fingerprint`` (SHA-256 of the run's
files) makes the export idempotent.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ltr_cli.errors import ResultsError
from ltr_cli.measures.metrics import time_average
from ltr_cli.results.folders import RUN_FILES, Run, find_runs, read_run

FULL_ROUNDS = 10_000  # points per series before a long run is thinned
MAX_PARAM = 6000  # MLflow's longest parameter value
ARTIFACTS = ("config.yaml", "summary.json", "manifest.json")
FIGURE_SUFFIXES = (".png", ".pdf", ".svg")
CAPTION_SUFFIX = ".caption.txt"  # the curves' details ``ltr plot`` writes beside each figure
_BAD_KEY = re.compile(r"[^/\w.\- ]")


def mlflow_key(name: str) -> str:
    """A metric or parameter name MLflow accepts: ``ndcg@10`` -> ``ndcg_at_10``, any other
    character MLflow refuses -> ``_`` (MLflow allows letters, digits, ``_ - . / `` and space)."""
    return _BAD_KEY.sub("_", name.replace("@", "_at_"))[:250]


@dataclass
class Point:
    key: str
    value: float
    step: int


@dataclass
class RunExport:
    """One MLflow run to write: ``key`` (tag ``ltr.key``) identifies it across exports,
    ``fingerprint`` says whether what it holds changed."""

    experiment: str
    key: str
    name: str
    fingerprint: str
    params: dict[str, str]
    tags: dict[str, str]
    metrics: list[Point]
    artifacts: list[Path]
    start_ms: int | None = None
    end_ms: int | None = None
    folder: Path | None = None
    extra: dict[str, Any] = field(default_factory=dict)


# --- reading and checking the folder -----------------------------------------------------

def _inside(path: Path, root: Path) -> bool:
    try:
        path.resolve().relative_to(root.resolve())
    except ValueError:
        return False
    return True


def _plain_file(path: Path, root: Path) -> Path:
    """``path`` if it is a regular file inside ``root`` reached without a symbolic link."""
    if path.is_symlink() or not path.is_file() or not _inside(path, root):
        raise ResultsError(f"{path}: not a plain file inside {root} (a symbolic link or a special "
                           "file); the export reads only the results folder's own files")
    return path


def read_runs(results: Path) -> list[Run]:
    """Every finished run at or below ``results``, each validated by
    :func:`~ltr_cli.results.folders.read_run` and refused when its folder or one of its
    files leads outside ``results`` through a symbolic link. One-line :class:`ResultsError`."""
    results = Path(results)
    dirs = find_runs([results])
    if not dirs:
        raise ResultsError(f"{results}: no finished runs there (a results folder holds "
                           "<experiment>/<run-id>/ folders written by 'ltr run CONFIG')")
    runs = []
    for d in dirs:
        if not _inside(d, results):
            raise ResultsError(f"{d}: the run folder leads outside {results} (a symbolic link); "
                               "remove the link or export the folder it points to")
        for name in RUN_FILES:
            _plain_file(d / name, results)
        runs.append(read_run(d))
    return runs


def figures(results: Path, runs: list[Run]) -> dict[str, list[Path]]:
    """The figures of each experiment that ``ltr plot`` wrote with its default ``--out``:
    ``<experiment folder>/plots/*`` and ``<results>/plots/<experiment>_*`` (PNG, PDF, SVG, and
    the caption file beside each figure)."""
    found: dict[str, list[Path]] = {}
    for run in runs:
        exp = run.experiment
        if exp in found:
            continue
        candidates = [(run.path.parent / "plots", ""), (results / "plots", f"{exp}_")]
        files: list[Path] = []
        for folder, prefix in candidates:
            if folder.is_dir() and not folder.is_symlink() and _inside(folder, results):
                files += sorted(p for p in folder.iterdir()
                                if (p.suffix in FIGURE_SUFFIXES or p.name.endswith(CAPTION_SUFFIX))
                                and p.name.startswith(prefix) and p not in files)
        found[exp] = [_plain_file(p, results) for p in files]
    return {exp: files for exp, files in found.items() if files}


# --- what a run becomes ------------------------------------------------------------------

def _fingerprint(paths: list[Path]) -> str:
    digest = hashlib.sha256()
    for p in paths:
        digest.update(p.name.encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return digest.hexdigest()


def _text(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= MAX_PARAM else text[:MAX_PARAM - 3] + "..."


def flatten(data: Any, prefix: str = "") -> dict[str, str]:
    """A nested mapping as ``{"a.b.c": "value"}``; lists and scalars as JSON text (strings
    as they are), keys spelt as MLflow accepts them."""
    out: dict[str, str] = {}
    if isinstance(data, dict) and data:
        for k, v in data.items():
            out.update(flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif prefix:
        out[mlflow_key(prefix)] = _text(data)
    return out


def _part(data: dict[str, Any], key: str) -> dict[str, Any]:
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def run_params(run: Run) -> dict[str, str]:
    """The run's settings: its config flattened, the learner's own settings as
    ``learner.*``, its identity and the code's version."""
    config = dict(run.config)
    learners = config.pop("learners", {}) or {}
    params = flatten({k: v for k, v in config.items() if k not in ("description",)})
    for name, settings in learners.items():
        params["learner.name"] = str(name)
        params.update(flatten(settings, "learner"))
    s, m = run.summary, run.manifest
    dataset, versions = _part(m, "dataset"), _part(m, "versions")
    fingerprint = _part(dataset, "fingerprint")
    params.update({
        "run_id": str(m.get("run_id") or run.path.name),
        "seed": str(s.get("seed")),
        "config_id": str(s.get("config_id")),
        "protocol.kind": "batch-cv" if s.get("protocol") == "batch-cv" else "online",
    })
    extra = {"dataset.name": s.get("dataset"), "dataset.description": dataset.get("description"),
             "dataset.sha256": fingerprint.get("sha256"), "dataset.n_features": dataset.get("n_features"),
             "code.ltr_cli": versions.get("ltr_cli"), "code.python": versions.get("python")}
    params.update({k: _text(v) for k, v in extra.items() if v is not None})
    for fold in s.get("per_fold") or []:
        if isinstance(fold, dict) and "fold" in fold and "chosen" in fold:
            params[f"chosen.fold{fold['fold']}"] = _text(fold["chosen"])
    return params


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(value) else None


def summary_points(run: Run) -> list[Point]:
    """The run's scalars at step 0: the headline per metric, the last-ten averages (online),
    and every other number at the top of ``summary.json``."""
    s = run.summary
    points = []
    for name, stats in (s.get("metrics") or {}).items():
        key = mlflow_key(name)
        if isinstance(stats, dict):  # online
            for prefix, stat in (("", "final_time_average"), ("last10/", "last10_mean_of_time_average"),
                                 ("last10_per_round/", "last10_mean_per_round")):
                value = _number(stats.get(stat))
                if value is not None:
                    points.append(Point(prefix + key, value, 0))
        elif (value := _number(stats)) is not None:  # batch: mean over the test folds
            points.append(Point(key, value, 0))
    for name, value in s.items():
        number = _number(value)
        if number is not None and name not in ("seed",):
            points.append(Point(mlflow_key(name), number, 0))
    bound = ((s.get("theory") or {}).get("bound") or {})
    if isinstance(bound, dict) and (value := _number(bound.get("bound"))) is not None:
        points.append(Point("theory/bound", value, 0))
    return points


def thinning(rounds: int, every: int | None) -> int:
    """The step between logged rounds: ``every`` if given, else 1 up to :data:`FULL_ROUNDS`
    rounds and the smallest step keeping a series within that many points beyond."""
    if every is not None:
        return every
    return max(1, math.ceil(rounds / FULL_ROUNDS))


def _series(key: str, t: np.ndarray, values: np.ndarray, keep: np.ndarray) -> list[Point]:
    use = keep & np.isfinite(values)
    return [Point(key, float(v), int(s)) for s, v in zip(t[use], values[use])]


def online_points(rounds: pd.DataFrame, metrics: list[str], every: int) -> list[Point]:
    """An online run's per-round series (``t`` = step), thinned to rounds 1, every
    ``every``-th and the last."""
    t = rounds["t"].to_numpy(dtype=np.int64)
    keep = (t % every == 0) | (t == t[0]) | (t == t[-1]) if t.size else np.zeros(0, bool)
    points: list[Point] = []
    for column in rounds.columns:
        if column in ("t", "pass", "m", "qid", "mistake", "updated", "no_relevant"):
            continue
        values = rounds[column].to_numpy(dtype=np.float64)
        name = mlflow_key(column)
        if column.startswith("heldout_"):
            points += _series(f"heldout/{mlflow_key(column.removeprefix('heldout_'))}", t, values, keep)
            continue
        points += _series(f"round/{name}", t, values, keep)
        if column in metrics:
            points += _series(f"time_average/{name}", t, time_average(values), keep)
    for column, key in (("mistake", "cumulative/mistakes"), ("updated", "cumulative/updates")):
        if column in rounds.columns:
            points += _series(key, t, np.cumsum(rounds[column].to_numpy(dtype=np.float64)), keep)
    return points


def batch_points(rounds: pd.DataFrame) -> list[Point]:
    """A batch run's per-fold values (``fold`` = step)."""
    folds = rounds["fold"].to_numpy()
    points: list[Point] = []
    for column in rounds.columns:
        if column == "fold" or not pd.api.types.is_numeric_dtype(rounds[column].dtype) \
                or pd.api.types.is_bool_dtype(rounds[column].dtype):
            continue
        values = rounds[column].to_numpy(dtype=np.float64)
        points += [Point(f"fold/{mlflow_key(column)}", float(v), int(f))
                   for f, v in zip(folds, values) if f is not None and np.isfinite(v)]
    return points


def _epoch_ms(text: Any) -> int | None:
    try:
        return int(datetime.fromisoformat(str(text)).timestamp() * 1000)
    except ValueError:
        return None


def run_export(run: Run, results: Path, every: int | None) -> RunExport:
    """The MLflow run a finished run folder becomes."""
    s, m = run.summary, run.manifest
    batch = s.get("protocol") == "batch-cv"
    run_id = str(m.get("run_id") or run.path.name)
    metrics = [str(k) for k in (s.get("metrics") or {})]
    step = thinning(len(run.rounds), every)
    series = batch_points(run.rounds) if batch else online_points(run.rounds, metrics, step)
    artifacts = [run.path / name for name in ARTIFACTS]
    files = artifacts + [run.path / "rounds.parquet"]
    tags = {"ltr.key": f"{run.experiment}/{run_id}", "ltr.run_id": run_id, "ltr.experiment": run.experiment,
            "ltr.learner": str(s.get("learner")), "ltr.seed": str(s.get("seed")),
            "ltr.config_id": str(s.get("config_id")), "ltr.protocol": "batch-cv" if batch else "online",
            "ltr.folder": str(run.path.relative_to(results)) if _inside(run.path, results) else run.path.name,
            "ltr.label": run.label}
    if not batch:
        tags["ltr.logged_every"] = str(step)
    end = _epoch_ms(m.get("finished_at"))
    wall = _number(s.get("wall_seconds"))
    start = end - int(wall * 1000) if end is not None and wall is not None else end
    return RunExport(experiment=run.experiment, key=tags["ltr.key"], name=run_id,
                     fingerprint=_fingerprint(files), params=run_params(run), tags=tags,
                     metrics=summary_points(run) + series, artifacts=artifacts,
                     start_ms=start, end_ms=end, folder=run.path)


def figures_export(experiment: str, files: list[Path]) -> RunExport:
    """The run holding an experiment's figures."""
    key = f"{experiment}/figures"
    return RunExport(experiment=experiment, key=key, name="figures", fingerprint=_fingerprint(files),
                     params={}, tags={"ltr.key": key, "ltr.experiment": experiment, "ltr.kind": "figures"},
                     metrics=[], artifacts=files)


def plan_export(results: Path, every: int | None = None) -> list[RunExport]:
    """Everything an export writes, read and checked before anything is written."""
    if every is not None and every < 1:
        raise ResultsError(f"--every {every}: give a whole number of rounds >= 1")
    runs = read_runs(results)
    exports = [run_export(run, results, every) for run in runs]
    seen: dict[str, Path | None] = {}
    for item in exports:
        if item.key in seen:
            raise ResultsError(f"{seen[item.key]} and {item.folder} are the same run ({item.key}); "
                               "export one of them (MLflow would hold one run for both)")
        seen[item.key] = item.folder
    for exp, files in figures(results, runs).items():
        exports.append(figures_export(exp, files))
    return exports
