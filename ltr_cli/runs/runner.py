"""``ltr run``: config -> data -> learner -> protocol -> results, per learner: online runs
through :mod:`ltr_cli.runs.online`, batch learners through the k-fold protocol."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ltr_cli import console
from ltr_cli.config.experiment import ExperimentSpec, RegistryData
from ltr_cli.errors import LtrError
from ltr_cli.names import count
from ltr_cli.measures.conventions import CONVENTIONS, Measure, bind
from ltr_cli.runs.online import open_stream, run_online_jobs
from ltr_cli.runs.kernel_plan import plan_kernels
from ltr_cli.runs.plan import PlannedRun, plan_experiment
from ltr_cli.outputs import run_path
from ltr_cli.results.folders import TEST_QUERIES, is_complete, read_run
from ltr_cli.runs.folder import (RunOutcome, cache_dir, clear_leftover_lock, keep_checkpoint, owning, record_run,
                                refuse_other_data, refuse_other_implementation,
                                resume_command, run_name)

__all__ = ["RunOutcome", "cache_dir", "run_experiment", "run_name", "run_planned"]


def run_experiment(
    spec: ExperimentSpec,
    out: Path | None = None,
    quiet: bool = False,
    learners: list[str] | None = None,
    argv: list[str] | None = None,
    resume: bool = False,
    fresh: bool = False,
    on_done: Callable[[RunOutcome], None] | None = None,
    kernels_mode: str = "auto",
) -> list[RunOutcome]:
    """Run every learner of ``spec`` (or the named ones), once per seed; one run dir each.

    ``resume``: skip runs whose directory is complete and continue killed runs from their
    checkpoint (runs without one start from the beginning). Without it, a checkpoint an
    interrupted run left is never discarded silently: the run stops with a one-line error
    that says how to continue it, unless ``fresh`` (start over). ``on_done`` receives each
    run as soon as it is written (so an interruption keeps the lines of finished runs).
    ``kernels_mode``: how each stream's online runs choose their path
    (:func:`~ltr_cli.runs.kernel_plan.plan_kernels`: ``auto``, ``compiled``, ``reference``)."""
    from ltr_cli import kernels

    out_root = Path(out) if out is not None else spec.output
    outcomes: list[RunOutcome] = []
    plans = plan_experiment(spec, learners)
    for run in (run for runs in plans for run in runs):  # before anything is computed
        check_installed(run)
    if not resume and not quiet:
        replaced = [run.run_id for runs in plans for run in runs
                    if is_complete(run_path(out_root, run.spec.experiment, run.run_id))]
        if replaced:
            console.note(f"ltr: note: replacing {len(replaced)} finished run{'s' * (len(replaced) != 1)} in "
                         f"{out_root / spec.experiment}: {', '.join(replaced)} (--resume keeps finished runs)")
    enabled = kernels.ENABLED
    failed: list[tuple[PlannedRun, LtrError]] = []
    try:
        for runs in plans:  # a failing run stops no other run, of its stream or of another seed's
            results = run_planned(runs, out_root, quiet, argv, resume, fresh, on_done, keep_going=True,
                                  kernels_mode=kernels_mode)
            for run, outcome in zip(runs, results):
                if isinstance(outcome, LtrError):
                    failed.append((run, outcome))
                else:
                    outcomes.append(outcome)
    finally:
        kernels.set_enabled(enabled)  # as the process had it (the plans switch it per stream)
    if failed:
        raise _failures(failed, sum(len(runs) for runs in plans))
    return outcomes


def _failures(failed: list[tuple[PlannedRun, LtrError]], planned: int) -> LtrError:
    """The first failed run's error, naming its learner and seed (when there were several
    runs) and the other runs that failed; raised once every other run is written."""
    run, error = failed[0]
    if planned == 1:
        return error
    others = ", ".join(f"{r.name} (seed {r.spec.seed})" for r, _ in failed[1:])
    more = f" ({count(len(failed) - 1, 'more run')} failed: {others})" if len(failed) > 1 else ""
    return LtrError(f"{run.name} (seed {run.spec.seed}): {error}{more}")


def run_planned(
    runs: list[PlannedRun], out_root: Path, quiet: bool = False, argv: list[str] | None = None,
    resume: bool = False, fresh: bool = False, on_done: Callable[[RunOutcome], None] | None = None,
    keep_going: bool = False, kernels_mode: str | None = None,
) -> list[RunOutcome | LtrError]:
    """Planned runs that read one stream (:func:`~ltr_cli.runs.plan.plan_experiment`'s lists,
    or a sweep's unit): batch runs one by one through the k-fold protocol, online runs
    through :func:`~ltr_cli.runs.online.run_online_jobs` (those that share a block group in
    one pass). With ``keep_going``, a failing run's error is its outcome; otherwise it is
    raised once the other runs are written. With ``kernels_mode``, the online runs' path is
    planned first (:func:`~ltr_cli.runs.kernel_plan.plan_kernels`); without, they take the
    compiled path where they can (``LTR_KERNELS`` aside)."""
    done = on_done or (lambda outcome: None)
    if runs and runs[0].spec.cv is not None:
        outcomes: list[RunOutcome | LtrError] = []
        for run in runs:
            try:
                outcomes.append(_run_batch_learner(run, out_root, quiet, argv, resume, fresh))
            except LtrError as exc:
                if not keep_going:
                    raise
                outcomes.append(exc)
                continue
            done(outcomes[-1])  # type: ignore[arg-type]
        return outcomes
    first = runs[0].spec
    reads = first.protocol.passes * len(runs)
    source, constants = open_stream(first, out_root, reads)
    planned_path = None
    if kernels_mode is not None:
        planned_path = plan_kernels(runs, source, kernels_mode)
        wanted = planned_path.worth_building()
        if wanted:  # the next run of this size finds them cached
            from ltr_cli.runs import kernel_background

            storage = getattr(first.dataset, "storage", None)
            planned_path.building(kernel_background.start(wanted, [storage] if storage else []))
        planned_path.apply()
    return run_online_jobs(runs, source, constants, out_root, quiet, argv, resume, fresh, done, keep_going,
                           planned_path)


def check_installed(run: PlannedRun) -> None:
    """One-line error when the run's learner needs a package that is not installed."""
    need = run.learner_spec.missing()
    if need:
        raise LtrError(f"learner {run.learner!r} (type {run.learner_spec.type_name()}): {need}; or leave it "
                       "out: ltr run CONFIG --learner NAME runs only the learners named")


def _run_batch_learner(
    run: PlannedRun, out_root: Path, quiet: bool, argv: list[str] | None, resume: bool, fresh: bool = False,
) -> RunOutcome:
    """One batch learner through the k-fold protocol; one run directory with a row per fold."""
    from ltr_cli.protocols.batch import TEST_METRICS, run_cv
    from ltr_cli.protocols.cv_folds import folds_identity, open_folds
    from ltr_cli.protocols.cv_progress import CVHooks

    spec, name, lspec, run_id = run.spec, run.learner, run.learner_spec, run.run_id
    check_installed(run)
    cv, dataset = spec.cv, spec.dataset
    assert cv is not None and cv.convention is not None and isinstance(dataset, RegistryData)
    run_dir = run_path(out_root, spec.experiment, run_id)
    folds = open_folds(spec, cache_dir(spec, out_root))
    identity = folds_identity(folds)
    if resume and is_complete(run_dir):
        refuse_other_data(run_dir, identity, f"the {dataset.name} files")
        refuse_other_implementation(run_dir, lspec)
        clear_leftover_lock(run_dir)
        return RunOutcome(name, run_dir, read_run(run_dir).summary)

    def log(line: str) -> None:
        console.note(f"[{spec.experiment}] {name} {line}")

    with owning(run_dir):
        m, conv = spec.metrics, CONVENTIONS[cv.convention]
        measure = Measure(cv.select_by, eru_d=m.eru_d, eru_alpha=m.eru_alpha, conv=conv)
        tests = bind(cv.metrics or list(TEST_METRICS), conv, eru_d=m.eru_d, eru_alpha=m.eru_alpha)
        checkpoint = fold_checkpoint(spec, lspec, run_dir, identity, [f.number for f in folds])
        if resume:
            checkpoint.load()
        elif checkpoint.exists():
            keep_checkpoint(checkpoint.path, f"{name} (its finished folds)", argv, fresh)
        hooks = CVHooks(len(folds) * len(lspec.grid_points()), None if quiet else log, bar=not quiet, learner=name)
        try:
            table, summary, models, queries = run_cv(folds, lspec, cv.select_by, conv, hooks, tests, checkpoint,
                                                     dataset.normalize, measure)
        except KeyboardInterrupt:
            hooks.close()
            saved = sorted(checkpoint.folds)
            console.error_line(f"interrupted: {name}: " + (
                f"{'fold' if len(saved) == 1 else 'folds'} {', '.join(saved)} saved in {checkpoint.path}; continue with: "
                f"{resume_command(argv)}" if saved else "no fold had finished, nothing saved"))
            raise
        outcome = record_run(spec, name, lspec, run_id, run_dir, table, {"dataset": dataset.name, **summary}, {
            "dataset": {"name": dataset.name, "root": str(dataset.root), "fingerprint": identity,
                        "normalize": dataset.normalize},
            "conventions": {**CONVENTIONS[cv.convention].describe(), "evaluation": cv.convention,
                            "selection": f"vali {cv.select_by}",
                            "ties": "stable: descending score, then document order"},
            "learner_conventions": {**lspec.describe(), **lspec.model_dump(mode="json")},
        }, {"wall_seconds": summary["wall_seconds"]}, models, argv, {TEST_QUERIES: queries})
        checkpoint.remove()
        return outcome


def fold_checkpoint(spec: ExperimentSpec, lspec: Any, run_dir: Path, identity: dict[str, Any],
                    fold_numbers: list[int | None]) -> Any:
    """The fold checkpoint of one batch run: it names the run, the digest of the learner's
    resolved config (with selection, convention and normalisation) and the data."""
    from ltr_cli.protocols.cv_checkpoint import FoldCheckpoint, learner_digest
    from ltr_cli.protocols.batch import row_columns

    cv, dataset = spec.cv, spec.dataset
    assert cv is not None and isinstance(dataset, RegistryData)
    tests = list(cv.metrics) if cv.metrics else None
    learner = lspec.model_dump(mode="json")
    if "clicks" in learner and learner["clicks"] is None:  # a run on labels keeps the digest it had before clicks
        del learner["clicks"]
    if lspec.implementation != 1:  # a checkpoint of an earlier algorithm is not this one's
        learner["implementation"] = lspec.implementation
    digest = learner_digest(learner, select_by=cv.select_by, convention=cv.convention,
                            normalize=dataset.normalize, tests=tests)
    return FoldCheckpoint(run_dir, identity, digest, row_columns(cv.select_by, tests),
                          tuple(str(n) for n in fold_numbers))
