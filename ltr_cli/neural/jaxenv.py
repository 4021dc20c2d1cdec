"""JAX for the neural learners: whether it is installed, importing it with the XLA flags
this tool sets, the device a run trains on, and what a manifest records about them.

* Installed: JAX, optax and safetensors are the optional extra ``neural``
  (``pip install -e '.[neural]'``); :func:`missing` is the one line that says so.
* Flags: before JAX starts its first backend, ``XLA_FLAGS`` gains
  ``--xla_gpu_deterministic_ops=true`` (XLA's deterministic reductions and scatters on a
  GPU; the CPU backend ignores it), unless the user's own ``XLA_FLAGS`` already sets it.
  The flags in force when the backend started are what :func:`describe` records.
* Devices: ``auto`` is the device JAX picks (a GPU when its CUDA plugin is installed and
  finds one, else the CPU); ``cpu`` and ``gpu`` insist on that platform, and ``gpu`` without
  one is a one-line error saying how to install JAX's CUDA plugin.
* Dtype: float32, the only dtype the neural learners compute in.
* Compilation cache: JAX's persistent cache in a private folder (:func:`_compilation_cache`),
  so a program compiled once on a machine is loaded, not compiled, by later runs.

Nothing here imports JAX at import time.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from typing import Any

from ltr_cli.errors import LtrError

INSTALL = "pip install -e '.[neural]'"
CUDA = "pip install -U \"jax[cuda13]\" or \"jax[cuda12]\""
DETERMINISTIC_GPU = "--xla_gpu_deterministic_ops=true"
DEVICES = ("auto", "cpu", "gpu")
DTYPE = "float32"
_PACKAGES = ("jax", "optax", "safetensors")
_FLAGS_AT_START: list[str | None] = []  # XLA_FLAGS as the backend started under this module


def missing() -> str | None:
    """One line naming what the neural learners need that is not installed, or None."""
    absent = [p for p in _PACKAGES if importlib.util.find_spec(p) is None]
    if not absent:
        return None
    return f"{', '.join(absent)} {'is' if len(absent) == 1 else 'are'} not installed: {INSTALL}"


def _set_flags() -> None:
    """Add the deterministic-ops flag to ``XLA_FLAGS`` while no backend has started."""
    if _FLAGS_AT_START:
        return
    started = False
    if "jax" in sys.modules:
        try:
            from jax._src import xla_bridge

            started = bool(getattr(xla_bridge, "_backends", {}))
        except ImportError:  # pragma: no cover - a JAX without this module: assume started
            started = True
    if not started:
        flags = os.environ.get("XLA_FLAGS", "")
        if "xla_gpu_deterministic_ops" not in flags:
            os.environ["XLA_FLAGS"] = f"{flags} {DETERMINISTIC_GPU}".strip()
    _FLAGS_AT_START.append(os.environ.get("XLA_FLAGS"))


def jax() -> Any:
    """The ``jax`` module, imported with this tool's XLA flags; one-line LtrError when the
    extra is not installed."""
    need = missing()
    if need:
        raise LtrError(f"the neural learners need JAX: {need}")
    _set_flags()
    import jax as module

    if not _CACHE:
        _CACHE.append(_compilation_cache(module))
    return module


def _compilation_cache(module: Any) -> str | None:
    """Turn on JAX's persistent compilation cache in a private folder (``LTR_JAX_CACHE``,
    else ``$XDG_CACHE_HOME/ltr-cli/jax`` or ``~/.cache/ltr-cli/jax``; ``LTR_JAX_CACHE=off``:
    none), so a program compiled once on this machine loads in the next process. A folder
    others could write into is never used (a cached program is code)."""
    from pathlib import Path

    from ltr_cli.kernels.numba_cache import _private_dir, private

    env = os.environ
    if env.get("LTR_JAX_CACHE", "").lower() in ("0", "off", "no", "false"):
        return None
    places = [Path(env["LTR_JAX_CACHE"])] if env.get("LTR_JAX_CACHE") else []
    if env.get("XDG_CACHE_HOME"):
        places.append(Path(env["XDG_CACHE_HOME"]) / "ltr-cli" / "jax")
    if env.get("HOME"):
        places.append(Path(env["HOME"]) / ".cache" / "ltr-cli" / "jax")
    for place in places:
        if private(place) or (not place.exists() and _private_dir(place)):
            module.config.update("jax_compilation_cache_dir", str(place))
            module.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
            return str(place)
    return None


_CACHE: list[str | None] = []


def device(name: str) -> Any:
    """The JAX device for ``train.device`` (``auto``, ``cpu`` or ``gpu``)."""
    if name not in DEVICES:
        raise LtrError(f"train.device: {name!r} is not one of {', '.join(DEVICES)}")
    j = jax()
    if name == "auto":
        return j.devices()[0]
    try:
        found = j.devices(name)
    except RuntimeError:
        found = []
    if not found:
        platforms = sorted({d.platform for d in j.devices()})
        raise LtrError(f"train.device: {name} but JAX {j.__version__} finds no {name.upper()} (platforms: "
                       f"{', '.join(platforms)}); install JAX's CUDA plugin ({CUDA}) or set train.device: auto")
    return found[0]


def device_memory(dev: Any) -> int | None:
    """The bytes a device offers (a GPU's ``bytes_limit``; the CPU: the machine's
    physical memory), or None when unknown."""
    if dev.platform != "cpu":
        try:
            stats = dev.memory_stats() or {}
        except Exception:  # noqa: BLE001 - a backend without memory statistics
            stats = {}
        limit = stats.get("bytes_limit")
        return int(limit) if limit else None
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not a POSIX system
        return None


def describe(dev: Any) -> dict[str, Any]:
    """What a manifest records: the versions of JAX, jaxlib and optax, the device's
    platform and kind, the dtype and the XLA flags the backend started with."""
    from importlib import metadata

    def version(name: str) -> str | None:
        try:
            return metadata.version(name)
        except metadata.PackageNotFoundError:
            return None

    flags = _FLAGS_AT_START[0] if _FLAGS_AT_START else os.environ.get("XLA_FLAGS")
    cache = _CACHE[0] if _CACHE else None
    return {"jax_version": version("jax"), "jaxlib_version": version("jaxlib"), "optax_version": version("optax"),
            "device": f"{dev.platform}:{dev.id}", "device_kind": str(dev.device_kind), "dtype": DTYPE,
            "xla_flags": flags or "",
            "deterministic_ops": bool(flags and "xla_gpu_deterministic_ops=true" in flags),
            "compilation_cache": "persistent" if cache else "off"}
