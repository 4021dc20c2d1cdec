"""Kernels compiled ahead of time: which numba kernels the package build compiles into one
extension module, and how a run finds them without importing numba.

Installing the package (``pip install .`` or ``-e .``) compiles the kernels named in
:data:`EXPORTS` with numba's ahead-of-time compiler into the extension module
``ltr_cli.kernels._ahead`` (:mod:`ltr_cli.kernels.ahead_build`, run by ``setup.py``), for
the argument types a run passes them: the online block families, the per-round kernels
(regret logging, the click learners), the SVMlight and score-file scanners, and the
evaluation kernels (``ltr eval``, CV tables, held-out curves). A run then calls that machine code directly: numba is
not imported, nothing is compiled or loaded from the kernel cache. The kernel sources stay
the one definition: the extension is built from the very functions the just-in-time path
compiles, and both give the same bits (the compiled code is the same LLVM code, without
fast-math; ``tests/test_ahead.py`` compares them).

Three things send a call back to the just-in-time path (the kernel cache, as before):

* the extension is not there (the build could not compile it, or ``LTR_AHEAD=0``), or it
  was built on a machine with another CPU (it is compiled for the host CPU, as numba's
  kernels are, and a copy moved elsewhere could hold instructions that CPU lacks);
* it is stale: a kernel source it was built from has changed since (its sidecar
  ``_ahead.json`` keeps a digest of every source file each kernel carries), say after an
  edit in a checkout; ``ltr kernels build --ahead`` (or re-installing) builds it again; a
  sidecar that is damaged in any way (not a regular file, over :data:`SIDECAR_LIMIT` bytes,
  not JSON, nested deeper than :data:`SIDECAR_NESTING`) means not built
  (:func:`read_sidecar`), never an error;
* the arguments are not of a type it was built for (another row type, a strided array):
  :class:`AheadKernel` checks every argument's dtype, rank and layout before the call.

Argument types are written as numba writes them: ``f8[:, ::1]`` is a C-contiguous float64
matrix, ``f8[:, :]`` any float64 matrix, ``b1`` a bool, ``i8`` an int.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

MODULE = "ltr_cli.kernels._ahead"
SIDECAR = Path(__file__).with_name("_ahead.json")
SWITCH = "LTR_AHEAD"  # 0: never use the extension (the just-in-time path only)
SIDECAR_LIMIT = 1 << 20  # bytes of the sidecar read at most (the real one is a few KB)
SIDECAR_NESTING = 16  # the deepest nesting of its arrays and objects (the real one: 3)
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_BRACKET = re.compile(rb"[\[\]{}]")


def read_sidecar(path: Path) -> Any:
    """The JSON value of the sidecar ``path``, or None when it is missing, not a regular file
    (a FIFO is never waited on), over :data:`SIDECAR_LIMIT` bytes, nested deeper than
    :data:`SIDECAR_NESTING` (counted before it is parsed, so no parser recursion is ever
    deep) or not JSON."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            raw = f.read(SIDECAR_LIMIT + 1)
    except OSError:
        return None
    if len(raw) > SIDECAR_LIMIT:
        return None
    depth = deepest = 0
    for bracket in _BRACKET.finditer(_STRING.sub(b'""', raw)):
        depth += 1 if bracket.group() in (b"[", b"{") else -1
        deepest = max(deepest, depth)
        if deepest > SIDECAR_NESTING:
            return None
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _block(rows: str) -> tuple[str, ...]:
    """The block kernels' 30 arguments (:func:`ltr_cli.kernels.loop._driver`) for rows of
    ``rows`` (``f8`` or ``f4``): the outputs' columns may be views of the block buffers."""
    return (f"{rows}[:, ::1]", "f8[::1]", "i8[::1]", "i8[::1]", "i8[::1]",  # X, y, starts, ends, order
            "f8[:, ::1]", "f8[:, ::1]", "i8[::1]", "b1[::1]", "b1",  # W, P, t0, active, reverse
            "f8[:, ::1]", "f8[::1]", "b1[::1]", "b1[::1]",  # spec, disc, check_finite, nan_allowed
            "f8[:, :, :]", "b1[:, :]", "b1[:, :]", "b1[:, :]", "f8[:, :]", "i8[:, :]",  # values .. m
            "i8[::1]", "i8[::1]", "i8[::1]", "f8[::1]", "f8[::1]",  # ran, stop, nonfinite, s, out
            "b1[:, ::1]", "i8[::1]", "i8[:, ::1]", "f8[:, ::1]", "f8[:, ::1]")  # explore .. etas


