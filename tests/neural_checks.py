"""Shared checks of the neural losses (tests/test_neural_*.py): random padded batches, and
the properties every loss must have whatever its definition: the value does not depend on
padded scores, nor on the order of the documents; the gradient is the derivative (central
differences in float64) and is 0 at padded positions; slates without a relevant document,
with one document, or with none at all give finite values and gradients."""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.neural.losses import resolve


def batch(rng: np.random.Generator, q: int = 4, length: int = 7, grades: int = 5, ties: bool = True,
          empty: bool = True, outputs: int = 1) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """float64 ``scores [q, length]`` (``[q, length, outputs]``), integer-valued ``labels`` and
    a ``mask`` padded at the end of each slate: one slate of one document, one with no
    relevant document when ``empty``, labels distinct within a slate unless ``ties``."""
    shape = (q, length) if outputs == 1 else (q, length, outputs)
    scores = rng.normal(size=shape)
    if ties:
        labels = rng.integers(0, grades, size=(q, length)).astype(np.float64)
    else:
        labels = np.stack([rng.permutation(length) * 0.5 for _ in range(q)])
    sizes = rng.integers(2, length + 1, size=q)
    sizes[0] = 1
    mask = np.arange(length)[None, :] < sizes[:, None]
    if empty and q > 1:
        labels[1] = 0.0
    return scores, labels, mask


def fn(name: str, **params: Any):
    """The loss's JAX function with its parameters bound."""
    import functools

    kind = resolve(name)
    return functools.partial(kind.fn, **kind.bind(params))


_COMPILED: dict[tuple, Any] = {}


def _compiled(name: str, params: dict[str, Any], what: str):
    """The loss jitted (compiling the whole function once costs far less than evaluating it
    op by op the first time): ``grad`` value and gradient, ``value`` the value, ``values`` the
    value at a stack of score arrays."""
    import jax

    key = (name, tuple(sorted(params.items())), what)
    if key not in _COMPILED:
        f = fn(name, **params)
        wrapped = {"grad": jax.value_and_grad(f), "value": f, "values": jax.vmap(f, in_axes=(0, None, None))}[what]
        _COMPILED[key] = jax.jit(wrapped)
    return _COMPILED[key]


def value_grad64(name: str, scores, labels, mask, **params: Any) -> tuple[float, np.ndarray]:
    """The value and gradient in float64."""
    import jax

    with jax.enable_x64(True):
        v, g = _compiled(name, params, "grad")(np.asarray(scores, np.float64), labels, mask)
        return float(v), np.asarray(g)


def value64(name: str, scores, labels, mask, **params: Any) -> float:
    """The value in float64."""
    import jax

    with jax.enable_x64(True):
        return float(_compiled(name, params, "value")(np.asarray(scores, np.float64), labels, mask))


def central_differences(name: str, scores, labels, mask, h: float = 1e-6, **params: Any) -> np.ndarray:
    """The gradient by central differences, at every real position (0 at padded ones)."""
    import jax

    real = [idx for idx in np.ndindex(*scores.shape) if mask[idx[:2]]]
    stack = np.repeat(np.asarray(scores, np.float64)[None], 2 * len(real), axis=0)
    for n, idx in enumerate(real):
        stack[(2 * n, *idx)] += h
        stack[(2 * n + 1, *idx)] -= h
    with jax.enable_x64(True):
        values = np.asarray(_compiled(name, params, "values")(stack, labels, mask))
    out = np.zeros_like(scores, dtype=np.float64)
    for n, idx in enumerate(real):
        out[idx] = (values[2 * n] - values[2 * n + 1]) / (2 * h)
    return out


def check_properties(name: str, seed: int = 0, fd_tol: float = 1e-6, ties: bool = True, order_free: bool = True,
                     **params: Any) -> None:
    """Every property of the module docstring, on a random batch of ``name`` (its slates: one
    of one document, one without a relevant document unless ``ties`` is False, the rest
    random; every batch the same shape). ``order_free=False``: a loss defined on the input
    order (SLAM's ``paper-fixed`` weights) skips the permutation check."""
    rng = np.random.default_rng(seed)
    outputs = resolve(name).n_outputs(params)
    s, y, m = batch(rng, ties=ties, empty=ties, outputs=outputs)
    v, g = value_grad64(name, s, y, m, **params)
    assert np.isfinite(v) and np.all(np.isfinite(g)), name
    # padded scores change nothing, and get no gradient
    s2 = s.copy()
    pad = ~m if outputs == 1 else np.repeat(~m[..., None], outputs, axis=-1)
    s2[pad] = rng.normal(size=int(pad.sum())) * 100.0
    v2, g2 = value_grad64(name, s2, y, m, **params)
    assert v2 == v and np.array_equal(g2, g), name
    assert np.all(g[pad] == 0.0), name
    # documents in another order (padding moved into the middle) give the same value
    perm = rng.permutation(s.shape[1])
    if order_free:
        vp, gp = value_grad64(name, s[:, perm], y[:, perm], m[:, perm], **params)
        assert abs(vp - v) <= 1e-12 * max(1.0, abs(v)), (name, vp, v)
        assert np.allclose(gp, g[:, perm], rtol=1e-9, atol=1e-12), name
    # the gradient is the derivative (at generic scores, away from any kink)
    fd = central_differences(name, s, y, m, **params)
    assert np.allclose(g, fd, atol=fd_tol, rtol=1e-5), (name, np.max(np.abs(g - fd)))
    # degenerate batches: no relevant document anywhere; no document at all; one document
    one = np.zeros_like(m)
    one[:, 0] = True
    for yy, mm in ((np.zeros_like(y), m), (y, np.zeros_like(m)), (y, one)):
        vd, gd = value_grad64(name, s, yy, mm, **params)
        assert np.isfinite(vd) and np.all(np.isfinite(gd)), (name, vd)
