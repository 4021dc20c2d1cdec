"""Keeping a memory-mapped file's resident pages bounded while it is read through.

The compiled block loop reads a unit's rows from one read-only map of the cache's
``X.bin``. Pages a read brought in stay counted in the process's resident set until they
are unmapped or handed back, so a pass over a map of N bytes would end with N bytes
resident. :class:`MappedPages` counts the bytes read from the map and hands every page
back to the kernel (``madvise(MADV_DONTNEED)``) each time :data:`RELEASE_BYTES` more have
been read: the bytes stay in the page cache (a later read maps them again, without reading
the disk), and the process holds at most about twice :data:`RELEASE_BYTES` of the map at
any time, whatever the file's size. A map no larger than that is never handed back: all of
it resident is within the bound, and handing it back would only make every later pass
fault its pages in again. The bytes read are the same; only residency changes.
"""

from __future__ import annotations

import mmap

RELEASE_BYTES = 64 << 20  # bytes of a map read between two hand-backs (and per compiled block)


class MappedPages:
    """The resident pages of one read-only map ``mm`` (see the module's docstring)."""

    def __init__(self, mm: mmap.mmap, limit: int | None = None):
        self._mm = mm
        self.limit = RELEASE_BYTES if limit is None else limit
        self._since = 0
        self.releases = 0
        try:
            self._small = len(mm) <= self.limit  # wholly resident within the bound
        except TypeError:  # a map that does not tell its size
            self._small = False

    def read(self, nbytes: int) -> None:
        """``nbytes`` more were read from the map: hand its pages back once past the limit
        (never for a map within the limit)."""
        self._since += nbytes
        if self._since >= self.limit and not self._small:
            self.release()

    def release(self) -> None:
        """Hand every page of the map back now (a no-op where madvise is missing)."""
        self._since = 0
        self.releases += 1
        try:
            self._mm.madvise(mmap.MADV_DONTNEED)
        except (AttributeError, OSError, ValueError):  # no madvise here, or the map is closed
            pass
