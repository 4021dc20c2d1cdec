"""Kernel loading and compilation, timed apart from the run.

numba compiles a kernel the first time it is called with a new signature, or loads it from
its on-disk cache (about half a second per process once cached; tens of seconds on the first
run on a machine, or after an upgrade). Counted inside a run's clock, this made a first run
report 40 rounds/s where the same run, compiled, does 1,300.

:func:`warm_up` plays one round of the run's first query on a throwaway copy of the
learner, its measures and its tie generator, so every kernel the run calls is compiled or
loaded with the very signatures (dtypes, contiguity) the run uses, before its clock starts.
The run's learner, generator and stream are not touched. When loading takes longer than
:data:`NOTE_AFTER` seconds, one line on stderr says what is happening.
"""

from __future__ import annotations

import copy
import sys
import threading
import time
from collections.abc import Callable

import numpy as np

from ltr_cli import kernels
from ltr_cli.data.query import Query
from ltr_cli.learners.base import Feedback, OnlineLearner
from ltr_cli.protocols.round_measures import RoundMeasures

NOTE_AFTER = 2.0  # seconds: cached kernels load well within this; compiling takes longer
_noted = False  # the note is printed once per process


def compile_note(say: Callable[[str], None] | None = None) -> threading.Timer:
    """A started timer that prints the compile note after :data:`NOTE_AFTER` seconds
    (cancel it when loading is done)."""
    def note() -> None:
        global _noted
        if not _noted:
            _noted = True
            (say or _stderr)("ltr: compiling kernels (first run on this machine or after an "
                             "upgrade, about 30 s; cached for later runs, and not counted in "
                             "the run's wall_seconds)")

    timer = threading.Timer(NOTE_AFTER, note)
    timer.daemon = True
    timer.start()
    return timer


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def warm_up(learner: OnlineLearner, query: Query, round_measures: RoundMeasures,
            rng: np.random.Generator, reveal: Callable[[OnlineLearner, np.ndarray, np.ndarray], Feedback],
            quiet: bool = False) -> float:
    """Seconds spent loading or compiling the kernels one round of ``query`` needs
    (0.0 when the kernels are switched off). Works on copies: ``learner``, ``rng`` and
    ``query`` are left exactly as they were."""
    if not kernels.ENABLED:
        return 0.0
    start = time.perf_counter()
    timer = None if quiet else compile_note()
    try:
        kernels.load()
        twin = copy.deepcopy(learner)
        twin_rng = np.random.Generator(type(rng.bit_generator)())
        twin_rng.bit_generator.state = rng.bit_generator.state
        X, y = query.X, query.y
        if X.ndim == 2 and X.shape[1] == twin.weights.shape[0] and y.shape[0] == X.shape[0]:
            ranking = twin.rank(X, twin_rng)
            round_measures(ranking, y)
            twin.update(X, reveal(twin, ranking, y))
            if twin.weights.dtype == np.float64:
                (kernels.module or kernels.load()).all_finite(twin.weights)
    finally:
        if timer is not None:
            timer.cancel()
    return time.perf_counter() - start
