"""Compiling in the background the kernels a run went without.

When ``ltr run`` (planned ``auto``) takes the reference path only because the kernel cache
is cold (:attr:`~ltr_cli.runs.kernel_plan.KernelPlan.background`: with the kernels cached,
the compiled path would have been the cheaper), :func:`start` launches a detached process
at the lowest CPU priority that does what ``ltr kernels build --family F`` does for those
families only, with the run's row type (:mod:`ltr_cli.runs.background_build`). The run itself goes on, on the reference path, and
writes the same bytes as ever; the next run of that size finds the kernels cached and takes
the compiled path.

The process writes into the kernel cache only: the build's scratch results go to a
temporary folder inside it (removed when done), its working directory is the cache, and
its output goes to :data:`LOG` there. A lock file in the cache (:data:`LOCK`, held with
``flock``) lets one build compile at a time: the run takes the lock before it starts the
process and hands it over (so a waiter never sees the lock free before the build began);
when another build holds it, the new process waits for it, then builds only the families
still missing. :func:`wait` blocks until no build holds the lock (the tests, ``ltr bench``).
``LTR_KERNELS_BACKGROUND=0`` turns the background build off; nothing is started where the
kernel cache is a temporary directory of the run's own (removed when the run ends).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ltr_cli.core.children import PYTHON

LOCK = "build.lock"
LOG = "background-build.log"
SWITCH = "LTR_KERNELS_BACKGROUND"
NICE = 19  # the lowest priority: the build runs on CPU nothing else wants
_STARTED: list[subprocess.Popen[bytes]] = []  # kept so that no "still running" warning is given at exit


def enabled() -> bool:
    """Whether a reference-path run may start a background build (``LTR_KERNELS_BACKGROUND``,
    on unless 0, false, no or off)."""
    return os.environ.get(SWITCH, "1").strip().lower() not in ("0", "false", "no", "off")


def cache_root() -> Path | None:
    """The kernel cache a build would fill, or None when it is the run's own temporary
    directory (gone when the run ends) or caching is off."""
    from ltr_cli.kernels import numba_cache

    if not numba_cache.ensure() or numba_cache._OWNED_TEMP is not None:
        return None
    root = os.environ.get("NUMBA_CACHE_DIR")
    return Path(root) if root and Path(root).is_dir() else None


def _open_lock(root: Path) -> int:
    return os.open(root / LOCK, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)


def start(families: list[str], storages: list[str]) -> list[str]:
    """Start the background build of ``families`` (rows stored as ``storages``); the
    families it will build (none when it is off, or cannot be started)."""
    root = cache_root() if families and enabled() else None
    if root is None:
        return []
    try:
        fd = _open_lock(root)
    except OSError:
        return []
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            handed = True
        except BlockingIOError:  # another build is running: the new one waits for it
            handed = False
        command = [*PYTHON, "-m", "ltr_cli.runs.background_build", "--nice", str(NICE)]
        command += [arg for storage in storages for arg in ("--storage", storage)]
        command += ["--lock-fd", str(fd)] if handed else []
        try:
            _STARTED.append(subprocess.Popen(
                [*command, *families], cwd=root, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True, pass_fds=(fd,) if handed else (),
                env={**os.environ, "NUMBA_CACHE_DIR": str(root)}))
        except OSError:
            return []
    finally:
        os.close(fd)  # a handed lock stays held by the build's copy of the descriptor
    return list(families)


def wait(timeout: float = 600.0, root: Path | None = None) -> bool:
    """Block until no background build holds the kernel cache's lock (at most ``timeout``
    seconds); whether it was free in time."""
    root = root or cache_root()
    if root is None or not (root / LOCK).exists():
        return True
    fd = _open_lock(root)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return True
            except BlockingIOError:
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.1)
    finally:
        os.close(fd)


@contextlib.contextmanager
def holding(say: Callable[[str], None]) -> Iterator[None]:
    """Hold the kernel cache's build lock for a build in this process (``ltr kernels build``),
    waiting, with one line through ``say``, while a background build holds it."""
    root = cache_root()
    if root is None:
        yield
        return
    fd = _open_lock(root)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"ltr: kernels: waiting for the background build that holds {root / LOCK} ...")
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
