"""Per-run lock files, so two workers (processes, Dask workers, two sweeps) never write
the same run directory.

Design. ``.<run-id>.lock`` is held with ``flock(LOCK_EX)`` on an open descriptor of the
file. The kernel drops a flock when the holder's descriptor is closed, which includes the
process dying (SIGKILL, out-of-memory killer, ``os._exit``), so there is no staleness to
detect: a lock file left behind by a dead process is simply an unlocked file, and the next
taker locks it in place. (The previous design unlinked a "stale" file and created a new
one, which let two takers both believe they held the run.) The holder writes ``host pid``
into the file, for ``ltr sweep --status`` and error messages only; ownership is the flock.

Release unlinks the file while still holding the lock, then closes it. A taker that opened
the file just before that unlink would lock an orphaned inode, so after locking it checks
that the path still names the inode it locked and otherwise starts again. Hence at any
time at most one process holds the lock on the inode the path names.

Guarantees. At most one holder per run among processes taking these locks on one host, on
any local filesystem. Across hosts, only on a shared filesystem that enforces flock between
clients (NFSv4, or NFSv3 with its lock manager - Linux maps flock to whole-file POSIX locks
on NFS - CephFS, GPFS, Lustre mounted with ``flock``). A filesystem that refuses flock
(ENOLCK, EOPNOTSUPP) is reported as an error; one that accepts it but enforces it only per
client (NFS mounted ``nolock`` or ``local_lock=flock``) gives no protection between hosts:
run a sweep's workers on one host there. On NFS a dead client's lock is released when its
lease expires (about 90 s), not at once. Deleting a lock file by hand while its run is
being computed defeats the lock; it is never necessary.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import stat
import time
from pathlib import Path

#: How long ``acquire`` keeps trying a lock that is held. ``is_held_elsewhere`` (used by
#: ``ltr sweep --status``) holds a shared lock for microseconds while it probes; a worker
#: that meets such a probe tries again instead of reporting the run as taken.
CONTENTION_WAIT = 0.5


class RunLocked(Exception):
    """The run is being computed by another live process."""


class LockUnavailable(Exception):
    """The lock file cannot be created or locked (permissions, no flock on this filesystem)."""


def _open_regular(path: Path) -> int | None:
    """A read-only descriptor of ``path`` if it is a regular file (never a FIFO, device or
    symlink, which could block or point anywhere), else None. Never creates anything."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return fd
    except OSError:
        pass
    os.close(fd)
    return None


class RunLock:
    def __init__(self, path: Path):
        self.path = Path(path)
        self.held = False
        self._fd: int | None = None

    def holder(self) -> tuple[str, int] | None:
        """``(host, pid)`` written by the last process that took the lock (it may be gone:
        use :meth:`is_held_elsewhere` to know whether the lock is held)."""
        fd = _open_regular(self.path)
        if fd is None:
            return None
        try:
            data = os.read(fd, 512)
        except OSError:
            return None
        finally:
            os.close(fd)
        try:
            host, pid = data.decode().split()
            return host, int(pid)
        except ValueError:
            return None

    def is_held_elsewhere(self) -> bool:
        """True if another process (or another ``RunLock`` of this process) holds the lock.
        Read-only: it creates nothing and changes no file."""
        if self.held:
            return False
        fd = _open_regular(self.path)
        if fd is None:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        except OSError:
            return False  # no flock on this filesystem: acquire() reports it
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return False
        finally:
            os.close(fd)

    def acquire(self, wait: float = CONTENTION_WAIT) -> None:
        """Take the lock or raise :class:`RunLocked` (a live process holds it) or
        :class:`LockUnavailable` (the file cannot be created or locked)."""
        if self.held:
            return
        deadline = time.monotonic() + wait
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise LockUnavailable(f"{self.path.parent}: cannot create the folder ({exc.strerror or exc})") from None
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
            except FileNotFoundError:  # a failed run just removed the (empty) folder: make it again
                if time.monotonic() >= deadline:
                    raise LockUnavailable(f"{self.path.parent}: the folder keeps disappearing") from None
                self.path.parent.mkdir(parents=True, exist_ok=True)
                continue
            except OSError as exc:
                raise LockUnavailable(f"{self.path.name}: cannot open the lock file ({exc.strerror or exc})") from None
            try:
                if not stat.S_ISREG(os.fstat(fd).st_mode):
                    raise LockUnavailable(f"{self.path.name}: is not a regular file; remove it")
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                if time.monotonic() >= deadline:
                    host, pid = self.holder() or ("?", 0)
                    who = f"pid {pid} on {host}" if pid else "another process"
                    raise RunLocked(f"{self.path.name}: held by {who}") from None
                time.sleep(0.01)
                continue
            except LockUnavailable:
                os.close(fd)
                raise
            except OSError as exc:
                os.close(fd)
                if exc.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL):
                    raise LockUnavailable(
                        f"{self.path}: this filesystem does not support file locks (flock); put the "
                        "results on a local disk or a filesystem with working locks") from None
                raise LockUnavailable(f"{self.path.name}: cannot lock ({exc.strerror or exc})") from None
            try:
                here = os.stat(self.path, follow_symlinks=False)
                mine = os.fstat(fd)
                same = (here.st_dev, here.st_ino) == (mine.st_dev, mine.st_ino)
            except FileNotFoundError:
                same = False
            if not same:  # the previous holder released (and unlinked) it meanwhile: again
                os.close(fd)
                continue
            try:
                os.ftruncate(fd, 0)
                os.write(fd, f"{socket.gethostname()} {os.getpid()}\n".encode())
            except OSError:
                pass  # the content is informational; the flock is the lock
            self._fd = fd
            self.held = True
            return

    def release(self) -> None:
        if not self.held:
            return
        try:
            self.path.unlink(missing_ok=True)  # while still locked: no one else holds this inode
        except OSError:
            pass
        finally:
            if self._fd is not None:
                os.close(self._fd)
            self._fd = None
            self.held = False

    def __enter__(self) -> "RunLock":
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
