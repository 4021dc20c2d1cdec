"""Online runs of one data stream: each made ready under its lock (learner, checkpoint,
stream), the runs that can share a compiled block group computed in one pass, each written
to its own folder (:func:`run_online_jobs`; ``ltr run`` and ``ltr sweep`` both use it; the
writing is :mod:`ltr_cli.runs.online_record`'s)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ltr_cli import console
from ltr_cli.data.sources import QuerySource, open_source
from ltr_cli.errors import LtrError
from ltr_cli.names import count
from ltr_cli.protocols.online import OnlineResult
from ltr_cli.protocols.online_blocks import BLOCKS, BlockRunner
from ltr_cli.protocols.online_run import PreparedRun, SharedStream, compute, plugin_failure, prepare
from ltr_cli.protocols.round_measures import RoundMeasures
from ltr_cli.protocols.warmup import CompileAhead
from ltr_cli.results.folders import is_complete
from ltr_cli.runs.kernel_plan import KernelPlan
from ltr_cli.runs.online_record import write_run as _finish  # a test patches _finish
from ltr_cli.runs.plan import PlannedRun
from ltr_cli.runs.folder import RunOutcome, finished_run, owning, run_path
from ltr_cli.learners.online.theory import stream_constants

if TYPE_CHECKING:
    pass


def open_stream(run: PlannedRun, out_root: Path, reads: int) -> tuple[QuerySource, Any]:
    """The data stream of a planned online run, and for a separable stream the theory's
    constants (None otherwise). ``reads``: how often this process will read the stream
    (large generated streams are kept as arrays only when that pays for building them)."""
    source = open_source(run.spec.dataset, run.seed, run.cache_dir(out_root))
    source.reads = reads
    constants = None
    if source.ranker is not None:  # separable stream: the theory's constants
        generated = list(source.queries(0))  # generated once, read by every learner's bound
        constants = (stream_constants(generated, source.ranker), generated)
    return source, constants


def run_online_jobs(
    jobs: list[PlannedRun], source: QuerySource, constants: Any, out_root: Path, quiet: bool,
    argv: list[str] | None, resume: bool, fresh: bool = False,
    on_done: Callable[[RunOutcome], None] | None = None, keep_going: bool = False,
    planned_path: KernelPlan | None = None,
) -> list[RunOutcome | LtrError]:
    """Online runs on one data stream, in job order: each is skipped if complete (with
    ``resume``), else computed under its lock and written. Runs that can run in compiled
    blocks and share a :meth:`~ltr_cli.protocols.online_run.PreparedRun.group_key` run together, reading each query once;
    each writes exactly what it would write alone. A failing run never stops the others:
    every run that can be computed is written. Returns each job's outcome; with
    ``keep_going`` a failing run's error is its outcome, otherwise the first failing run's
    error (in job order; naming its learner when there are several) is raised once every
    other run is written. ``planned_path``: the path the runs take (recorded in their
    manifests as ``kernels``)."""
    batch = _Jobs(source, constants, out_root, quiet, argv, resume, fresh, on_done, planned_path, len(jobs))
    note = RoundMeasures(jobs[0].spec.metrics.measures()).note if jobs else None
    if note and not quiet:
        console.note(f"ltr: note: {note}")
    with ExitStack() as locks:
        for i, job in enumerate(jobs):  # skipped if complete, else made ready under its lock
            batch.open(i, job, locks)
        if planned_path is not None and batch.prepared and not quiet:  # said once the runs can start
            console.note(f"ltr: {planned_path.path} path for {count(len(batch.prepared), 'run')}: {planned_path.why}")
        groups = batch.groups()
        ahead = CompileAhead(_compile_jobs([[batch.prepared[i] for i in g] for g in groups]))
        for n, members in enumerate(groups):
            if n == 1:
                ahead.wait(quiet)  # the other families' kernels, compiled meanwhile
            preps = [batch.prepared[i] for i in members]
            for i, prep, result in zip(members, preps, compute(preps, quiet, argv)):
                batch.write(i, prep, result)
    _raise_first_failure(jobs, batch.outcomes, keep_going)
    return [o for o in batch.outcomes if o is not None]


class _Jobs:
    """The online runs of one stream on their way: each one's outcome (once settled), the
    lock of each run not yet written, and the runs made ready."""

    def __init__(self, source: QuerySource, constants: Any, out_root: Path, quiet: bool, argv: list[str] | None,
                 resume: bool, fresh: bool, on_done: Callable[[RunOutcome], None] | None,
                 planned_path: KernelPlan | None, n: int):
        self.source, self.constants, self.out_root, self.quiet, self.argv = source, constants, out_root, quiet, argv
        self.resume, self.fresh, self.on_done, self.planned_path = resume, fresh, on_done, planned_path
        self.outcomes: list[RunOutcome | LtrError | None] = [None] * n
        self.held: dict[int, ExitStack] = {}  # each run's lock, released once the run is written
        self.prepared: dict[int, PreparedRun] = {}
        self.jobs: dict[int, PlannedRun] = {}
        self.shared = SharedStream(source)  # held-out sets and the largest label, read once

    def settle(self, i: int, outcome: RunOutcome | LtrError) -> None:
        self.outcomes[i] = outcome
        if isinstance(outcome, RunOutcome) and self.on_done is not None:
            self.on_done(outcome)

    def open(self, i: int, job: PlannedRun, locks: ExitStack) -> None:
        """Job ``i`` skipped when complete (with ``resume``), else made ready under its
        lock (held in ``locks``); a run that cannot be made ready is settled with its error."""
        source, quiet = self.source, self.quiet
        self.jobs[i] = job
        run_dir = run_path(self.out_root, job.experiment, job.run_id)
        try:
            if self.resume and is_complete(run_dir):
                outcome = finished_run(job, run_dir, source.identity(), source.description)
                if not quiet:
                    console.note(f"[{job.experiment}] {job.name} (seed {job.seed}): complete, skipped")
                self.settle(i, outcome)
                return
            self.held[i] = locks.enter_context(ExitStack())
            self.held[i].enter_context(owning(run_dir))
            self.prepared[i] = prepare(job.online, run_dir, self.shared, quiet, self.argv, self.resume, self.fresh,
                                       BLOCKS)
        except LtrError as exc:
            self.settle(i, exc)
        except Exception as exc:
            self.settle(i, plugin_failure(job.name, job.learner_spec, exc))

    def groups(self) -> list[list[int]]:
        """The prepared runs, in groups that run in one pass (a run alone: a group of one)."""
        groups: dict[Any, list[int]] = {}
        for i, prep in self.prepared.items():
            key = prep.group_key() if prep.plan is not None and prep.job.group is not None else ("alone", i)
            groups.setdefault(key, []).append(i)
        return list(groups.values())

    def write(self, i: int, prep: PreparedRun, result: OnlineResult | LtrError) -> None:
        """A computed run written (its lock then released), or its error settled."""
        if isinstance(result, LtrError):
            self.settle(i, result)
            return
        try:
            self.settle(i, _finish(self.jobs[i], prep, result, self.source, self.constants, self.argv, self.quiet,
                                   self.planned_path))
        except LtrError as exc:
            self.settle(i, exc)
        else:
            self.held.pop(i).close()  # written: a kill from here on leaves no lock beside it


def _raise_first_failure(jobs: list[PlannedRun], outcomes: list[RunOutcome | LtrError | None],
                         keep_going: bool) -> None:
    """Unless ``keep_going``: the first failing run's error (naming its learner and the
    others that failed, when there are several jobs)."""
    failed = [(job, o) for job, o in zip(jobs, outcomes) if isinstance(o, LtrError)]
    if not failed or keep_going:
        return
    job, error = failed[0]
    others = ", ".join(j.name for j, _ in failed[1:])
    more = f" ({count(len(failed) - 1, 'more learner')} failed: {others})" if len(failed) > 1 else ""
    if len(jobs) == 1:
        raise error
    raise LtrError(f"{job.name} (seed {job.spec.seed}): {error}{more}")


def _compile_jobs(groups: list[list[PreparedRun]]) -> list[Callable[[], None]]:
    """For each compiled block family after the first that these groups use: compiling
    its kernel for this run's argument types (one round on copies, see
    :meth:`~ltr_cli.protocols.online_blocks.BlockRunner.warm_up`), to run alongside the first.
    A family whose kernel the kernel cache already holds gets none: it only loads."""
    from ltr_cli.runs.kernel_plan import uncached_families

    firsts: dict[str, PreparedRun] = {}
    for preps in groups:
        if preps[0].plan is not None:
            firsts.setdefault(preps[0].learner.block_kernel()[0].name, preps[0])
    later = list(firsts)[1:]
    missing = set(uncached_families(later)) if later else set()
    return [functools.partial(_warm_up_family, firsts[family]) for family in later if family in missing]


def _warm_up_family(prep: PreparedRun) -> None:
    BlockRunner([prep.learner], RoundMeasures(prep.measures), prep.plan[0], prep.plan[1],
                [prep.learner.numerics == "authors-code"]).warm_up()
