"""Online runs of one data stream: each made ready under its lock (learner, checkpoint,
stream), the runs that can share a compiled block group computed in one pass, each written
to its own folder (:func:`run_online_jobs`; ``ltr run`` and ``ltr sweep`` both use it; the
writing is :mod:`ltr_cli.runs.online_record`'s)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr_cli import console
from ltr_cli.data.provenance import generated_data
from ltr_cli.names import count
from ltr_cli.protocols.checkpoint import CheckpointInvalid, Checkpointer, RunState, keep_checkpoint, resume_command
from ltr_cli.config.experiment import ExperimentSpec
from ltr_cli.data.identity import require_regular, same_content
from ltr_cli.data.sources import QuerySource, StreamStats, open_source
from ltr_cli.errors import DatasetNotFoundError, LtrError
from ltr_cli.pathnames import tried
from ltr_cli.outputs import run_path
from ltr_cli.protocols.online import (GroupMember, OnlineResult, feedback_size, log_columns, run_online,
                                     run_online_group)
from ltr_cli.protocols.online_blocks import BLOCKS, BlockRunner, block_eligible
from ltr_cli.protocols import sampling
from ltr_cli.protocols.round_measures import RoundMeasures
from ltr_cli.protocols.warmup import CompileAhead
from ltr_cli.results.folders import is_complete, read_run
from ltr_cli.runs.kernel_plan import KernelPlan
from ltr_cli.runs.online_record import PreparedRun as _Prepared, seeds as _seeds, write_run as _finish  # a test patches _finish
from ltr_cli.runs.plan import PlannedRun
from ltr_cli.runs.folder import (RunOutcome, clear_leftover_lock, owning, refuse_other_data,
                                refuse_other_implementation)
from ltr_cli.learners.online.theory import stream_constants

if TYPE_CHECKING:  # a held-out set, clicks and the regret log are imported by the runs that use them
    from ltr_cli.protocols.click_feedback import ClickFeedback
    from ltr_cli.protocols.heldout import Heldout


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


def _round_surrogate(learner: Any, loss: Any) -> Any:
    from ltr_cli.protocols.regret import round_surrogate

    return round_surrogate(learner, loss)


def _heldout(spec: ExperimentSpec, source: QuerySource, opened: dict[Any, Heldout]) -> Heldout | None:
    """The experiment's held-out set (``heldout:``), read once per file and interval
    (``opened``): with the stream's reader options (its width, index base and qid source; a
    group file beside the held-out file is found as beside a data file) and its query-level
    normalisation, if any."""
    if spec.heldout is None:
        return None
    from ltr_cli.data.options import ReaderOptions
    from ltr_cli.data.textio import find_group_file
    from ltr_cli.protocols.heldout import open_heldout

    path, every = Path(spec.heldout.file), spec.heldout.every
    key = (str(path), every, spec.metrics.model_dump_json(), spec.seed)
    if key not in opened:
        if not path.is_file():
            raise DatasetNotFoundError(f"heldout.file: {path} does not exist (tried {tried(path)})")
        require_regular(path)
        base: ReaderOptions | None = getattr(source, "reader_options", None)
        options = replace(base, group_file=None) if base is not None else ReaderOptions(n_features=source.n_features)
        if options.qid_source in ("auto", "group") and (group := find_group_file(path)) is not None:
            options = replace(options, group_file=group)
        opened[key] = open_heldout(path, options, every, spec.metrics.measures(), spec.metrics.ties, spec.seed,
                                   source.normalize)
    return opened[key]


def _load_checkpoint(checkpointer: Checkpointer, names: list[str], source: QuerySource) -> RunState | None:
    """The run's checkpoint (its log's float columns ``names``: the measures, and
    ``surrogate`` when it logs regret), validated, and only if it was taken on the data now
    on disk; one-line error otherwise (it is never silently discarded or trusted)."""
    where = checkpointer.path
    try:
        state = checkpointer.load(names)
    except CheckpointInvalid as exc:
        raise LtrError(f"{where}: damaged or foreign checkpoint ({exc}); delete it to start "
                       "this run over") from None
    if state is not None and not same_content(state.data, source.identity()):
        raise LtrError(f"{where}: the run's data changed since this checkpoint was taken "
                       f"({source.description}); delete the checkpoint to start the run over "
                       "on the new data")
    return state


def _restore(checkpointer: Checkpointer, names: list[str], source: QuerySource, learner: Any,
             max_rounds: int | None) -> RunState | None:
    """The run's checkpoint (:func:`_load_checkpoint`), if any, its learner state restored
    into ``learner``; one-line error for a checkpoint beyond the run's ``max_rounds``."""
    state = _load_checkpoint(checkpointer, names, source)
    if state is None:
        return None
    if max_rounds is not None and state.t > max_rounds:
        raise LtrError(f"{checkpointer.path}: taken after round {state.t}, beyond this run's "
                       f"{max_rounds} rounds; delete it to start this run over")
    try:
        state.learner.restore(learner)
    except CheckpointInvalid as exc:
        raise LtrError(f"{checkpointer.path}: damaged or foreign checkpoint ({exc}); delete it "
                       "to start this run over") from None
    return state


