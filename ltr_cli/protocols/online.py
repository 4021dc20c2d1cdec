"""The online protocol: one query per round.

Round t: the learner ranks the query; every configured measure is computed on the **full**
labels of that ranking; the feedback - all labels, or for partial-feedback learners only
the labels of the top-k shown documents (:func:`reveal`) - is handed to the learner, which
updates. One row per round is recorded: ``t, pass, qid, m, <metric>..., mistake, updated,
no_relevant, ranking_loss`` (and ``surrogate`` after the metrics for a run that logs regret,
:mod:`ltr_cli.protocols.regret`) (``no_relevant``: no label above 0, so NDCG/AP took the policy
value - keep it to recompute a curve under another policy without re-running;
``ranking_loss``: the loss of the measure that drives a mistake-driven learner, NaN for
learners without one).

The time-averaged curve of a metric is its cumulative mean over rounds (NaN rows, from
``no_relevant: skip``, are left out of numerator and denominator).
"""

from __future__ import annotations

import functools
import itertools
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ltr_cli.protocols.checkpoint import Checkpointer, LearnerState, RunState
from ltr_cli.data.sources import Segment, UnitArrays
from ltr_cli.data.query import Query
from ltr_cli.errors import LtrError
from ltr_cli.learners.online.base import Feedback, OnlineLearner
from ltr_cli.measures.conventions import Measure
from ltr_cli.measures.metrics import time_average
from ltr_cli.protocols.observers import Checkpoints, FiniteWeights, HeldoutEvaluations, ProgressBar, RoundObserver
from ltr_cli.protocols.round_measures import RoundMeasures
from ltr_cli.protocols.online_blocks import BlockRunner
from ltr_cli.protocols.warmup import compile_progress, warm_up
from ltr_cli.core.round_log import SURROGATE, RoundLog

if TYPE_CHECKING:
    from ltr_cli.protocols.click_feedback import ClickFeedback
    from ltr_cli.protocols.heldout import Heldout


@dataclass
class OnlineResult:
    log: RoundLog  # one row per round (:mod:`ltr_cli.core.round_log`)
    wall_seconds: float  # the rounds' own time: kernel loading and compilation are kernel_load_seconds
    nonfinite_round: int | None = None  # authors' numerics: the round the weights left the reals
    weights: np.ndarray | None = None  # the learner's final weights (d,)
    kernel_load_seconds: float = 0.0  # loading / compiling the kernels, before the clock started
    group_size: int = 1  # learners that ran in one pass over the stream; wall_seconds is this run's share

    @property
    def rounds(self) -> Any:
        """The round log as a pandas DataFrame (built on first use: a run writes its
        ``rounds.parquet`` from :meth:`RoundLog.arrow_table` without importing pandas)."""
        frame = self.__dict__.get("_frame")
        if frame is None:
            frame = self.__dict__["_frame"] = self.log.frame()
        return frame


def feedback_size(learner: OnlineLearner, mode: str = "auto") -> int | None:
    """How many top labels the protocol reveals to ``learner`` (None = all labels).

    ``mode``: ``auto`` - what the learner needs (its ``feedback_k``: partial feedback;
    None: full labels); ``full`` - all labels to everyone; ``top-K`` - only the
    top K to everyone, an error for learners that need full labels or more than K;
    ``clicks`` - as ``auto``, of the 0/1 labels the clicks make
    (:mod:`ltr_cli.protocols.click_feedback`).
    """
    needs = learner.feedback_k
    if mode in ("auto", "clicks"):
        return needs
    if mode == "full":
        return None
    k = int(mode.split("-")[1])
    if needs is None:
        raise LtrError(f"protocol.feedback is {mode} but {type(learner).__name__} learns from all "
                       "labels; use feedback: auto or a partial-feedback learner (rtopkf)")
    if needs > k:
        raise LtrError(f"protocol.feedback is {mode} but this learner's estimator needs the top {needs}")
    return k


def reveal(learner: OnlineLearner, ranking: np.ndarray, labels: np.ndarray, k: int | None = -1) -> Feedback:
    """What the learner is allowed to see: every label (k None), or only the labels at the
    first k positions of the shown ranking (default: :func:`feedback_size` in auto mode).
    Hidden labels are not passed at all, so the learner cannot read them. Under full
    feedback ``top_labels`` is None: the labels in shown order are ``labels[ranking]``,
    which a learner that wants them takes itself (most do not: the copy would cost a
    tenth of a round)."""
    if k == -1:
        k = learner.feedback_k  # feedback_size(learner) in auto mode
    if k is None:
        return Feedback(ranking, labels)
    return Feedback(ranking, None, labels[ranking[:k]])  # (fancy indexing copies)


