"""``ltr sweep``: a config's grid, run point by point, or its status."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ltr_cli.cli.options import ExecutorOpt, _value
from ltr_cli.cli.run import DATA_HELP, HELDOUT_HELP
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
    data: Annotated[Optional[list[Path]], typer.Option("--data", metavar="PATH", help=DATA_HELP)] = None,
    heldout: Annotated[Optional[Path], typer.Option("--heldout", metavar="FILE", help=HELDOUT_HELP)] = None,
) -> None:
    """Expand the config's sweep grid and run every point; re-running skips finished runs
    and resumes killed or failed ones. A run that fails, or whose worker process dies, is
    recorded and the others go on; the sweep then names each failed run and exits 1."""
    from ltr_cli.sweep.session import SweepRequest, run_sweep, status_lines

    request = SweepRequest(config, set_ or [], out, _value(executor), jobs, scheduler, connect_timeout, max_grid,
                           data, heldout)
    if show_status:
        typer.echo("\n".join(status_lines(request)))
        return
    outcome = run_sweep(request, note=lambda message: None if quiet else _note(message))
    typer.echo(outcome.summary)
    for error in outcome.errors:
        typer.echo(f"ltr: error: {error}", err=True)
    if outcome.errors:
        raise typer.Exit(1)


def _note(message: str) -> None:
    typer.echo(f"ltr: note: {message}", err=True)
