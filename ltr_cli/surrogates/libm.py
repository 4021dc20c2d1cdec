"""The C library's ``exp`` on arrays: what the compiled kernels call.

numpy's own vectorised ``exp`` (its SIMD loops) can differ from the C library's in the last
bit; the kernels (numba) call the C library's. The reference paths take ``exp`` of a vector
from here wherever the kernel they mirror does, so both paths give the same bytes.
"""

from __future__ import annotations

import math

import numpy as np


def libm_exp(v: np.ndarray) -> np.ndarray:
    """``exp`` of a float64 array (any shape) by the C library's ``exp``, as the compiled
    kernels compute it (numpy's own ``exp`` can differ in the last bit, for arrays and
    scalars alike), so both paths give the same bytes; overflow gives inf, as numpy's."""
    flat = np.asarray(v, dtype=np.float64).ravel().tolist()
    return np.array([exp1(x) for x in flat], dtype=np.float64).reshape(np.shape(v))


def exp1(x: float) -> float:
    """``exp`` of one number by the C library's ``exp`` (overflow: inf)."""
    try:
        return math.exp(x)
    except OverflowError:
        return math.inf
