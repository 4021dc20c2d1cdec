"""Training batches are padded to a training bucket: powers of two up to 64, then steps of a
quarter of the power of two below, so a long batch wastes at most a quarter on padding (with
powers of two alone an MSLR-shaped batch of slates of 240 was padded to 240 for a longest
slate of about 150)."""

from __future__ import annotations

import numpy as np

from ltr_cli.neural.batching import epoch_batches, pack, train_bucket


def test_training_buckets_are_powers_of_two_then_quarter_steps():
    assert [train_bucket(n, 10**6) for n in (1, 8, 9, 33, 64, 65, 81, 128, 129, 150, 161, 257, 513)] == \
        [8, 8, 16, 64, 64, 80, 96, 128, 160, 160, 192, 320, 640]
    assert train_bucket(200, 240) == 224 and train_bucket(239, 240) == 240 and train_bucket(300, 240) == 240
    for n in range(65, 5000):
        b = train_bucket(n, 10**6)
        assert n <= b <= n * 1.25 + 16, n


def test_a_batch_is_padded_to_its_training_bucket():
    rng = np.random.default_rng(0)
    parts = [(rng.random((m, 3), dtype=np.float32), rng.integers(0, 3, m).astype(np.float32)) for m in (150, 20, 90)]
    (batch,) = epoch_batches(pack(parts, 3), 4, 240, np.random.default_rng(1))
    assert batch.X.shape == (3, 160, 3) and batch.documents == 260
