"""Where numba keeps the compiled kernels between runs.

numba's cache index files are pickles: whoever can write the cache directory, or replace
any directory on the way to it, runs code in every later ``ltr`` process that loads it.
So a cache directory is used only when it is *private* (:func:`resolve_private`): one walk
from the root resolves the path, looking at each component with ``lstat``, and every
directory and every symlink met on the way, behind other links too, must be the current
user's or root's; no directory may be writable by group or others, except a sticky one on
the way such as ``/tmp`` (others cannot replace an entry in it that is not theirs). numba
is handed the resolved path, which holds no link, so a link repointed after the check
changes nothing. :func:`configure` runs before numba is imported and picks the first
private one of:

1. ``NUMBA_CACHE_DIR`` if the user set it to an absolute path (a relative one, which would
   follow the working folder, is ignored with a note);
2. the package's own ``__pycache__`` (numba's default), if writable;
3. ``$XDG_CACHE_HOME/ltr-cli/numba`` or ``~/.cache/ltr-cli/numba`` (a relative
   ``XDG_CACHE_HOME`` or ``HOME`` is ignored, as the XDG base directory specification says);
4. a ``ltr-cli-numba-<uid>`` directory in the system temp directory (not one a relative
   ``TMPDIR`` names);
5. otherwise a fresh private temporary directory for this process (removed at exit), with
   one note on stderr: kernels are compiled, never loaded from a place others could write.

Inside that place (:data:`LAYOUT`) each kernel module keeps its compiled functions in a
folder of its own, named by the module and a digest of its source and of the sources of the
compiled modules it imports, directly or not (:func:`module_digest`). numba checks a cached
function against its own source file only, yet a kernel carries the code of the kernels it
calls (and the constants it reads) from other files: with the digest, editing a module
recompiles that module and the modules that import it, and nothing else. Editing one
family's kernel recompiles that family only; editing a primitive that every family calls
(``core.py``, ``measures.py``, ``codes.py``) recompiles them all. :func:`install_locator`
tells numba where these folders are (:mod:`ltr_cli.kernels._numba` calls it as numba is
imported); :func:`cached_function` answers, without numba, whether a kernel is there.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

CACHE = True  # numba's cache=True: there is always a private directory (at worst a fresh one)
_configured = False
_OWNED_TEMP: tuple[int, str] | None = None  # (pid, path) of the temporary directory this process made
_locator_installed = False


#: the most symlinks one resolution follows (as the kernel's ELOOP limit)
MAX_LINKS = 40


def _trusted(uid: int) -> bool:
    """Whether a file of owner ``uid`` is one only this user (or root) can change."""
    return uid in (os.getuid(), 0)


def resolve_private(path: Path, leaf: bool = True) -> Path | None:
    """The directory ``path`` names, every symlink on the way resolved, when only this user
    (or root) can change it or replace any directory on the way to it; else None.

    One walk from the root, component by component, each looked at with ``lstat``: a
    directory must be this user's or root's and closed to group and others, except a sticky
    one such as /tmp on the way (others cannot rename what is ours in it); a symlink must be
    this user's or root's too (a link of someone else's, say in /tmp, is refused wherever it
    is met, also behind another link), and its target is walked on in the same way. The
    result holds no symlink, so a link swapped after this check changes nothing: the caller
    uses the result, never ``path``. ``leaf=False``: ``path`` is a directory to create the
    cache in, so it may itself be root's and sticky, like /tmp; ``leaf=True``: it must be
    this user's and closed. A relative ``path`` is refused."""
    if not os.path.isabs(path):
        return None
    todo = list(reversed(Path(path).parts[1:]))  # the components still to walk, the next one last
    current = Path(Path(path).anchor)
    try:
        st = os.lstat(current)
    except OSError:
        return None
    if not _trusted(st.st_uid) or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
        return None
    links = 0
    while todo:
        name = todo.pop()
        if name in ("", "."):
            continue
        if name == "..":
            current = current.parent  # current holds no link: its parent is the real one
            continue
        at = current / name
        try:
            st = os.lstat(at)
        except OSError:
            return None
        if not _trusted(st.st_uid):
            return None  # someone else's directory or link: they could replace what is below it
        if stat.S_ISLNK(st.st_mode):
            links += 1
            try:
                target = os.readlink(at)
            except OSError:
                return None
            if links > MAX_LINKS:
                return None
            if os.path.isabs(target):
                current = Path(Path(target).anchor)
                todo.extend(reversed(Path(target).parts[1:]))
            else:
                todo.extend(reversed(Path(target).parts))
            continue
        if not stat.S_ISDIR(st.st_mode):
            return None
        last = not todo
        if st.st_mode & 0o022 and not (st.st_mode & stat.S_ISVTX and (not last or not leaf)):
            return None  # others could replace what is inside (the cache itself: never open)
        current = at
    if leaf:
        try:
            if os.lstat(current).st_uid != os.getuid():
                return None
        except OSError:
            return None
    return current


