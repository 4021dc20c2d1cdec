"""An epoch on the device (the fold resident, one loop call per stretch of batches of one
shape) takes the same steps on the same batches as the host's batch-by-batch loop: the
same bytes of parameters and losses for a scorer of single documents (trained on each
batch's documents one after another); for one that mixes documents (attention) the same
up to the last bits (XLA fuses the loop's body otherwise)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

jax = pytest.importorskip("jax")

from ltr_cli.neural import batching, epochs, scorers  # noqa: E402
from ltr_cli.neural.losses import resolve  # noqa: E402
from ltr_cli.neural.train import TrainSettings, fit  # noqa: E402

D = 5
SLATE = 16


def fold(queries: int = 30, seed: int = 0, shortest: int = 1) -> batching.Packed:
    rng = np.random.default_rng(seed)
    parts = []
    for _ in range(queries):
        m = int(rng.integers(shortest, 40))
        parts.append((rng.normal(size=(m, D)).astype(np.float32), rng.integers(0, 3, m).astype(np.float32)))
    return batching.pack(parts, D)


def train(block: dict, data: batching.Packed, monkeypatch: pytest.MonkeyPatch, host: bool, epochs_: int = 2,
          loss: dict | None = None) -> tuple[list[np.ndarray], list[float]]:
    with monkeypatch.context() as m:
        if host:
            m.setattr(epochs, "resident", lambda data, device: None)
        loss = loss or {"name": "listnet"}
        kind = resolve(loss["name"])
        bound = kind.bind({k: v for k, v in loss.items() if k != "name"})
        scorer = scorers.build(scorers.normalized(block), kind.n_outputs(bound))
        s = TrainSettings.model_validate({"batch_queries": 8, "slate": SLATE, "epochs": epochs_, "lr": 0.01})
        r = fit(scorer, lambda out, y, mask: kind.fn(out, y, mask, **bound), data, s, (3, 1), lambda p: 0.0, "test")
    leaves = [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(r.best)]
    assert r.documents == int(np.minimum(data.lengths, SLATE).sum())
    return leaves, r.curves["train_loss"]


def digest(leaves: list[np.ndarray]) -> str:
    return hashlib.sha256(b"".join(leaf.tobytes() for leaf in leaves)).hexdigest()


def test_the_device_loop_takes_the_host_loops_steps(monkeypatch):
    data = fold()
    block = {"kind": "mlp", "hidden": [8], "dropout": 0.2}
    (dev, dev_loss), (host, host_loss) = (train(block, data, monkeypatch, host=h) for h in (False, True))
    assert digest(dev) == digest(host) and dev_loss == host_loss and np.isfinite(dev_loss).all()
    monkeypatch.setattr(batching, "PLAN_BYTES", 1500)  # plans of 2 batches: the same steps
    assert batching.plan_shape(data, 8, SLATE)[0] == 2
    pieces, pieces_loss = train(block, data, monkeypatch, host=False)
    assert digest(pieces) == digest(dev) and pieces_loss == dev_loss


def test_several_outputs_a_document_go_back_to_their_slates(monkeypatch):
    data = fold(16, seed=4)
    block, loss = {"kind": "mlp", "hidden": [4]}, {"name": "ordinal", "n": 3}
    (dev, dev_loss), (host, host_loss) = (train(block, data, monkeypatch, host=h, epochs_=1, loss=loss)
                                          for h in (False, True))
    assert digest(dev) == digest(host) and dev_loss == host_loss and np.isfinite(dev_loss).all()


def test_the_device_loop_of_attention_takes_the_host_loops_steps(monkeypatch):
    data = fold(20, shortest=SLATE)  # every batch one shape: one program to compile a loop
    block = {"kind": "attention", "input": 4, "blocks": 1, "heads": 1, "ff": 4, "dropout": 0.1}
    (dev, dev_loss), (host, host_loss) = (train(block, data, monkeypatch, host=h, epochs_=1) for h in (False, True))
    assert np.allclose(dev_loss, host_loss, rtol=1e-5, atol=0)
    assert all(np.allclose(a, b, rtol=1e-4, atol=1e-6) for a, b in zip(dev, host))


def test_plans_of_any_size_give_the_same_batches(monkeypatch):
    data = fold(45, seed=1)
    whole = list(batching.epoch_batches(data, 4, SLATE, np.random.default_rng(7)))
    monkeypatch.setattr(batching, "PLAN_BYTES", 1)  # one batch a plan
    pieces = list(batching.epoch_batches(data, 4, SLATE, np.random.default_rng(7)))
    assert len(whole) == len(pieces) == 12
    for a, b in zip(whole, pieces):
        assert all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("X", "labels", "mask", "positions"))
    plans = list(batching.epoch_plans(data, 4, SLATE, np.random.default_rng(7)))
    assert [p.rows.shape for p in plans] == [(1, 4, SLATE)] * 12 and [p.first for p in plans] == list(range(12))


def test_a_batch_laid_out_flat_keeps_its_documents_in_order():
    data = fold(9, seed=2)
    (batch,) = batching.epoch_batches(data, 16, 24, np.random.default_rng(0))
    n = batch.documents
    size = batching.flat_size(n, batch.queries, batch.X.shape[0], 24)
    X, mask, at = batching.flat_batch(batch, size)
    assert size >= n and mask.sum() == n and not X[n:].any()
    assert np.array_equal(X[at][batch.mask], batch.X[batch.mask])
    # the last, partly empty batch of an epoch takes the size of a full one of its mean
    assert batching.flat_size(7 * 120, 7, 64, 240) == batching.flat_size(64 * 120, 64, 64, 240) == 64 * 128


def test_the_resident_fold_is_the_packed_one_in_pieces(monkeypatch):
    data = fold(60, seed=3)
    n = data.X.shape[0]
    assert epochs.resident_rows(5) == epochs.SMALL_ROWS
    assert all(r >= m and r <= m * 1.125 + 1 for m in (1025, 3000, 70_000, 2_270_000)
               for r in [epochs.resident_rows(m)])
    monkeypatch.setattr(epochs, "PUT_ROWS", 64)  # pieces of 64 rows, the last overlapping
    monkeypatch.setattr(epochs, "SMALL_ROWS", 16)
    got = epochs.resident(data, jax.devices()[0])
    assert got is not None
    X, y = np.asarray(got.X), np.asarray(got.labels)
    assert X.shape[0] == epochs.resident_rows(n) and np.array_equal(X[:n], data.X) and not X[n:].any()
    assert np.array_equal(y[:n], data.labels)
