"""Which runs of a results folder ``ltr plot`` and ``ltr report`` show.

A results folder collects every run ever written into it: a re-run with one ``--set``
changed, or a sweep, leaves several *configurations* of one learner side by side (runs of
one learner whose settings differ, told apart by their ``config_id``). They are all shown,
each named by the settings that differ (:mod:`ltr_cli.reports.run_labels`), and
:func:`mixed_configurations` says so. Two filters narrow them down:

* :func:`newest_configurations` (``--latest``): per experiment and learner, only the runs of
  the configuration written last;
* :func:`runs_named_by` (``--config FILE``): only the runs that a config, or every point of
  its sweep, would write (their run ids, which include the seed).
"""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

from ltr_cli.results.folders import Run


def _key(run: Run) -> tuple[str, str]:
    return run.experiment, str(run.summary.get("learner", run.path.name))


def _config(run: Run) -> str:
    return str(run.summary.get("config_id", run.path.name))


def finished_at(run: Run) -> float:
    """When the run was written (POSIX seconds): the manifest's ``finished_at``, else the
    time ``manifest.json`` was last modified (runs written before the field existed)."""
    stamp = run.manifest.get("finished_at")
    if isinstance(stamp, str):
        try:
            return _dt.datetime.fromisoformat(stamp).timestamp()
        except ValueError:
            pass
    try:
        return (run.path / "manifest.json").stat().st_mtime
    except OSError:
        return 0.0


def configurations(runs: list[Run]) -> dict[tuple[str, str], list[str]]:
    """Per (experiment, learner): its configuration ids, newest last."""
    newest: dict[tuple[str, str], dict[str, float]] = {}
    for run in runs:
        seen = newest.setdefault(_key(run), {})
        seen[_config(run)] = max(seen.get(_config(run), 0.0), finished_at(run))
    return {k: sorted(v, key=lambda c: (v[c], c)) for k, v in newest.items()}


def mixed_configurations(runs: list[Run]) -> list[str]:
    """One sentence per experiment in which some learner has runs of several
    configurations ([] when none)."""
    several: dict[str, list[str]] = {}
    for (experiment, learner), ids in sorted(configurations(runs).items()):
        if len(ids) > 1:
            several.setdefault(experiment, []).append(f"{len(ids)} of {learner}")
    return [f"{experiment}: several configurations are shown ({', '.join(counts)}), each named by the "
            "settings that differ; --latest keeps only each learner's newest, --config FILE only the "
            "runs that config (or its sweep) writes" for experiment, counts in several.items()]


def newest_configurations(runs: list[Run]) -> list[Run]:
    """Per (experiment, learner), only the runs of the configuration written last."""
    keep = {k: ids[-1] for k, ids in configurations(runs).items()}
    return [r for r in runs if keep[_key(r)] == _config(r)]


def runs_named_by(runs: list[Run], config: Path) -> list[Run]:
    """Only the runs whose folder is a run id that ``config`` (every sweep point, learner
    and seed) writes."""
    from ltr_cli.sweep.grid import plan

    names = {task.run_id for task in plan(config).tasks()}
    return [r for r in runs if r.path.name in names]