def run_online(
    rounds: Iterator[tuple[int, Query]] | None,
    learner: OnlineLearner,
    measures: list[Measure],
    rng: np.random.Generator,
    max_rounds: int | None = None,
    quiet: bool = False,
    total_hint: int | None = None,
    feedback: str = "auto",
    checkpointer: Checkpointer | None = None,
    resume: RunState | None = None,
    name: str | None = None,
    data_identity: dict[str, Any] | None = None,
    plan: tuple[list[Segment], dict[int, UnitArrays]] | None = None,
    heldout: Heldout | None = None,
    surrogate: Callable[[np.ndarray, np.ndarray], float] | None = None,
    clicks: ClickFeedback | None = None,
) -> OnlineResult:
    """Drive ``learner`` over ``rounds``; return the per-round table and wall time.

    With a ``checkpointer``, the state is saved every ``checkpointer.every`` rounds; with a
    ``resume`` state (whose learner state the caller has restored into ``learner``) the
    tie generator and the recorded rounds are restored and the first ``resume.t`` rounds
    of the (rebuilt) stream are skipped.

    With a ``plan`` (:func:`ltr_cli.data.sources.plan_rounds`, for a learner that
    :func:`~ltr_cli.protocols.online_blocks.block_eligible` accepts) instead of ``rounds``,
    the same rounds run in compiled blocks (:mod:`ltr_cli.protocols.online_blocks`).

    With ``heldout`` (:mod:`ltr_cli.protocols.heldout`), the weights after every
    ``heldout.every``-th round are evaluated on the held-out queries, in that round's row.

    With ``surrogate`` (``value(X, y)``, :func:`ltr_cli.protocols.regret.round_surrogate`),
    each round also records its value before the update, in the column ``surrogate``
    (round by round only).

    With ``clicks`` (:mod:`ltr_cli.protocols.click_feedback`, round by round only), the
    learner learns from a simulated user's clicks on the shown list and the round's
    metrics are those of the shown list; the click generator is saved in checkpoints.

    The loop below is the whole protocol: what happens around a round (held-out
    evaluations, progress, checkpoints) is the observers' (:mod:`ltr_cli.protocols.observers`).
    """
    if plan is not None:
        assert surrogate is None, "the compiled block loop does not log the surrogate"
        assert clicks is None, "the compiled block loop does not simulate clicks"
        return _alone_in_blocks(plan, GroupMember(learner, rng, checkpointer, resume, name, data_identity),
                                measures, max_rounds, quiet, total_hint, heldout)
    assert rounds is not None
    # the plan: the log, the state to resume from, what the learner is shown, what is scored
    log = RoundLog(log_columns(measures, surrogate is not None, heldout),
                   resume.columns if resume is not None else None)
    t, previous_wall, nonfinite_round = _resumed(resume, rng, clicks, rounds)
    give, give_twin = _feedback(learner, feedback, clicks)
    score = RoundScore(RoundMeasures(measures), surrogate, clicks)
    width = getattr(learner, "n_features", None) or learner.weights.shape[0]  # a neural learner's weights are its parameters
    # around each round: held-out evaluations, then progress, then checkpoints
    observers: list[RoundObserver] = [HeldoutEvaluations(heldout, log, learner)] if heldout is not None else []
    bar = ProgressBar(_total(max_rounds, total_hint), t, quiet)
    observers += [bar] if bar.active else []
    observers += [Checkpoints(checkpointer)] if checkpointer is not None else []
    weights = FiniteWeights(learner, name, nonfinite_round)
    rounds, load_seconds = _warmed_up(rounds, learner, score.measures, rng, give_twin, quiet)
    start = time.perf_counter()

    def snapshot() -> RunState:
        assert checkpointer is not None
        return RunState(checkpointer.run_id, t, log.columns, LearnerState.of(learner),
                        dict(rng.bit_generator.state), previous_wall + time.perf_counter() - start,
                        weights.nonfinite_round, data_identity or {},
                        dict(clicks.rng.bit_generator.state) if clicks is not None else None)

    # the rounds
    try:
        for pass_no, query in rounds:
            if max_rounds is not None and t >= max_rounds:
                break
            t += 1
            X, y = query.X, query.y
            _check_shape(t, query, width)  # before any kernel
            ranking = learner.rank(X, rng)
            values, no_relevant = score(X, y, ranking)  # at the weights the ranking came from
            info = learner.update(X, give(learner, ranking, y))
            weights.after_update(t, query.qid, info.updated)
            log.append(t, pass_no, query.qid, query.m, values, info.mistake, info.updated, no_relevant,
                       info.ranking_loss)
            for observer in observers:
                observer.after_round(t, snapshot)
    finally:
        for observer in observers:
            observer.close()
    wall = previous_wall + time.perf_counter() - start
    return OnlineResult(log, wall, weights.nonfinite_round, np.array(learner.weights, copy=True), load_seconds)


