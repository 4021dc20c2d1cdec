"""``ltr sweep``: a config's grid, run point by point, or its status."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ltr_cli.cli.options import ExecutorOpt, _value
from ltr_cli.errors import LtrError
from ltr_cli.sweep.tasks import EXECUTORS


def sweep(
    config: Annotated[Path, typer.Argument(metavar="CONFIG", help="experiment config with a sweep: block")],
    set_: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="override a config key before expanding")] = None,
    out: Annotated[Optional[Path], typer.Option("--out", help="results root (default: the config's output)")] = None,
    executor: Annotated[ExecutorOpt, typer.Option("--executor", help="where the runs are computed: " + ", ".join(EXECUTORS))] = ExecutorOpt("local"),
    jobs: Annotated[int, typer.Option("--jobs", "-j", min=1, help="parallel runs (processes, or Dask workers of a LocalCluster); capped at the number of runs and 4 per CPU")] = 1,
    scheduler: Annotated[Optional[str], typer.Option("--scheduler", help="Dask scheduler address, e.g. tcp://host:8786 (default: a LocalCluster)")] = None,
    connect_timeout: Annotated[float, typer.Option("--connect-timeout", min=0.1, help="seconds to wait for --scheduler to answer")] = 10.0,
    max_grid: Annotated[int, typer.Option("--max-grid", min=1, help="refuse grids of more points than this")] = 10_000,
    show_status: Annotated[bool, typer.Option("--status", help="only show done / failed / running / pending runs (reads, never writes)")] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="no notes on stderr (grid size, capped --jobs)")] = False,
) -> None:
    """Expand the config's sweep grid and run every point; re-running skips finished runs
    and resumes killed or failed ones. A run that fails, or whose worker process dies, is
    recorded and the others go on; the sweep then names each failed run and exits 1."""
    def note(message: str) -> None:
        if not quiet:
            typer.echo(f"ltr: note: {message}", err=True)

    from ltr_cli.sweep.grid import effective_jobs, execute, plan, point_label, status
    from ltr_cli.sweep.dask_executor import check_scheduler_address

    if scheduler is not None and not show_status:
        if _value(executor) != "dask":
            raise LtrError("--scheduler needs --executor dask")
        check_scheduler_address(scheduler)
    sweep_plan = plan(config, set_ or [])
    sweep_plan.check_limit(max_grid)  # from the axis lengths, before expanding anything
    if not show_status:
        note(f"sweep: {sweep_plan.describe()}")
    tasks = sweep_plan.tasks()
    root = out or Path(tasks[0].run.spec.output)
    if show_status:
        rows = status(tasks, root)
        counts = {s: sum(r["status"] == s for r in rows) for s in ("done", "failed", "running", "pending")}
        for r in rows:
            extra = f" (checkpoint at round {r['checkpoint_round']})" if "checkpoint_round" in r else ""
            error = f": {r['error']}" if r.get("error") else ""
            typer.echo(f"{r['status']:8s} {r['run']}{point_label(r['point'], r['learner'])}{extra}{error}")
        typer.echo(" ".join(f"{k}={v}" for k, v in counts.items()) + f" total={len(rows)}")
        return
    if not (_value(executor) == "dask" and scheduler):
        used = effective_jobs(jobs, len(tasks))
        if used < jobs:
            why = "the number of runs" if used == len(tasks) else "4 per CPU"
            note(f"--jobs {jobs} capped at {used} ({why})")
        jobs = used
    results = execute(tasks, root, _value(executor), jobs, scheduler, connect_timeout)
    failed = [r for r in results if r["status"] != "done"]
    typer.echo(f"sweep: {len(results) - len(failed)} of {len(results)} runs done -> {root}")
    for r in failed:
        typer.echo(f"ltr: error: run {r['run']} failed: {r['error']}", err=True)
    if failed:
        raise typer.Exit(1)
