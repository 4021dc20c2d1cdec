"""ListNet, binary ListNet and ListMLE against straightforward numpy references written from
their definitions (allRank's forms), and the properties every loss has (neural_checks)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

pytest.importorskip("jax")

from ltr_cli import api  # noqa: E402
from tests.neural_checks import batch, check_properties, value64  # noqa: E402

EPS = 1e-10


def _softmax(v: np.ndarray) -> np.ndarray:
    e = np.exp(v - v.max())
    return e / e.sum()


def listnet_reference(s, y, m, eps=EPS):
    out = [-np.sum(_softmax(yi[mi]) * np.log(_softmax(si[mi]) + eps)) for si, yi, mi in zip(s, y, m) if mi.any()]
    return float(np.mean(out)) if out else 0.0


def binary_listnet_reference(s, y, m, eps=EPS):
    out = []
    for si, yi, mi in zip(s, y, m):
        if mi.any():
            t = yi[mi] / (yi[mi].sum() or 1.0)
            out.append(-np.sum(t * np.log(_softmax(si[mi]) + eps)))
    return float(np.mean(out)) if out else 0.0


def plackett_luce(s: np.ndarray, order: np.ndarray, eps=EPS) -> float:
    """ListMLE's term of one slate for the documents in ``order`` (allRank: shifted by the
    maximum score, eps inside the log)."""
    z = s[order] - s.max()
    tails = np.cumsum(np.exp(z)[::-1])[::-1]
    return float(np.sum(np.log(tails + eps) - z))


def listmle_reference(s, y, m, eps=EPS):
    """Slates without tied labels: one order."""
    out = []
    for si, yi, mi in zip(s, y, m):
        if mi.any():
            real = np.flatnonzero(mi)
            out.append(plackett_luce(si[real], np.argsort(-yi[real]), eps))
    return float(np.mean(out)) if out else 0.0


@pytest.mark.parametrize("name, reference", [("listnet", listnet_reference), ("binary_listnet", binary_listnet_reference),
                                             ("listmle", listmle_reference)])
def test_a_listwise_loss_equals_its_definition(name, reference):
    rng = np.random.default_rng(3)
    ties = name != "listmle"
    for _ in range(4):
        s, y, m = batch(rng, ties=ties, empty=ties)
        assert value64(name, s, y, m) == pytest.approx(reference(s, y, m), rel=1e-12, abs=1e-12)
    s, y, m = batch(rng, ties=ties, empty=ties)
    assert value64(name, s, y, m, eps=1e-3) == pytest.approx(reference(s, y, m, 1e-3), rel=1e-12)


def test_the_public_api_gives_the_same_number():
    s, y, m = batch(np.random.default_rng(4))
    assert api.ranking_loss("listnet", s, y, mask=m) == pytest.approx(listnet_reference(s, y, m), rel=1e-12)


@pytest.mark.parametrize("name", ["listnet", "binary_listnet"])
def test_listnet_properties(name):
    check_properties(name)


def test_listmle_properties():
    check_properties("listmle", ties=False)


def test_listmle_orders_tied_labels_by_its_seed():
    """With tied labels the value depends on the seed only: the same seed, the same value;
    each seed's value is the Plackett-Luce term of one order putting the labels descending;
    averaged over seeds it is the mean over the uniformly random shuffles allRank draws
    (within 4 standard errors, the exact mean from all 5! shuffles)."""
    rng = np.random.default_rng(5)
    s = rng.normal(size=(1, 5))
    y = np.array([[2.0, 1.0, 2.0, 0.0, 1.0]])
    m = np.ones_like(y, dtype=bool)
    exact = []
    for perm in itertools.permutations(range(5)):
        perm = np.array(perm)
        exact.append(plackett_luce(s[0], perm[np.argsort(-y[0, perm], kind="stable")]))
    possible = set(np.round(exact, 12))
    import jax

    from ltr_cli.neural.losses.listmle import listmle

    with jax.enable_x64(True):
        seeds = np.asarray(jax.jit(jax.vmap(lambda seed: listmle(s, y, m, seed=seed)))(np.arange(200)))
    assert value64("listmle", s, y, m, seed=7) == pytest.approx(seeds[7], rel=1e-15)
    assert set(np.round(seeds, 12)) <= possible and len(set(np.round(seeds, 12))) > 1
    se = np.std(seeds) / np.sqrt(len(seeds))
    assert abs(np.mean(seeds) - np.mean(exact)) < 4 * se
