"""Whole ``ltr`` processes timed by the benches that measure from outside (``--online``,
``--startup``)."""

from __future__ import annotations

import subprocess
import time

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
