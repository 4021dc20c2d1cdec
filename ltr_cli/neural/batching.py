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
  epoch, so an epoch's batches are the same in a rerun and after a resume.
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

__all__ = ["QueryTooLong", "bucket", "bytes_needed", "epoch_batches", "pack", "sample", "train_bucket"]

MIN_BUCKET = 8
DOC_CHUNK = 4096  # documents a per-document scorer scores at once (a bucket)
TRAIN_FACTOR = 4  # activations kept for the backward pass, their gradients, the optimiser's work
MAX_DRAWS = 1000  # allRank's redraws of a sample without a relevant document


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
    queries: int  # real slates (the last batch of an epoch is filled up with empty ones)
    documents: int


def epoch_batches(data: Packed, batch_queries: int, slate: int, rng: np.random.Generator) -> Iterator[Batch]:
    """One epoch's training batches (see the module docstring)."""
    order = rng.permutation(len(data))
    lengths = data.lengths
    d = data.X.shape[1]
    for start in range(0, len(order), batch_queries):
        chunk = order[start:start + batch_queries]
        picks = []
        for q in chunk:
            n = int(lengths[q])
            lo = int(data.offsets[q])
            idx = np.arange(n) if n <= slate else sample(data.labels[lo:lo + n], slate, rng)
            picks.append((lo, idx))
        L = train_bucket(max(len(idx) for _, idx in picks), slate)
        Q = min(batch_queries, len(order))
        X = np.zeros((Q, L, d), dtype=np.float32)
        y = np.zeros((Q, L), dtype=np.float32)
        mask = np.zeros((Q, L), dtype=bool)
        pos = np.zeros((Q, L), dtype=np.int32)
        for i, (lo, idx) in enumerate(picks):
            m = len(idx)
            X[i, :m] = data.X[lo + idx]
            y[i, :m] = data.labels[lo + idx]
            mask[i, :m] = True
            pos[i, :m] = idx
        yield Batch(X, y, mask, pos, len(picks), int(mask.sum()))


def one_query(X: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray]:
    """One query's rows ``(m, d)`` float32 padded to ``[1, L, d]``, and its mask."""
    m, d = X.shape
    out = np.zeros((1, L, d), dtype=np.float32)
    out[0, :m] = X
    mask = np.zeros((1, L), dtype=bool)
    mask[0, :m] = True
    return out, mask
