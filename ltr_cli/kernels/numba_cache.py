"""Where numba keeps the compiled kernels between runs.

numba's cache index files are pickles: whoever can write the cache directory, or replace
any directory on the way to it, runs code in every later ``ltr`` process that loads it.
So a cache directory is used only when it is *private*: it and every directory above it
(checked with ``lstat``, symlinks followed to their targets, which are checked the same
way) are owned by the current user or root, and none is writable by group or others,
except a sticky directory such as ``/tmp`` (others cannot replace an entry in it that is
not theirs). :func:`configure` runs before numba is imported and picks the first private
one of:

1. ``NUMBA_CACHE_DIR`` if the user set it;
2. the package's own ``__pycache__`` (numba's default), if writable;
3. ``$XDG_CACHE_HOME/ltr-cli/numba`` or ``~/.cache/ltr-cli/numba``;
4. a ``ltr-cli-numba-<uid>`` directory in the system temp directory;
5. otherwise a fresh private temporary directory for this process (removed at exit), with
   one note on stderr: kernels are compiled, never loaded from a place others could write.

Inside that place the cache lives in a folder named by a digest of the compiled code's
sources (:data:`COMPILED_SOURCES`). numba checks a cached function against its own source
file only, yet a kernel carries the code of the kernels it calls (and the constants of
``kernels/codes.py``) from other files: after an edit to one of those, the callers' cached
code would be stale. With the digest, any change to any of them compiles everything anew.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile
from pathlib import Path

CACHE = True  # numba's cache=True: there is always a private directory (at worst a fresh one)
_configured = False
_OWNED_TEMP: tuple[int, str] | None = None  # (pid, path) of the temporary directory this process made


def _writable_dir(path: Path) -> bool:
    """Create ``path`` and any missing parent with mode 0700; whether it is a writable dir."""
    missing = []
    at = Path(os.path.abspath(path))
    while not os.path.lexists(at) and at != at.parent:
        missing.append(at)
        at = at.parent
    try:
        for folder in reversed(missing):
            folder.mkdir(mode=0o700, exist_ok=True)
    except OSError:
        return False
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


def private(path: Path, leaf: bool = True, _depth: int = 0) -> bool:
    """``path`` is a directory that only this user (or root) can change, nor replace: it is
    ours and closed to group and others, and so is every directory above it (a sticky one,
    like /tmp, may be open: others cannot rename what is ours in it); a symlink on the way is
    followed and its target checked the same way. ``leaf=False``: ``path`` is a directory to
    create the cache in, so it may itself be root's and sticky, like /tmp."""
    if _depth > 8:
        return False
    me = os.getuid()
    path = Path(os.path.abspath(path))
    parts = path.parts
    current = Path(parts[0])
    try:
        root = os.lstat(current)
    except OSError:
        return False
    if root.st_uid not in (me, 0) or (root.st_mode & 0o022 and not root.st_mode & stat.S_ISVTX):
        return False
    for i, name in enumerate(parts[1:], start=1):
        parent_sticky_open = _open_but_sticky(current)
        current = current / name
        try:
            st = os.lstat(current)
        except OSError:
            return False
        if stat.S_ISLNK(st.st_mode):
            if parent_sticky_open and st.st_uid not in (me, 0):  # someone else's link in /tmp
                return False
            target = Path(os.path.realpath(current)).joinpath(*parts[i + 1:])
            return private(target, leaf, _depth + 1)
        if not stat.S_ISDIR(st.st_mode) or st.st_uid not in (me, 0):
            return False
        if st.st_mode & 0o022 and not (st.st_mode & stat.S_ISVTX and (i < len(parts) - 1 or not leaf)):
            return False  # others could replace what is inside (the cache itself: never open)
    if not leaf:
        return True
    try:
        return os.lstat(path).st_uid == me
    except OSError:
        return False


def _open_but_sticky(path: Path) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return bool(st.st_mode & 0o022 and st.st_mode & stat.S_ISVTX)


def _private_dir(path: Path) -> bool:
    """Create ``path`` (mode 0700) if the directories it would be created in are private;
    whether it then is writable and :func:`private`."""
    existing = Path(os.path.abspath(path))
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    return private(existing, leaf=False) and _writable_dir(path) and private(path)


