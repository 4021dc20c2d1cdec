"""The identity of a data file: what a run, a cache and a checkpoint record about the data
they were computed from, and how a change is noticed.

* **Stat key** ``{size, mtime_ns, ctime_ns, inode, device}``: cheap, and changed by every
  write, truncation or replacement. ``touch``/``utime`` can restore an mtime, not a ctime,
  and a file renamed into place has a new ctime (and usually a new inode).
* **Content digest**: XXH3-128 of every byte (``xxhash``; several GB/s, so a full hash
  costs a fraction of a parse). It decides whether data is *the same*: a file that was
  only touched, copied or moved keeps its digest.

:func:`file_identity` gives both (plus the resolved path). Comparisons of "same data" use
:func:`same_content` (path, size, digest); the stat key only decides whether the digest
must be computed again. A file is read as of a stat key taken before it was hashed and
read; :func:`check_unchanged` compares it afterwards, so a file that changed while it was
being read is an error, never half of one file and half of another.
"""

from __future__ import annotations

import os
import stat as stat_mod
from pathlib import Path
from typing import Any

import xxhash

from ltr_cli.errors import LtrError
from ltr_cli.pathnames import tried

_CHUNK = 1 << 24
DIGEST = "xxh3_128"


class DataChanged(LtrError):
    """A data file changed while it was being read, or since a run recorded it."""


def require_regular(path: Path, what: str = "data file") -> os.stat_result:
    """stat of ``path``; one-line error unless it is a regular file (devices, FIFOs,
    sockets and directories are refused before anything reads them)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise LtrError(f"{path}: no such {what} (tried {tried(path)})") from None
    if not stat_mod.S_ISREG(st.st_mode):
        kind = "a directory" if stat_mod.S_ISDIR(st.st_mode) else "not a regular file (device, FIFO or socket)"
        raise LtrError(f"{path}: the {what} is {kind}; give a regular file")
    return st


def stat_key(path: Path) -> dict[str, int]:
    """Size, mtime, ctime, inode and device of a regular file."""
    st = require_regular(path)
    return {"size": st.st_size, "mtime_ns": st.st_mtime_ns, "ctime_ns": st.st_ctime_ns,
            "inode": st.st_ino, "device": st.st_dev}


def content_digest(path: Path) -> str:
    """XXH3-128 (hex) of every byte of ``path``."""
    h = xxhash.xxh3_128()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def file_identity(path: Path) -> dict[str, Any]:
    """``{path, size, xxh3_128, stat}`` of ``path``, hashed between two stat calls (a file
    written meanwhile raises :class:`DataChanged`)."""
    before = stat_key(path)
    digest = content_digest(path)
    check_unchanged(path, before)
    return {"path": str(Path(path).resolve()), "size": before["size"], DIGEST: digest, "stat": before}


def check_unchanged(path: Path, before: dict[str, int]) -> None:
    """Raise :class:`DataChanged` if ``path``'s stat key is no longer ``before``."""
    try:
        now = stat_key(path)
    except LtrError:
        now = None
    if now != before:
        raise DataChanged(f"{path}: the file changed while it was being read; run again once "
                          "nothing is writing it")


def same_content(a: Any, b: Any) -> bool:
    """True if two identities (or lists/dicts of them) name the same bytes at the same
    paths; stat fields are ignored."""
    if isinstance(a, dict) and isinstance(b, dict):
        if DIGEST in a or DIGEST in b:
            return all(a.get(k) == b.get(k) for k in ("path", "size", DIGEST))
        return a.keys() == b.keys() and all(same_content(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_content(x, y) for x, y in zip(a, b))
    return a == b


class NotSmallFile(OSError):
    """A state file that is not a plain file of the expected size (the message says which)."""


def read_small_file(path: Path, limit: int) -> bytes:
    """The bytes of a file of at most ``limit`` bytes, opened without following a link and
    without blocking: a FIFO or a device is refused, never read (:class:`NotSmallFile`);
    an OSError of opening it propagates."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as fh:
        if not stat_mod.S_ISREG(os.fstat(fd).st_mode):
            raise NotSmallFile(f"{path.name} is not a plain file")
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise NotSmallFile(f"{path.name} is larger than expected")
    return data
