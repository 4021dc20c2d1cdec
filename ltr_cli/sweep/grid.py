"""``ltr sweep``: expand a grid over config keys into runs and execute them.

A config's ``sweep:`` maps dotted keys to value lists (``learners.slam.step.eta: [0.1, 1]``,
``seed: [0, 1, 2]``, ``dataset.folds: [[1], [2]]``). A key under ``learners.NAME.`` is that
learner's own; every other key is shared. The grid is the Cartesian product of the shared
keys, in the order written, and under each of its points every learner runs the product of
its own keys only (a learner's run depends on its own keys, never on another learner's:
expanding those together would make the same run again and again). Each such point is the
config with those overrides (validated like ``--set``), and each of its seeds is one *task*
with the run id ``ltr run`` would give it. The grid's size, shared points times the sum over
learners of their own points, is known from the axis lengths before anything is expanded;
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
per-run lock (:mod:`ltr_cli.runs.locks`) keeps two workers from computing the same run.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ltr_cli.config.experiment import ExperimentSpec, apply_overrides, parse_config, read_with_data
from ltr_cli.errors import ConfigError, LtrError
from ltr_cli.names import setting, settings_text
from ltr_cli.sweep.tasks import EXECUTORS, ExecutorOptions, Task, group_tasks, one_line


#: Grid points a sweep may have without ``--max-grid``.
MAX_GRID = 10_000
#: ``--jobs`` is capped at this many processes per CPU (and at the number of runs).
JOBS_PER_CPU = 4
#: Seconds to wait for a ``--scheduler`` to answer (``--connect-timeout``).
CONNECT_TIMEOUT = 10.0



@dataclass
class SweepPlan:
    """A sweep config read and validated, before its grid is expanded."""

    source: str
    raw: dict[str, Any]
    base: ExperimentSpec
    axes: dict[str, int] = field(default_factory=dict)  # key -> number of values

    def owner(self, key: str) -> str | None:
        """The learner whose own key ``key`` is (``learners.NAME.`` and below), else None."""
        parts = key.split(".", 2)
        return parts[1] if len(parts) == 3 and parts[0] == "learners" and parts[1] in self.base.learners else None

    def own_axes(self) -> tuple[dict[str, int], dict[str, dict[str, int]]]:
        """The shared axes, and each learner's own (every learner listed, in config order)."""
        shared = {k: v for k, v in self.axes.items() if self.owner(k) is None}
        own: dict[str, dict[str, int]] = {name: {} for name in self.base.learners}
        for k, v in self.axes.items():
            name = self.owner(k)
            if name is not None:
                own[name][k] = v
        return shared, own

    @property
    def points(self) -> int:
        """Grid points: the shared axes' product times the sum over learners of the product
        of their own axes (1 without a sweep block)."""
        if not self.axes:
            return 1
        shared, own = self.own_axes()
        mine = [math.prod(a.values()) for a in own.values() if a]
        return math.prod(shared.values()) * (sum(mine) + len(own) - len(mine) if mine else 1)

    def _sizes(self, named: bool) -> str:
        """The axis lengths as the grid multiplies and adds them."""
        def part(axes: dict[str, int]) -> str:
            return " x ".join(f"{k} {v}" if named else str(v) for k, v in axes.items())

        shared, own = self.own_axes()
        mine = [part(a) for a in own.values() if a]
        if len(mine) <= 1:
            return part(self.axes)
        rest = len(own) - len(mine)
        summed = " + ".join([f"({m})" for m in mine] + ([f"{rest} without own axes"] if rest else []))
        return f"{part(shared)} x ({summed})" if shared else summed

    def describe(self) -> str:
        """``32 grid points (learners.slam.step.eta 4 x seed 8)``."""
        n = self.points
        if not self.axes:
            return "1 grid point (no sweep axes)"
        return f"{n:,} grid point{'s' if n != 1 else ''} ({self._sizes(True)})"

    def check_limit(self, max_grid: int | None) -> None:
        if max_grid is not None and self.points > max_grid:
            sizes = self._sizes(False)
            raise LtrError(f"{self.source}: sweep: the grid has {self.points:,} points ({sizes}), over the "
                           f"limit of {max_grid:,}; pass --max-grid {self.points} to run it anyway, or "
                           "shorten the value lists")

    def tasks(self) -> list[Task]:
        """Tasks in grid order (then learners, then seeds), duplicates removed."""
        from ltr_cli.runs.plan import planned

        raw, source = self.raw, self.source
        grid = self.base.sweep or {}
        keys = list(grid)
        shared, own = self.own_axes()
        # a task's place: the first point of the whole product that makes it (every other
        # learner's keys at their first values), then its seed, then its learner
        strides = [math.prod(len(grid[k]) for k in keys[i + 1:]) for i in range(len(keys))]
        order = {name: i for i, name in enumerate(self.base.learners)}
        found: list[tuple[tuple[int, int, int], Task]] = []
        specs: dict[str, ExperimentSpec] = {}
        for common in itertools.product(*(range(len(grid[k])) for k in shared)):
            for learner, axes in own.items():
                for mine in itertools.product(*(range(len(grid[k])) for k in axes)):
                    at = dict(zip([*shared, *axes], [*common, *mine]))
                    point = {k: grid[k][at[k]] for k in keys if k in at}  # in the order written
                    place = sum(at.get(k, 0) * stride for k, stride in zip(keys, strides))
                    seen = json.dumps(at)  # learners without own axes share their point's spec
                    if seen not in specs:
                        data = copy.deepcopy(raw)
                        data.pop("sweep", None)
                        data = apply_overrides(data, [f"{k}={json.dumps(v)}" for k, v in point.items()], source)
                        specs[seen] = _validate_point(data, source, settings_text(point))
                    spec = specs[seen]
                    for s, seed in enumerate(spec.seed_list()):
                        one = spec.for_seed(seed).model_copy(update={"sweep": None})
                        found.append(((place, s, order[learner]), Task(planned(one, learner), point)))
        unique: dict[str, Task] = {}
        for _, task in sorted(found, key=lambda kt: kt[0]):
            unique.setdefault(task.key, task)  # equal values of two keys: one run, the first
        return list(unique.values())


