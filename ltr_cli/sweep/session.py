"""A sweep as ``ltr sweep`` runs it: the checks in their order, the notes, the executor and
the lines it answers with (``--status``: a line per run and the counts).

The command parses options into a :class:`SweepRequest` and prints what these functions
return; notes go through the ``note`` callback it passes (silenced by ``--quiet``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ltr_cli.errors import LtrError
from ltr_cli.sweep.grid import SweepPlan, effective_jobs, execute, plan, point_label, status

STATUSES = ("done", "failed", "running", "pending")


@dataclass(frozen=True)
class SweepRequest:
    """What ``ltr sweep`` was asked: the config and its overrides, where runs go and how
    they are computed."""

    config: Path
    overrides: list[str]
    out: Path | None = None
    executor: str = "local"
    jobs: int = 1
    scheduler: str | None = None
    connect_timeout: float = 10.0
    max_grid: int = 10_000
    data: list[Path] | None = None
    heldout: Path | None = None


@dataclass
class SweepOutcome:
    """A finished sweep: the summary line and a one-line error per failed run."""

    summary: str
    errors: list[str]


def _planned(request: SweepRequest, note: Any = None) -> SweepPlan:
    sweep_plan = plan(request.config, request.overrides, request.data, request.heldout, note)
    sweep_plan.check_limit(request.max_grid)  # from the axis lengths, before expanding anything
    return sweep_plan


def status_lines(request: SweepRequest) -> list[str]:
    """``--status``: a line per run (status, run, its grid settings, checkpoint, error) and
    the counts. Reads, never writes."""
    tasks = _planned(request).tasks()
    rows = status(tasks, request.out or Path(tasks[0].run.spec.output))
    lines = [f"{r['status']:8s} {r['run']}{point_label(r['point'], r['learner'])}{_status_detail(r)}" for r in rows]
    counts = {s: sum(r["status"] == s for r in rows) for s in STATUSES}
    return lines + [" ".join(f"{k}={v}" for k, v in counts.items()) + f" total={len(rows)}"]


def _status_detail(row: dict[str, Any]) -> str:
    extra = f" (checkpoint at round {row['checkpoint_round']})" if "checkpoint_round" in row else ""
    return extra + (f": {row['error']}" if row.get("error") else "")


def run_sweep(request: SweepRequest, note: Callable[[str], None]) -> SweepOutcome:
    """Check ``--scheduler``, plan, note the grid, cap ``--jobs`` (noted) and run every task
    on the executor; a failed run is an error line in the outcome, never an exception."""
    _check_scheduler(request)
    sweep_plan = _planned(request, note)
    note(f"sweep: {sweep_plan.describe()}")
    tasks = sweep_plan.tasks()
    root = request.out or Path(tasks[0].run.spec.output)
    jobs = request.jobs
    if not (request.executor == "dask" and request.scheduler):
        jobs = _capped_jobs(jobs, len(tasks), note)
    results = execute(tasks, root, request.executor, jobs, request.scheduler, request.connect_timeout)
    failed = [r for r in results if r["status"] != "done"]
    return SweepOutcome(f"sweep: {len(results) - len(failed)} of {len(results)} runs done -> {root}",
                        [f"run {r['run']} failed: {r['error']}" for r in failed])


def _check_scheduler(request: SweepRequest) -> None:
    if request.scheduler is None:
        return
    if request.executor != "dask":
        raise LtrError("--scheduler needs --executor dask")
    from ltr_cli.sweep.dask_executor import check_scheduler_address

    check_scheduler_address(request.scheduler)


def _capped_jobs(jobs: int, n_tasks: int, note: Callable[[str], None]) -> int:
    used = effective_jobs(jobs, n_tasks)
    if used < jobs:
        why = "the number of runs" if used == n_tasks else "4 per CPU"
        note(f"--jobs {jobs} capped at {used} ({why})")
    return used
