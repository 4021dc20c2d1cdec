"""Compiled per-round kernels for the online learners and the online protocol (numba).

Importing this package is cheap: numba is imported only by :func:`load`, the first time a
learner or the protocol needs a kernel, so ``ltr --help`` and the batch commands never pay
for it. ``LTR_KERNELS=0`` in the environment switches every fast path off (the slow
reference implementations then run; results agree to rounding, see ``tests/test_kernels.py``),
``LTR_KERNELS=1`` keeps them on; unset (or ``auto``), ``ltr run`` chooses per run
(:mod:`ltr_cli.runs.kernel_plan`) and calls :func:`set_enabled`. :data:`MODE` is the choice
the environment made: ``auto``, ``compiled`` or ``reference``.

Conventions shared by the kernels (modules :mod:`.core`, :mod:`.measures`, :mod:`.slam`,
:mod:`.perceptron`, :mod:`.ogd`, :mod:`.rtopkf`; parameter slots and codes in :mod:`.codes`):

* ``X`` (m, d) float32 or float64, never written; scores are accumulated in float64;
  ``w`` (d,) float64; labels (m,) float64; rankings int64.
* Scores are computed once per round (in ``rank``) and reused by ``update`` while neither
  the query matrix nor the weights changed, so ranking and update see the same scores.
* Discounts ``1 / log2(i + 1)`` come from :func:`discounts`, a table filled by numpy's
  ``log2`` (:func:`ltr_cli.measures.metrics.log2_discount`), so measures and SLAM weights use the
  very same discounts as the reference functions.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from types import ModuleType

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


@dataclass(frozen=True)
class Kernels:
    """The kernel modules, each imported as itself (this imports numba): the primitives
    (:mod:`.core`), the round measures (:mod:`.measures`), SLAM (:mod:`.slam`), the
    perceptrons (:mod:`.perceptron`), OGD (:mod:`.ogd`), RTop-kF (:mod:`.rtopkf`) and the block
    loop (:mod:`.loop`). Call sites name the module: ``K.core.score_rank(...)``."""

    core: ModuleType
    measures: ModuleType
    slam: ModuleType
    perceptron: ModuleType
    ogd: ModuleType
    rtopkf: ModuleType
    loop: ModuleType


def set_enabled(flag: bool) -> None:
    """Switch every fast path on or off for what this process computes next (the run plan's
    decision; readers look at :data:`ENABLED` when they run)."""
    global ENABLED
    ENABLED = flag


def load() -> Kernels:
    """The kernel modules (imports numba on first use). Hot paths read the loaded modules
    directly: ``(kernels.module or kernels.load()).core``. Real compiles are reported by
    :mod:`.compile_watch`."""
    global module
    if module is None:
        from ltr_cli.kernels import core, loop, measures, ogd, perceptron, rtopkf, slam

        module = Kernels(core, measures, slam, perceptron, ogd, rtopkf, loop)
    return module


def discounts(m: int) -> np.ndarray:
    """A table of at least ``m`` discounts ``1 / log2(i + 1)``, i = 1.. (read-only)."""
    global _DISCOUNTS
    if _DISCOUNTS.shape[0] < m:
        from ltr_cli.measures.metrics import log2_discount

        table = log2_discount(max(2 * m, 1024))
        table.flags.writeable = False
        _DISCOUNTS = table
    return _DISCOUNTS
