"""``ltr sweep``: expand a grid over config keys into runs and execute them.

A config's ``sweep:`` maps dotted keys to value lists (``learners.slam.step.eta: [0.1, 1]``,
``seed: [0, 1, 2]``, ``dataset.folds: [[1], [2]]``). The grid is their Cartesian product, in
the order written; each grid point is the config with those overrides (validated like
``--set``), and each of its learners and seeds is one *task* with the run id ``ltr run``
would give it (points that differ only in another learner's keys give the same run, which
is run once). The grid's size is known from the axis lengths before anything is expanded;
grids over ``max_grid`` points (default 10,000) are refused unless the limit is raised.
``output`` cannot be swept: a sweep writes under one results folder.

Tasks are independent, so they run inline (one job), in local worker processes
(``--jobs N``) or on a Dask cluster (``--executor dask``), with identical results.

Failures never stop the other runs. A task that raises writes ``.<run-id>.failed.json``
beside the runs. A worker that dies (SIGKILL, the out-of-memory killer, ``os._exit``) is
noticed by the parent, which records its run as failed the same way and starts a new
worker for the remaining runs; on Dask the scheduler retries the task on another worker
(``distributed.scheduler.allowed-failures`` times) and then reports it failed. Re-running a
sweep skips complete runs and resumes killed or failed ones from their checkpoints; a
per-run lock (:mod:`ltr_cli.locks`) keeps two workers from computing the same run.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import signal
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ltr_cli.config import ExperimentSpec, _load_yaml, _read_config_text, apply_overrides, parse_config
from ltr_cli.errors import ConfigError, LtrError

#: Grid points a sweep may have without ``--max-grid``.
MAX_GRID = 10_000
#: ``--jobs`` is capped at this many processes per CPU (and at the number of runs).
JOBS_PER_CPU = 4
#: Seconds to wait for a ``--scheduler`` to answer (``--connect-timeout``).
CONNECT_TIMEOUT = 10.0

#: TEST HOOK, never set outside the test suite: a comma-separated list of run ids or
#: learner names. The process that starts computing a matching run dies at once - by
#: SIGKILL, or by ``os._exit(3)`` when ``LTR_TEST_KILL_HOW=exit`` - to simulate a worker
#: dying. Unset (always, in normal use) it does nothing.
TEST_KILL_ENV = "LTR_TEST_KILL_RUN"


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


@dataclass
class SweepPlan:
    """A sweep config read and validated, before its grid is expanded."""

    source: str
    raw: dict[str, Any]
    base: ExperimentSpec
    axes: dict[str, int] = field(default_factory=dict)  # key -> number of values

    @property
    def points(self) -> int:
        """Grid points: the product of the axis lengths (1 without a sweep block)."""
        return math.prod(self.axes.values())

    def describe(self) -> str:
        """``32 grid points (learners.slam.step.eta 4 x seed 8)``."""
        n = self.points
        if not self.axes:
            return "1 grid point (no sweep axes)"
        sizes = " x ".join(f"{k} {v}" for k, v in self.axes.items())
        return f"{n:,} grid point{'s' if n != 1 else ''} ({sizes})"

    def check_limit(self, max_grid: int | None) -> None:
        if max_grid is not None and self.points > max_grid:
            sizes = " x ".join(str(v) for v in self.axes.values())
            raise LtrError(f"{self.source}: sweep: the grid has {self.points:,} points ({sizes}), over the "
                           f"limit of {max_grid:,}; pass --max-grid {self.points} to run it anyway, or "
                           "shorten the value lists")

    def tasks(self) -> list[Task]:
        """Tasks in grid order (then learners, then seeds), duplicates removed."""
        from ltr_cli.runner import run_name

        raw, source = self.raw, self.source
        grid = self.base.sweep or {}
        keys = list(grid)
        unique: dict[str, Task] = {}
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
                    task = Task(resolved, learner, point, one.experiment, run_name(one, learner))
                    # a learner's run depends only on its own keys: grid points that differ
                    # only in another learner's settings give the same run id, run once
                    unique.setdefault(task.key, task)
        return list(unique.values())


def plan(path: str | Path, overrides: list[str] | None = None) -> SweepPlan:
    """Read and validate a sweep config; its grid size is known, nothing is expanded."""
    source = str(path)
    try:
        text = _read_config_text(Path(path))
    except FileNotFoundError:
        raise ConfigError(source, None, "config file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(source, None, f"cannot read config ({exc})") from None
    raw = _load_yaml(text, source)
    if not isinstance(raw, dict):
        raise ConfigError(source, None, "the config must be a YAML mapping of keys to values")
    if overrides:
        raw = apply_overrides(raw, overrides, source)
    base = parse_config(raw, source)  # validates the sweep block and the base config
    axes = {k: len(v) for k, v in (base.sweep or {}).items()}
    return SweepPlan(source, raw, base, axes)


def expand(path: str | Path, overrides: list[str] | None = None,
           max_grid: int | None = MAX_GRID) -> list[Task]:
    """Tasks of a sweep config, in grid order (then learners, then seeds)."""
    p = plan(path, overrides)
    p.check_limit(max_grid)
    return p.tasks()


def _validate_point(data: dict[str, Any], source: str, label: str) -> ExperimentSpec:
    try:
        return parse_config(data, source)
    except ConfigError as exc:
        raise ConfigError(source, exc.key, f"{str(exc).split(': ', 2)[-1]} (at sweep point {label})") from None


def _one_line(text: str, limit: int = 1000) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def effective_jobs(requested: int, n_tasks: int) -> int:
    """``--jobs`` capped at the number of runs and at 4 processes per CPU."""
    return max(1, min(requested, n_tasks, JOBS_PER_CPU * (os.cpu_count() or 1)))


# --- one task ---------------------------------------------------------------------------------

def _failed_path(task: Task, out_root: str | Path) -> Path:
    return Path(out_root) / task.experiment / f".{task.run_id}.failed.json"


def record_failure(task: Task, out_root: str | Path, message: str, start: float | None = None) -> None:
    """Write ``.<run-id>.failed.json`` atomically (best effort: a results folder this
    process cannot write, e.g. a Dask client without the cluster's filesystem, is skipped)."""
    failed = _failed_path(task, out_root)
    try:
        failed.parent.mkdir(parents=True, exist_ok=True)
        tmp = failed.with_name(failed.name + f".tmp-{os.getpid()}")
        tmp.write_text(json.dumps({"run": task.key, "point": task.point, "error": message,
                                   "time": start if start is not None else time.time()},
                                  indent=2, default=str))
        os.replace(tmp, failed)
    except OSError:
        pass


def _test_kill_hook(task: Task) -> None:
    """See :data:`TEST_KILL_ENV` (a test hook; does nothing unless that variable is set)."""
    wanted = os.environ.get(TEST_KILL_ENV)
    if not wanted:
        return
    names = {w.strip() for w in wanted.split(",") if w.strip()}
    if task.run_id in names or task.learner in names or task.key in names:
        if os.environ.get("LTR_TEST_KILL_HOW") == "exit":
            os._exit(3)
        os.kill(os.getpid(), signal.SIGKILL)


def run_task(task: Task, out_root: str) -> dict[str, Any]:
    """Execute one task (resuming it if possible); never raises for a failing run."""
    from ltr_cli.runner import run_experiment

    _test_kill_hook(task)
    start = time.time()
    try:
        spec = parse_config(task.config, f"sweep task {task.key}")
        (outcome,) = run_experiment(spec, out=Path(out_root), quiet=True, learners=[task.learner],
                                    resume=True)
    except Exception as exc:  # recorded, so one bad run cannot stop the sweep
        message = _one_line(str(exc) if isinstance(exc, LtrError) else f"{type(exc).__name__}: {exc}")
        record_failure(task, out_root, message, start)
        return {"run": task.key, "status": "failed", "error": message}
    _failed_path(task, out_root).unlink(missing_ok=True)
    return {"run": task.key, "status": "done", "path": str(outcome.path)}


def _lost(task: Task, out_root: str | Path, message: str) -> dict[str, Any]:
    """The result of a task whose worker died: done if it had finished writing the run
    (it died after that), else a recorded failure."""
    from ltr_cli.results import is_complete

    run_dir = Path(out_root) / task.experiment / task.run_id
    if is_complete(run_dir):
        return {"run": task.key, "status": "done", "path": str(run_dir)}
    record_failure(task, out_root, message)
    return {"run": task.key, "status": "failed", "error": message}


def execute(
    tasks: list[Task],
    out_root: Path,
    executor: str = "local",
    jobs: int = 1,
    scheduler: str | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> list[dict[str, Any]]:
    """Run tasks inline (jobs 1), in local worker processes, or on Dask; results in task
    order. A run that fails or whose worker dies is a ``failed`` result, never an exception."""
    out = str(out_root)
    if executor == "dask":
        from ltr_cli.sweep_dask import run_dask

        return run_dask(tasks, out, jobs, scheduler, connect_timeout)
    if jobs <= 1:
        return [run_task(t, out) for t in tasks]
    from ltr_cli.sweep_local import run_local_pool

    return run_local_pool(tasks, out, jobs)


# --- status -----------------------------------------------------------------------------------

def _regular(path: Path) -> bool:
    """A regular file (not a directory, FIFO, device or symlink), without opening it."""
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


def _failure_message(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            data = fh.read(65536)
        record = json.loads(data)
        error = record.get("error") if isinstance(record, dict) else None
        if error is None:
            raise ValueError
        return _one_line(str(error))
    except (OSError, ValueError, RecursionError):
        return "(unreadable failure record)"


def status(tasks: list[Task], out_root: Path) -> list[dict[str, Any]]:
    """done / failed / running / pending for every task (with the failure message).

    Read-only: it creates, changes and deletes nothing, and odd files where a run's files
    belong (directories, FIFOs, symlinks, garbage) are read as "not there" or unreadable.
    Of a checkpoint it reads the small JSON member only, never anything executable."""
    from ltr_cli.checkpoint import CheckpointInvalid, Checkpointer
    from ltr_cli.locks import RunLock
    from ltr_cli.results import is_complete

    rows = []
    for task in tasks:
        base = Path(out_root) / task.experiment
        row: dict[str, Any] = {"run": task.key, "point": task.point, "learner": task.learner}
        failed = base / f".{task.run_id}.failed.json"
        checkpoint = base / f".{task.run_id}.checkpoint"
        if is_complete(base / task.run_id):
            row["status"] = "done"
        elif RunLock(base / f".{task.run_id}.lock").is_held_elsewhere():
            row["status"] = "running"
        elif _regular(failed):
            row["status"] = "failed"
            row["error"] = _failure_message(failed)
        else:
            row["status"] = "pending"
            try:
                at = Checkpointer(checkpoint, task.run_id, 0).round()
            except CheckpointInvalid as exc:
                row["error"] = f"checkpoint unusable ({exc})"
            else:
                if at is not None:
                    row["checkpoint_round"] = at
        rows.append(row)
    return rows

