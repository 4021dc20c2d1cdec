"""Dask execution for ``ltr sweep --executor dask`` (a LocalCluster, or ``--scheduler``).

Results are collected as each task finishes; a task Dask gives up on (its workers died
``distributed.scheduler.allowed-failures`` times) or cannot run is a failed run. Scheduler
addresses are checked before connecting, and connection problems are one line.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ltr_cli.errors import LtrError
from ltr_cli.sweep.tasks import ExecutorOptions, Task, _lost, one_line, run_group

_ADDRESS = re.compile(r"(?:(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*)://)?(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9_.-]+):(?P<port>[^/:]*)/?")
_SCHEMES = ("tcp", "tls", "ws", "wss", "ucx")


def check_scheduler_address(address: str) -> str:
    """``address`` if it looks like a Dask scheduler address (``tcp://HOST:PORT``; the
    scheme may be omitted, or be tls, ws, wss or ucx), else a one-line error."""
    m = _ADDRESS.fullmatch(address.strip())
    problem = None
    if m is None:
        problem = "not an address of the form tcp://HOST:PORT"
    elif m["scheme"] and m["scheme"].lower() not in _SCHEMES:
        problem = f"unknown protocol {m['scheme']!r} (use {', '.join(_SCHEMES)})"
    elif not m["port"].isdigit() or not 0 < int(m["port"]) < 65536:
        problem = f"the port {m['port']!r} is not a number from 1 to 65535"
    if problem:
        raise LtrError(f"--scheduler {address!r}: {problem}; give the address the Dask scheduler "
                       "prints, e.g. tcp://10.0.0.5:8786")
    return address.strip()


_SILENT = 51  # above logging.CRITICAL: nothing is printed


@contextmanager
def _quiet_dask_logs() -> Iterator[None]:
    """Silence distributed's own log lines (a dead worker is reported by the sweep itself),
    here and in the worker processes a local cluster starts (they read the level from the
    environment when they import distributed)."""
    import logging
    import os

    key = "DASK_LOGGING__DISTRIBUTED"
    saved = os.environ.get(key)
    os.environ[key] = str(_SILENT)
    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
               if name == "distributed" or name.startswith("distributed.")]
    loggers.append(logging.getLogger("distributed"))
    old = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(_SILENT)
    try:
        yield
    finally:
        for lg, level in zip(loggers, old):
            lg.setLevel(level)
        if saved is None:
            os.environ.pop(key, None)
        else:
            os.environ[key] = saved


def _dask_failure(exc: BaseException) -> str:
    from distributed import KilledWorker

    if isinstance(exc, KilledWorker):
        tries = getattr(exc, "allowed_failures", None)
        last = getattr(exc, "last_worker", None)
        where = getattr(last, "address", None) or ""
        attempts = f"{tries + 1} attempt{'s' if tries else ''}" if isinstance(tries, int) else "retries"
        return one_line(f"the Dask worker computing this run died ({attempts}"
                         f"{', last on ' + where if where else ''}; out of memory or killed?); re-run "
                         "the sweep to retry it (it resumes from its last checkpoint)")
    return one_line(f"{type(exc).__name__}: {exc}")


def _gather(client: Any, units: list[list[Task]], out: str, where: str) -> list[dict[str, Any]]:
    """Submit every unit (a task, or tasks that share a stream); collect each result as soon
    as it is ready (so a worker dying later cannot lose it). The runs of a unit Dask gave
    up on (its workers died) that were not written are failed runs."""
    from concurrent.futures import CancelledError

    from distributed import as_completed

    futures = {client.submit(run_group, unit, out, pure=False): i for i, unit in enumerate(units)}
    results: list[list[dict[str, Any]] | None] = [None] * len(units)
    try:
        for fut in as_completed(futures):
            i = futures[fut]
            try:
                # waits if the result was lost with a worker that died since (Dask recomputes
                # it, which finds the runs complete); run_group itself never raises
                results[i] = fut.result()
            except CancelledError:
                raise LtrError(f"{where}: run {units[i][0].key} was cancelled (the connection to the "
                               "scheduler was lost?); finished runs are kept: re-run the sweep to do "
                               "the rest") from None
            except Exception as exc:  # Dask gave up on it (KilledWorker) or could not run it
                results[i] = [_lost(task, out, _dask_failure(exc)) for task in units[i]]
            fut.release()
    except LtrError:
        raise
    except (Exception, CancelledError) as exc:
        raise LtrError(f"{where}: lost the connection while the sweep was running ({one_line(str(exc), 200)}); "
                       "finished runs are kept: re-run the sweep to do the rest") from None
    return [r for unit in results if unit is not None for r in unit]


def run_dask(units: list[list[Task]], out: str, jobs: int, scheduler: str | None,
              connect_timeout: float) -> list[dict[str, Any]]:
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise LtrError("--executor dask needs Dask: pip install 'ltr-cli[distributed]'") from None
    with _quiet_dask_logs():
        if scheduler:
            address = check_scheduler_address(scheduler)
            where = f"--scheduler {address}"
            try:
                client = Client(address, timeout=connect_timeout)
            except Exception as exc:
                raise LtrError(f"{where}: cannot connect to a Dask scheduler there ({one_line(str(exc), 200)}); "
                               "check that the scheduler is running, that the host and port are right "
                               "and that this machine can reach it (firewall, VPN), or raise "
                               "--connect-timeout") from None
            with client:
                return _gather(client, units, out, where)
        where = "the local Dask cluster"
        import dask

        try:
            # one task per worker at a time (no queue on workers), so a worker that dies
            # takes only the run it was computing with it
            with dask.config.set({"distributed.scheduler.worker-saturation": 1.0}):
                cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True,
                                       dashboard_address=None, silence_logs=_SILENT)
        except Exception as exc:
            raise LtrError(f"cannot start a local Dask cluster of {jobs} workers ({one_line(str(exc), 200)}); "
                           "try --executor local") from None
        with cluster, Client(cluster) as client:
            return _gather(client, units, out, where)




def run(units: list[list[Task]], out: str, options: ExecutorOptions) -> list[dict[str, Any]]:
    """The ``dask`` executor."""
    return run_dask(units, out, options.jobs, options.scheduler, options.connect_timeout)
