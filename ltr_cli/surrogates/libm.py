"""The C library's ``exp`` on arrays: what the compiled kernels call.

numpy's own vectorised ``exp`` (its SIMD loops) can differ from the C library's in the last
bit; the kernels (numba) call the C library's. The reference paths take ``exp`` of a vector
from here wherever the kernel they mirror does, so both paths give the same bytes.
"""

from __future__ import annotations

import math

import numpy as np


def libm_exp(v: np.ndarray) -> np.ndarray:
    """``exp`` of a float64 vector (n,) by the C library's ``exp``, as the compiled kernel
    computes it (numpy's own vectorised ``exp`` can differ in the last bit), so both paths
    give the same bytes; overflow gives inf, as numpy's."""
    out = np.empty(v.shape[0])
    for i, x in enumerate(v.tolist()):
        try:
            out[i] = math.exp(x)
        except OverflowError:
            out[i] = math.inf
    return out
