"""A training epoch run on the device: the fold resident there, and one compiled loop per
padded length that takes a stretch of consecutive batches of that length in one call.

* The resident fold (:func:`resident`): the training documents' features ``[R, d]`` float32
  and labels ``[R]`` float32 put on the device once a fit, ``R`` the documents rounded up to
  an eighth of the power of two below (:func:`resident_rows`; the rows past the fold are 0)
  so that folds of about one size share their compiled programs. The features go over in
  pieces of :data:`PUT_ROWS` rows into one buffer (no second copy of the fold on the
  device). None when the fold would take over a :data:`RESIDENT_SHARE`-th of the device's
  memory: the fit then gathers each batch on the host
  (:func:`~ltr_cli.neural.batching.epoch_batches`).
* An epoch (:func:`device_epoch`): each of its plans (:class:`~ltr_cli.neural.batching.Plan`:
  the batches' row numbers, ``[C, Q, W]`` int32) goes to the device, and each stretch of
  consecutive batches of one padded length ``L`` is one call of the program of ``L``
  (:func:`looped`): a ``fori_loop`` over the stretch that gathers a batch's documents
  ``[Q, L, d]`` from the resident fold (0 at padding) and takes the optimiser step on them,
  carrying the parameters, the optimiser state and the batches' losses. The batches, their
  order and their keys (``fold_in(epoch key, batch number)``) are the host loop's; the
  programs are one per padded length (and fold size), compiled on their first stretch. A
  scorer of single documents takes a batch's ``D`` documents one after another
  (:func:`~ltr_cli.neural.batching.flat_batch`) and the loss its slates padded to the
  widest bucket ``W``: one program per ``D``, a few a fit.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ltr_cli.neural.batching import Packed, epoch_plans
from ltr_cli.neural.jaxenv import device_memory, jax

PUT_ROWS = 1 << 16  # documents' features put on the device at once
RESIDENT_SHARE = 4  # the resident fold may take a quarter of the device's memory
SMALL_ROWS = 1024  # folds up to this many documents are rounded up to it


def resident_rows(n: int) -> int:
    """``n`` documents rounded up to a multiple of an eighth of the power of two at most
    ``n`` (at least :data:`SMALL_ROWS`): at most an eighth more rows."""
    if n <= SMALL_ROWS:
        return SMALL_ROWS
    step = (1 << (n.bit_length() - 1)) // 8
    return -(-n // step) * step


@dataclass
class Resident:
    """The fold on the device: ``X`` ``[R, d]``, ``labels`` ``[R]`` (see the module docstring)."""

    X: Any
    labels: Any


_PUT: list[Any] = []


def _put() -> Any:
    if not _PUT:
        j = jax()
        _PUT.append(j.jit(lambda buf, piece, at: j.lax.dynamic_update_slice(buf, piece, (at, 0)),
                          donate_argnums=(0,)))
    return _PUT[0]


def resident(data: Packed, device: Any) -> Resident | None:
    """The fold put on ``device``, or None when it does not fit
    (see the module docstring)."""
    j = jax()
    jnp = j.numpy
    n, d = data.X.shape
    rows = resident_rows(n)
    dev = device
    total = device_memory(dev)
    if total is not None and rows * (d + 1) * 4 > total // RESIDENT_SHARE:
        return None
    labels = np.zeros(rows, dtype=np.float32)
    labels[:n] = data.labels
    if n <= PUT_ROWS:
        X = np.zeros((rows, d), dtype=np.float32)
        X[:n] = data.X
        return Resident(j.device_put(X, dev), j.device_put(labels, dev))
    put = _put()
    with j.default_device(dev):
        buf = j.device_put(jnp.zeros((rows, d), dtype=jnp.float32), dev)
    for a in range(0, n, PUT_ROWS):
        a = min(a, n - PUT_ROWS)  # the last piece overlaps the one before: every piece one shape
        buf = put(buf, j.device_put(np.ascontiguousarray(data.X[a:a + PUT_ROWS]), dev), np.int32(a))
    return Resident(buf, j.device_put(labels, dev))


def looped(step: Callable[..., Any], L: int, D: int) -> Any:
    """The jitted loop over batches ``lo <= i < hi`` of a plan, each padded to ``L``:
    ``(params, state, losses [C], X [R, d], labels [R], rows [C, Q, W], starts [C, Q], order
    [C, Q W], places [C, Q, W], key, first, lo, hi) -> (params, state, losses)`` (a
    :class:`~ltr_cli.neural.batching.Plan`'s arrays), the first three donated. ``D`` 0:
    ``step(params, state, X [Q, L, d], y, mask, positions, key, batch number)``; else the
    step of a scorer of single documents, ``step(params, state, X [D, d], mask [D], at
    [Q, L], y, mask, key, batch number)`` (as :func:`~ltr_cli.neural.batching.flat_batch`
    lays a batch out); each ``-> (params, state, loss)``."""
    j = jax()
    jnp = j.numpy
    lax = j.lax

    def run(params: Any, state: Any, losses: Any, X: Any, labels: Any, rows: Any, starts: Any, order: Any,
            places: Any, key: Any, first: Any, lo: Any, hi: Any) -> Any:
        def body(i: Any, carry: Any) -> Any:
            params, state, losses = carry
            r = lax.dynamic_index_in_dim(rows, i, keepdims=False)[:, :L]
            start = lax.dynamic_index_in_dim(starts, i, keepdims=False)
            mask = r >= 0
            at = jnp.where(mask, r, 0)
            y = jnp.where(mask, jnp.take(labels, at, mode="clip"), jnp.float32(0))
            if D:
                o = lax.dynamic_index_in_dim(order, i, keepdims=False)[:D]
                fmask = o >= 0
                Xf = jnp.where(fmask[:, None], jnp.take(X, jnp.where(fmask, o, 0), axis=0, mode="clip"), jnp.float32(0))
                at = lax.dynamic_index_in_dim(places, i, keepdims=False)[:, :L]
                params, state, v = step(params, state, Xf, fmask, at, y, mask, key, first + i)
            else:
                Xb = jnp.where(mask[..., None], jnp.take(X, at, axis=0, mode="clip"), jnp.float32(0))
                pos = jnp.where(mask, r - start[:, None], 0)
                params, state, v = step(params, state, Xb, y, mask, pos, key, first + i)
            return params, state, losses.at[i].set(v)

        return lax.fori_loop(lo, hi, body, (params, state, losses))

    return j.jit(run, donate_argnums=(0, 1, 2))


def stretches(shapes: list[tuple[int, int]]) -> list[tuple[tuple[int, int], int, int]]:
    """``(shape, lo, hi)`` of each run of consecutive equal shapes ``shapes[lo:hi]``."""
    out: list[tuple[tuple[int, int], int, int]] = []
    for i, shape in enumerate(shapes):
        if out and out[-1][0] == shape:
            out[-1] = (shape, out[-1][1], i + 1)
        else:
            out.append((shape, i, i + 1))
    return out


@dataclass
class EpochRun:
    """An epoch's end: the parameters and optimiser state, each batch's loss and real slates,
    its real documents, and the seconds its first stretches of new shapes took to compile."""

    params: Any
    state: Any
    losses: np.ndarray
    weights: np.ndarray
    documents: int
    compile_seconds: float


def device_epoch(loops: dict[tuple[int, int], Any], step: Callable[..., Any], flat: bool, params: Any, state: Any,
                 fold: Resident, data: Packed, batch_queries: int, slate: int, rng: np.random.Generator, key: Any,
                 seen: set[tuple[Any, ...]], device: Any) -> EpochRun:
    """One epoch over the resident fold (see the module docstring); ``flat``: ``step`` is a
    scorer of single documents' (:func:`looped`); ``loops`` caches :func:`looped` by
    ``(L, D)``, ``seen`` the shapes already compiled (their first call is timed on an empty
    stretch, as the compile); every array goes to ``device``."""
    j = jax()
    jnp = j.numpy
    losses, weights, documents, compiling = [], [], 0, 0.0
    for plan in epoch_plans(data, batch_queries, slate, rng):
        rows, starts = j.device_put(plan.rows, device), j.device_put(plan.starts, device)
        order, places = (j.device_put(plan.order, device), j.device_put(plan.places, device)) if flat else (rows, rows)
        values = j.device_put(np.zeros(plan.rows.shape[0], dtype=np.float32), device)
        first = np.int32(plan.first)
        W = plan.rows.shape[2]  # a scorer of single documents: every batch's slates as wide as the widest
        shapes = [(W, int(D)) if flat else (int(L), 0) for L, D in zip(plan.lengths[:plan.count], plan.flat)]
        for (L, D), lo, hi in stretches(shapes):
            if (L, D) not in loops:
                loops[L, D] = looped(step, L, D)
            run = loops[L, D]
            shape = (L, D, fold.X.shape, plan.rows.shape)
            if shape not in seen:
                seen.add(shape)
                c0 = time.perf_counter()
                params, state, values = run(params, state, values, fold.X, fold.labels, rows, starts, order, places,
                                            key, first, np.int32(0), np.int32(0))
                values.block_until_ready()
                compiling += time.perf_counter() - c0
            params, state, values = run(params, state, values, fold.X, fold.labels, rows, starts, order, places, key,
                                        first, np.int32(lo), np.int32(hi))
        losses.append(values[:plan.count])
        weights.append(plan.queries[:plan.count])
        documents += int(plan.documents[:plan.count].sum())
    got = np.asarray(j.device_get(jnp.concatenate(losses)), dtype=np.float64) if losses else np.zeros(0)
    return EpochRun(params, state, got, np.concatenate(weights) if weights else np.zeros(0), documents, compiling)

