"""Batches for the neural learners: training slates per epoch, padded lengths from a few
buckets, and the memory bound.

* Training (:func:`epoch_batches`): each epoch the training queries are shuffled and cut
  into batches of ``batch_queries``; a query longer than ``slate`` is subsampled to
  ``slate`` documents (allRank's ``FixLength``: a sample without replacement; one without a
  relevant document is drawn again when the query has relevant documents, and when the
  query's labels sum to 1 its relevant document takes one of the sampled places). Each
  batch is padded to the smallest training bucket holding its longest slate, capped at
  ``slate`` (:func:`train_bucket`).
  Every draw comes from one numpy generator seeded by the run's seed, the fold and the
  epoch, so an epoch's batches are the same in a rerun and after a resume. An epoch is made
  as plans (:func:`epoch_plans`): its batches' row numbers in the packed documents, which
  the device's loop (:mod:`ltr_cli.neural.epochs`) gathers from the fold kept there, and
  :func:`epoch_batches` on the host; a scorer of single documents takes a batch's documents
  one after another, without the slates' padding (:func:`flat_batch`, :func:`flat_size`).
* Buckets (:func:`bucket`): 8, 16, 32, 64, ...; in training (:func:`train_bucket`) 8, 16,
  32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, ... capped at ``slate``, and every
  batch holds ``batch_queries`` slates (the last one of an epoch filled up with empty
  slates, which a loss leaves out): jit compiles one program per bucket, never one per
  query length or batch size.
* Scoring never truncates: a query is scored whole, padded to its bucket; a scorer that
  scores each document from its own features scores a long query in pieces of
  :data:`DOC_CHUNK` documents. Before a batch or a query runs, its memory is estimated from
  the scorer's activations (:func:`bytes_needed`); one over the budget (half the device's
  memory, or ``train.memory_gb``) is a one-line error naming its size, never an
  out-of-memory crash (:class:`QueryTooLong` for a query, which its caller names).

Shapes: a batch holds ``X`` ``[Q, L, d]`` float32 (0 at padding), ``labels`` ``[Q, L]``
float32 (0 at padding), ``mask`` ``[Q, L]`` bool and ``positions`` ``[Q, L]`` int32 (each
document's place in its query).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import numpy as np

from ltr_cli.errors import QueryTooLong

__all__ = ["QueryTooLong", "bucket", "bytes_needed", "epoch_batches", "epoch_plans", "pack", "plan_batch", "sample",
           "train_bucket"]

MIN_BUCKET = 8
DOC_CHUNK = 4096  # documents a per-document scorer scores at once (a bucket)
TRAIN_FACTOR = 4  # activations kept for the backward pass, their gradients, the optimiser's work
MAX_DRAWS = 1000  # allRank's redraws of a sample without a relevant document
PLAN_BYTES = 32 << 20  # row numbers of the batches one plan holds


def bucket(n: int, cap: int | None = None) -> int:
    """The padded length of ``n`` documents: the smallest of 8, 16, 32, 64, ... that holds
    them, or ``cap`` when that is smaller."""
    b = MIN_BUCKET
    while b < n:
        b *= 2
    return min(b, cap) if cap is not None else b


def train_bucket(n: int, cap: int) -> int:
    """The padded length of a training batch whose longest slate has ``n`` documents: 8, 16,
    32, 64, then steps of a quarter of the power of two below (80, 96, 112, 128, 160, 192,
    ...), capped at ``cap`` (the slate), so padding is at most a quarter of a long batch."""
    b = MIN_BUCKET
    while b < n and b < 64:
        b *= 2
    if b < n:
        step = 16
        while b < n:
            if b >= 4 * step * 2:
                step *= 2
            b += step
    return min(b, cap)


def bytes_needed(floats_per_doc: float, d: int, Q: int, L: int, train: bool) -> int:
    """About the bytes a batch of ``Q`` slates of ``L`` documents takes: its input and the
    scorer's activations (``floats_per_doc``), times :data:`TRAIN_FACTOR` while training."""
    per_doc = (floats_per_doc * (TRAIN_FACTOR if train else 1) + d + 4) * 4
    return int(per_doc * Q * L)


