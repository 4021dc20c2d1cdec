"""One batch learner's k-fold run from its plan: the folds opened, the fold checkpoint
loaded or kept, the progress shown, every fold fitted and tested (:func:`run_cv`), an
interruption said in one line; and what its run folder records of the plan.

The plan (:class:`CVPlan`) is what the run plan (:mod:`ltr_cli.runs.plan`) resolves from
the experiment spec for one learner: the protocol reads nothing else of the spec.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import pandas as pd

from ltr_cli import console
from ltr_cli.measures.conventions import CONVENTIONS, Convention, Measure, bind
from ltr_cli.protocols.batch import TEST_METRICS, row_columns, run_cv
from ltr_cli.protocols.checkpoint import keep_checkpoint, resume_command
from ltr_cli.protocols.cv_checkpoint import FoldCheckpoint, learner_digest
from ltr_cli.protocols.cv_folds import Fold, FoldsPlan, folds_identity, open_folds
from ltr_cli.protocols.cv_progress import CVHooks


@dataclass(frozen=True)
class CVPlan:
    """One batch learner's k-fold run: its experiment and learner names, the learner's
    config, where its folds come from, the selection metric on vali, the convention and the
    test metrics (``cv.metrics``; None: :data:`~ltr_cli.protocols.batch.TEST_METRICS`), and
    ERU's settings (``metrics.eru_d``, ``metrics.eru_alpha``) for the metrics that take them."""

    experiment: str
    name: str
    learner: Any
    folds: FoldsPlan
    select_by: str
    convention: str
    tests: tuple[str, ...] | None
    eru_d: float
    eru_alpha: float

    @property
    def normalize(self) -> str:
        return self.folds.dataset.normalize

    def measures(self) -> tuple[Convention, Measure, list[Measure]]:
        """The convention, the selection measure and the test measures, bound under it."""
        conv = CONVENTIONS[self.convention]
        select = Measure(self.select_by, eru_d=self.eru_d, eru_alpha=self.eru_alpha, conv=conv)
        tests = bind(list(self.tests or TEST_METRICS), conv, eru_d=self.eru_d, eru_alpha=self.eru_alpha)
        return conv, select, tests

    def checkpoint(self, run_dir: Path, identity: dict[str, Any], fold_numbers: list[int | None]) -> FoldCheckpoint:
        """The fold checkpoint of the run: it names the run, the digest of the learner's
        resolved config (with selection, convention and normalisation) and the data."""
        tests = list(self.tests) if self.tests else None
        learner = self.learner.model_dump(mode="json")
        if "clicks" in learner and learner["clicks"] is None:  # a run on labels keeps the digest it had before clicks
            del learner["clicks"]
        if self.learner.implementation != 1:  # a checkpoint of an earlier algorithm is not this one's
            learner["implementation"] = self.learner.implementation
        digest = learner_digest(learner, select_by=self.select_by, convention=self.convention,
                                normalize=self.normalize, tests=tests)
        return FoldCheckpoint(run_dir, identity, digest, row_columns(self.select_by, tests),
                              tuple(str(n) for n in fold_numbers))

    def manifest(self, identity: dict[str, Any]) -> dict[str, Any]:
        """What the run's manifest says of its data, conventions and learner."""
        ds = self.folds.dataset
        return {
            "dataset": {"name": ds.name, "root": str(ds.root), "fingerprint": identity, "normalize": ds.normalize},
            "conventions": {**CONVENTIONS[self.convention].describe(), "evaluation": self.convention,
                            "selection": f"vali {self.select_by}",
                            "ties": "stable: descending score, then document order"},
            "learner_conventions": {**self.learner.describe(), **self.learner.model_dump(mode="json")},
        }


@dataclass
class OpenedCV:
    """A batch run's folds, opened, and their identity (what its manifest and checkpoint record)."""

    plan: CVPlan
    folds: list[Fold]
    identity: dict[str, Any]


@dataclass
class CVResult:
    """A computed batch run: the per-fold table, the summary, the selected models, the
    per-query test table, what its manifest records of its plan (:meth:`CVPlan.manifest`),
    and the fold checkpoint (removed once the run is written)."""

    table: pd.DataFrame
    summary: dict[str, Any]
    models: dict[str, Any]
    queries: pd.DataFrame
    manifest: dict[str, Any]
    checkpoint: FoldCheckpoint


def open_cv(plan: CVPlan) -> OpenedCV:
    """The folds of ``plan``, opened, with their identity."""
    folds = open_folds(plan.folds)
    return OpenedCV(plan, folds, folds_identity(folds))


def compute_cv(opened: OpenedCV, run_dir: Path, resume: bool, fresh: bool, quiet: bool,
               argv: list[str] | None, log: Callable[[str], None]) -> CVResult:
    """Every fold of an opened run, fitted and tested; under the run's lock. Folds saved in
    the fold checkpoint are not fitted again with ``resume``; without it, a checkpoint an
    interrupted run left stops the run with a one-line error unless ``fresh``. An
    interruption is one line saying what was saved and how to continue."""
    plan, folds = opened.plan, opened.folds
    conv, select, tests = plan.measures()
    checkpoint = plan.checkpoint(run_dir, opened.identity, [f.number for f in folds])
    if resume:
        checkpoint.load()
    elif checkpoint.exists():
        keep_checkpoint(checkpoint.path, f"{plan.name} (its finished folds)", argv, fresh)
    hooks = CVHooks(len(folds) * len(plan.learner.grid_points()), None if quiet else log, bar=not quiet,
                    learner=plan.name)
    try:
        table, summary, models, queries = run_cv(folds, plan.learner, plan.select_by, conv, hooks, tests, checkpoint,
                                                 plan.normalize, select, plan.folds.seed)
    except KeyboardInterrupt:
        hooks.close()
        saved = sorted(checkpoint.folds)
        console.error_line(f"interrupted: {plan.name}: " + (
            f"{'fold' if len(saved) == 1 else 'folds'} {', '.join(saved)} saved in {checkpoint.path}; continue with: "
            f"{resume_command(argv)}" if saved else "no fold had finished, nothing saved"))
        raise
    return CVResult(table, {"dataset": plan.folds.dataset.name, **summary}, models, queries,
                    plan.manifest(opened.identity), checkpoint)
