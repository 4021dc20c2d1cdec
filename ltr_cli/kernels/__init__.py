"""Compiled per-round kernels for the online learners and the online protocol (numba).

Importing this package is cheap: numba is imported only by :func:`load`, the first time a
learner or the protocol needs a kernel, so ``ltr --help`` and the batch commands never pay
for it. ``LTR_KERNELS=0`` in the environment switches every fast path off (the slow
reference implementations then run; results agree to rounding, see ``tests/test_kernels.py``).

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
from types import SimpleNamespace
from typing import Any

import numpy as np

ENABLED = os.environ.get("LTR_KERNELS", "1").strip().lower() not in ("0", "false", "no", "off")

# the kernels module once loaded (hot paths read it directly: ``kernels.module or
# kernels.load()``), and the current discount table (see :func:`discounts`)
module: Any = None
_DISCOUNTS = np.empty(0)


def load() -> Any:
    """Every compiled kernel in one namespace (imports numba on first use): the kernels of
    :mod:`.core`, :mod:`.measures`, :mod:`.slam`, :mod:`.perceptron`, :mod:`.ogd` and
    :mod:`.rtopkf`, each beside the reference it mirrors."""
    global module
    if module is None:
        from ltr_cli.kernels import core, loop, measures, ogd, perceptron, rtopkf, slam

        names: dict[str, Any] = {}
        for part in (core, measures, slam, perceptron, ogd, rtopkf, loop):
            names.update((k, v) for k, v in vars(part).items() if not k.startswith("__"))
        module = SimpleNamespace(**names)
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
