"""Which paths inside the checkout the test processes created: the suite's guard that it
leaves the working tree as it found it (tests/conftest.py), blaming only the tests.

An audit hook (:func:`sys.addaudithook`) in every test process records each path inside
``root`` that an ``open`` for writing, ``os.mkdir``, a rename or a link is about to create
(it did not exist yet), one line each in a shared log. The pytest process installs it
(:func:`install`); the Python processes the tests start inherit it through this folder's
``sitecustomize`` (``PYTHONPATH``, with ``LTR_TESTS_WRITES`` naming the log and
``LTR_TESTS_ROOT`` the checkout). At the end, :func:`left_behind` lists the recorded paths
that still exist. Whatever other processes write meanwhile (the user's own run writing into
``results/``) is never recorded, so never blamed.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable

LOG, ROOT = "LTR_TESTS_WRITES", "LTR_TESTS_ROOT"
#: tools' caches, kept anywhere in the checkout (and any hidden top-level entry)
IGNORED = frozenset({".git", ".venv", "__pycache__", ".pytest_cache", ".hypothesis", ".ruff_cache", ".mypy_cache",
                     ".numba-cache"})
_WRITING = os.O_WRONLY | os.O_RDWR | os.O_CREAT
_installed: list[str] = []


def created_path(event: str, args: tuple) -> str | None:
    """The path an audited operation may create (None: it creates none): ``open`` for
    writing, ``os.mkdir``, the target of ``os.rename`` / ``os.replace`` / ``os.symlink`` /
    ``os.link`` / ``shutil.copyfile``."""
    if event == "open":
        path, mode, flags = (tuple(args) + (None, None))[:3]
        if isinstance(mode, str):
            writing = any(c in mode for c in "wax+")
        else:
            writing = isinstance(flags, int) and bool(flags & _WRITING)
        target = path if writing else None
    elif event == "os.mkdir":
        target = args[0]
    elif event in ("os.rename", "os.replace", "os.symlink", "os.link", "shutil.copyfile"):
        target = args[1]
    else:
        return None
    if isinstance(target, bytes):
        target = os.fsdecode(target)
    return target if isinstance(target, str) or isinstance(target, os.PathLike) else None


def inside(root: str, path: str) -> str | None:
    """``path`` relative to ``root`` when it lies inside it and outside the ignored caches."""
    full = os.path.abspath(path)
    if full != root and not full.startswith(root + os.sep):
        return None
    rel = os.path.relpath(full, root)
    parts = rel.split(os.sep)
    if rel == "." or parts[0].startswith(".") or any(p in IGNORED or p.endswith(".egg-info") for p in parts):
        return None  # hidden entries of the checkout (.coverage, .tox, ...) and caches anywhere
    return rel


class Recorder:
    """The audit hook: appends to ``log`` every path inside ``root`` about to be created."""

    def __init__(self, root: str, log: str):
        self.root, self.log = os.path.abspath(root), log

    def __call__(self, event: str, args: tuple) -> None:
        if event not in _EVENTS:
            return
        try:
            path = created_path(event, args)
            rel = None if path is None else inside(self.root, os.fspath(path))
            if rel is None or os.path.lexists(os.path.join(self.root, rel)):
                return
            fd = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, (rel + "\n").encode("utf-8", "surrogateescape"))
            finally:
                os.close(fd)
        except Exception:  # a hook must never break the operation it watches
            pass


_EVENTS = frozenset({"open", "os.mkdir", "os.rename", "os.replace", "os.symlink", "os.link", "shutil.copyfile"})


def install(root: str, log: str) -> None:
    """Record this process's creations under ``root`` into ``log`` (once per process)."""
    if _installed:
        return
    _installed.append(log)
    sys.addaudithook(Recorder(root, log))


def recorded(log: str) -> list[str]:
    """The paths the log holds (relative to the root), in order, once each."""
    try:
        with open(log, encoding="utf-8", errors="surrogateescape") as f:
            return list(dict.fromkeys(line.rstrip("\n") for line in f if line.strip()))
    except FileNotFoundError:
        return []


def left_behind(root: str, created: Iterable[str]) -> list[str]:
    """The created paths that still exist, each once under its outermost created ancestor
    (a run folder, not every file in it), sorted."""
    still = sorted({p for p in created if os.path.lexists(os.path.join(root, p))})
    out: list[str] = []
    for p in still:
        if not any(p.startswith(q + os.sep) for q in out):
            out.append(p)
    return out
