"""Compiled per-round kernels for the online learners and the online protocol (numba).

Importing this package is cheap: numba is imported only when a kernel that is not built
ahead of time (:mod:`.ahead`) is first needed, so ``ltr --help``, the batch commands and
runs whose kernels are built ahead never pay for it. ``LTR_KERNELS=0`` in the environment switches every fast path off (the slow
reference implementations then run; results agree to rounding, see ``tests/test_kernels.py``),
``LTR_KERNELS=1`` keeps them on; unset (or ``auto``), ``ltr run`` chooses per run
(:mod:`ltr_cli.runs.kernel_plan`) and calls :func:`set_enabled`. :data:`MODE` is the choice
the environment made: ``auto``, ``compiled`` or ``reference``.

Conventions shared by the kernels (modules :mod:`.core`, :mod:`.measures`, :mod:`.slam`,
:mod:`.perceptron`, :mod:`.ogd`, :mod:`.rtopkf`; codes in :mod:`.codes`, each family's
parameter slots beside its kernel):

* ``X`` (m, d) float32 or float64, never written; scores are accumulated in float64;
  ``w`` (d,) float64; labels (m,) float64; rankings int64.
* Scores are computed once per round (in ``rank``) and reused by ``update`` while neither
  the query matrix nor the weights changed, so ranking and update see the same scores.
* Discounts ``1 / log2(i + 1)`` come from :func:`discounts`, a table filled by numpy's
  ``log2`` as :func:`ltr_cli.measures.metrics.log2_discount` fills it, so measures and SLAM
  weights use the very same discounts as the reference functions.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
from types import ModuleType
from typing import Any

import numpy as np

_OFF = ("0", "false", "no", "off", "reference")
_ON = ("1", "true", "yes", "on", "compiled")


def mode_of(value: str | None) -> str:
    """``auto``, ``compiled`` or ``reference`` from an ``LTR_KERNELS`` value (unset: auto);
    ValueError for anything else."""
    word = (value or "auto").strip().lower()
    if word in _OFF:
        return "reference"
    if word in _ON:
        return "compiled"
    if word == "auto":
        return "auto"
    raise ValueError(f"LTR_KERNELS={value!r}: expected auto, 1 (compiled) or 0 (reference)")


try:
    MODE = mode_of(os.environ.get("LTR_KERNELS"))
except ValueError:  # reported by the commands that plan (ltr run); everything else runs compiled
    MODE = "auto"
ENABLED = MODE != "reference"

# the kernels module once loaded (hot paths read it directly: ``kernels.module or
# kernels.load()``), and the current discount table (see :func:`discounts`)
module: "Kernels | None" = None
_DISCOUNTS = np.empty(0)


class Kernels:
    """The kernel modules of this package as the hot paths call them:
    ``K.core.score_rank(...)``, ``K.perceptron.perceptron_round(...)``. Each function is the
    one built ahead of time when there is one (:mod:`.ahead`; numba is not imported), else
    numba's, from the module imported when first needed (with numba). A kernel declared
    elsewhere (a plugin's) is reached by its ``module:function`` name through
    :func:`function`."""

    def __getattr__(self, name: str) -> "KernelModule":
        if name.startswith("_"):
            raise AttributeError(name)
        if importlib.util.find_spec(f"{__name__}.{name}") is None:
            raise AttributeError(f"no kernel module {name!r}")
        found = KernelModule(f"{__name__}.{name}")
        setattr(self, name, found)
        return found


class KernelModule:
    """One kernel module: ``attr`` is the function built ahead when there is one, else the
    module's own attribute (the module, and numba, imported then)."""

    def __init__(self, name: str):
        self._name = name

    def __getattr__(self, attr: str) -> Any:
        if attr.startswith("__"):
            raise AttributeError(attr)
        from ltr_cli.kernels import ahead

        found = ahead.kernel(f"{self._name}:{attr}")
        if found is None:
            found = getattr(_imported(self._name), attr)
        setattr(self, attr, found)
        return found


def _imported(name: str) -> ModuleType:
    """Kernel module ``name``, with numba (its cache folders, the compile watch) first."""
    importlib.import_module(f"{__name__}._numba")
    return importlib.import_module(name)


def set_enabled(flag: bool) -> None:
    """Switch every fast path on or off for what this process computes next (the run plan's
    decision; readers look at :data:`ENABLED` when they run)."""
    global ENABLED
    ENABLED = flag


def load() -> Kernels:
    """The kernel modules (:class:`Kernels`: each function built ahead, or numba's, imported
    when first named). Hot paths read the loaded namespace directly:
    ``(kernels.module or kernels.load()).core``. Real compiles are reported by
    :mod:`.compile_watch`."""
    global module
    if module is None:
        module = Kernels()
    return module


def function(ref: str) -> Any:
    """The compiled function named ``module:function`` (a family's declared kernel, say
    ``ltr_cli.kernels.perceptron:perceptron_block``): numba, then its module, imported."""
    load()
    name, _, attr = ref.partition(":")
    try:
        return getattr(importlib.import_module(name), attr)
    except (ImportError, AttributeError) as exc:
        raise ImportError(f"kernel {ref!r} cannot be loaded: {exc}") from exc


def discounts(m: int) -> np.ndarray:
    """A table of at least ``m`` discounts ``1 / log2(i + 1)``, i = 1.. (read-only): the
    expression of :func:`ltr_cli.measures.metrics.log2_discount`, bit for bit
    (``tests/test_kernels.py``), written here so that the kernels import nothing of the
    measures above them."""
    global _DISCOUNTS
    if _DISCOUNTS.shape[0] < m:
        n = max(2 * m, 1024)
        table = 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))
        table.flags.writeable = False
        _DISCOUNTS = table
    return _DISCOUNTS
