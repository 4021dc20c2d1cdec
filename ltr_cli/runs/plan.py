"""The run plan: an experiment spec resolved once into the runs it makes, shared by ``ltr
run`` and ``ltr sweep``.

A :class:`PlannedRun` is one learner on one seed: its single-seed spec (validated, never a
dict parsed again), the learner's name and config, its run id, the key of the data
stream it reads, and its block-group key. The one grouping rule: runs with equal
:attr:`PlannedRun.group` read the same stream in the same compiled block family, so they
can be computed in one pass over the stream (``ltr run`` groups the learners of a config,
``ltr sweep`` the points of a grid).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ltr_cli.config.experiment import ExperimentSpec


@dataclass(frozen=True)
class PlannedRun:
    """One run: ``spec`` a single-seed spec, ``learner`` the name of one of its learners."""

    spec: ExperimentSpec
    learner: str
    run_id: str
    stream: str = field(compare=False)  # the stream key (see :func:`stream_key`)
    family: tuple[Any, ...] | None = field(default=None, compare=False)  # block family key, None: alone

    @property
    def name(self) -> str:
        return self.learner

    @property
    def experiment(self) -> str:
        return self.spec.experiment

    @property
    def key(self) -> str:
        """``<experiment>/<run-id>``: where the run's folder goes under the results root."""
        return f"{self.experiment}/{self.run_id}"

    @property
    def learner_spec(self) -> Any:
        return self.spec.learners[self.learner]

    @property
    def group(self) -> str | None:
        """Runs with equal (non-None) groups can be computed together; None: alone."""
        if self.family is None:
            return None
        return json.dumps([self.stream, list(self.family)], sort_keys=True, default=str)


def stream_key(spec: ExperimentSpec) -> str:
    """What decides the stream a run reads and how its rounds are measured: the resolved
    spec without its learners and output folder."""
    data = spec.resolved()
    data.pop("learners", None)
    data.pop("output", None)
    data.pop("sweep", None)
    return json.dumps(data, sort_keys=True, default=str)


def block_family(spec: ExperimentSpec, learner: str) -> tuple[Any, ...] | None:
    """The key of the compiled block family the learner's rounds run in (family, parameter
    count, ties), or None when they run alone: batch cross-validation, the block loop
    switched off, a learner or convention without a compiled block loop, a learner that logs
    its regret (``protocol.log_regret``), or a learner that
    cannot even be built (it then fails in its own run, with its own message)."""
    import numpy as np

    from ltr_cli.protocols.online import feedback_size
    from ltr_cli.protocols.online_blocks import BLOCKS, block_eligible, group_key
    from ltr_cli.protocols.round_measures import RoundMeasures

    if spec.cv is not None or not BLOCKS:
        return None
    try:  # the learner as its run builds it (on one feature: only its family matters here)
        lspec: Any = spec.learners[learner]
        built = lspec.build(1, spec.metrics.ties, np.random.default_rng(0), 1, spec.fidelity)
        if not block_eligible(built, RoundMeasures(spec.metrics.measures()),
                              feedback_size(built, spec.protocol.feedback), spec.protocol.feedback == "clicks"):
            return None
        if spec.protocol.log_regret:
            from ltr_cli.protocols.regret import regret_loss

            if regret_loss(built, True) is not None:  # logs its surrogate: round by round
                return None
        return tuple(group_key(built))
    except Exception:  # only a hint for grouping
        return None


def run_id(spec: ExperimentSpec, learner: str, repeated: bool = False) -> str:
    """Directory name of one run of ``spec`` (a single seed): ``<learner>-<hash>``, or
    ``<learner>-seed<S>-<hash>`` when the config repeats seeds."""
    rid = spec.run_id(learner)
    if repeated:
        rid = f"{learner}-seed{spec.seed}-{rid.rsplit('-', 1)[1]}"
    return rid


def planned(one: ExperimentSpec, learner: str, repeated: bool = False, stream: str | None = None,
            grouped: bool = True) -> PlannedRun:
    """The run of ``learner`` on the single-seed spec ``one``."""
    return PlannedRun(one, learner, run_id(one, learner, repeated),
                      stream if stream is not None else stream_key(one),
                      block_family(one, learner) if grouped else None)


def plan_experiment(spec: ExperimentSpec, learners: list[str] | None = None) -> list[list[PlannedRun]]:
    """The runs of ``ltr run`` (the named learners, or all), per seed: one list per data
    stream, learners in config order. A batch (k-fold) config is one list of runs without
    seeds of their own."""
    names = [n for n in spec.learners if not learners or n in learners]
    if spec.cv is not None:
        stream = stream_key(spec)
        return [[PlannedRun(spec, n, run_id(spec, n), stream) for n in names]]
    repeated = spec.seeds is not None
    out = []
    for seed in spec.seed_list():
        one = spec.for_seed(seed)
        stream = stream_key(one)
        out.append([planned(one, n, repeated, stream) for n in names])
    return out
