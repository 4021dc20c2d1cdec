"""``ltr run``: config -> data -> learner -> protocol -> results, per learner: online runs
through :mod:`ltr_cli.runs.online`, batch learners through the k-fold protocol."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ltr_cli import console
from ltr_cli.config.experiment import ExperimentSpec
from ltr_cli.errors import LtrError
from ltr_cli.names import count
from ltr_cli.runs.online import open_stream, run_online_jobs
from ltr_cli.runs.kernel_plan import plan_kernels
from ltr_cli.runs.plan import PlannedRun, plan_experiment, run_id as run_name
from ltr_cli.results.folders import is_complete
from ltr_cli.runs.folder import RunOutcome, finished_run, owning, record_run, run_path

__all__ = ["RunOutcome", "run_experiment", "run_name", "run_planned"]


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
    if not runs or runs[0].spec.cv is None:
        return _run_online_stream(runs, out_root, quiet, argv, resume, fresh, done, keep_going, kernels_mode)
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


def _run_online_stream(
    runs: list[PlannedRun], out_root: Path, quiet: bool, argv: list[str] | None, resume: bool, fresh: bool,
    done: Callable[[RunOutcome], None], keep_going: bool, kernels_mode: str | None,
) -> list[RunOutcome | LtrError]:
    """The online runs of one stream: the stream opened once, the compiled or reference path
    planned (with ``kernels_mode``), the runs computed and written."""
    first = runs[0].spec
    reads = first.protocol.passes * len(runs)
    source, constants = open_stream(runs[0], out_root, reads)
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
    """One batch learner through the k-fold protocol (its plan: :meth:`PlannedRun.cv_plan`);
    one run directory with a row per fold."""
    from ltr_cli.protocols.cv_run import compute_cv, open_cv

    check_installed(run)
    plan = run.cv_plan(out_root)
    opened = open_cv(plan)
    run_dir = run_path(out_root, run.experiment, run.run_id)
    if resume and is_complete(run_dir):
        return finished_run(run, run_dir, opened.identity, f"the {opened.plan.folds.dataset.name} files")

    def log(line: str) -> None:
        console.note(f"[{run.experiment}] {run.learner} {line}")

    with owning(run_dir):
        done = compute_cv(opened, run_dir, resume, fresh, quiet, argv, log)
        outcome = record_run(run, run_dir, done.table, done.summary, done.manifest,
                             {"wall_seconds": done.summary["wall_seconds"]}, done.models, argv, done.tables)
        done.checkpoint.remove()
        return outcome
