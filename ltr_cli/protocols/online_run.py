"""One online run from its plan: made ready under its lock (the learner built, its
checkpoint restored, its clicks, held-out set, regret log and stream), then computed alone
or in a group that shares a compiled block pass (:func:`compute`).

The plan (:class:`OnlinePlan`) is what the run plan (:mod:`ltr_cli.runs.plan`) resolves from
a single-seed experiment spec for one learner: the protocol reads nothing else of the spec.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr_cli import console
from ltr_cli.data.identity import require_regular, same_content
from ltr_cli.data.provenance import generated_data
from ltr_cli.data.sources import QuerySource, StreamStats
from ltr_cli.errors import DatasetNotFoundError, LtrError
from ltr_cli.pathnames import tried
from ltr_cli.protocols import sampling
from ltr_cli.protocols.checkpoint import CheckpointInvalid, Checkpointer, RunState, keep_checkpoint, resume_command
from ltr_cli.protocols.online import GroupMember, OnlineResult, feedback_size, log_columns, run_online, run_online_group
from ltr_cli.protocols.online_blocks import BLOCKS, block_eligible
from ltr_cli.protocols.round_measures import RoundMeasures

if TYPE_CHECKING:  # a held-out set, clicks and the regret log are imported by the runs that use them
    from ltr_cli.protocols.click_feedback import ClickFeedback
    from ltr_cli.protocols.heldout import Heldout


@dataclass(frozen=True)
class OnlinePlan:
    """One online run: its experiment, learner name and run id, the seed of its single-seed
    spec, the learner's config, the ``metrics:``, ``protocol:`` and ``heldout:`` blocks, the
    fidelity, and the group key of the runs it may share a block pass with (None: alone)."""

    experiment: str
    name: str
    run_id: str
    seed: int
    learner: Any
    metrics: Any
    protocol: Any
    heldout: Any
    fidelity: str
    group: str | None = None


def seeds(seed: int) -> list[np.random.SeedSequence]:
    """The run's four independent streams of draws: data order and subsampling, ties, the
    learner's own, clicks. (``spawn(4)``'s first three are ``spawn(3)``'s: the streams of
    runs without clicks are those they always were.)"""
    return np.random.SeedSequence(seed).spawn(4)


@dataclass
class PreparedRun:
    """An online run made ready under its lock: its learner (restored from its checkpoint,
    if it resumes), generators and stream (a plan for the block path, else rounds)."""

    job: OnlinePlan
    run_dir: Path
    measures: list[Any]
    checkpointer: Checkpointer
    state: RunState | None
    planned: int | None
    learner: Any
    tie_rng: np.random.Generator
    plan: Any
    rounds: Any
    stream_stats: StreamStats
    identity: dict[str, Any]  # the data's, recorded in checkpoints
    heldout: Heldout | None = None
    loss: Any = None  # protocol.log_regret: the learner's LossSpec (None: no regret logged)
    clicks: ClickFeedback | None = None  # protocol.feedback: clicks

    @property
    def start(self) -> int:
        return self.state.t if self.state is not None else 0

    def group_key(self) -> Any:
        """Runs with equal keys share one block call (one read of each query): the plan's
        group (:attr:`~ltr_cli.runs.plan.PlannedRun.group`: same stream, protocol and
        measures, same block family), from the same round."""
        return self.job.group, self.start, id(self.heldout)


class SharedStream:
    """What the online runs of one stream share: the stream, its held-out sets (read once
    per file and interval) and its largest label (read once, when a click table follows it)."""

    def __init__(self, source: QuerySource):
        self.source = source
        self.heldouts: dict[Any, Heldout] = {}
        self.top_label = functools.cache(lambda: max_label(source))


def _heldout(plan: OnlinePlan, source: QuerySource, opened: dict[Any, Heldout]) -> Heldout | None:
    """The experiment's held-out set (``heldout:``), read once per file and interval
    (``opened``): with the stream's reader options (its width, index base and qid source; a
    group file beside the held-out file is found as beside a data file) and its query-level
    normalisation, if any."""
    if plan.heldout is None:
        return None
    from ltr_cli.data.options import ReaderOptions
    from ltr_cli.data.textio import find_group_file
    from ltr_cli.protocols.heldout import open_heldout

    path, every = Path(plan.heldout.file), plan.heldout.every
    key = (str(path), every, plan.metrics.model_dump_json(), plan.seed)
    if key not in opened:
        if not path.is_file():
            raise DatasetNotFoundError(f"heldout.file: {path} does not exist (tried {tried(path)})")
        require_regular(path)
        base: ReaderOptions | None = getattr(source, "reader_options", None)
        options = replace(base, group_file=None) if base is not None else ReaderOptions(n_features=source.n_features)
        if options.qid_source in ("auto", "group") and (group := find_group_file(path)) is not None:
            options = replace(options, group_file=group)
        opened[key] = open_heldout(path, options, every, plan.metrics.measures(), plan.metrics.ties, plan.seed,
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


def _planned_rounds(protocol: Any, lspec: Any, source: QuerySource) -> int | None:
    """The stream's length T: passes x queries (x keep-probability, its expected value),
    capped by max_rounds. Files are counted only when a learner needs T (RTop-kF's paper
    schedule without a horizon); otherwise None when unknown (progress bar without total)."""
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


def max_label(source: QuerySource) -> int:
    """The largest label of the stream (one pass), for click tables that follow it."""
    from ltr_cli.protocols.click_feedback import max_label as largest

    return largest(q for unit in source.units() for q in source.queries(unit))


def _clicks(protocol: Any, lspec: Any, seq: np.random.SeedSequence,
            top_label: Callable[[], int]) -> ClickFeedback | None:
    """The run's click protocol (None without ``feedback: clicks``), its generator from
    ``seq``, for a learner of config ``lspec`` (its declared ``feedback_kind``)."""
    clicks = protocol.clicks
    if clicks is None:
        return None
    from ltr_cli.protocols.click_feedback import ClickFeedback, resolve_model

    return ClickFeedback(resolve_model(clicks, top_label), clicks.shown, np.random.default_rng(seq),
                         lspec.feedback_kind)


def prepare(job: OnlinePlan, run_dir: Path, shared: SharedStream, quiet: bool, argv: list[str] | None,
            resume: bool, fresh: bool, blocks: bool = BLOCKS) -> PreparedRun:
    """The run of ``job`` made ready under its lock: its checkpoint kept or restored, its
    learner built, its clicks, held-out set and stream (``shared`` with the other runs of the
    stream), planned for the compiled block loop when ``blocks`` allows it and the run can
    take it."""
    name, lspec, protocol, source = job.name, job.learner, job.protocol, shared.source
    heldout = _heldout(job, source, shared.heldouts)
    measures = job.metrics.measures()
    checkpointer = Checkpointer(run_dir.parent / f".{job.run_id}.checkpoint", job.run_id,
                                protocol.checkpoint_every)
    if not resume and checkpointer.path.exists():
        keep_checkpoint(checkpointer.path, f"{name} (seed {job.seed})", argv, fresh)
    planned = _planned_rounds(protocol, lspec, source)
    # independent, reproducible streams: data order/subsampling, ties, learner draws, clicks
    stream_seq, tie_seq, learner_seq, click_seq = seeds(job.seed)
    clicks = _clicks(protocol, lspec, click_seq, shared.top_label)
    learner = lspec.build(source.n_features, job.metrics.ties, np.random.default_rng(learner_seq),
                          planned, job.fidelity)
    loss = None
    if protocol.log_regret:
        from ltr_cli.protocols.regret import regret_loss

        loss = regret_loss(learner, protocol.log_regret)
    columns = log_columns(measures, loss is not None, heldout)
    state = _restore(checkpointer, columns, source, learner, protocol.max_rounds) if resume else None
    stream_stats = StreamStats()
    stream_rng = np.random.default_rng(stream_seq)
    plan = None
    eligible = blocks and block_eligible(learner, RoundMeasures(measures), feedback_size(learner, protocol.feedback),
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
        console.note(f"[{job.experiment}] {name} (seed {job.seed}): {source.description}{what}{since}")
    return PreparedRun(job, run_dir, measures, checkpointer, state, planned, learner,
                       np.random.default_rng(tie_seq), plan, rounds, stream_stats, identity, heldout, loss, clicks)


def plugin_failure(name: str, lspec: Any, exc: Exception) -> LtrError:
    """A plugin learner's own exception as its run's one-line error (the other runs go on);
    anything else that escapes is a bug of this tool and is raised as it is."""
    from ltr_cli.learners.registry import SOURCES

    source = SOURCES.get(lspec.type_name(), "built-in")
    if source == "built-in":
        raise exc
    first = str(exc).splitlines()[0] if str(exc) else ""
    return LtrError(f"{name}: the learner ({source}) raised {type(exc).__name__}"
                    + (f": {first}" if first else "") + "; report it to the plugin's authors")


def _round_surrogate(learner: Any, loss: Any) -> Any:
    from ltr_cli.protocols.regret import round_surrogate

    return round_surrogate(learner, loss)


def compute(preps: list[PreparedRun], quiet: bool, argv: list[str] | None) -> list[OnlineResult | LtrError]:
    """The rounds of prepared runs: one alone (round by round or in blocks), or a group in
    blocks; a failing run's error is its result."""
    first = preps[0]
    protocol = first.job.protocol
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
                return [plugin_failure(first.job.name, first.job.learner, exc)]
        members = [GroupMember(p.learner, p.tie_rng, p.checkpointer if protocol.checkpoint_every else None,
                               p.state, p.job.name, p.identity) for p in preps]
        return run_online_group(first.plan, members, first.measures, protocol.max_rounds, quiet,
                                max((p.planned or 0) for p in preps) or None, first.heldout)
    except KeyboardInterrupt:
        for p in preps:
            saved = (f"its last checkpoint is kept in {p.checkpointer.path}; continue with: {resume_command(argv)}"
                     if p.checkpointer.path.exists() else "it had no checkpoint yet and will start over")
            console.error_line(f"interrupted: {p.job.name} (seed {p.job.seed}): {saved}")
        raise