def _scan(rows: str) -> tuple[str, ...]:
    """:func:`ltr_cli.data.fastscan.scan_block`'s arguments for rows of ``rows``."""
    return ("u1[::1]", "i8", "i8", "i8", f"{rows}[:, ::1]", "f8[::1]", "i8[::1]", "i8[::1]", "i8[::1]",
            "i8[::1]", "i8[::1]", "i8[:, ::1]", "i8", "f8")


@dataclass(frozen=True)
class Export:
    """One kernel built ahead: ``ref`` (``module:function``), its return type and one
    argument list per variant (numba's notation), exported as ``<function>_<i>``."""

    ref: str
    returns: str
    variants: tuple[tuple[str, ...], ...]

    @property
    def module(self) -> str:
        return self.ref.partition(":")[0]

    @property
    def function(self) -> str:
        return self.ref.partition(":")[2]

    def symbol(self, i: int) -> str:
        return f"{self.module.rpartition('.')[2]}_{self.function}_{i}"


BLOCKS = tuple(Export(ref, "none", (_block("f8"), _block("f4"))) for ref in (
    "ltr_cli.kernels.perceptron:perceptron_block",
    "ltr_cli.kernels.ogd:ogd_block",
    "ltr_cli.kernels.rtopkf:rtopkf_block",
    "ltr_cli.kernels.loop:random_block",
))
def _rows(*args: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A kernel's arguments for float64 and float32 rows (``X`` is written ``X``)."""
    return (tuple("f8[:, ::1]" if a == "X" else a for a in args), tuple("f4[:, ::1]" if a == "X" else a for a in args))


# the per-round kernels: learners that go round by round (logging their regret), the click
# learners (PDGD, DBGD/MGD and their interleaving, pairwise), scoring held-out rows
ROUNDS = (
    Export("ltr_cli.kernels.core:score_rank", "none", _rows("X", "f8[::1]", "b1", "f8[::1]", "i8[::1]")),
    Export("ltr_cli.kernels.core:row_scores_into", "none", _rows("X", "f8[::1]", "f8[::1]")),
    Export("ltr_cli.kernels.core:all_finite", "b1", (("f8[::1]",),)),
    Export("ltr_cli.kernels.measures:round_measures", "f8[::1]", (("i8[::1]", "f8[::1]", "f8[:, ::1]", "f8[::1]"),)),
    Export("ltr_cli.kernels.perceptron:perceptron_round", "Tuple((f8, f8, i8))",
           _rows("X", "f8[::1]", "i8[::1]", "f8[::1]", "f8[::1]", "f8[::1]", "i8", "f8[::1]", "f8[::1]", "i8")),
    Export("ltr_cli.kernels.ogd:ogd_round", "Tuple((f8, i8))",
           _rows("X", "f8[::1]", "f8[::1]", "f8[::1]", "f8[::1]", "i8", "f8[::1]")),
    Export("ltr_cli.kernels.rtopkf:rtopkf_round", "i8",
           _rows("X", "f8[::1]", "i8[::1]", "f8[::1]", "i8[::1]", "f8[::1]", "f8", "f8", "f8[::1]", "f8[::1]")),
    Export("ltr_cli.kernels.pdgd:pdgd_gradient", "b1", _rows("X", "f8[::1]", "i8[::1]", "f8[::1]", "f8[::1]")),
    Export("ltr_cli.kernels.interleave:team_draft", "none",
           (("i8[:, ::1]", "i8", "i8[:, ::1]", "i8[::1]", "i8[::1]"),)),
    Export("ltr_cli.kernels.interleave:shared_prefix", "i8", (("i8[:, ::1]", "i8"),)),
    Export("ltr_cli.kernels.interleave:probabilistic_draft", "none",
           (("i8[:, ::1]", "i8[:, ::1]", "f8[::1]", "i8[::1]", "f8[::1]", "i8[::1]"),)),
    Export("ltr_cli.kernels.interleave:sign_masses", "none", (("f8[:, ::1]", "i8", "f8[:, ::1]", "f8[:, ::1]"),)),
    Export("ltr_cli.kernels.interleave:shown_first", "none", (("i8[::1]", "i8[::1]", "i8[::1]"),)),
    Export("ltr_cli.kernels.interleave:epsilon_greedy", "none", (("i8[::1]", "i8[::1]", "b1[::1]", "i8[::1]"),)),
)
EXPORTS: tuple[Export, ...] = (
    *BLOCKS,
    Export("ltr_cli.data.fastscan:scan_block", "UniTuple(i8, 4)", (_scan("f8"), _scan("f4"))),
    Export("ltr_cli.data.fastscan:query_starts", "i8[::1]", (("u1[::1]", "i8[::1]", "i8[::1]", "i8", "u1[::1]"),)),
    # ltr eval, the CV tables, the held-out curves: score files and every query's measures
    Export("ltr_cli.data.fastscan:scan_scores", "UniTuple(i8, 4)", (("u1[::1]", "f8[::1]", "i8[:, ::1]", "i8"),)),
    Export("ltr_cli.kernels.evaluation:evaluate_queries", "Tuple((f8[:, ::1], b1[:, ::1]))",
           (("f8[::1]", "f8[::1]", "f8[::1]", "b1[::1]", "i8[::1]", "i8", "i8", "b1", "f8[::1]", "f8[::1]", "f8",
             "f8", "b1", "b1"),)),
    Export("ltr_cli.kernels.evaluation:stacked_measures", "f8[:, ::1]",
           (("f8[::1]", "f8[::1]", "i8[::1]", "i8", "f8[:, ::1]", "f8[:, ::1]"),)),
    *ROUNDS,
)
_BY_REF = {export.ref: export for export in EXPORTS}


# --- argument checks -------------------------------------------------------------------------

_DTYPES = {"f8": np.float64, "f4": np.float32, "i8": np.int64, "u1": np.uint8, "b1": np.bool_}


@dataclass(frozen=True)
class _Arg:
    dtype: np.dtype
    ndim: int  # 0: a scalar
    contiguous: bool  # C-contiguous required


def _parse(text: str) -> _Arg:
    """``f8[:, ::1]`` -> float64, 2 dimensions, C-contiguous; ``b1`` -> a bool scalar."""
    code, _, dims = text.partition("[")
    if not dims:
        return _Arg(np.dtype(_DTYPES[code]), 0, False)
    parts = [p.strip() for p in dims.rstrip("]").split(",")]
    return _Arg(np.dtype(_DTYPES[code]), len(parts), parts[-1] == "::1")


def _fits(arg: _Arg, value: Any) -> bool:
    if arg.ndim == 0:
        if arg.dtype == np.bool_:
            return isinstance(value, (bool, np.bool_))
        if arg.dtype.kind == "i":
            return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_))
        return isinstance(value, (float, int, np.floating, np.integer)) and not isinstance(value, (bool, np.bool_))
    return (isinstance(value, np.ndarray) and value.dtype == arg.dtype and value.ndim == arg.ndim
            and (not arg.contiguous or value.flags.c_contiguous) and value.dtype.isnative)