def log_columns(measures: list[Measure], surrogate: bool, heldout: Heldout | None) -> list[str]:
    """The round log's float value columns: the measures, ``surrogate`` when the run logs
    regret, then the held-out columns."""
    return ([meas.name for meas in measures] + ([SURROGATE] if surrogate else [])
            + (heldout.columns if heldout is not None else []))


def _total(max_rounds: int | None, total_hint: int | None) -> int | None:
    """The progress bar's total: the smaller of the known ones (None: unknown)."""
    known = [x for x in (max_rounds, total_hint) if x]
    return min(known) if known else None


def _resumed(resume: RunState | None, rng: np.random.Generator, clicks: ClickFeedback | None,
             rounds: Iterator[tuple[int, Query]]) -> tuple[int, float, int | None]:
    """The run's generators restored from ``resume`` and the stream replayed to where it
    stopped; returns the rounds done, their wall time and the round the weights left the
    reals (0, 0.0, None for a fresh run)."""
    if resume is None:
        return 0, 0.0, None
    rng.bit_generator.state = resume.tie_rng_state
    if clicks is not None:
        if resume.click_rng_state is None:
            raise LtrError("the checkpoint holds no click generator, yet this run simulates clicks; "
                           "delete it to start the run over")
        clicks.rng.bit_generator.state = resume.click_rng_state
    for _ in range(resume.t):  # replay the stream's own draws up to where the run stopped
        if next(rounds, None) is None:
            raise _beyond_the_stream(resume.t)
    return resume.t, resume.wall_seconds, resume.nonfinite_round


Give = Callable[[OnlineLearner, np.ndarray, np.ndarray], Feedback]


def _feedback(learner: OnlineLearner, feedback: str, clicks: ClickFeedback | None) -> tuple[Give, Give]:
    """What the learner is shown each round (:func:`reveal` under ``feedback``, or the
    clicks), and the same for the warm-up round (under clicks, a twin generator's clicks)."""
    reveal_k = feedback_size(learner, feedback)
    if clicks is None:
        give: Give = functools.partial(reveal, k=reveal_k)
        return give, give
    clicks.prepare(learner)
    return (functools.partial(_click_feedback, clicks, k=reveal_k),
            functools.partial(_click_feedback, clicks.twin(), k=reveal_k))


class RoundScore:
    """A round's recorded values: every measure on the full labels of the ranking (of the
    shown list under clicks), then the surrogate's value when the run logs regret."""

    def __init__(self, measures: RoundMeasures, surrogate: Callable[[np.ndarray, np.ndarray], float] | None,
                 clicks: ClickFeedback | None):
        self.measures, self.surrogate, self.clicks = measures, surrogate, clicks

    def __call__(self, X: np.ndarray, y: np.ndarray, ranking: np.ndarray) -> tuple[list[float], bool]:
        shown = ranking if self.clicks is None else self.clicks.seen(ranking, y.shape[0])
        values, no_relevant = self.measures(shown, y)
        if self.surrogate is not None:
            values = [*values, self.surrogate(X, y)]
        return values, no_relevant


def _check_shape(t: int, query: Query, width: int) -> None:
    X, y = query.X, query.y
    if X.ndim != 2 or X.shape[1] != width or y.shape[0] != X.shape[0]:
        raise LtrError(f"round {t} (qid {query.qid}): query rows of shape {X.shape} with "
                       f"{y.shape[0]} labels do not fit the learner's {width} features")


