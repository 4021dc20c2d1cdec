"""Where numba keeps the compiled kernels between runs.

numba writes its cache beside the sources (``__pycache__`` in the package) when it can.
A read-only install (a system site-packages, a container image) cannot; numba would then
try the user's cache directory and, with no writable HOME either, fail with a traceback.
:func:`configure` runs before numba is imported and picks, in order:

1. ``NUMBA_CACHE_DIR`` if the user set it;
2. the package's own directories, if writable (numba's default);
3. ``$XDG_CACHE_HOME/ltr-cli/numba`` or ``~/.cache/ltr-cli/numba``;
4. a private ``ltr-cli-numba-<uid>`` directory in the system temp directory, only if it
   is ours and closed to other users (numba's index files are pickles: a cache directory
   someone else can write would let them run code in our process);
5. otherwise no cache: kernels compile in every process, with one note on stderr.

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

CACHE = True  # False when no safe writable cache directory exists (kernels compile each run)
_configured = False


def _writable_dir(path: Path) -> bool:
    try:
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError:
        return False
    return path.is_dir() and os.access(path, os.W_OK | os.X_OK)


def _private(path: Path) -> bool:
    """Ours, a real directory, and not writable by group or others."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.getuid() and not st.st_mode & 0o022


def configure(package: Path | None = None, environ: dict[str, str] | None = None) -> str:
    """Choose numba's cache location (sets ``NUMBA_CACHE_DIR`` or :data:`CACHE`); returns
    a word saying which: ``user``, ``package``, ``user-cache``, ``temp`` or ``none``."""
    global CACHE, _configured
    env = os.environ if environ is None else environ
    package = package or Path(__file__).parent
    _configured = True
    sources = f"src-{sources_digest(package)}"
    if env.get("NUMBA_CACHE_DIR"):
        chosen = Path(env["NUMBA_CACHE_DIR"])
        if chosen.name != sources:  # (a child process inherits the parent's choice as is)
            env["NUMBA_CACHE_DIR"] = str(chosen / sources)
        return "user"
    if all(os.access(package / sub, os.W_OK | os.X_OK) for sub in ("kernels", "data")):
        env["NUMBA_CACHE_DIR"] = str(package / "__pycache__" / "numba" / sources)
        return "package"
    homes = []
    if env.get("XDG_CACHE_HOME"):
        homes.append(Path(env["XDG_CACHE_HOME"]))
    if env.get("HOME"):
        homes.append(Path(env["HOME"]) / ".cache")
    for base in homes:
        if _writable_dir(base / "ltr-cli" / "numba"):
            env["NUMBA_CACHE_DIR"] = str(base / "ltr-cli" / "numba" / sources)
            return "user-cache"
    temp = Path(tempfile.gettempdir()) / f"ltr-cli-numba-{os.getuid()}"
    if _writable_dir(temp) and _private(temp):
        env["NUMBA_CACHE_DIR"] = str(temp / sources)
        return "temp"
    CACHE = False
    print("ltr: note: no writable, private directory for numba's compiled-kernel cache (the "
          "package and HOME are read-only); kernels compile in every run. Set NUMBA_CACHE_DIR "
          "to a writable directory to keep them", file=sys.stderr)
    return "none"


#: The files whose code numba compiles, relative to the package.
COMPILED_SOURCES = ("kernels/*.py", "data/fastscan.py")


def sources_digest(package: Path) -> str:
    """16 hex digits of SHA-256 over the compiled code's sources (names and bytes);
    ``none`` when they cannot be read (a package without sources: nothing to compile)."""
    import hashlib

    digest = hashlib.sha256()
    files = sorted(p for pattern in COMPILED_SOURCES for p in package.glob(pattern))
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