def private(path: Path, leaf: bool = True) -> bool:
    """Whether :func:`resolve_private` accepts ``path``."""
    return resolve_private(path, leaf) is not None


def _private_dir(path: Path) -> Path | None:
    """``path`` resolved (:func:`resolve_private`), created with mode 0700 under the
    deepest directory of it that exists if that one is private (the missing directories are
    made inside its resolved path; whatever stands there when that is done, made meanwhile or
    planted, is walked and checked again); None when it is not, or cannot be, a private
    directory."""
    existing = Path(path)
    missing: list[str] = []
    while not os.path.lexists(existing) and existing != existing.parent:
        missing.append(existing.name)
        existing = existing.parent
    base = resolve_private(existing, leaf=False)
    if base is None:
        return None
    try:
        for name in reversed(missing):
            base = base / name
            try:
                os.mkdir(base, 0o700)
            except FileExistsError:  # made meanwhile (another ltr process); checked below like the rest
                pass
    except OSError:
        return None
    return resolve_private(base)


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
    layout = LAYOUT
    candidates: list[tuple[str, Path]] = []
    if env.get("NUMBA_CACHE_DIR") and not os.path.isabs(env["NUMBA_CACHE_DIR"]):
        print(f"ltr: note: NUMBA_CACHE_DIR={env['NUMBA_CACHE_DIR']} is a relative path (it would name a folder of "
              "whichever directory ltr is started in); ignored: give an absolute path", file=sys.stderr)
    elif env.get("NUMBA_CACHE_DIR"):
        chosen = Path(env["NUMBA_CACHE_DIR"])  # a child process inherits the parent's choice as is
        candidates.append(("user", chosen if chosen.name == layout else chosen / layout))
    if all(os.access(package / sub, os.W_OK | os.X_OK) for sub in ("kernels", "data")):
        candidates.append(("package", package / "__pycache__" / "numba" / layout))
    # relative XDG_CACHE_HOME and HOME are ignored (the XDG base directory specification says so)
    if env.get("XDG_CACHE_HOME") and os.path.isabs(env["XDG_CACHE_HOME"]):
        candidates.append(("user-cache", Path(env["XDG_CACHE_HOME"]) / "ltr-cli" / "numba" / layout))
    if env.get("HOME") and os.path.isabs(env["HOME"]):
        candidates.append(("user-cache", Path(env["HOME"]) / ".cache" / "ltr-cli" / "numba" / layout))
    if not any(os.environ.get(name) and not os.path.isabs(os.environ[name]) for name in ("TMPDIR", "TEMP", "TMP")):
        candidates.append(("temp", Path(tempfile.gettempdir()) / f"ltr-cli-numba-{os.getuid()}" / layout))
    for word, place in candidates:
        resolved = resolve_private(place) if os.path.lexists(place) else _private_dir(place)
        if resolved is not None:
            env["NUMBA_CACHE_DIR"] = str(resolved)  # numba is handed the place as checked, links resolved
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

#: The cache's layout inside the chosen place: one folder per kernel module (see the docstring).
LAYOUT = "by-module"

#: Modules of ``kernels/`` that hold no compiled code (where the cache is, what was compiled).
NOT_COMPILED = ("numba_cache.py", "compile_watch.py")


@functools.lru_cache(maxsize=None)
def _origin(name: str) -> Path | None:
    """The source file of module ``name`` (its parent packages are imported, not it), or None."""
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError, AttributeError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    return Path(spec.origin).resolve()


def _is_package(name: str) -> bool:
    path = _origin(name)
    return path is not None and path.name == "__init__.py"


@functools.lru_cache(maxsize=None)
def _imports(name: str, path: Path, within: tuple[str, ...]) -> list[str]:
    """The modules ``name`` (source ``path``) imports from the packages ``within``, by
    absolute name: ``from P import x`` names the submodule ``P.x`` when P is a package that
    has one, else P. Nothing is imported but those packages."""
    import ast

    try:
        tree = ast.parse(path.read_bytes(), str(path))
    except (OSError, SyntaxError, ValueError):
        return []
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    inside = lambda module: any(module == top or module.startswith(top + ".") for top in within)  # noqa: E731
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names if inside(alias.name))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                up = parts[:len(parts) - node.level + 1]
                base = ".".join([*up, base] if base else up)
            if not base or not inside(base):
                continue
            if _is_package(base):
                found.extend(f"{base}.{alias.name}" if _origin(f"{base}.{alias.name}") else base
                             for alias in node.names)
            else:
                found.append(base)
    return found


