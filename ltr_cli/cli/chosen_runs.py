"""Which finished runs ``ltr plot``, ``ltr report`` and ``ltr compare`` show (``--latest``, ``--config``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from ltr_cli.errors import LtrError

LATEST_HELP = "keep only each learner's newest configuration (runs of older settings are left out)"
CONFIG_HELP = "keep only the runs this config (every point of its sweep) writes"


def chosen_runs(results: list[Path], latest: bool, config: Path | None, say: bool = True) -> list[Any]:
    """The finished runs under ``results`` that plot and report show, after ``--latest`` /
    ``--config``; a note on stderr when several configurations of a learner remain."""
    from ltr_cli.results.folders import find_runs, read_run
    from ltr_cli.reports.run_filter import mixed_configurations, newest_configurations, runs_named_by

    where = ", ".join(map(str, results))
    dirs = find_runs(results)
    if not dirs:
        raise LtrError(f"no finished runs under {where} (run 'ltr run CONFIG' first)")
    runs = [read_run(d) for d in dirs]
    if config is not None:
        runs = runs_named_by(runs, config)
        if not runs:
            raise LtrError(f"no run under {where} was written by {config} (run 'ltr run {config}' first)")
    if latest:
        runs = newest_configurations(runs)
    if say:
        for note in mixed_configurations(runs):
            typer.echo(f"ltr: note: {note}", err=True)
    return runs
