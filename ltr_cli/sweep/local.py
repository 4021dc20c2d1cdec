"""Local worker processes for ``ltr sweep --jobs N``.

Each worker computes one unit at a time (a run, or runs that share a stream,
:func:`~ltr_cli.sweep.tasks.group_tasks`) and reports back over a pipe, so when a worker
dies (SIGKILL, the out-of-memory killer, ``os._exit``) the parent knows which runs it had:
those not written yet are recorded as failed and a new worker takes the remaining units.
``concurrent.futures`` cannot do this (one dead worker breaks the whole pool).
"""

from __future__ import annotations

import os
import signal
from collections import deque
from dataclasses import dataclass
from typing import Any

from ltr_cli.errors import LtrError
from ltr_cli.sweep.tasks import ExecutorOptions, Task, _lost, run_group


def _worker_loop(conn: Any) -> None:
    """A local worker: run the units the parent sends until it sends None or goes away."""
    from ltr_cli.protocols.warmup import die_with_parent

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    parent = os.getppid()
    die_with_parent()  # a killed sweep leaves no worker finishing its unit behind it
    while True:
        try:
            if not conn.poll(1.0):
                # an idle worker whose sweep was killed (it is re-parented) ends; its pipe
                # alone may not say so, as later workers inherit copies of it
                if os.getppid() != parent:
                    return
                continue
            item = conn.recv()
        except (EOFError, OSError):
            return
        if item is None:
            return
        unit, out = item
        result = run_group(unit, out)
        try:
            conn.send(result)
        except (OSError, ValueError):
            return


@dataclass
class _Worker:
    process: Any
    conn: Any
    index: int | None = None  # the unit it is computing


def _death(process: Any) -> str:
    code = process.exitcode
    if code is None:
        how = "stopped answering"
    elif code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        how = f"was killed by {name}" + (" (e.g. by the out-of-memory killer)" if -code == signal.SIGKILL else "")
    else:
        how = f"exited with status {code} without a result"
    return (f"worker process {process.pid} {how} while computing this run; re-run the sweep to "
            "retry it (it resumes from its last checkpoint)")


def run_local_pool(units: list[list[Task]], out: str, jobs: int) -> list[dict[str, Any]]:
    """Run units of tasks on ``jobs`` worker processes. Each worker computes one unit at a
    time, so when one dies its unit is known: its runs not written yet are recorded as
    failed and a new worker takes over the remaining units. (``concurrent.futures`` cannot do this: one dead worker breaks
    the whole pool and fails every pending task.)"""
    import multiprocessing as mp
    from multiprocessing.connection import wait

    ctx = mp.get_context()
    results: list[list[dict[str, Any]] | None] = [None] * len(units)
    queue = deque(range(len(units)))
    workers: list[_Worker] = []

    def spawn() -> None:
        parent_end, child_end = ctx.Pipe()
        proc = ctx.Process(target=_worker_loop, args=(child_end,), name="ltr-sweep-worker")
        proc.start()
        child_end.close()
        workers.append(_Worker(proc, parent_end))

    def bury(w: _Worker) -> None:
        """Reap a worker that is gone (or kill it) and record its task as failed."""
        w.process.join(timeout=5)
        if w.process.is_alive():
            w.process.kill()
            w.process.join()
        w.conn.close()
        workers.remove(w)
        if w.index is not None:
            results[w.index] = [_lost(task, out, _death(w.process)) for task in units[w.index]]
            w.index = None

    try:
        while queue or any(w.index is not None for w in workers):
            idle = sum(w.index is None for w in workers)
            while len(queue) > idle and len(workers) < jobs:  # start (or replace) workers
                try:
                    spawn()
                except OSError as exc:
                    if workers:
                        break  # go on with fewer workers
                    raise LtrError(f"cannot start a worker process ({exc.strerror or exc}); "
                                   "try fewer --jobs") from None
                idle += 1
            for w in list(workers):
                if w.index is None and queue:
                    i = queue.popleft()
                    try:
                        w.conn.send((units[i], out))
                        w.index = i
                    except (OSError, ValueError):  # it died while idle: nothing lost
                        queue.appendleft(i)
                        bury(w)
            busy = [w for w in workers if w.index is not None]
            if not busy:
                continue
            ready = wait([w.conn for w in busy] + [w.process.sentinel for w in busy])
            for w in busy:
                if w.conn not in ready and w.process.sentinel not in ready:
                    continue
                result = None
                try:
                    if w.conn.poll():
                        result = w.conn.recv()
                except (EOFError, OSError):
                    result = None
                if result is not None and w.index is not None:
                    results[w.index] = result
                    w.index = None
                    if w.process.sentinel in ready:  # it has ended since: replace it
                        bury(w)
                else:
                    bury(w)
        for w in workers:
            try:
                w.conn.send(None)
            except (OSError, ValueError):
                pass
        for w in workers:
            w.process.join(timeout=10)
    finally:
        for w in workers:  # interrupted (Ctrl-C) or done: no worker outlives the sweep
            if w.process.is_alive():
                w.process.kill()
                w.process.join()
            w.conn.close()
    return [r for unit in results if unit is not None for r in unit]



def run(units: list[list[Task]], out: str, options: ExecutorOptions) -> list[dict[str, Any]]:
    """The ``local`` executor: inline for one job, else a pool of worker processes."""
    if options.jobs <= 1:
        return [r for unit in units for r in run_group(unit, out)]
    return run_local_pool(units, out, options.jobs)
