"""What every JAX loss shares: the padding convention, allRank's constants and discounts,
and the batch mean. Imports JAX (loss functions import this module when they run).

Shapes: ``scores``, ``labels``, ``mask`` ``[Q, L]`` (``scores`` ``[Q, L, n]`` for a loss with
n outputs per document). :func:`slates` zeroes the padded positions (so nothing a scorer
writes there reaches the value or the gradient) and marks the slates with a real document;
a slate without one is computed as a slate of zeros (``full`` all True) and left out by
:func:`batch_mean`, so no NaN ever forms there.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

PADDED_Y_VALUE = -1.0  # allRank's padding label
DEFAULT_EPS = 1e-10  # allRank's DEFAULT_EPS


class Slates(NamedTuple):
    """A batch made safe: ``scores`` and ``labels`` 0 at padded positions, ``mask`` the real
    documents, ``present`` ``[Q]`` the slates with a real document, ``full`` the mask with the
    slates without one made all True (for softmaxes and sorts that need a real entry)."""

    scores: jax.Array
    labels: jax.Array
    mask: jax.Array
    present: jax.Array
    full: jax.Array


def dtype_of(scores: jax.Array) -> jnp.dtype:
    """The computation's dtype: the scores', float32 for non-float input."""
    dt = jnp.asarray(scores).dtype
    return dt if jnp.issubdtype(dt, jnp.floating) else jnp.dtype(jnp.float32)


def slates(scores: jax.Array, labels: jax.Array, mask: jax.Array) -> Slates:
    """The batch with padding made inert (module docstring)."""
    s = jnp.asarray(scores)
    dt = dtype_of(s)
    s = s.astype(dt)
    m = jnp.asarray(mask, dtype=bool)
    y = jnp.where(m, jnp.asarray(labels, dtype=dt), 0.0)
    sm = m if s.ndim == m.ndim else m[..., None]
    s = jnp.where(sm, s, 0.0)
    present = m.any(axis=-1)
    return Slates(s, y, m, present, m | ~present[..., None])


def batch_mean(per_slate: jax.Array, present: jax.Array) -> jax.Array:
    """The mean of the per-slate values over the slates with a real document (0: none)."""
    count = jnp.sum(present)
    return jnp.sum(jnp.where(present, per_slate, 0.0)) / jnp.maximum(count, 1).astype(per_slate.dtype)


def safe_mean(values: jax.Array, where: jax.Array) -> jax.Array:
    """The mean of ``values`` over ``where`` (0 when ``where`` is empty; torch gives NaN)."""
    count = jnp.sum(where)
    return jnp.sum(jnp.where(where, values, 0.0)) / jnp.maximum(count, 1).astype(values.dtype)


@lru_cache(maxsize=64)
def _log2_positions32(n: int) -> np.ndarray:
    return np.log2(1.0 + np.arange(1, n + 1, dtype=np.float64)).astype(np.float32)


def log2_positions32(n: int) -> np.ndarray:
    """allRank's ``D = log2(1 + i)``, i = 1..n, in float32 (allRank computes it in float32
    whatever the scores' dtype), shape ``[n]``."""
    return _log2_positions32(n)


@lru_cache(maxsize=64)
def _inverse_discounts32(n: int) -> np.ndarray:
    return (np.float32(1.0) / _log2_positions32(n)).astype(np.float32)


def inverse_discounts32(n: int) -> np.ndarray:
    """``1 / log2(i + 1)``, i = 1..n, each step in float32 as allRank's NeuralNDCG and DCG
    take it, shape ``[n]``."""
    return _inverse_discounts32(n)


def sort_desc(keys: jax.Array, mask: jax.Array) -> jax.Array:
    """Indices sorting each row of ``keys`` descending, padded positions last, equal keys in
    position order (a stable sort; torch's is not, so allRank's order among tied scores is
    unspecified). ``[Q, L]`` int."""
    return jnp.argsort(jnp.where(mask, -keys, jnp.inf), axis=-1, stable=True)