def _follows(path: Path, root: Path) -> bool:
    """Whether an imported module's code may be compiled into its importer's: a module of
    ``kernels/`` (not :data:`NOT_COMPILED`), of ``core/`` (its constants are frozen into the
    compiled code), or of the importer's own top-level package."""
    kernels_dir = PACKAGE / "kernels"
    if path.parent == kernels_dir:
        return path.name not in NOT_COMPILED and path.name != "__init__.py"
    if path.parent == PACKAGE / "core":  # the codes kernels compile in as constants
        return path.name != "__init__.py"
    return root != PACKAGE and root.is_dir() and root in path.parents


def module_sources(name: str) -> list[tuple[str, Path]]:
    """Module ``name`` and every module whose compiled code it may carry: the modules it
    imports, directly or not, that :func:`_follows` admits; sorted by name."""
    first = _origin(name)
    if first is None:
        return []
    top_name = name.partition(".")[0]
    top = _origin(top_name) if "." in name else first
    root = top.parent if top is not None and top.name == "__init__.py" else first
    # the kernels and the constants they compile in (ltr_cli.core.codes: numba freezes globals)
    within = ("ltr_cli.kernels", "ltr_cli.core") if top_name == "ltr_cli" else ("ltr_cli.kernels", "ltr_cli.core",
                                                                               top_name)
    seen = {name: first}
    todo = [name]
    while todo:
        current = todo.pop()
        for imported in _imports(current, seen[current], within):
            if imported in seen:
                continue
            path = _origin(imported)
            if path is not None and _follows(path, root):
                seen[imported] = path
                todo.append(imported)
    return sorted(seen.items())


@functools.lru_cache(maxsize=None)
def module_digest(name: str) -> str:
    """16 hex digits of SHA-256 over :func:`module_sources` (names and bytes); ``none``
    when module ``name`` has no readable source."""
    digest = hashlib.sha256()
    sources = module_sources(name)
    try:
        for module, path in sources:
            digest.update(module.encode() + b"\0" + path.read_bytes() + b"\0")
    except OSError:
        return "none"
    return digest.hexdigest()[:16] if sources else "none"


def module_cache_dir(name: str) -> Path:
    """Where the kernels of module ``name`` are cached (under ``NUMBA_CACHE_DIR``)."""
    ensure()
    return Path(os.environ.get("NUMBA_CACHE_DIR", "")) / f"{name}-{module_digest(name)}"


def ensure() -> bool:
    """Configure once per process (before numba is imported); whether caching is on."""
    if not _configured:
        configure()
    return CACHE


def cached_function(ref: str) -> bool:
    """Whether the kernel cache holds an index for kernel ``module:function`` (say
    ``ltr_cli.kernels.perceptron:perceptron_block``) as its module is now: numba keeps one
    ``<file>.<function>-<line>.pyXY.nbi`` per cached function (its compiled signatures
    inside) in the module's folder. Configures the cache directory but imports neither numba
    nor the module; an estimate: an index for other argument types still means a compile."""
    module, _, function = ref.partition(":")
    folder = module_cache_dir(module)
    tag = f".py{sys.version_info.major}{sys.version_info.minor}.nbi"
    return folder.is_dir() and any(path.name.endswith(tag) for path in folder.glob(f"*.{function}-*{tag}"))


def install_locator() -> None:
    """Make numba keep every cached function in its module's folder (:func:`module_cache_dir`);
    once per process, as numba is imported (this imports numba's caching module)."""
    global _locator_installed
    if _locator_installed:
        return
    from numba.core import caching

    class _ByModule(caching._SourceFileBackedLocatorMixin, caching._CacheLocator):
        """A function of module M is cached in M's folder, named by M's digest."""

        def __init__(self, py_func: Any, py_file: str):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            self._cache_path = str(module_cache_dir(py_func.__module__))

        def get_cache_path(self) -> str:
            return self._cache_path

        @classmethod
        def from_function(cls, py_func: Any, py_file: str) -> Any:
            name = getattr(py_func, "__module__", None)
            if not os.environ.get("NUMBA_CACHE_DIR") or not name or module_digest(name) == "none":
                return None  # numba's own locators decide
            return super().from_function(py_func, py_file)

    caching.CacheImpl._locator_classes.insert(0, _ByModule)
    _locator_installed = True
