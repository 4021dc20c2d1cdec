"""The background build's process (``python -m ltr_cli.runs.background_build``), started
by :func:`ltr_cli.runs.kernel_background.start`: at low priority, under the kernel cache's
build lock (handed over by the run, or waited for), it builds the families the cache still
lacks, its output going to the cache's :data:`~ltr_cli.runs.kernel_background.LOG`."""

from __future__ import annotations

import argparse
import fcntl
import os
import sys
from pathlib import Path
from typing import Any

from ltr_cli.runs.kernel_background import LOG, NICE, _open_lock

def _lower_priority(nice: int) -> None:
    try:
        os.nice(nice)
    except OSError:
        pass


def build(families: list[str], storages: list[str] | None, root: Path, say: Any) -> None:
    """Under the lock: build those of ``families`` the cache still lacks."""
    from ltr_cli import kernels
    from ltr_cli.runs import kernel_build
    from ltr_cli.runs.kernel_plan import uncached_families

    kernels.set_enabled(True)
    missing = set(uncached_families([f for f in families if f != kernel_build.EVALUATION]))
    still = [f for f in families if f in missing]
    if not still:
        say(f"ltr: kernels: {', '.join(families)}: cached meanwhile, nothing to build")
        return
    kernel_build.build(kernel_build.targets(still, work=root), say, storages=storages, work=root)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ltr_cli.runs.background_build")
    parser.add_argument("families", nargs="+")
    parser.add_argument("--storage", action="append", default=[])
    parser.add_argument("--lock-fd", type=int, default=None)
    parser.add_argument("--nice", type=int, default=NICE)
    args = parser.parse_args(argv)
    _lower_priority(args.nice)
    root = Path(os.environ["NUMBA_CACHE_DIR"])
    fd = args.lock_fd
    if fd is None:
        fd = _open_lock(root)
        fcntl.flock(fd, fcntl.LOCK_EX)  # another build holds it: wait
    log = os.open(root / LOG, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    os.dup2(log, 1)
    os.dup2(log, 2)
    os.close(log)
    say = lambda text: print(text, file=sys.stderr, flush=True)  # noqa: E731
    say(f"ltr: kernels: background build for a run on the reference path (pid {os.getpid()})")
    try:
        build(args.families, args.storage or None, root, say)
    except BaseException:
        import traceback

        traceback.print_exc()
        return 1
    finally:
        os.close(fd)
    return 0


if __name__ == "__main__":
    sys.exit(main())
