"""The batch learners' fast paths pinned to their references: each compiled or vectorised
path gives the straightforward implementation's results (to the last bit where the
arithmetic is the same, else within the solver's stated tolerance)."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_cli import kernels
from ltr_cli.learners.batch.coordinate_ascent import Lists, fit_coordinate_ascent


def _letor_like(seed: int, queries: int = 12, d: int = 6, docs: int = 60, relevant: float = 0.1,
                levels: int = 2) -> list[tuple[np.ndarray, np.ndarray]]:
    """Queries of varied length with a few relevant documents, 6-decimal features (ties
    happen) and, in some queries, a constant feature."""
    rng = np.random.default_rng(seed)
    out = []
    for q in range(queries):
        m = int(rng.integers(2, docs))
        y = (rng.random(m) < relevant).astype(float) * rng.integers(1, levels, size=m)
        X = np.round(rng.random((m, d)) + 0.5 * np.outer(y, rng.standard_normal(d)), 6 if q % 3 else 1)
        if q % 4 == 0:
            X[:, 2] = 0.25
        out.append((X, y))
    return out


@pytest.mark.parametrize("measure", ["map", "ndcg@3", "ndcg"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_compiled_line_search_equals_the_numpy_sort_bit_for_bit(measure, seed):
    train = _letor_like(seed, levels=3)
    fast, ref = Lists(train, measure, compiled=True), Lists(train, measure, compiled=False)
    w = np.random.default_rng(seed).normal(size=6)
    S = fast.scores(w)
    v = fast.values(S)
    assert np.array_equal(v, ref.values(S))
    for j in range(6):
        for orig, direction in ((w[j], 1), (w[j], -1), (0.0, 1)):
            steps = 0.001 * direction * np.cumsum(2.0 ** np.arange(25)) if orig == 0 else \
                np.array([-orig, 0.05 * orig, 1e-9])
            assert np.array_equal(fast.along(S, v, j, steps), ref.along(S, v, j, steps))


@pytest.mark.parametrize("measure", ["map", "ndcg@10"])
def test_coordinate_ascent_compiled_fit_is_the_reference_fit(measure, monkeypatch):
    train = _letor_like(7, queries=10, d=5)
    fast = fit_coordinate_ascent(train, measure, restarts=2, iterations=25)
    monkeypatch.setattr(kernels, "ENABLED", False)
    ref = fit_coordinate_ascent(train, measure, restarts=2, iterations=25)
    assert np.array_equal(fast.w, ref.w)
    assert fast.info == ref.info
