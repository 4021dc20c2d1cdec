"""Per-run lock files, so two workers (processes, Dask workers, two sweeps) never write
the same run directory.

``.<run-id>.lock`` is created with O_EXCL and holds ``host pid``. A lock whose process
is gone (same host, pid not alive) is stale and taken over; a live one means the run is
being written elsewhere.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path


class RunLocked(Exception):
    """The run is being computed by another live process."""


def _alive(pid: int) -> bool:
    """True if ``pid`` is a running process. A zombie (exited, not yet reaped - e.g. the
    killed workers of a killed sweep, when nobody reaps them) counts as dead."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (OSError, IndexError):
        return True  # no /proc (not Linux): trust the signal check


class RunLock:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.held = False

    def holder(self) -> tuple[str, int] | None:
        try:
            host, pid = self.path.read_text().split()
            return host, int(pid)
        except (OSError, ValueError):
            return None

    def is_held_elsewhere(self) -> bool:
        who = self.holder()
        if who is None:
            return False
        host, pid = who
        return host != socket.gethostname() or (pid != os.getpid() and _alive(pid))

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(2):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if self.is_held_elsewhere():
                    host, pid = self.holder() or ("?", 0)
                    raise RunLocked(f"{self.path.name}: held by pid {pid} on {host}") from None
                self.path.unlink(missing_ok=True)  # stale: its process is gone
                continue
            with os.fdopen(fd, "w") as fh:
                fh.write(f"{socket.gethostname()} {os.getpid()}\n")
            self.held = True
            return
        raise RunLocked(f"{self.path.name}: could not be acquired")

    def release(self) -> None:
        if self.held:
            self.path.unlink(missing_ok=True)
            self.held = False

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
