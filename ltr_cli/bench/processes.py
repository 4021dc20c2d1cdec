"""Whole ``ltr`` processes timed by the benches that measure from outside (``--online``,
``--startup``)."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from ltr_cli.errors import LtrError


def timed_process(argv: list[str], env: dict[str, str] | None, what: str) -> float:
    """Wall seconds of the process ``argv``; a failing one stops the bench with one line,
    ``<what> failed: <its last line on stderr>`` (a learner that diverges on a given file,
    say)."""
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        said = lines[-1].removeprefix("ltr: error: ") if lines else f"exit status {done.returncode}"
        raise LtrError(f"{what} failed: {said}")
    return elapsed


def measured_process(argv: list[str], env: dict[str, str] | None, what: str,
                     cwd: Path | None = None, noise: tuple[str, ...] = ()) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of the process ``argv`` (run in ``cwd``, default this
    process's folder): its user and system time and that of the children it waited for
    (compile-ahead workers), as ``wait4`` reports them; a failing one stops the bench with
    one line, as :func:`timed_process` (its last line on stderr that is not one of
    ``noise``, lines the program prints whether or not it fails)."""
    import os
    import tempfile

    with tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err, env=env,
                                cwd=cwd)
        _, status, usage = os.wait4(proc.pid, 0)
        elapsed = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode != 0:
            err.seek(0)
            lines = [line for line in err.read().decode(errors="replace").splitlines()
                     if line.strip() and line.strip() not in noise]
            said = lines[-1].removeprefix("ltr: error: ") if lines else f"exit status {proc.returncode}"
            raise LtrError(f"{what} failed: {said}")
    return elapsed, usage.ru_utime + usage.ru_stime


def best(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    """The least disturbed: the shortest wall time and the least CPU, each over the processes."""
    return min(p[0] for p in pairs), min(p[1] for p in pairs)


def base_env() -> dict[str, str]:
    """This environment without LTR_KERNELS (the runs plan their path) and without
    PYTHONDONTWRITEBYTECODE: as on a usual install, ltr's modules keep their bytecode, so a
    warm process does not compile them from source again (numpy's and pandas' installed
    bytecode spares the imports that work either way)."""
    return {k: v for k, v in os.environ.items() if k not in ("LTR_KERNELS", "PYTHONDONTWRITEBYTECODE")}


def load_average() -> str:
    """The machine's load average, printed beside the figures."""
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"