def plan(path: str | Path, overrides: list[str] | None = None, data: list[Path] | None = None,
         heldout: Path | None = None, note: Any = None) -> SweepPlan:
    """Read and validate a sweep config (``data``, ``heldout``: ``--data``, ``--heldout``,
    as :func:`~ltr_cli.config.experiment.read_with_data`); its grid size is known, nothing
    is expanded."""
    source = str(path)
    raw = read_with_data(path, overrides, data, note, heldout)
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


def effective_jobs(requested: int, n_tasks: int) -> int:
    """``--jobs`` capped at the number of runs and at 4 processes per CPU."""
    return max(1, min(requested, n_tasks, JOBS_PER_CPU * (os.cpu_count() or 1)))


def execute(
    tasks: list[Task],
    out_root: Path,
    executor: str = "local",
    jobs: int = 1,
    scheduler: str | None = None,
    connect_timeout: float = CONNECT_TIMEOUT,
) -> list[dict[str, Any]]:
    """Run tasks on the named executor (:data:`EXECUTORS`); results in task order. Tasks
    that share a data stream are computed together (:func:`~ltr_cli.sweep.tasks.group_tasks`).
    A run that fails or whose worker dies is a ``failed`` result, never an exception."""
    import importlib

    if executor not in EXECUTORS:
        raise LtrError(f"unknown executor {executor!r}; known: {', '.join(EXECUTORS)}")
    module = importlib.import_module(EXECUTORS[executor])
    units = group_tasks(tasks, jobs)
    results = module.run(units, str(out_root), ExecutorOptions(jobs, scheduler, connect_timeout))
    order = {task.key: i for i, task in enumerate(tasks)}
    return sorted(results, key=lambda r: order.get(r["run"], len(order)))


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
        return one_line(str(error))
    except (OSError, ValueError, RecursionError):
        return "(unreadable failure record)"


def status(tasks: list[Task], out_root: Path) -> list[dict[str, Any]]:
    """done / failed / running / pending for every task (with the failure message).

    Read-only: it creates, changes and deletes nothing, and odd files where a run's files
    belong (directories, FIFOs, symlinks, garbage) are read as "not there" or unreadable.
    Of a checkpoint it reads the small JSON member only, never anything executable."""
    from ltr_cli.protocols.checkpoint import CheckpointInvalid, Checkpointer
    from ltr_cli.runs.locks import RunLock
    from ltr_cli.results.folders import is_complete

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



def point_label(point: dict[str, Any], learner: str) -> str:
    """`` [step.eta: 0.1, seed: 1]``: the grid settings of one run (its own learner's keys
    without their ``learners.<name>.`` prefix, and keys outside ``learners``), as
    :func:`ltr_cli.names.setting` writes them."""
    own = f"learners.{learner}."
    shown = [setting(k, v, learner) for k, v in point.items()
             if k.startswith(own) or not k.startswith("learners.")]
    return f" [{', '.join(shown)}]" if shown else ""
