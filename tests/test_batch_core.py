"""Batch core: QP solver, BMRM, SVMmap / NDCG / pairwise losses against the worked examples
of BATCH-REFERENCE.md and brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.optimize import minimize

from ltr_cli.learners.batch.bmrm import bmrm
from ltr_cli.learners.batch.losses import (
    ap_most_violated,
    ap_structural_hinge,
    mean_risk,
    ndcg_structural_hinge,
    pairwise_hinge,
    psi,
)
from ltr_cli.learners.batch.qp import solve_dual_qp
from ltr_cli.measures.metrics import average_precision, ndcg_at_k


def test_qp_matches_slsqp():
    rng = np.random.default_rng(0)
    for _ in range(100):
        n = int(rng.integers(1, 7))
        G = rng.normal(size=(n, 3))
        Q, b = G @ G.T, rng.normal(size=n)
        for cons, cap in (("simplex", 1.0), ("capped", 0.7)):
            a, obj = solve_dual_qp(Q, b, cons, cap)
            fun = (lambda x: 1 - x.sum()) if cons == "simplex" else (lambda x, cap=cap: cap - x.sum())
            ref = minimize(lambda x, b=b, Q=Q: -(b @ x - 0.5 * x @ Q @ x), np.full(n, 0.5 / n),
                           bounds=[(0, None)] * n, method="SLSQP", options={"ftol": 1e-14, "maxiter": 500},
                           constraints=[{"type": "eq" if cons == "simplex" else "ineq", "fun": fun}])
            assert obj >= -ref.fun - 1e-9


def toy_risk(w):
    v = 0.5 - 2 * w[0]
    return (v, np.array([-2.0])) if v > 0 else (0.0, np.array([0.0]))


def test_bmrm_toy_traces():
    res = bmrm(toy_risk, 1, lam=1.0, eps=1e-10)
    assert [round(t["J"], 6) for t in res.trace] == [2.0, 0.03125]
    assert res.trace[0]["lower_bound"] == pytest.approx(-1.5)
    assert res.w[0] == pytest.approx(0.25) and res.iterations == 2
    res = bmrm(toy_risk, 1, lam=16.0, eps=1e-10)
    assert res.w[0] == pytest.approx(0.125) and res.iterations == 1 and res.objective == pytest.approx(0.375)


REL = np.array([True, True, False, False])


@pytest.mark.parametrize("x,w,order,hinge", [
    ((1, 2, 0, 3), 0.0, [2, 3, 0, 1], 7 / 12),
    ((2, 0, 1, -1), 1.0, [0, 2, 1, 3], 2 / 3),
    ((2, 0, 1, -1), 0.25, [2, 0, 1, 3], 5 / 12),
    ((10, 9, 0, -1), 1.0, [0, 1, 2, 3], 0.0),
])
def test_svmmap_worked_examples(x, w, order, hinge):
    X = np.array(x, dtype=float)[:, None]
    ranking, value = ap_most_violated(X[:, 0] * w, REL)
    assert ranking.tolist() == order and value == pytest.approx(hinge, abs=1e-6)


def test_svmmap_greedy_equals_brute_force():
    rng = np.random.default_rng(3)
    for case in range(150):
        n = 7 if case % 50 == 0 else int(rng.integers(2, 7))  # up to 7 documents (5,040 orders: a few)
        X = np.round(rng.normal(size=(n, 2)), 1)  # rounded: ties
        rel = rng.random(n) < 0.5
        if rel.all() or not rel.any():
            continue
        w = rng.normal(size=2)
        ideal = np.concatenate((np.flatnonzero(rel), np.flatnonzero(~rel)))
        base = w @ psi(X, rel, ideal)
        brute = max(1 - average_precision(np.array(p), rel.astype(float)) + w @ psi(X, rel, np.array(p)) - base
                    for p in itertools.permutations(range(n)))
        value, grad = ap_structural_hinge(X, rel.astype(float), w)
        assert value == pytest.approx(brute, abs=1e-9)


def test_svmmap_training_toy():
    # one query, relevant x = 1, non-relevant x = 0: 1/2 w^2 + C max(0, 1/2 - 2w)
    q = [(np.array([[1.0], [0.0]]), np.array([1.0, 0.0]))]
    risk = mean_risk(q, ap_structural_hinge)
    for C, w_star in ((1.0, 0.25), (0.05, 0.1)):
        res = bmrm(risk, 1, lam=1.0 / C, eps=1e-12)
        assert res.w[0] == pytest.approx(w_star, abs=1e-6)


def test_ndcg_lap_worked_example():
    X = np.array([[0.1], [0.5], [0.3]])
    y = np.array([2.0, 1.0, 0.0])
    loss, grad = ndcg_structural_hinge(X, y, np.array([1.0]), k=3, weights="bmrm")
    assert loss == pytest.approx(0.513117, abs=1e-6)
    assert grad[0] == pytest.approx(-0.5 * 0.1 + 0.5 * 0.3)  # dl/df = (-0.5, 0, 0.5)
    loss, _ = ndcg_structural_hinge(X, y, np.array([1.0]), k=3, weights="cofirank")
    assert loss == pytest.approx(0.461150, abs=1e-6)
    loss, _ = ndcg_structural_hinge(X, y, np.array([1.0]), k=1, weights="bmrm")
    assert loss == pytest.approx(1.2)


def test_ndcg_loss_is_the_brute_force_max_and_bounds_1_minus_ndcg():
    rng = np.random.default_rng(4)
    for case in range(120):
        n = 7 if case % 20 == 0 else int(rng.integers(2, 7))  # up to 7 documents (5,040 orders: a few)
        X = np.round(rng.normal(size=(n, 2)), 1)  # rounded: ties
        y = rng.integers(0, 3, n).astype(float)
        if y.max() == 0:
            continue
        w = rng.normal(size=2)
        k = int(rng.integers(1, n + 1))
        loss, _ = ndcg_structural_hinge(X, y, w, k=k)
        f = X @ w
        ideal = np.argsort(-y, kind="stable")
        c = 1 / np.log2(np.arange(n) + 2.0)
        c[np.arange(n) >= k] = 0
        brute = max(1 - ndcg_at_k(np.array(p), y, k) + c @ (f[list(p)] - f[ideal]) for p in itertools.permutations(range(n)))
        assert loss == pytest.approx(brute, abs=1e-9)
        assert loss >= 1 - ndcg_at_k(np.argsort(-f, kind="stable"), y, k) - 1e-12


def test_pairwise_worked_examples():
    value, grad = pairwise_hinge(np.array([[3.0], [1.0], [2.0]]), np.array([2.0, 1.0, 0.0]), np.array([1.0]))
    assert value == 2.0 and grad.tolist() == [1.0]  # R1
    q1 = (np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]]), np.array([1.0, 0.0, 0.0]))
    q2 = (np.array([[0.0, 2.0], [1.0, 1.0]]), np.array([0.0, 1.0]))
    total = [pairwise_hinge(X, y, np.array([1.0, 1.0])) for X, y in (q1, q2)]
    assert sum(v for v, _ in total) == 2.0  # R2
    np.testing.assert_allclose(sum(g for _, g in total), [-2.0, 2.0])


def _tiny_queries(seed, queries=2, n=4, d=2):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(queries):
        X = np.round(rng.normal(size=(n, d)), 2)
        y = np.zeros(n)
        y[rng.choice(n, 2, replace=False)] = 1.0
        out.append((X, y))
    return out


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_bmrm_svmmap_equals_an_independent_primal_qp(seed):
    """n-slack SVMmap primal with every ranking enumerated, solved by SLSQP:
    min 1/2||w||^2 + C mean_q xi_q  s.t.  xi_q >= Delta(r) + w.(Psi(r) - Psi(y*)) for all r."""
    queries, C = _tiny_queries(seed), 2.0
    rows = []
    for q, (X, y) in enumerate(queries):
        rel = y > 0
        ideal = np.concatenate((np.flatnonzero(rel), np.flatnonzero(~rel)))
        for r in itertools.permutations(range(len(y))):
            r = np.array(r)
            rows.append((q, 1 - average_precision(r, y), psi(X, rel, r) - psi(X, rel, ideal)))
    nq, d = len(queries), queries[0][0].shape[1]

    def objective(z):
        return 0.5 * z[:d] @ z[:d] + C * z[d:].mean()

    cons = [{"type": "ineq", "fun": (lambda z, q=q, D=D, g=g: z[d + q] - D - z[:d] @ g)} for q, D, g in rows]
    cons += [{"type": "ineq", "fun": (lambda z, q=q: z[d + q])} for q in range(nq)]
    ref = minimize(objective, np.zeros(d + nq), constraints=cons, method="SLSQP",
                   options={"ftol": 1e-12, "maxiter": 1000})
    res = bmrm(mean_risk(queries, ap_structural_hinge), d, lam=1.0 / C, eps=1e-8)
    assert res.objective * C == pytest.approx(ref.fun, abs=1e-6)  # J(BMRM) = objective / C
    gaps = [t["gap"] for t in res.trace]
    assert all(b <= a + 1e-9 for a, b in zip(gaps, gaps[1:]))  # the gap never grows
    assert gaps[-1] < 1e-8


def test_ranksvm_equals_the_pairwise_difference_qp():
    """Ranking SVM by BMRM (counting oracle) vs. the explicit pair-slack QP:
    min 1/2||w||^2 + C mean_q sum_{pairs} xi  s.t.  xi_ij >= 1 - w.(x_i - x_j), xi >= 0."""
    rng = np.random.default_rng(7)
    queries = [(rng.normal(size=(5, 3)), rng.integers(0, 3, 5).astype(float)) for _ in range(3)]
    C = 0.7
    pairs = []
    for q, (X, y) in enumerate(queries):
        for i in range(len(y)):
            for j in range(len(y)):
                if y[i] > y[j]:
                    pairs.append((q, X[i] - X[j]))
    nq = len(queries)
    d, P = 3, len(pairs)

    def objective(z):
        return 0.5 * z[:d] @ z[:d] + C * z[d:].sum() / nq

    cons = [{"type": "ineq", "fun": (lambda z, k=k, v=v: z[d + k] - 1 + z[:d] @ v)} for k, (_, v) in enumerate(pairs)]
    ref = minimize(objective, np.zeros(d + P), constraints=cons, bounds=[(None, None)] * d + [(0, None)] * P,
                   method="SLSQP", options={"ftol": 1e-12, "maxiter": 2000})
    res = bmrm(mean_risk(queries, pairwise_hinge), d, lam=1.0 / C, eps=1e-9)
    assert res.objective * C == pytest.approx(ref.fun, abs=1e-6)
    np.testing.assert_allclose(res.w, ref.x[:d], atol=1e-3)