def _warmed_up(rounds: Iterator[tuple[int, Query]], learner: OnlineLearner, measures: RoundMeasures,
               rng: np.random.Generator, give: Give, quiet: bool) -> tuple[Iterator[tuple[int, Query]], float]:
    """Every kernel of a round compiled or loaded on the first round's query (on copies),
    before the clock starts; returns the stream, its first round put back, and the seconds
    that took."""
    first = next(rounds, None)
    if first is None:
        return rounds, 0.0
    return itertools.chain([first], rounds), warm_up(learner, first[1], measures, rng, give, quiet)


def _alone_in_blocks(plan: tuple[list[Segment], dict[int, UnitArrays]], member: GroupMember,
                     measures: list[Measure], max_rounds: int | None, quiet: bool, total_hint: int | None,
                     heldout: Heldout | None) -> OnlineResult:
    (result,) = run_online_group(plan, [member], measures, max_rounds, quiet, total_hint, heldout)
    if isinstance(result, LtrError):
        raise result
    return result


def _click_feedback(clicks: ClickFeedback, learner: OnlineLearner, ranking: np.ndarray, y: np.ndarray,
                    k: int | None) -> Feedback:
    return clicks.feedback(learner, ranking, y, k)


def _beyond_the_stream(t: int) -> LtrError:
    return LtrError(f"the checkpoint was taken after round {t}, beyond the end of this run's stream; "
                    "delete it to start the run over")


@dataclass
class GroupMember:
    """One learner's run in a group that shares a planned stream (see :func:`run_online_group`):
    its tie generator, checkpointer, the state it resumes from, its name and its data's identity."""

    learner: OnlineLearner
    rng: np.random.Generator
    checkpointer: Checkpointer | None = None
    resume: RunState | None = None
    name: str | None = None
    data_identity: dict[str, Any] | None = None

    def restored(self, names: list[str]) -> tuple[RoundLog, float, int | None]:
        """Its round log, the wall time and the non-finite round it resumes with (its tie
        generator restored), or a fresh log."""
        if self.resume is None:
            return RoundLog(names, None), 0.0, None
        self.rng.bit_generator.state = self.resume.tie_rng_state
        return RoundLog(names, self.resume.columns), self.resume.wall_seconds, self.resume.nonfinite_round

    def observers(self, log: RoundLog, heldout: Heldout | None) -> list[RoundObserver]:
        """What happens after each of its blocks: held-out evaluations, then checkpoints."""
        return (([HeldoutEvaluations(heldout, log, self.learner)] if heldout is not None else [])
                + ([Checkpoints(self.checkpointer)] if self.checkpointer is not None else []))


def run_online_group(plan: tuple[list[Segment], dict[int, UnitArrays]], members: list[GroupMember],
                     measures: list[Measure], max_rounds: int | None = None, quiet: bool = False,
                     total_hint: int | None = None, heldout: Heldout | None = None) -> list[OnlineResult | LtrError]:
    """:func:`run_online` on a plan for learners that share it and a compiled block family
    (:func:`~ltr_cli.protocols.online_blocks.group_key`), all resuming from the same round (or
    none): each query is read once per block round for all of them. Returns, per member, its
    result, or the error that stopped it (the others went on). Each member's rows, weights
    and checkpoints are those of its own run: a group of one is that run. Each member's
    ``wall_seconds`` is its share of the group's time (the time divided by the group's size)."""
    t = _common_start(members, plan)
    logs, previous, nonfinite = map(list, zip(*(m.restored(log_columns(measures, False, heldout)) for m in members)))
    bar = ProgressBar(_total(max_rounds, total_hint), t, quiet)
    around = [m.observers(logs[i], heldout) for i, m in enumerate(members)]
    blocks, load_seconds = _loaded_blocks(plan, members, measures, quiet)
    start = time.perf_counter()

    def after_block(i: int, done: int, n: int, nonfinite_round: int | None) -> None:
        m = members[i]

        def snapshot() -> RunState:
            assert m.checkpointer is not None
            return RunState(m.checkpointer.run_id, done, logs[i].columns, LearnerState.of(m.learner),
                            dict(m.rng.bit_generator.state), previous[i] + (time.perf_counter() - start) / len(members),
                            nonfinite_round, m.data_identity or {})

        for observer in around[i]:
            observer.after_block(done, n, snapshot)

    try:
        outcomes = blocks.run(logs, t, nonfinite, max_rounds, _block_stops(members[0].checkpointer, heldout),
                              after_block, lambda done, n: bar.after_block(done, n, _no_snapshot),
                              [m.name or type(m.learner).__name__ for m in members])
    finally:
        bar.close()
    share = (time.perf_counter() - start) / len(members)  # the rounds' time, split evenly
    return [outcome.error if outcome.error is not None else
            OnlineResult(logs[i], previous[i] + share, outcome.nonfinite_round,
                         np.array(members[i].learner.weights, copy=True), load_seconds, len(members))
            for i, outcome in enumerate(outcomes)]


