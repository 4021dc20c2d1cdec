"""``ltr run``: config -> data -> learner -> protocol -> results, per learner: online runs
through :mod:`ltr_cli.online_runs`, batch learners through the k-fold protocol."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ltr_cli.config import ExperimentSpec, RegistryData
from ltr_cli.conventions import CONVENTIONS, Measure, bind
from ltr_cli.online_runs import OnlineJob, open_stream, run_online_jobs
from ltr_cli.outputs import run_path
from ltr_cli.results import is_complete, read_run
from ltr_cli.run_folder import (RunOutcome, cache_dir, keep_checkpoint, owning, record_run, refuse_other_data,
                                resume_command, run_name)

__all__ = ["RunOutcome", "cache_dir", "run_experiment", "run_name"]


def run_experiment(
    spec: ExperimentSpec,
    out: Path | None = None,
    quiet: bool = False,
    learners: list[str] | None = None,
    argv: list[str] | None = None,
    resume: bool = False,
    fresh: bool = False,
    on_done: Callable[[RunOutcome], None] | None = None,
) -> list[RunOutcome]:
    """Run every learner of ``spec`` (or the named ones), once per seed; one run dir each.

    ``resume``: skip runs whose directory is complete and continue killed runs from their
    checkpoint (runs without one start from the beginning). Without it, a checkpoint an
    interrupted run left is never discarded silently: the run stops with a one-line error
    that says how to continue it, unless ``fresh`` (start over). ``on_done`` receives each
    run as soon as it is written (so an interruption keeps the lines of finished runs)."""
    out_root = Path(out) if out is not None else spec.output
    done = on_done or (lambda outcome: None)
    if spec.cv is not None:
        batch = []
        for name, lspec in spec.learners.items():
            if not learners or name in learners:
                batch.append(_run_batch_learner(spec, name, lspec, out_root, quiet, argv, resume, fresh))
                done(batch[-1])
        return batch
    repeated = spec.seeds is not None
    outcomes: list[RunOutcome] = []
    for seed in spec.seed_list():
        one = spec.for_seed(seed)
        names = [n for n in one.learners if not learners or n in learners]
        source, constants = open_stream(one, out_root, one.protocol.passes * len(names))
        jobs = [OnlineJob(one, n, run_name(one, n, repeated)) for n in names]
        for outcome in run_online_jobs(jobs, source, constants, out_root, quiet, argv, resume, fresh, done):
            assert isinstance(outcome, RunOutcome)  # a failing run's error was raised (keep_going is off)
            outcomes.append(outcome)
    return outcomes


def _run_batch_learner(
    spec: ExperimentSpec, name: str, lspec: Any, out_root: Path, quiet: bool,
    argv: list[str] | None, resume: bool, fresh: bool = False,
) -> RunOutcome:
    """One batch learner through the k-fold protocol; one run directory with a row per fold."""
    from ltr_cli.cv_checkpoint import FoldCheckpoint
    from ltr_cli.cv_folds import folds_identity, open_folds
    from ltr_cli.protocols.batch import TEST_METRICS, run_cv
    from ltr_cli.protocols.cv_progress import CVHooks

    cv, dataset = spec.cv, spec.dataset
    assert cv is not None and cv.convention is not None and isinstance(dataset, RegistryData)
    run_id = run_name(spec, name)
    run_dir = run_path(out_root, spec.experiment, run_id)
    folds = open_folds(spec, cache_dir(spec, out_root))
    identity = folds_identity(folds)
    if resume and is_complete(run_dir):
        refuse_other_data(run_dir, identity, f"the {dataset.name} files")
        return RunOutcome(name, run_dir, read_run(run_dir).summary)

    def log(line: str) -> None:
        print(f"[{spec.experiment}] {name} {line}", file=sys.stderr)

    with owning(run_dir):
        m, conv = spec.metrics, CONVENTIONS[cv.convention]
        measure = Measure(cv.select_by, eru_d=m.eru_d, eru_alpha=m.eru_alpha, conv=conv)
        tests = bind(cv.metrics or list(TEST_METRICS), conv, eru_d=m.eru_d, eru_alpha=m.eru_alpha)
        checkpoint = FoldCheckpoint(run_dir, identity)
        if resume:
            checkpoint.load()
        elif checkpoint.exists():
            keep_checkpoint(checkpoint.path, f"{name} (its finished folds)", argv, fresh)
        hooks = CVHooks(len(folds) * len(lspec.grid_points()), None if quiet else log, bar=not quiet)
        try:
            table, summary, models = run_cv(folds, lspec, cv.select_by, conv, hooks, tests, checkpoint,
                                            dataset.normalize, measure)
        except KeyboardInterrupt:
            hooks.close()
            saved = sorted(checkpoint.folds)
            print(f"ltr: interrupted: {name}: " + (
                f"fold(s) {', '.join(saved)} saved in {checkpoint.path}; continue with: "
                f"{resume_command(argv)}" if saved else "no fold had finished, nothing saved"), file=sys.stderr)
            raise
        outcome = record_run(spec, name, lspec, run_id, run_dir, table, {"dataset": dataset.name, **summary}, {
            "dataset": {"name": dataset.name, "root": str(dataset.root), "fingerprint": identity,
                        "normalize": dataset.normalize},
            "conventions": {**CONVENTIONS[cv.convention].describe(), "evaluation": cv.convention,
                            "selection": f"vali {cv.select_by}",
                            "ties": "stable: descending score, then document order"},
            "learner_conventions": {**lspec.describe(), **lspec.model_dump(mode="json")},
        }, {"wall_seconds": summary["wall_seconds"]}, models, argv)
        checkpoint.remove()
        return outcome