@dataclass
class Packed:
    """The training queries, transformed: ``X`` ``[N, d]`` float32 and ``labels`` ``[N]``
    float32 of every document, query ``i`` the rows ``offsets[i]:offsets[i + 1]``."""

    X: np.ndarray
    labels: np.ndarray
    offsets: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        return np.diff(self.offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1


def pack(parts: list[tuple[np.ndarray, np.ndarray]], d: int) -> Packed:
    """Queries ``[(X (m, d) float32, labels (m,)), ...]`` (those with no document left out)
    as one :class:`Packed`."""
    kept = [(X, y) for X, y in parts if X.shape[0]]
    lengths = np.array([X.shape[0] for X, _ in kept], dtype=np.int64)
    offsets = np.zeros(len(kept) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    X = np.empty((int(offsets[-1]), d), dtype=np.float32)
    y = np.empty(int(offsets[-1]), dtype=np.float32)
    for (Xq, yq), a, b in zip(kept, offsets[:-1], offsets[1:]):
        X[a:b] = Xq
        y[a:b] = yq
    return Packed(X, y, offsets)


def sample(labels: np.ndarray, slate: int, rng: np.random.Generator) -> np.ndarray:
    """allRank's ``FixLength._sample``: ``slate`` of the query's documents, in the order drawn."""
    n = labels.shape[0]
    total = float(labels.sum())
    for _ in range(MAX_DRAWS):
        idx = rng.choice(n, slate, replace=False)
        if float(labels[idx].sum()) != 0 or total == 0 or total < 0:
            return idx
        if total == 1:
            kept = rng.choice(idx, slate - 1, replace=False)
            return np.concatenate([kept, [int(np.argmax(labels))]])
    return idx


@dataclass
class Batch:
    X: np.ndarray
    labels: np.ndarray
    mask: np.ndarray
    positions: np.ndarray
    queries: int  # real slates (the last batch of an epoch is filled up with empty slates)
    documents: int


@dataclass
class Plan:
    """Consecutive batches of an epoch as row numbers of the :class:`Packed` documents:
    ``rows`` ``[C, Q, W]`` int32 (-1 at padding; ``W`` the widest training bucket the fold
    can give), ``starts`` ``[C, Q]`` int32 (the first row of each slate's query, so a
    document's position is ``rows - starts``), ``lengths`` ``[C]`` each batch's padded
    length ``L`` (its training bucket), ``queries`` and ``documents`` ``[C]`` its real slates
    and documents, ``flat`` ``[C]`` the rows a scorer of single documents takes them in
    (:func:`flat_size`), ``order`` ``[C, Q W]`` int32 its real documents' rows one after
    another (slate by slate; -1 past them) and ``places`` ``[C, Q, W]`` int32 each slate
    place's index in ``order`` (0 at padding); ``first``: the epoch's number of the first batch, ``count``: the real
    batches (the rest of the ``C`` rows is all padding, so that every plan of a fit has
    one shape)."""

    rows: np.ndarray
    starts: np.ndarray
    lengths: np.ndarray
    queries: np.ndarray
    documents: np.ndarray
    flat: np.ndarray
    order: np.ndarray
    places: np.ndarray
    first: int
    count: int


def flat_size(documents: int, queries: int, Q: int, slate: int) -> int:
    """The rows a batch of ``Q`` slates, ``queries`` of them real with ``documents``
    documents, is scored in by a scorer of single documents, one after another without
    padding: ``Q`` times the training bucket of their mean per real slate (at most a
    quarter more than the documents past 64 a slate), so that batches, the last one of an
    epoch included, share a few compiled shapes."""
    return Q * train_bucket(max(1, -(-documents // max(queries, 1))), slate)


def plan_shape(data: Packed, batch_queries: int, slate: int) -> tuple[int, int, int]:
    """``(C, Q, W)`` of every :class:`Plan` of an epoch: ``Q`` slates a batch, ``W`` the
    widest bucket, ``C`` batches a plan (all the epoch's when they take at most
    :data:`PLAN_BYTES`)."""
    Q = min(batch_queries, len(data))
    W = train_bucket(min(int(data.lengths.max()), slate), slate)
    batches = -(-len(data) // Q)
    return min(batches, max(1, PLAN_BYTES // (Q * W * 4))), Q, W


def epoch_plans(data: Packed, batch_queries: int, slate: int, rng: np.random.Generator) -> Iterator[Plan]:
    """One epoch's training batches (see the module docstring) as plans (:class:`Plan`), in order."""
    order = rng.permutation(len(data))
    C, Q, W = plan_shape(data, batch_queries, slate)
    lengths = data.lengths[order]
    starts = data.offsets[:-1][order]
    cols = np.arange(W)
    batches = -(-len(order) // Q)
    for first in range(0, batches, C):
        count = min(C, batches - first)
        rows = np.full((C * Q, W), -1, dtype=np.int32)
        start = np.zeros(C * Q, dtype=np.int32)
        a, b = first * Q, min(len(order), (first + count) * Q)
        n, lo = lengths[a:b], starts[a:b]
        start[:b - a] = lo
        short = n <= slate
        rows[:b - a][short] = np.where(cols < n[short, None], lo[short, None] + cols, -1)
        for i in np.flatnonzero(~short):
            rows[i, :slate] = lo[i] + sample(data.labels[lo[i]:lo[i] + n[i]], slate, rng)
        flat_kept = np.zeros(C * Q, dtype=np.int64)
        flat_kept[:b - a] = np.minimum(n, slate)
        kept = flat_kept.reshape(C, Q)
        real = np.zeros(C * Q, dtype=np.int64)
        real[:b - a] = 1
        L = np.array([train_bucket(int(m), slate) for m in kept.max(axis=1)], dtype=np.int64)
        docs, queries = kept.sum(axis=1), real.reshape(C, Q).sum(axis=1)
        flat = np.array([flat_size(int(m), int(k), Q, slate) for m, k in zip(docs, queries)], dtype=np.int64)
        rows = rows.reshape(C, Q * W)
        real_rows = rows >= 0
        one_after_another = np.full((C, Q * W), -1, dtype=np.int32)
        for k in range(count):
            one_after_another[k, :docs[k]] = rows[k][real_rows[k]]
        places = np.where(real_rows, np.cumsum(real_rows, axis=1) - 1, 0).astype(np.int32)
        yield Plan(rows.reshape(C, Q, W), start.reshape(C, Q), L, queries, docs, flat, one_after_another,
                   places.reshape(C, Q, W), first, count)


def plan_batch(data: Packed, plan: Plan, i: int) -> Batch:
    """Batch ``i`` of a plan, gathered and padded on the host."""
    L = int(plan.lengths[i])
    rows = plan.rows[i, :, :L]
    mask = rows >= 0
    at = np.where(mask, rows, 0)
    X = data.X[at]
    X[~mask] = 0.0
    y = np.where(mask, data.labels[at], np.float32(0))
    pos = np.where(mask, rows - plan.starts[i, :, None], 0).astype(np.int32)
    return Batch(X, y, mask, pos, int(plan.queries[i]), int(plan.documents[i]))


def flat_batch(batch: Batch, D: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A batch's real documents one after another (slate by slate, in order): ``X`` ``[D, d]``
    (0 past them), their mask ``[D]`` and each slate place's row ``[Q, L]`` int32 (0 at
    padding)."""
    n = batch.documents
    X = np.zeros((D, batch.X.shape[2]), dtype=np.float32)
    X[:n] = batch.X[batch.mask]
    where = (np.cumsum(batch.mask.ravel()) - 1).reshape(batch.mask.shape)
    return X, np.arange(D) < n, np.where(batch.mask, where, 0).astype(np.int32)


def epoch_batches(data: Packed, batch_queries: int, slate: int, rng: np.random.Generator) -> Iterator[Batch]:
    """One epoch's training batches (see the module docstring), gathered on the host."""
    for plan in epoch_plans(data, batch_queries, slate, rng):
        for i in range(plan.count):
            yield plan_batch(data, plan, i)


def one_query(X: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray]:
    """One query's rows ``(m, d)`` float32 padded to ``[1, L, d]``, and its mask."""
    m, d = X.shape
    out = np.zeros((1, L, d), dtype=np.float32)
    out[0, :m] = X
    mask = np.zeros((1, L), dtype=bool)
    mask[0, :m] = True
    return out, mask