def _common_start(members: list[GroupMember], plan: tuple[list[Segment], dict[int, UnitArrays]]) -> int:
    """The round every member resumes after (0: none resumes), within the planned stream."""
    starts = {m.resume.t if m.resume is not None else 0 for m in members}
    assert len(starts) == 1, starts
    t = starts.pop()
    if t > sum(seg.order.shape[0] for seg in plan[0]):
        raise _beyond_the_stream(t)
    return t


def _loaded_blocks(plan: tuple[list[Segment], dict[int, UnitArrays]], members: list[GroupMember],
                   measures: list[Measure], quiet: bool) -> tuple[BlockRunner, float]:
    """The group's block runner, its kernels loaded (or compiled) before the clock starts,
    and the seconds that took."""
    load_start = time.perf_counter()
    with compile_progress(quiet):
        blocks = BlockRunner([m.learner for m in members], RoundMeasures(measures), plan[0], plan[1],
                             [m.learner.numerics == "authors-code" for m in members])  # loads the kernels
        blocks.warm_up()
    return blocks, time.perf_counter() - load_start


def _block_stops(checkpointer: Checkpointer | None, heldout: Heldout | None) -> tuple[int, ...]:
    """Blocks end at multiples of these: the checkpoint and held-out intervals."""
    return tuple(x for x in (checkpointer.every if checkpointer else 0,
                             heldout.every if heldout is not None else 0) if x)


def _no_snapshot() -> RunState:
    raise AssertionError("the progress bar takes no snapshot")


def summarize(result: OnlineResult, measures: list[Measure], gamma: float | None = None) -> dict[str, Any]:
    """Final time-averaged value, last-ten statistics, counts, wall time, throughput; with
    ``gamma`` (click runs), each metric's ``discounted_cumulative``."""
    columns = result.log.columns
    n = len(result.log)
    out: dict[str, Any] = {
        "rounds": n,
        "mistakes": int(columns["mistake"].sum()) if n else 0,
        "updates": int(columns["updated"].sum()) if n else 0,
        "no_relevant_rounds": int(columns["no_relevant"].sum()) if n else 0,
        "wall_seconds": round(result.wall_seconds, 6),
        "rounds_per_second": round(n / result.wall_seconds, 3) if result.wall_seconds > 0 else None,
        "kernel_load_seconds": round(result.kernel_load_seconds, 6),
        "nonfinite_round": result.nonfinite_round,
        "metrics": {},
    }
    for meas in measures:
        values = np.asarray(columns[meas.name], dtype=np.float64)
        curve = time_average(values)
        last = curve[-10:] if n else curve
        out["metrics"][meas.name] = {
            "final_time_average": _num(curve[-1]) if n else None,
            "last10_mean_of_time_average": _num(np.nanmean(last)) if n and not np.isnan(last).all() else None,
            "last10_mean_per_round": _num(np.nanmean(values[-10:])) if n and not np.isnan(values[-10:]).all() else None,
        }
        if gamma is not None:
            out["metrics"][meas.name]["discounted_cumulative"] = discounted_cumulative(values, gamma)
    return out


def discounted_cumulative(values: np.ndarray, gamma: float) -> float:
    """``sum over rounds t of gamma^(t-1) * value_t`` (the click literature's cumulative
    online performance); NaN rows (``no_relevant: skip``) add nothing, and the rounds after
    them keep their own discount."""
    values = np.asarray(values, dtype=np.float64)
    weights = np.power(gamma, np.arange(values.shape[0], dtype=np.float64))
    kept = ~np.isnan(values)
    return float(np.dot(weights[kept], values[kept]))


def _num(x: Any) -> float | None:
    return None if x is None or np.isnan(x) else float(x)
