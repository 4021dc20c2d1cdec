"""The training loop of the neural learners (optax): epochs of seeded batches, a vali
evaluation after each, the best epoch's parameters kept, checkpoints between epochs.

Settings (``train:`` of a ``type: neural`` learner, :class:`TrainSettings`): the optimiser
(``adam`` and ``sgd`` with ``weight_decay`` as an L2 term added to the gradient, as
PyTorch's; ``adamw`` with decoupled decay), ``lr`` and its per-epoch ``schedule``
(``constant``; ``step``: times ``gamma`` every ``step_epochs`` epochs, PyTorch's ``StepLR``;
``cosine``: ``lr (1 + cos(pi e / epochs)) / 2``, ``CosineAnnealingLR``), the global-norm
gradient clip ``clip_norm`` (allRank's ``gradient_clipping_norm``), ``epochs``,
``batch_queries``, ``slate``, and ``early_stopping: {metric, patience}``: training stops once
``patience`` epochs have passed without a better vali value (allRank's rule).

An epoch runs on the device when the fold fits there (:mod:`ltr_cli.neural.epochs`: the
fold resident, one call per stretch of batches of one shape), else batch by batch from the
host; both take the same steps on the same batches. A scorer of single documents
(``per_document``) is trained on each batch's documents one after another (no padding),
its scores put back in their slates, all as wide as the fold's widest bucket, for the loss.

An epoch's training loss is the mean of its batches' losses weighted by their queries
(allRank's). The vali value is ``validate(params)`` (higher is better; NaN counts as worst),
the first best epoch is kept. Randomness: one JAX key (:data:`PRNG`) from the seed (initialisation, then
per epoch and batch a key folded from it for dropout and noise) and, per epoch, a numpy
generator seeded by ``(seed..., epoch)`` for the batches, so an epoch computes the same
bytes whether it runs straight on or after a resume.

Checkpoint (``store``: ``load() -> bytes | None``, ``save(bytes)``): after every epoch, named
arrays (:mod:`ltr_cli.neural.arrays`) of the parameters (``params/``), the optimiser state
(``opt/``), the best epoch's parameters (``best/``) and the key (``rng/key``), with a record
of the epoch, the curves and the ``fingerprint`` of what the fit computes; a checkpoint of
another fingerprint is a one-line error.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import numpy as np
from pydantic import Field, field_validator

from ltr_cli.core.schema import Strict
from ltr_cli.errors import LtrError
from ltr_cli.neural import arrays as named_arrays
from ltr_cli.neural import epochs
from ltr_cli.neural.batching import Packed, epoch_batches, flat_batch, flat_size, plan_shape
from ltr_cli.neural.jaxenv import jax

CHECKPOINT = "ltr-neural-fit/1"
# JAX's key implementation: "rbg" draws dropout and noise with XLA's RngBitGenerator, which
# compiles in a fraction of threefry's time on the CPU (its stream is fixed for a JAX
# version and platform, which is what a rerun needs)
PRNG = "rbg"
MAX_CHECKPOINT_BYTES = 16 << 30


class EarlyStopping(Strict):
    """``early_stopping: {metric: ndcg@10, patience: 10}``."""

    metric: str | None = Field(None, description="vali metric that picks the best epoch (default: cv.select_by)")
    patience: int | None = Field(None, ge=0, description="stop after this many epochs without a better vali "
                                 "value (none: run every epoch; the best epoch is kept either way)")

    @field_validator("metric")
    @classmethod
    def _metric(cls, name: str | None) -> str | None:
        if name is None:
            return None
        from ltr_cli.measures.registry import parse_metric

        return parse_metric(name).name


class TrainSettings(Strict):
    """``train:`` of a neural learner."""

    epochs: int = Field(30, ge=1, le=100_000, description="passes over the training queries")
    batch_queries: int = Field(64, ge=1, le=1_000_000, description="queries per batch (allRank's batch_size)")
    slate: int = Field(240, ge=1, le=1_000_000, description="documents per training slate: longer queries are "
                       "subsampled each epoch (allRank's slate_length); vali, test and ltr score never truncate")
    optimizer: Literal["adam", "adamw", "sgd"] = Field("adam", description="adam, adamw or sgd")
    lr: float = Field(0.001, gt=0, description="learning rate")
    momentum: float = Field(0.0, ge=0, lt=1, description="sgd's momentum")
    schedule: Literal["constant", "step", "cosine"] = Field("constant", description="learning rate per epoch: "
                                                           "constant, step (times gamma every step_epochs) or cosine")
    step_epochs: int = Field(50, ge=1, description="schedule: step's period in epochs (StepLR's step_size)")
    gamma: float = Field(0.1, gt=0, description="schedule: step's factor")
    weight_decay: float = Field(0.0, ge=0, description="L2 on the weights (adam, sgd) or decoupled decay (adamw)")
    clip_norm: float | None = Field(None, gt=0, description="clip the gradient's global norm to this (allRank's "
                                    "gradient_clipping_norm)")
    early_stopping: EarlyStopping = Field(default_factory=EarlyStopping, description="{metric, patience}")
    device: Literal["auto", "cpu", "gpu"] = Field("auto", description="auto (the device JAX finds), cpu or gpu")
    memory_gb: float | None = Field(None, gt=0, description="memory a batch or a query may take (default: half "
                                    "the device's)")


def learning_rate(s: TrainSettings, epoch: int) -> float:
    """The learning rate of epoch ``epoch`` (0-based) under the schedule."""
    if s.schedule == "step":
        return s.lr * s.gamma ** (epoch // s.step_epochs)
    if s.schedule == "cosine":
        return s.lr * (1 + math.cos(math.pi * epoch / s.epochs)) / 2
    return s.lr


def optimizer(s: TrainSettings) -> Any:
    """The optax optimiser, its learning rate an injected hyper-parameter set each epoch."""
    import optax

    def make(learning_rate: float) -> Any:
        parts = [optax.clip_by_global_norm(s.clip_norm)] if s.clip_norm is not None else []
        if s.optimizer == "adamw":
            parts.append(optax.adamw(learning_rate, weight_decay=s.weight_decay))
        else:
            if s.weight_decay:
                parts.append(optax.add_decayed_weights(s.weight_decay))
            parts.append(optax.adam(learning_rate) if s.optimizer == "adam"
                         else optax.sgd(learning_rate, momentum=s.momentum or None))
        return optax.chain(*parts)

    return optax.inject_hyperparams(make)(learning_rate=s.lr)


@dataclass
class TrainResult:
    """What a fit ends with: the best epoch's parameters (host arrays, the scorer's pytree),
    the per-epoch curves and how the run ended."""

    best: Any
    best_epoch: int
    best_vali: float
    epochs_run: int
    stopped_early: bool
    curves: dict[str, list[float]]
    seconds: list[float] = field(default_factory=list)
    compile_seconds: float = 0.0
    documents: int = 0  # training documents of one epoch
    resumed_from: int | None = None


def _worse(v: float, best: float) -> bool:
    return not (v == v) or v <= best


_PROGRAMS: dict[str, tuple[Any, ...]] = {}


def _programs(scorer: Any, loss: Callable[[Any, Any, Any], Any], s: TrainSettings, d: int, key: str | None) -> Any:
    """The jitted step, key folding, initialisation and optimiser start of one architecture,
    loss and optimiser (``key`` names them: the folds and grid points of a run that share
    them share the compiled programs)."""
    if key is not None and key in _PROGRAMS:
        return _PROGRAMS[key]
    j = jax()
    import optax

    opt = optimizer(s)

    def update(params: Any, state: Any, value: Callable[[Any], Any]) -> Any:
        v, grads = j.value_and_grad(value)(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, v

    def step(params: Any, state: Any, X: Any, y: Any, mask: Any, pos: Any, ekey: Any, b: Any) -> Any:
        k = j.random.fold_in(ekey, b)
        return update(params, state, lambda p: loss(scorer.apply(p, X, mask, train=True, key=k, positions=pos), y, mask))

    def flat_step(params: Any, state: Any, X: Any, fmask: Any, at: Any, y: Any, mask: Any, ekey: Any, b: Any) -> Any:
        # a scorer of single documents on the batch's documents X [D, d] one after another;
        # its scores put back in their slates [Q, L] (at: each place's row of X) for the loss
        k = j.random.fold_in(ekey, b)

        def value(p: Any) -> Any:
            out = scorer.apply(p, X[:, None], fmask[:, None], train=True, key=k)
            out = j.numpy.take(out.reshape(out.shape[0], *out.shape[2:]), at, axis=0)
            return loss(j.numpy.where(mask if out.ndim == 2 else mask[..., None], out, 0.0), y, mask)

        return update(params, state, value)

    chosen = flat_step if scorer.per_document else step
    loops: dict[tuple[int, int], Any] = {}  # epochs.looped(step, L, D) by shape
    programs = (j.jit(chosen, donate_argnums=(0, 1)), j.jit(lambda k, e: j.random.fold_in(j.random.fold_in(k, 1), e)),
                j.jit(lambda k: scorer.init(j.random.fold_in(k, 0), d)), j.jit(opt.init), chosen, loops,
                bool(scorer.per_document))
    if key is not None:
        _PROGRAMS[key] = programs
    return programs


def fit(scorer: Any, loss: Callable[[Any, Any, Any], Any], data: Packed, s: TrainSettings, seed: tuple[int, ...],
        validate: Callable[[Any], float], fingerprint: str, store: Any = None, device: Any = None,
        progress: Callable[[int, float, float], None] | None = None, programs: str | None = None) -> TrainResult:
    """Train ``scorer`` on ``data`` under ``loss(outputs, labels, mask) -> scalar``
    (``programs``: the key under which its compiled programs are shared, None: its own)."""
    j = jax()
    jnp = j.numpy
    d = data.X.shape[1]
    root = j.random.key(int(np.random.SeedSequence(list(seed)).generate_state(1, np.uint32)[0]), impl=PRNG)
    jstep, fold, init, opt_init, step, loops, flat = _programs(scorer, loss, s, d,
                                                               None if programs is None else f"{programs}/{d}")
    with j.default_device(device) if device is not None else _nothing():
        params = init(root)
        state = opt_init(params)
    curves: dict[str, list[float]] = {"train_loss": [], "vali": [], "lr": []}
    best, best_epoch, best_vali, start, stopped = j.device_get(params), -1, -math.inf, 0, False
    resumed = None
    if store is not None:
        saved = store.load()
        if saved is not None:
            params, state, best, curves, meta = _restore(saved, fingerprint, params, state, store)
            best_epoch, best_vali, start, stopped = meta["best_epoch"], meta["best_vali"], meta["epoch"] + 1, \
                meta["stopped"]
            resumed = meta["epoch"]
    result = TrainResult(best, best_epoch, best_vali, start, stopped, curves, resumed_from=resumed)
    seen: set[tuple[Any, ...]] = set()
    # every argument of a step committed to one device: jit keys its programs by placement too
    dev = device if device is not None else j.devices()[0]
    params, state = j.device_put((params, state), dev)
    on_device = epochs.resident(data, dev) if start < s.epochs else None
    for epoch in range(start, s.epochs):
        if result.stopped_early:
            break
        t0 = time.perf_counter()
        state.hyperparams["learning_rate"] = j.device_put(jnp.asarray(learning_rate(s, epoch), dtype=jnp.float32), dev)
        rng = np.random.default_rng(np.random.SeedSequence([*seed, epoch]))
        ekey = j.device_put(fold(root, epoch), dev)
        if on_device is not None:
            run = epochs.device_epoch(loops, step, flat, params, state, on_device, data, s.batch_queries, s.slate, rng,
                                      ekey, seen, dev)
            params, state, values, weights, documents = run.params, run.state, run.losses, run.weights, run.documents
            result.compile_seconds += run.compile_seconds
        else:
            params, state, values, weights, documents = _host_epoch(jstep, flat, params, state, data, s, rng, ekey,
                                                                    seen, dev, result)
        train_loss = float(np.dot(values, weights) / max(int(np.sum(weights)), 1))
        if not np.isfinite(train_loss):
            raise LtrError(f"neural: the training loss is not finite at epoch {epoch + 1} (lr {learning_rate(s, epoch):g});"
                           " lower train.lr, set train.clip_norm or check the features' scale (transform)")
        vali = float(validate(params))
        curves["train_loss"].append(train_loss)
        curves["vali"].append(vali)
        curves["lr"].append(learning_rate(s, epoch))
        if not _worse(vali, result.best_vali) or result.best_epoch < 0:
            result.best, result.best_epoch, result.best_vali = j.device_get(params), epoch, vali
        patience = s.early_stopping.patience
        result.stopped_early = patience is not None and epoch - result.best_epoch > patience
        result.epochs_run = epoch + 1
        result.documents = documents
        result.seconds.append(time.perf_counter() - t0)
        if store is not None:
            store.save(_checkpoint(params, state, result, epoch, fingerprint))
        if progress is not None:
            progress(epoch, train_loss, vali)
    return result


def _host_epoch(jstep: Any, flat: bool, params: Any, state: Any, data: Packed, s: TrainSettings,
                rng: np.random.Generator, ekey: Any, seen: set[tuple[Any, ...]], device: Any,
                result: TrainResult) -> tuple[Any, ...]:
    """An epoch of batches gathered on the host, one step call each (a fold too large to
    keep on the device); ``flat``: the scorer scores single documents, given one after
    another (the device's loop computes the same)."""
    j = jax()
    jnp = j.numpy
    losses, weights, documents = [], [], 0
    W = plan_shape(data, s.batch_queries, s.slate)[2]
    for b, batch in enumerate(epoch_batches(data, s.batch_queries, s.slate, rng)):
        if flat:  # as the device's loop lays it out: slates padded to the widest bucket W
            D = flat_size(batch.documents, batch.queries, batch.X.shape[0], s.slate)
            X, fmask, at = flat_batch(batch, D)
            wide = [np.pad(a, ((0, 0), (0, W - a.shape[1]))) for a in (at, batch.labels, batch.mask)]
            args = [j.device_put(a, device) for a in (X, fmask, *wide)]
        else:
            D = 0
            args = [j.device_put(a, device) for a in (batch.X, batch.labels, batch.mask, batch.positions)]
        shape = (*args[0].shape, *args[2].shape, D)
        c0 = time.perf_counter()
        params, state, value = jstep(params, state, *args, ekey, np.int32(b))
        if shape not in seen:
            seen.add(shape)
            value.block_until_ready()
            result.compile_seconds += time.perf_counter() - c0
        losses.append(value)
        weights.append(batch.queries)
        documents += batch.documents
    values = np.asarray(j.device_get(jnp.stack(losses)), dtype=np.float64) if losses else np.zeros(0)
    return params, state, values, np.asarray(weights), documents


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


def _checkpoint(params: Any, state: Any, r: TrainResult, epoch: int, fingerprint: str) -> bytes:
    arrays = {**named_arrays.named(params, "params"), **named_arrays.named(state, "opt"),
              **named_arrays.named(r.best, "best")}
    record = {"format": CHECKPOINT, "fingerprint": fingerprint, "epoch": epoch, "best_epoch": r.best_epoch,
              "best_vali": r.best_vali if math.isfinite(r.best_vali) else None, "stopped": r.stopped_early,
              "curves": {k: [v if math.isfinite(v) else None for v in vals] for k, vals in r.curves.items()}}
    return named_arrays.encode(arrays, record)


def _restore(data: bytes, fingerprint: str, params: Any, state: Any, store: Any) -> tuple[Any, ...]:
    """A checkpoint read back as untrusted input; a one-line LtrError naming the store's
    file for anything but one of this fit."""
    where = getattr(store, "path", "the checkpoint")
    try:
        found, record = named_arrays.decode(data, MAX_CHECKPOINT_BYTES)
        if record.get("format") != CHECKPOINT:
            raise ValueError(f"not a checkpoint of a neural fit ({CHECKPOINT})")
        if record.get("fingerprint") != fingerprint:
            raise LtrError(f"{where}: a checkpoint of another fit (other settings, data or fold); delete it to train "
                           "this one from the start")
        epoch, best_epoch = record.get("epoch"), record.get("best_epoch")
        if not (type(epoch) is int and type(best_epoch) is int and 0 <= best_epoch <= epoch):
            raise ValueError("its epochs are not counts")
        curves = record.get("curves")
        if not (isinstance(curves, dict) and set(curves) == {"train_loss", "vali", "lr"}
                and all(isinstance(v, list) and len(v) == epoch + 1 for v in curves.values())):
            raise ValueError("its curves do not cover its epochs")
        curves = {k: [float("nan") if x is None else float(x) for x in v] for k, v in curves.items()}
        best_vali = record.get("best_vali")
        if not (best_vali is None or isinstance(best_vali, (int, float))) or not isinstance(record.get("stopped"), bool):
            raise ValueError("its record is not one this tool writes")
        params = named_arrays.restore_like(params, found, "params")
        state = named_arrays.restore_like(state, found, "opt")
        best = jax().device_get(named_arrays.restore_like(params, found, "best"))
        used = {k for k in found if k.split("/")[0] in ("params", "opt", "best")}
        if used != set(found):
            raise ValueError(f"it holds the array {sorted(set(found) - used)[0]!r}, which a fit has no place for")
        for name, arr in found.items():
            if arr.dtype.kind == "f" and not np.isfinite(arr).all():
                raise ValueError(f"its array {name!r} is not finite")
    except ValueError as exc:
        raise LtrError(f"{where}: not a checkpoint this tool wrote ({exc}); delete it to train this fit from the "
                       "start") from None
    meta = {"epoch": epoch, "best_epoch": best_epoch, "stopped": record["stopped"],
            "best_vali": -math.inf if best_vali is None else float(best_vali)}
    return params, state, best, curves, meta
