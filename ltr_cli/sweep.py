"""``ltr sweep``: expand a grid over config keys into runs and execute them.

A config's ``sweep:`` maps dotted keys to value lists (``learners.slam.step.eta: [0.1, 1]``,
``seed: [0, 1, 2]``, ``dataset.folds: [[1], [2]]``). The grid is their Cartesian product, in
the order written; each grid point is the config with those overrides (validated like
``--set``), and each of its learners and seeds is one *task* with the run id ``ltr run``
would give it (points that differ only in another learner's keys give the same run, which
is run once). Tasks are independent, so they run inline, in a process pool
(``--jobs N``) or on a Dask cluster (``--executor dask``), with identical results.

Re-running a sweep skips complete runs and resumes killed ones from their checkpoints; a
per-run lock keeps two workers from computing the same run. A failing task writes
``.<run-id>.failed.json`` beside the runs and does not stop the others.
"""

from __future__ import annotations

import copy
import itertools
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ltr_cli.config import ExperimentSpec, _load_yaml, apply_overrides, parse_config
from ltr_cli.errors import ConfigError, LtrError


@dataclass(frozen=True)
class Task:
    """One run of a sweep: a validated config (single seed, no sweep) and one learner."""

    config: dict[str, Any]
    learner: str
    point: dict[str, Any]
    experiment: str
    run_id: str

    @property
    def key(self) -> str:
        return f"{self.experiment}/{self.run_id}"


def expand(path: str | Path, overrides: list[str] | None = None) -> list[Task]:
    """Tasks of a sweep config, in grid order (then learners, then seeds)."""
    from ltr_cli.runner import run_name

    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, None, f"cannot read config ({exc})") from None
    raw = _load_yaml(text, source)
    if not isinstance(raw, dict):
        raise ConfigError(source, None, "the config must be a YAML mapping of keys to values")
    if overrides:
        raw = apply_overrides(raw, overrides, source)
    base = parse_config(raw, source)  # validates the sweep block and the base config
    grid = base.sweep or {}
    keys = list(grid)
    tasks: list[Task] = []
    for values in itertools.product(*(grid[k] for k in keys)) if keys else [()]:
        point = dict(zip(keys, values))
        data = copy.deepcopy(raw)
        data.pop("sweep", None)
        data = apply_overrides(data, [f"{k}={json.dumps(v)}" for k, v in point.items()], source)
        label = ", ".join(f"{k}={v}" for k, v in point.items())
        spec = _validate_point(data, source, label)
        for seed in spec.seed_list():
            one = spec.for_seed(seed)
            resolved = one.resolved()
            resolved.pop("sweep", None)
            for learner in one.learners:
                tasks.append(Task(resolved, learner, point, one.experiment, run_name(one, learner)))
    # a learner's run depends only on its own keys: grid points that differ only in another
    # learner's settings give the same run id, and it is run once
    unique: dict[str, Task] = {}
    for task in tasks:
        unique.setdefault(task.key, task)
    return list(unique.values())


def _validate_point(data: dict[str, Any], source: str, label: str) -> ExperimentSpec:
    try:
        return parse_config(data, source)
    except ConfigError as exc:
        raise ConfigError(source, exc.key, f"{str(exc).split(': ', 2)[-1]} (at sweep point {label})") from None


def run_task(task: Task, out_root: str) -> dict[str, Any]:
    """Execute one task (resuming it if possible); never raises for a failing run."""
    from ltr_cli.runner import run_experiment

    failed = Path(out_root) / task.experiment / f".{task.run_id}.failed.json"
    start = time.time()
    try:
        spec = parse_config(task.config, f"sweep task {task.key}")
        (outcome,) = run_experiment(spec, out=Path(out_root), quiet=True, learners=[task.learner],
                                    resume=True)
    except Exception as exc:  # recorded, so one bad run cannot stop the sweep
        message = str(exc) if isinstance(exc, LtrError) else f"{type(exc).__name__}: {exc}"
        failed.parent.mkdir(parents=True, exist_ok=True)
        tmp = failed.with_name(failed.name + f".tmp-{os.getpid()}")
        tmp.write_text(json.dumps({"run": task.key, "point": task.point, "error": message,
                                   "time": start}, indent=2, default=str))
        os.replace(tmp, failed)
        return {"run": task.key, "status": "failed", "error": message}
    failed.unlink(missing_ok=True)
    return {"run": task.key, "status": "done", "path": str(outcome.path)}


def execute(
    tasks: list[Task],
    out_root: Path,
    executor: str = "local",
    jobs: int = 1,
    scheduler: str | None = None,
) -> list[dict[str, Any]]:
    """Run tasks inline (jobs 1), in a process pool, or on Dask; results in task order."""
    out = str(out_root)
    if executor == "dask":
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise LtrError("--executor dask needs Dask: pip install 'ltr-cli[distributed]'") from None
        if scheduler:
            with Client(scheduler) as client:
                return client.gather([client.submit(run_task, t, out, pure=False) for t in tasks])
        with LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                          dashboard_address=None) as cluster, Client(cluster) as client:
            return client.gather([client.submit(run_task, t, out, pure=False) for t in tasks])
    if jobs <= 1:
        return [run_task(t, out) for t in tasks]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(run_task, tasks, [out] * len(tasks)))


def status(tasks: list[Task], out_root: Path) -> list[dict[str, Any]]:
    """done / failed / running / pending for every task (with the failure message)."""
    from ltr_cli.checkpoint import Checkpointer
    from ltr_cli.locks import RunLock
    from ltr_cli.results import is_complete

    rows = []
    for task in tasks:
        base = Path(out_root) / task.experiment
        row: dict[str, Any] = {"run": task.key, "point": task.point, "learner": task.learner}
        failed = base / f".{task.run_id}.failed.json"
        if is_complete(base / task.run_id):
            row["status"] = "done"
        elif RunLock(base / f".{task.run_id}.lock").is_held_elsewhere():
            row["status"] = "running"
        elif failed.is_file():
            row["status"] = "failed"
            try:
                error = json.loads(failed.read_text(encoding="utf-8")).get("error")
            except (OSError, ValueError, RecursionError, AttributeError):
                error = None
            row["error"] = " ".join(error.split()) if isinstance(error, str) else "(unreadable failure record)"
        else:
            row["status"] = "pending"
            state = Checkpointer(base / f".{task.run_id}.checkpoint", task.run_id, 0).load()
            if state is not None:
                row["checkpoint_round"] = state.t
        rows.append(row)
    return rows
