"""Kernel loading and compilation, timed apart from the run.

numba compiles a kernel the first time it is called with a new signature, or loads it from
its on-disk cache (about half a second per process once cached; tens of seconds on the first
run on a machine, or after an upgrade). Counted inside a run's clock, this made a first run
report 40 rounds/s where the same run, compiled, does 1,300.

:func:`warm_up` plays one round of the run's first query on a throwaway copy of the
learner, its measures and its tie generator, so every kernel the run calls is compiled or
loaded with the very signatures (dtypes, contiguity) the run uses, before its clock starts.
The run's learner, generator and stream are not touched. When numba really compiles a
kernel (it was not in the kernel cache), one line on stderr says so, and progress follows
(:func:`compile_progress`); loading cached kernels is silent, however long it takes.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from ltr_cli import console, kernels
from ltr_cli.data.query import Query
from ltr_cli.learners.online.base import Feedback, OnlineLearner
from ltr_cli.protocols.round_measures import RoundMeasures


@contextmanager
def compile_progress(quiet: bool = False) -> Iterator[None]:
    """Within the block, each kernel numba really compiles is reported on stderr (the
    notice at the first, then progress, then the total: :class:`~ltr_cli.kernels.compile_watch.Progress`);
    loading cached kernels says nothing. ``quiet``: nothing is said."""
    from ltr_cli.kernels import compile_watch

    progress = None if quiet else compile_watch.Progress(_stderr)
    try:
        with compile_watch.reporting(progress):
            yield
    finally:
        if progress is not None:
            progress.close()


def _stderr(message: str) -> None:
    console.note(message)


def warm_up(learner: OnlineLearner, query: Query, round_measures: RoundMeasures,
            rng: np.random.Generator, reveal: Callable[[OnlineLearner, np.ndarray, np.ndarray], Feedback],
            quiet: bool = False) -> float:
    """Seconds spent loading or compiling the kernels one round of ``query`` needs
    (0.0 when the kernels are switched off). Works on copies: ``learner``, ``rng`` and
    ``query`` are left exactly as they were."""
    if not kernels.ENABLED:
        return 0.0
    start = time.perf_counter()
    with compile_progress(quiet):
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
                (kernels.module or kernels.load()).core.all_finite(twin.weights)
    return time.perf_counter() - start


class CompileAhead:
    """Compiles kernels in forked child processes while this process works on something
    else: numba compiles one function at a time per process (a global lock), so on a first
    run a second compiled block family (say ListNet's, while SLAM's compiles) would
    otherwise wait its turn. Each child compiles (writing numba's on-disk cache) and exits;
    :meth:`wait` before the kernels are needed here, which then load from the cache.
    With the cache warm a child only loads and exits. Nothing is started on one CPU,
    where a child could only slow this process down, or where ``fork`` is unavailable."""

    def __init__(self, jobs: list[Callable[[], None]]):
        import os

        self._children: list[Any] = []
        if not jobs or (os.cpu_count() or 1) < 2:
            return
        import multiprocessing as mp  # only with something to compile ahead

        if "fork" not in mp.get_all_start_methods():
            return
        ctx = mp.get_context("fork")
        for job in jobs:
            child = ctx.Process(target=_compile_and_exit, args=(job,), daemon=True, name="ltr-compile")
            try:
                child.start()
            except OSError:  # no process to spare: the kernels compile here when needed
                break
            self._children.append(child)

    def wait(self, quiet: bool = True) -> None:
        """Until every child is done; unless ``quiet``, one line when some are still compiling."""
        if not quiet and any(child.is_alive() for child in self._children):
            n = len(self._children)
            _stderr(f"ltr: compiling kernels: waiting for {n} block {'family' if n == 1 else 'families'} "
                    "compiled beside the first")
        for child in self._children:
            child.join()
        self._children = []


def _compile_and_exit(job: Callable[[], None]) -> None:
    """In a forked child: run ``job`` and leave at once (no cleanup of the parent's state,
    which the child shares: locks, temporary files)."""
    import os
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    from ltr_cli.kernels import compile_watch

    compile_watch.silence()  # the parent reports its own compiles
    # the parent's files (run locks above all) are not the child's to keep open: were the
    # parent killed, a lock held through the child's copy would outlive it
    os.closerange(3, _max_fd())
    die_with_parent()
    code = 0
    try:
        job()
    except BaseException:  # the parent compiles it itself when it needs it
        code = 1
    finally:
        os._exit(code)


def _max_fd() -> int:
    import resource

    soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    return soft if 0 < soft < (1 << 20) else 4096


def die_with_parent() -> None:
    """Linux: this process gets SIGKILL when its parent dies (a killed run leaves no
    compiling orphan behind); elsewhere nothing."""
    import ctypes
    import os
    import signal

    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the call
        os._exit(0)