class AheadKernel:
    """A kernel built ahead, called like the numba function it was built from: the first
    variant whose argument types fit is called; when none fits, the just-in-time kernel
    (``fallback``, made on first need) runs instead. The compiled functions trust their
    arguments' types (a wrong one would crash the process), so every call is checked; the
    check of the variant that fitted last comes first, and costs a few attribute reads per
    argument."""

    def __init__(self, export: Export, functions: list[Callable[..., Any]], fallback: Callable[[], Any]):
        self.export = export
        self._variants = [([_parse(a) for a in args], fn) for args, fn in zip(export.variants, functions)]
        self._fallback = fallback
        self.__name__ = export.function
        self._last: tuple[int, tuple[tuple[int, np.dtype, int, bool], ...], tuple[int, ...], Callable[..., Any]] | None = None

    def variant(self, args: tuple[Any, ...]) -> Callable[..., Any] | None:
        """The built function for these arguments, or None."""
        _blas_without_scipy_linalg()  # before the first call (a later one finds it loaded)
        for specs, fn in self._variants:
            if len(specs) == len(args) and all(_fits(s, v) for s, v in zip(specs, args)):
                arrays = tuple((i, s.dtype, s.ndim, s.contiguous) for i, s in enumerate(specs) if s.ndim)
                scalars = tuple(i for i, s in enumerate(specs) if not s.ndim)
                self._last = (len(specs), arrays, scalars, fn)
                self._scalar_types = tuple(type(args[i]) for i in scalars)
                return fn
        return None

    def __call__(self, *args: Any) -> Any:
        last = self._last
        if last is not None and len(args) == last[0]:  # the fast check: the variant that fitted last
            for i, dtype, ndim, contiguous in last[1]:
                a = args[i]
                if (type(a) is not np.ndarray or a.dtype is not dtype or a.ndim != ndim
                        or (contiguous and not a.flags.c_contiguous)):
                    break
            else:
                if tuple(type(args[i]) for i in last[2]) == self._scalar_types:
                    return last[3](*args)
        fn = self.variant(args)
        if fn is None:
            return self._fallback()(*args)
        return fn(*args)


