"""The task layer of ``ltr sweep``: one task is one run of one grid point, and
:func:`run_task` computes it (resuming it if it can) without ever raising for a failing
run. Executors (:mod:`ltr_cli.sweep.local`, :mod:`ltr_cli.sweep.dask_executor`) build on this
module and nothing above it.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ltr_cli.errors import LtrError
from ltr_cli.outputs import replace_text

#: The executors: name -> the module that runs a sweep's tasks there. Each module has
#: ``run(tasks, out_root, options) -> results`` (one result dict per task, in task order;
#: a failed run or a dead worker is a ``failed`` result, never an exception). Adding an
#: executor is one module and one line here (in this task layer, so the CLI lists them without importing any); ``--executor`` lists these names.
EXECUTORS: dict[str, str] = {
    "local": "ltr_cli.sweep.local",  # inline (one job) or local worker processes
    "dask": "ltr_cli.sweep.dask_executor",  # a Dask LocalCluster, or --scheduler ADDRESS
}


@dataclass(frozen=True)
class ExecutorOptions:
    """How an executor runs a sweep: ``jobs`` parallel runs; for Dask, a scheduler address
    (None: a local cluster) and how long to wait for it."""

    jobs: int = 1
    scheduler: str | None = None
    connect_timeout: float = 10.0


@dataclass(frozen=True)
class Task:
    """One run of a sweep: its planned run (:class:`~ltr_cli.runs.plan.PlannedRun`: a
    validated single-seed spec without the sweep block, and one learner) and the grid point
    it comes from."""

    run: Any  # a PlannedRun (typed loosely: executors import this module without the run layer)
    point: dict[str, Any]

    @property
    def learner(self) -> str:
        return str(self.run.learner)

    @property
    def experiment(self) -> str:
        return str(self.run.experiment)

    @property
    def run_id(self) -> str:
        return str(self.run.run_id)

    @property
    def stream(self) -> str | None:
        """Tasks with the same (non-None) value read the same stream and run in one compiled
        block group (the plan's :attr:`~ltr_cli.runs.plan.PlannedRun.group`): they may be
        computed together."""
        group = self.run.group
        return None if group is None else str(group)

    @property
    def key(self) -> str:
        return f"{self.experiment}/{self.run_id}"


def one_line(text: str, limit: int = 1000) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _failed_path(task: Task, out_root: str | Path) -> Path:
    return Path(out_root) / task.experiment / f".{task.run_id}.failed.json"


def record_failure(task: Task, out_root: str | Path, message: str, start: float | None = None) -> None:
    """Write ``.<run-id>.failed.json`` atomically (best effort: a results folder this
    process cannot write, e.g. a Dask client without the cluster's filesystem, is skipped)."""
    failed = _failed_path(task, out_root)
    try:
        failed.parent.mkdir(parents=True, exist_ok=True)
        replace_text(failed, json.dumps({"run": task.key, "point": task.point, "error": message,
                                         "time": start if start is not None else time.time()},
                                        indent=2, default=str))
    except OSError:
        pass


#: Runs computed together at most (their round logs are held in memory side by side).
MAX_GROUP = 64


def group_tasks(tasks: list[Task], jobs: int = 1) -> list[list[Task]]:
    """The units an executor distributes: tasks that share a stream (:attr:`Task.stream`)
    together, at most :data:`MAX_GROUP` per unit, every other task alone; groups are halved
    until there are at least ``jobs`` units (when they can be), so parallel workers each
    get a share. Units in the order of their first task."""
    units: list[list[Task]] = []
    where: dict[str, int] = {}
    for task in tasks:
        i = where.get(task.stream) if task.stream is not None else None
        if i is None or len(units[i]) >= MAX_GROUP:
            units.append([task])
            if task.stream is not None:
                where[task.stream] = len(units) - 1
        else:
            units[i].append(task)
    while len(units) < jobs:
        i = max(range(len(units)), key=lambda k: len(units[k]), default=None)
        if i is None or len(units[i]) < 2:
            break
        half = (len(units[i]) + 1) // 2
        units[i:i + 1] = [units[i][:half], units[i][half:]]
    return units


def run_group(tasks: list[Task], out_root: str) -> list[dict[str, Any]]:
    """Execute a unit of :func:`group_tasks` (resuming its runs if possible): a task alone,
    or tasks that share a stream in one pass over it. Each run writes its own folder,
    exactly what it writes alone, and fails alone. Never raises for a failing run."""
    from ltr_cli.data.sources import generated
    from ltr_cli.runs.runner import run_planned

    generated.KEEP_GENERATED = True  # the next points of this worker read the same generated stream
    start = time.time()
    try:
        outcomes: list[Any] = run_planned([task.run for task in tasks], Path(out_root), quiet=True, resume=True,
                                          keep_going=True)
    except Exception as exc:  # recorded for every run of the unit not written yet
        message = one_line(str(exc) if isinstance(exc, LtrError) else f"{type(exc).__name__}: {exc}")
        return [_lost(task, out_root, message) for task in tasks]
    results = []
    for task, outcome in zip(tasks, outcomes):
        if isinstance(outcome, LtrError):
            message = one_line(str(outcome))
            record_failure(task, out_root, message, start)
            results.append({"run": task.key, "status": "failed", "error": message})
        else:
            _failed_path(task, out_root).unlink(missing_ok=True)
            results.append({"run": task.key, "status": "done", "path": str(outcome.path)})
    return results


def run_task(task: Task, out_root: str) -> dict[str, Any]:
    """Execute one task (resuming it if possible); never raises for a failing run."""
    return run_group([task], out_root)[0]


def _lost(task: Task, out_root: str | Path, message: str) -> dict[str, Any]:
    """The result of a task whose worker died: done if it had finished writing the run
    (it died after that), else a recorded failure."""
    from ltr_cli.results.folders import is_complete

    run_dir = Path(out_root) / task.experiment / task.run_id
    if is_complete(run_dir):
        return {"run": task.key, "status": "done", "path": str(run_dir)}
    record_failure(task, out_root, message)
    return {"run": task.key, "status": "failed", "error": message}
