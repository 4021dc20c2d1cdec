"""ApproxNDCG, NeuralNDCG and NeuralNDCG transposed against straightforward numpy references
written from their definitions (NeuralSort's matrix row by row, Sinkhorn's alternating
normalisation with allRank's stop over the whole batch), and the properties every loss has."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

from tests.neural_checks import batch, check_properties, value64  # noqa: E402

EPS = 1e-10


def _discounts(n):
    return 1.0 / np.log2(np.arange(2, n + 2, dtype=np.float64))


def approxndcg_reference(s, y, m, eps=EPS, alpha=1.0):
    out = []
    for si, yi, mi in zip(s, y, m):
        if not mi.any():
            continue
        ss, yy = si[mi], yi[mi]
        ideal = np.sort(yy)[::-1]
        max_dcg = max(np.sum((2.0 ** ideal - 1.0) * _discounts(len(yy))), eps)
        total = 0.0
        for i in range(len(ss)):
            pos = 1.0 + sum(max(1.0 / (1.0 + np.exp(alpha * (ss[i] - ss[j]))), eps) for j in range(len(ss)) if j != i)
            total += (2.0 ** yy[i] - 1.0) / max_dcg / np.log2(1.0 + pos)
        out.append(total)
    return -float(np.mean(out)) if out else 0.0


def _softmax(v):
    e = np.exp(v - v.max())
    return e / e.sum()


def relaxed_sorts(s, m, tau, tol, max_iter):
    """Each non-empty slate's NeuralSort matrix over its real documents (rows: ranks), scaled
    by Sinkhorn until every slate's row and column sums are within tol of 1."""
    mats = []
    for si, mi in zip(s, m):
        x = si[mi]
        r = len(x)
        spread = np.abs(x[:, None] - x[None, :]).sum(axis=1)
        mats.append(np.stack([_softmax(((r + 1 - 2 * (a + 1)) * x - spread) / tau) for a in range(r)]))
    for _ in range(max_iter):
        mats = [P / P.sum(axis=0, keepdims=True) for P in mats]
        mats = [P / P.sum(axis=1, keepdims=True) for P in mats]
        if all(np.abs(P.sum(axis=1) - 1).max() < tol and np.abs(P.sum(axis=0) - 1).max() < tol for P in mats):
            break
    return mats


def neuralndcg_reference(s, y, m, temperature=1.0, powered_relevancies=True, k=None, transposed=False,
                         tol=1e-6, max_iter=50):
    keep = m.any(axis=1)
    mats = relaxed_sorts(s[keep], m[keep], temperature, tol, max_iter)
    out = []
    for P, yi, mi in zip(mats, y[keep], m[keep]):
        yy = yi[mi]
        r = len(yy)
        cut = min(r, s.shape[1] if k is None else k)
        d = _discounts(r)
        d[cut:] = 0.0
        g = 2.0 ** yy - 1.0 if powered_relevancies else yy
        ideal = np.sort(yy)[::-1]
        idcg = np.sum(((2.0 ** ideal - 1.0) if powered_relevancies or transposed else ideal) * d)
        if idcg == 0:
            continue
        dcg = np.sum(g * (P.T @ d)) if transposed else np.sum(d * (P @ g))
        out.append(dcg / (idcg + 1e-10))
    return -float(np.mean(out)) if out else 0.0


def test_approxndcg_equals_its_definition():
    rng = np.random.default_rng(21)
    for params in ({}, {"alpha": 0.5}, {"alpha": 3.0, "eps": 1e-3}):
        s, y, m = batch(rng)
        assert value64("approxndcgloss", s, y, m, **params) == pytest.approx(
            approxndcg_reference(s, y, m, **params), rel=1e-6), params


@pytest.mark.parametrize("name", ["neuralndcg", "neuralndcg_transposed"])
def test_neuralndcg_equals_its_definition(name):
    rng = np.random.default_rng(22)
    settings = [{}, {"temperature": 0.3, "k": 3}, {"powered_relevancies": False}, {"k": 1, "temperature": 2.0}]
    if name == "neuralndcg_transposed":
        settings.append({"max_iter": 3, "tol": 1e-9})
    for params in settings:
        s, y, m = batch(rng)
        ref = neuralndcg_reference(s, y, m, transposed=name == "neuralndcg_transposed", **params)
        assert value64(name, s, y, m, **params) == pytest.approx(ref, rel=1e-6), params


def test_neuralndcg_transposed_keeps_allranks_powered_ideal_dcg():
    """allRank's transposed form divides by the ideal DCG with gains 2^y - 1 even when the
    gains are the labels: so does this one (its value is then not an NDCG in [0, 1])."""
    rng = np.random.default_rng(23)
    s, y, m = batch(rng)
    lin = value64("neuralndcg_transposed", s, y, m, powered_relevancies=False)
    assert lin == pytest.approx(neuralndcg_reference(s, y, m, powered_relevancies=False, transposed=True), rel=1e-6)
    assert lin != pytest.approx(value64("neuralndcg", s, y, m, powered_relevancies=False), rel=1e-2)


@pytest.mark.parametrize("name", ["approxndcgloss", "neuralndcg", "neuralndcg_transposed"])
def test_ndcg_loss_properties(name):
    check_properties(name, fd_tol=1e-5)


def test_stochastic_neuralsort_is_refused_in_one_line():
    from ltr_cli.errors import LtrError
    from ltr_cli.neural.losses import resolve

    with pytest.raises(LtrError, match="^loss neuralndcg: stochastic NeuralSort is not built here; use stochastic=False$"):
        resolve("neural_ndcg").bind({"stochastic": True})