# --- finding the built extension ---------------------------------------------------------------

def source_digests(module: str) -> dict[str, str]:
    """Path (relative to the package) -> SHA-256 of every source file whose code a kernel of
    ``module`` carries (:func:`ltr_cli.kernels.numba_cache.module_sources`)."""
    from ltr_cli.kernels.numba_cache import PACKAGE, module_sources

    out = {}
    for _, path in module_sources(module):
        out[str(path.relative_to(PACKAGE.parent))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


def cpu_signature() -> str:
    """What the build was compiled for: the machine's architecture and, on Linux, a digest
    of the CPU's instruction-set flags (the extension is compiled for the host CPU, as
    numba's just-in-time compiler does: a copy moved to another CPU is not used)."""
    import platform

    flags = ""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as info:
            flags = next((line for line in info if line.startswith(("flags", "Features"))), "")
    except OSError:
        pass
    return f"{platform.machine()}-{hashlib.sha256(flags.encode()).hexdigest()[:16]}"


def _fresh(recorded: Any) -> bool:
    """Whether every file ``recorded`` names (path relative to the package's parent ->
    SHA-256) has that digest now; anything malformed is not fresh."""
    from ltr_cli.kernels.numba_cache import PACKAGE

    if not isinstance(recorded, dict) or not recorded:
        return False
    for rel, digest in recorded.items():
        if not isinstance(rel, str) or not isinstance(digest, str):
            return False
        try:
            if hashlib.sha256((PACKAGE.parent / rel).read_bytes()).hexdigest() != digest:
                return False
        except (OSError, ValueError):
            return False
    return True


_STATE: dict[str, Any] = {}


def _load() -> dict[str, Any]:
    """Once per process: ``{"module": the extension or None, "fresh": {module: bool},
    "why": a reason when it is not used}``."""
    if _STATE:
        return _STATE
    _STATE.update(module=None, fresh={}, why="")
    if os.environ.get(SWITCH, "1").strip().lower() in ("0", "false", "no", "off"):
        _STATE["why"] = f"{SWITCH}=0"
        return _STATE
    sidecar = read_sidecar(SIDECAR)
    if not isinstance(sidecar, dict) and not os.path.lexists(SIDECAR):
        _STATE["why"] = f"not built (no {SIDECAR.name})"
        return _STATE
    if not isinstance(sidecar, dict):
        _STATE["why"] = f"not built ({SIDECAR.name} is malformed: ltr kernels build --ahead)"
        return _STATE
    if sidecar.get("cpu") != cpu_signature():  # checked before the extension is loaded
        _STATE["why"] = "built for another CPU (ltr kernels build --ahead)"
        return _STATE
    spec = importlib.util.find_spec(MODULE)
    try:  # a damaged or replaced extension would crash the process as it loads: its digest first
        intact = (spec is not None and spec.origin is not None
                  and hashlib.sha256(Path(spec.origin).read_bytes()).hexdigest() == sidecar.get("extension"))
    except OSError:
        intact = False
    if not intact:
        _STATE["why"] = "not built (the extension does not match its sidecar: ltr kernels build --ahead)"
        return _STATE
    try:
        built = importlib.import_module(MODULE)
    except ImportError as exc:
        _STATE["why"] = f"not built ({type(exc).__name__})"
        return _STATE
    _STATE["module"] = built
    _STATE["sidecar"] = sidecar
    return _STATE


def status() -> dict[str, str]:
    """``module:function`` -> ``built``, ``stale`` or ``not built`` (why), for every export."""
    state = _load()
    return {export.ref: ("built" if kernel(export.ref) is not None else
                         "stale: its sources changed since the build (ltr kernels build --ahead)" if state["module"] is not None
                         else state["why"] or "not built")
            for export in EXPORTS}


def _module_fresh(module: str) -> bool:
    state = _load()
    fresh = state["fresh"]
    if module not in fresh:
        sources = state.get("sidecar", {}).get("sources") if isinstance(state.get("sidecar"), dict) else None
        fresh[module] = _fresh(sources.get(module) if isinstance(sources, dict) else None)
    return bool(fresh[module])


_KERNELS: dict[str, AheadKernel | None] = {}


def kernel(ref: str) -> AheadKernel | None:
    """The kernel ``module:function`` built ahead, or None (not one of :data:`EXPORTS`, not
    built, stale, or switched off); numba is not imported."""
    if ref in _KERNELS:
        return _KERNELS[ref]
    export = _BY_REF.get(ref)
    found: AheadKernel | None = None
    state = _load()
    built = state["module"]
    if export is not None and built is not None and _module_fresh(export.module):
        functions = [getattr(built, export.symbol(i), None) for i in range(len(export.variants))]
        if all(callable(fn) for fn in functions):
            found = AheadKernel(export, [fn for fn in functions if callable(fn)], lambda: _jit(ref))
    _KERNELS[ref] = found
    return found


_BLAS = "scipy.linalg.cython_blas"


def _blas_without_scipy_linalg() -> None:
    """Load scipy's BLAS module the cheap way, once, before a kernel built ahead first runs
    (not when one is only looked up: the reference path loads no SciPy).

    A compiled ``np.dot`` finds BLAS as numba's does: its C helper imports
    ``scipy.linalg.cython_blas`` at the first product. Importing that through
    ``scipy.linalg`` costs about 0.3 s of CPU (the package imports SciPy's array-API layer,
    which imports much of numpy), more than the rest of a small run. The extension module
    alone costs a tenth of that, so unless ``scipy.linalg`` is loaded already, it is loaded
    on its own, under its own name: the helper then finds it in ``sys.modules``, and a later
    ``import scipy.linalg`` takes that same module. Anything unexpected leaves it to the
    helper's usual import."""
    import importlib.machinery
    import importlib.util
    import sys

    if _BLAS in sys.modules:
        return
    try:
        scipy = importlib.import_module("scipy")
        folder = Path(str(scipy.__file__)).parent / "linalg"
        path = next(folder / f"cython_blas{suffix}" for suffix in importlib.machinery.EXTENSION_SUFFIXES
                    if (folder / f"cython_blas{suffix}").is_file())
        spec = importlib.util.spec_from_file_location(_BLAS, path)
        if spec is None or spec.loader is None:
            return
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        if isinstance(getattr(module, "__pyx_capi__", None), dict):
            sys.modules.setdefault(_BLAS, module)
    except Exception:  # noqa: BLE001 - any surprise: numba's helper imports it its own way
        return


def reset() -> None:
    """Look for the extension again at the next :func:`kernel` (after ``LTR_AHEAD`` changed
    or a build)."""
    _STATE.clear()
    _KERNELS.clear()


def _jit(ref: str) -> Any:
    """numba's kernel ``module:function`` (numba, its cache folders and the module imported)."""
    module, _, function = ref.partition(":")
    importlib.import_module("ltr_cli.kernels._numba")
    try:
        return getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"kernel {ref!r} cannot be loaded: {exc}") from exc


def available(ref: str) -> bool:
    """Whether ``module:function`` runs built ahead here."""
    return kernel(ref) is not None


def function(ref: str) -> Any:
    """The kernel ``module:function``: built ahead when it is, else numba's (imported)."""
    return kernel(ref) or _jit(ref)
