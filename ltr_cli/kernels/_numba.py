"""numba, loaded once (after :func:`ltr_cli.kernels.numba_cache.ensure` has chosen a writable cache
directory), and the constants the kernels share."""

from __future__ import annotations

import numpy as np

from ltr_cli.kernels.numba_cache import ensure, install_locator

_CACHE = ensure()  # before numba is imported: picks a writable cache directory

from numba import njit, types  # noqa: E402
from numba.extending import overload  # noqa: E402

from ltr_cli.kernels.compile_watch import install  # noqa: E402

install_locator()  # each kernel module cached in its own folder, named by its sources
install()  # count and report real compiles (a cached kernel loads without one)

_NAN = np.nan
_INF = np.inf
_EXP_CAP = 50.0

__all__ = ["_CACHE", "_EXP_CAP", "_INF", "_NAN", "njit", "overload", "types"]