def _remove_owned_temp() -> None:
    """At exit: the temporary cache directory this process made (not a child's inherited one)."""
    import shutil

    if _OWNED_TEMP is not None and _OWNED_TEMP[0] == os.getpid():
        shutil.rmtree(_OWNED_TEMP[1], ignore_errors=True)


def configure(package: Path | None = None, environ: dict[str, str] | None = None) -> str:
    """Choose numba's cache location (sets ``NUMBA_CACHE_DIR``); returns a word saying
    which: ``user``, ``package``, ``user-cache``, ``temp`` or ``private-temp``."""
    global _configured, _OWNED_TEMP
    env = os.environ if environ is None else environ
    package = package or PACKAGE
    _configured = _configured or environ is None  # another environment (a test) is not this process's
    sources = f"src-{sources_digest(package)}"
    candidates: list[tuple[str, Path]] = []
    if env.get("NUMBA_CACHE_DIR"):
        chosen = Path(env["NUMBA_CACHE_DIR"])  # a child process inherits the parent's choice as is
        candidates.append(("user", chosen if chosen.name == sources else chosen / sources))
    if all(os.access(package / sub, os.W_OK | os.X_OK) for sub in ("kernels", "data")):
        candidates.append(("package", package / "__pycache__" / "numba" / sources))
    if env.get("XDG_CACHE_HOME"):
        candidates.append(("user-cache", Path(env["XDG_CACHE_HOME"]) / "ltr-cli" / "numba" / sources))
    if env.get("HOME"):
        candidates.append(("user-cache", Path(env["HOME"]) / ".cache" / "ltr-cli" / "numba" / sources))
    candidates.append(("temp", Path(tempfile.gettempdir()) / f"ltr-cli-numba-{os.getuid()}" / sources))
    for word, place in candidates:
        if private(place) or (not place.exists() and _private_dir(place)):
            env["NUMBA_CACHE_DIR"] = str(place)
            return word
    temp = tempfile.mkdtemp(prefix="ltr-cli-numba-")  # mode 0700, a new name
    env["NUMBA_CACHE_DIR"] = temp
    if _OWNED_TEMP is None:
        import atexit

        atexit.register(_remove_owned_temp)
    _OWNED_TEMP = (os.getpid(), temp)
    print(f"ltr: note: no private directory for numba's compiled-kernel cache ({candidates[0][1]} and the "
          "others are missing, not writable or open to other users); kernels compile into a "
          "temporary directory for this run. Set NUMBA_CACHE_DIR to a directory only you can write",
          file=sys.stderr)
    return "private-temp"


#: The ``ltr_cli`` package folder (this module lives in its ``kernels/``).
PACKAGE = Path(__file__).resolve().parents[1]

#: The files whose code numba compiles, relative to the package.
COMPILED_SOURCES = ("kernels/*.py", "data/fastscan.py")

#: Modules of ``kernels/`` that hold no compiled code (where the cache is, what was compiled).
NOT_COMPILED = ("numba_cache.py", "compile_watch.py")


def sources_digest(package: Path) -> str:
    """16 hex digits of SHA-256 over the compiled code's sources (names and bytes);
    ``none`` when they cannot be read (a package without sources: nothing to compile)."""
    import hashlib

    digest = hashlib.sha256()
    files = sorted(p for pattern in COMPILED_SOURCES for p in package.glob(pattern) if p.name not in NOT_COMPILED)
    try:
        for path in files:
            digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return "none"
    return digest.hexdigest()[:16] if files else "none"


def ensure() -> bool:
    """Configure once per process (before numba is imported); whether caching is on."""
    if not _configured:
        configure()
    return CACHE


def cached_functions(names: list[str]) -> dict[str, bool]:
    """For each ``module.function`` of the kernels (``loop.perceptron_block``), whether the
    kernel cache holds an index for it: numba keeps one ``<module>.<function>-<line>.pyXY.nbi``
    per cached function (its compiled signatures inside). Configures the cache directory
    but imports nothing of numba; an estimate: an index for other argument types still
    means a compile."""
    ensure()
    root = Path(os.environ.get("NUMBA_CACHE_DIR", ""))
    tag = f".py{sys.version_info.major}{sys.version_info.minor}.nbi"
    found: set[str] = set()
    if root.is_dir():
        for path in root.rglob(f"*{tag}"):
            found.add(path.name[:-len(tag)].rsplit("-", 1)[0])
    return {name: name in found for name in names}