def _planned_rounds(spec: ExperimentSpec, lspec: Any, source: QuerySource) -> int | None:
    """The stream's length T: passes x queries (x keep-probability, its expected value),
    capped by max_rounds. Files are counted only when a learner needs T (RTop-kF's paper
    schedule without a horizon); otherwise None when unknown (progress bar without total)."""
    protocol = spec.protocol
    if protocol.sampling == "uniform":
        return protocol.max_rounds
    needs_t = lspec.needs_horizon()
    if source.n_queries is None and not needs_t:
        return protocol.max_rounds
    per_pass = source.queries_per_pass()
    if protocol.drop_last_query:
        per_pass -= len(source.units())
    planned = round(per_pass * protocol.passes * protocol.keep_probability)
    if protocol.max_rounds is not None:
        planned = min(planned, protocol.max_rounds)
    return max(planned, 1)


def run_online_jobs(
    jobs: list[PlannedRun], source: QuerySource, constants: Any, out_root: Path, quiet: bool,
    argv: list[str] | None, resume: bool, fresh: bool = False,
    on_done: Callable[[RunOutcome], None] | None = None, keep_going: bool = False,
    planned_path: KernelPlan | None = None,
) -> list[RunOutcome | LtrError]:
    """Online runs on one data stream, in job order: each is skipped if complete (with
    ``resume``), else computed under its lock and written. Runs that can run in compiled
    blocks and share a :meth:`_Prepared.group_key` run together, reading each query once;
    each writes exactly what it would write alone. A failing run never stops the others:
    every run that can be computed is written. Returns each job's outcome; with
    ``keep_going`` a failing run's error is its outcome, otherwise the first failing run's
    error (in job order; naming its learner when there are several) is raised once every
    other run is written. ``planned_path``: the path the runs take (recorded in their
    manifests as ``kernels``)."""
    note = RoundMeasures(jobs[0].spec.metrics.measures()).note if jobs else None
    if note and not quiet:
        console.note(f"ltr: note: {note}")
    batch = _Jobs(source, constants, out_root, quiet, argv, resume, fresh, on_done, planned_path, len(jobs))
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
            for i, prep, result in zip(members, preps, _compute(preps, quiet, argv)):
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
        self.prepared: dict[int, _Prepared] = {}
        self.heldouts: dict[Any, Heldout] = {}
        self.top_label = functools.cache(lambda: _max_label(source))  # read once, for click tables that follow it

    def settle(self, i: int, outcome: RunOutcome | LtrError) -> None:
        self.outcomes[i] = outcome
        if isinstance(outcome, RunOutcome) and self.on_done is not None:
            self.on_done(outcome)

    def open(self, i: int, job: PlannedRun, locks: ExitStack) -> None:
        """Job ``i`` skipped when complete (with ``resume``), else made ready under its
        lock (held in ``locks``); a run that cannot be made ready is settled with its error."""
        source, quiet = self.source, self.quiet
        run_dir = run_path(self.out_root, job.spec.experiment, job.run_id)
        try:
            if self.resume and is_complete(run_dir):
                refuse_other_data(run_dir, source.identity(), source.description)
                refuse_other_implementation(run_dir, job.learner_spec)
                clear_leftover_lock(run_dir)
                if not quiet:
                    console.note(f"[{job.spec.experiment}] {job.name} (seed {job.spec.seed}): complete, skipped")
                self.settle(i, RunOutcome(job.name, run_dir, read_run(run_dir).summary))
                return
            self.held[i] = locks.enter_context(ExitStack())
            self.held[i].enter_context(owning(run_dir))
            self.prepared[i] = _prepare(job, run_dir, source, quiet, self.argv, self.resume, self.fresh,
                                        _heldout(job.spec, source, self.heldouts), self.top_label)
        except LtrError as exc:
            self.settle(i, exc)
        except Exception as exc:
            self.settle(i, _plugin_failure(job, exc))

    def groups(self) -> list[list[int]]:
        """The prepared runs, in groups that run in one pass (a run alone: a group of one)."""
        groups: dict[Any, list[int]] = {}
        for i, prep in self.prepared.items():
            key = prep.group_key() if prep.plan is not None and prep.job.group is not None else ("alone", i)
            groups.setdefault(key, []).append(i)
        return list(groups.values())

    def write(self, i: int, prep: _Prepared, result: OnlineResult | LtrError) -> None:
        """A computed run written (its lock then released), or its error settled."""
        if isinstance(result, LtrError):
            self.settle(i, result)
            return
        try:
            self.settle(i, _finish(prep, result, self.source, self.constants, self.argv, self.quiet,
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


def _compile_jobs(groups: list[list[_Prepared]]) -> list[Callable[[], None]]:
    """For each compiled block family after the first that these groups use: compiling
    its kernel for this run's argument types (one round on copies, see
    :meth:`~ltr_cli.protocols.online_blocks.BlockRunner.warm_up`), to run alongside the first.
    A family whose kernel the kernel cache already holds gets none: it only loads."""
    from ltr_cli.runs.kernel_plan import uncached_families

    firsts: dict[str, _Prepared] = {}
    for preps in groups:
        if preps[0].plan is not None:
            firsts.setdefault(preps[0].learner.block_kernel()[0].name, preps[0])
    later = list(firsts)[1:]
    missing = set(uncached_families(later)) if later else set()
    return [functools.partial(_warm_up_family, firsts[family]) for family in later if family in missing]


def _warm_up_family(prep: _Prepared) -> None:
    BlockRunner([prep.learner], RoundMeasures(prep.measures), prep.plan[0], prep.plan[1],
                [prep.learner.numerics == "authors-code"]).warm_up()


def _max_label(source: QuerySource) -> int:
    from ltr_cli.protocols.click_feedback import max_label

    return max_label(q for unit in source.units() for q in source.queries(unit))


def _clicks(spec: ExperimentSpec, lspec: Any, seq: np.random.SeedSequence,
            top_label: Callable[[], int]) -> ClickFeedback | None:
    """The run's click protocol (None without ``feedback: clicks``), its generator from
    ``seq``, for a learner of config ``lspec`` (its declared ``feedback_kind``)."""
    clicks = spec.protocol.clicks
    if clicks is None:
        return None
    from ltr_cli.protocols.click_feedback import ClickFeedback, resolve_model

    return ClickFeedback(resolve_model(clicks, top_label), clicks.shown, np.random.default_rng(seq),
                         lspec.feedback_kind)


def _prepare(job: PlannedRun, run_dir: Path, source: QuerySource, quiet: bool, argv: list[str] | None,
             resume: bool, fresh: bool, heldout: Heldout | None = None,
             top_label: Callable[[], int] | None = None) -> _Prepared:
    spec, name = job.spec, job.name
    lspec: Any = spec.learners[name]
    measures = spec.metrics.measures()
    protocol = spec.protocol
    checkpointer = Checkpointer(run_dir.parent / f".{job.run_id}.checkpoint", job.run_id,
                                protocol.checkpoint_every)
    if not resume and checkpointer.path.exists():
        keep_checkpoint(checkpointer.path, f"{name} (seed {spec.seed})", argv, fresh)
    planned = _planned_rounds(spec, lspec, source)
    # independent, reproducible streams: data order/subsampling, ties, learner draws, clicks
    stream_seq, tie_seq, learner_seq, click_seq = _seeds(spec.seed)
    clicks = _clicks(spec, lspec, click_seq, top_label or functools.cache(lambda: _max_label(source)))
    learner = lspec.build(source.n_features, spec.metrics.ties, np.random.default_rng(learner_seq),
                          planned, spec.fidelity)
    loss = None
    if protocol.log_regret:
        from ltr_cli.protocols.regret import regret_loss

        loss = regret_loss(learner, protocol.log_regret)
    state = (_restore(checkpointer, log_columns(measures, loss is not None, heldout), source, learner,
                      protocol.max_rounds) if resume else None)
    stream_stats = StreamStats()
    stream_rng = np.random.default_rng(stream_seq)
    plan = None
    eligible = BLOCKS and block_eligible(learner, RoundMeasures(measures), feedback_size(learner, protocol.feedback),
                                         clicks is not None)
    if loss is not None and not quiet and eligible:
        console.note(f"ltr: note: {name}: protocol.log_regret: runs round by round (the compiled block "
                     "loop does not return the surrogate)")
    if loss is None and eligible:
        plan = sampling.plan(source, protocol, stream_rng, stream_stats)  # None (nothing drawn) without arrays
    rounds = None if plan is not None else sampling.stream(source, protocol, stream_rng, stream_stats)
    identity = source.identity()
    if not quiet:
        since = f", resuming after round {state.t}" if state is not None else ""
        shaped = generated_data({"dataset": {"fingerprint": identity}}) if "files" in identity else None
        what = f" (generated, shaped like {shaped})" if shaped is not None else ""
        console.note(f"[{spec.experiment}] {name} (seed {spec.seed}): {source.description}{what}{since}")
    return _Prepared(job, run_dir, measures, checkpointer, state, planned, learner,
                     np.random.default_rng(tie_seq), plan, rounds, stream_stats, identity, heldout, loss, clicks)


def _plugin_failure(job: PlannedRun, exc: Exception) -> LtrError:
    """A plugin learner's own exception as its run's one-line error (the other runs go on);
    anything else that escapes is a bug of this tool and is raised as it is."""
    from ltr_cli.learners.registry import SOURCES

    source = SOURCES.get(job.learner_spec.type_name(), "built-in")
    if source == "built-in":
        raise exc
    first = str(exc).splitlines()[0] if str(exc) else ""
    return LtrError(f"{job.name}: the learner ({source}) raised {type(exc).__name__}"
                    + (f": {first}" if first else "") + "; report it to the plugin's authors")


def _compute(preps: list[_Prepared], quiet: bool, argv: list[str] | None) -> list[OnlineResult | LtrError]:
    """The rounds of prepared runs: one alone (round by round or in blocks), or a group in
    blocks; a failing run's error is its result."""
    first = preps[0]
    protocol = first.job.spec.protocol
    try:
        if len(preps) == 1:
            try:
                return [run_online(first.rounds, first.learner, first.measures, first.tie_rng, protocol.max_rounds,
                                   quiet, total_hint=first.planned, feedback=protocol.feedback,
                                   checkpointer=first.checkpointer if protocol.checkpoint_every else None,
                                   resume=first.state, name=first.job.name, data_identity=first.identity,
                                   plan=first.plan, heldout=first.heldout,
                                   surrogate=_round_surrogate(first.learner, first.loss) if first.loss else None,
                                   clicks=first.clicks)]
            except LtrError as exc:
                return [exc]
            except Exception as exc:
                return [_plugin_failure(first.job, exc)]
        members = [GroupMember(p.learner, p.tie_rng, p.checkpointer if protocol.checkpoint_every else None,
                               p.state, p.job.name, p.identity) for p in preps]
        return run_online_group(first.plan, members, first.measures, protocol.max_rounds, quiet,
                                max((p.planned or 0) for p in preps) or None, first.heldout)
    except KeyboardInterrupt:
        for p in preps:
            saved = (f"its last checkpoint is kept in {p.checkpointer.path}; continue with: {resume_command(argv)}"
                     if p.checkpointer.path.exists() else "it had no checkpoint yet and will start over")
            console.error_line(f"interrupted: {p.job.name} (seed {p.job.spec.seed}): {saved}")
        raise
