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
from pathlib import Path
from typing import Any

from ltr_cli.config.experiment import ExperimentSpec, RegistryData


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
    def seed(self) -> int:
        return self.spec.seed

    @property
    def config_id(self) -> str:
        """The hash of the run's config without its seed (the part of the run id after the
        last ``-``; equal for the seeds of one config)."""
        return self.spec.run_id(self.learner, with_seed=False).rsplit("-", 1)[1]

    def resolved(self) -> dict[str, Any]:
        """The resolved config a run folder keeps (``config.yaml``): the spec with this run's
        learner only."""
        resolved = self.spec.resolved()
        resolved["learners"] = {self.learner: resolved["learners"][self.learner]}
        return resolved

    @property
    def online(self) -> Any:
        """An online run's plan (:class:`~ltr_cli.protocols.online_run.OnlinePlan`)."""
        from ltr_cli.protocols.online_run import OnlinePlan

        spec = self.spec
        return OnlinePlan(spec.experiment, self.learner, self.run_id, spec.seed, self.learner_spec, spec.metrics,
                          spec.protocol, spec.heldout, spec.fidelity, self.group)

    def cv_plan(self, out_root: Path) -> Any:
        """A batch run's plan (:class:`~ltr_cli.protocols.cv_run.CVPlan`), its folds cached
        under ``out_root`` unless the config says otherwise."""
        from ltr_cli.protocols.cv_run import CVPlan

        spec = self.spec
        cv, m = spec.cv, spec.metrics
        assert cv is not None and cv.convention is not None
        return CVPlan(spec.experiment, self.learner, self.learner_spec,
                      folds_plan(spec, self.cache_dir(out_root)),
                      cv.select_by, cv.convention, tuple(cv.metrics) if cv.metrics else None, m.eru_d, m.eru_alpha)

    def cache_dir(self, out_root: Path) -> Path | None:
        """Where parsed data files are cached (None: caching is off): ``cache.dir``, else
        ``.cache`` under the results root."""
        cache = self.spec.cache
        if not cache.enabled:
            return None
        return cache.dir if cache.dir is not None else out_root / ".cache"

    @property
    def group(self) -> str | None:
        """Runs with equal (non-None) groups can be computed together; None: alone."""
        if self.family is None:
            return None
        return json.dumps([self.stream, list(self.family)], sort_keys=True, default=str)


def folds_plan(spec: ExperimentSpec, cache_dir: Path | None) -> Any:
    """Where a batch config's folds come from (:class:`~ltr_cli.protocols.cv_folds.FoldsPlan`),
    read through the binary cache in ``cache_dir`` (None: without it)."""
    from ltr_cli.protocols.cv_folds import FoldsPlan

    assert spec.cv is not None and isinstance(spec.dataset, RegistryData)
    return FoldsPlan(spec.dataset, spec.cv.splits, spec.seed, cache_dir)


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
        feedback_k = feedback_size(built, spec.protocol.feedback)
        if not block_eligible(built, RoundMeasures(spec.metrics.measures()), feedback_k,
                              spec.protocol.feedback == "clicks"):
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


def plan_fold_logs(spec: ExperimentSpec, learner: str | None, where: str) -> Any:
    """What ``ltr clicks log`` writes for a batch config
    (:class:`~ltr_cli.protocols.click_logs.FoldLogsPlan`): the logs of ``learner``'s
    ``clicks.generate`` block, else of the first learner that has one; one-line errors
    naming ``where`` (the config) otherwise."""
    from ltr_cli.errors import LtrError
    from ltr_cli.protocols.click_logs import FoldLogsPlan

    if spec.cv is None:
        raise LtrError(f"{where}: ltr clicks log needs a batch (cv:) config with a registry dataset")

    def gen(name: str) -> Any:
        signal = getattr(spec.learners[name], "clicks", None)
        return None if signal is None else signal.generate

    if learner is not None:
        if learner not in spec.learners:
            raise LtrError(f"{where}: --learner {learner!r}: no such learner; the config has {', '.join(spec.learners)}")
        if gen(learner) is None:
            raise LtrError(f"{where}: learner {learner!r} has no clicks.generate block; give a learner that "
                           "simulates its clicks")
        name = learner
    else:
        name = next((n for n in spec.learners if gen(n) is not None), "")
        if not name:
            raise LtrError(f"{where}: no learner has a clicks.generate block; add one (see docs/clicks.md)")
    return FoldLogsPlan(spec.experiment, name, gen(name), folds_plan(spec, None))
