"""ListNet, binary ListNet and ListMLE against straightforward numpy references written from
their definitions (allRank's forms), and the properties every loss has (neural_checks)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

from ltr_cli import api  # noqa: E402
from tests.neural_checks import batch, check_properties  # noqa: E402

EPS = 1e-10


def _softmax(v: np.ndarray) -> np.ndarray:
    e = np.exp(v - v.max())
    return e / e.sum()


def listnet_reference(s, y, m, eps=EPS):
    out = []
    for si, yi, mi in zip(s, y, m):
        if mi.any():
            out.append(-np.sum(_softmax(yi[mi]) * np.log(_softmax(si[mi]) + eps)))
    return float(np.mean(out)) if out else 0.0


def binary_listnet_reference(s, y, m, eps=EPS):
    out = []
    for si, yi, mi in zip(s, y, m):
        if mi.any():
            t = yi[mi] / (yi[mi].sum() or 1.0)
            out.append(-np.sum(t * np.log(_softmax(si[mi]) + eps)))
    return float(np.mean(out)) if out else 0.0


@pytest.mark.parametrize("name, reference", [("listnet", listnet_reference), ("binary_listnet", binary_listnet_reference)])
def test_listnet_equals_its_definition(name, reference):
    rng = np.random.default_rng(3)
    for _ in range(5):
        s, y, m = batch(rng)
        assert api.ranking_loss(name, s, y, mask=m) == pytest.approx(reference(s, y, m), rel=1e-12, abs=1e-12)
    s, y, m = batch(rng)
    assert api.ranking_loss(name, s, y, mask=m, eps=1e-3) == pytest.approx(reference(s, y, m, 1e-3), rel=1e-12)


@pytest.mark.parametrize("name", ["listnet", "binary_listnet"])
def test_listnet_properties(name):
    check_properties(name)
