"""Losses on numpy arrays: :func:`ranking_loss` (the public API) and :func:`value_and_grad`.

Inputs are numpy ``scores [Q, L]`` (``[Q, L, n]`` for a loss with n outputs per document; a
1-D ``[L]`` is one slate), ``labels [Q, L]`` and an optional bool ``mask [Q, L]``. Without a
mask, a label of -1 marks padding, as in allRank; with one, labels at padded positions are
not read.

Precision: float32 scores are computed in float32; any other scores (float64, integers)
in float64, with JAX's 64-bit mode switched on for that call only (``jax.enable_x64``), so
the process's own JAX setting is left as it was. allRank's log2 discounts stay float32
values in both, as allRank computes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ltr_cli.errors import LtrError
from ltr_cli.neural.losses.kind import LossKind

_COMPILED: dict[tuple[Any, ...], Any] = {}


def _kind(name: str | LossKind) -> LossKind:
    if isinstance(name, LossKind):
        return name
    from ltr_cli.neural.losses import resolve

    return resolve(name)


def prepare(kind: LossKind, scores: Any, labels: Any, mask: Any, params: Mapping[str, Any]
            ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The arrays checked and shaped ``[Q, L]`` (scores ``[Q, L, n]``), scores in their
    computation dtype (float32 or float64); a bad array is a one-line :class:`LtrError`."""
    where = f"loss {kind.name}"
    outputs = kind.n_outputs(params)
    s = np.asarray(scores)
    y = np.asarray(labels)
    if not np.issubdtype(s.dtype, np.number) or not np.issubdtype(y.dtype, np.number):
        raise LtrError(f"{where}: scores and labels must be numbers")
    if y.ndim == 1:
        y = y[None, :]
        s = s[None, ...]
    if y.ndim != 2:
        raise LtrError(f"{where}: labels must be [Q, L] (or [L]), got shape {y.shape}")
    want = y.shape if outputs == 1 else (*y.shape, outputs)
    if s.shape != want:
        raise LtrError(f"{where}: scores have shape {s.shape}, expected {want}"
                       + (f" ({outputs} outputs per document)" if outputs != 1 else ""))
    s = s.astype(np.float32 if s.dtype == np.float32 else np.float64)
    y = y.astype(s.dtype)
    if mask is None:
        m = y != -1
    else:
        m = np.asarray(mask)
        if m.dtype != np.bool_ or m.shape != y.shape:
            raise LtrError(f"{where}: mask must be a bool array shaped like the labels {y.shape}, "
                           f"got {m.dtype} {m.shape}")
    sm = m if outputs == 1 else m[..., None]
    if not np.all(np.isfinite(s) | ~sm):
        raise LtrError(f"{where}: scores must be finite at real documents")
    real = y[m]
    if not np.all(np.isfinite(real)) or np.any(real < 0):
        raise LtrError(f"{where}: labels must be finite and >= 0 at real documents (mark padding with the mask or -1)")
    if kind.labels == "unit" and np.any(real > 1):
        raise LtrError(f"{where}: labels must lie in [0, 1] (binary relevance, or grades scaled to [0, 1])")
    return s, np.where(m, y, 0).astype(s.dtype), m


def _compiled(kind: LossKind, bound: dict[str, Any], grad: bool, x64: bool) -> Any:
    import functools

    import jax

    fn = functools.partial(kind.fn, **bound)
    try:
        key = (kind.name, id(kind.fn), tuple(sorted(bound.items())), grad, x64)
        hash(key)
    except TypeError:
        return jax.value_and_grad(fn) if grad else fn
    if key not in _COMPILED:
        _COMPILED[key] = jax.jit(jax.value_and_grad(fn) if grad else fn)
    return _COMPILED[key]


def value_and_grad(name: str | LossKind, scores: Any, labels: Any, mask: Any = None,
                   **params: Any) -> tuple[float, np.ndarray]:
    """The loss and its gradient w.r.t. the scores (numpy, the scores' shape; 0 at padded
    positions), computed in the scores' precision (module docstring)."""
    kind = _kind(name)
    bound = kind.bind(params)
    s, y, m = prepare(kind, scores, labels, mask, bound)
    import jax

    x64 = s.dtype == np.float64
    with jax.enable_x64(x64):
        value, grad = _compiled(kind, bound, True, x64)(s, y, m)
        return float(value), np.asarray(grad).reshape(np.shape(scores) if np.ndim(scores) else s.shape)


def ranking_loss(name: str, scores: Any, labels: Any, mask: Any = None, **params: Any) -> float:
    """The ranking loss ``name`` (allRank's function name in lower case, or an alias) of numpy
    ``scores [Q, L]`` against ``labels [Q, L]``, with allRank's parameter names and values
    (``ranking_loss("lambdaloss", s, y, weighing_scheme="ndcgLoss2PP_scheme")``).

    ``mask [Q, L]`` bool: False at padded positions; None: every position is real except
    where a label is -1 (allRank's padding). float32 scores are computed in float32, other
    scores in float64 (JAX's x64 mode on for this call only). An unknown name or parameter,
    or a bad array, is a one-line :class:`~ltr_cli.errors.LtrError`."""
    kind = _kind(name)
    bound = kind.bind(params)
    s, y, m = prepare(kind, scores, labels, mask, bound)
    import jax

    x64 = s.dtype == np.float64
    with jax.enable_x64(x64):
        return float(_compiled(kind, bound, False, x64)(s, y, m))
