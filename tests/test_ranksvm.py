"""Batch Ranking SVM: the counting kernel against the enumerated pairs, the gradient
against finite differences, the Newton solution against a generic optimiser on the
explicit-pair objective, and the convergence record."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize import minimize

from ltr_cli import kernels
from ltr_cli.learners.batch.ranksvm import PairwiseProblem, fit_ranksvm, newton_ranksvm, squared_hinge_pairs
from ltr_cli.kernels import ranksvm as K


def _queries(seed: int, d: int = 4, scale: float = 1.0) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    out = []
    for m in (1, 2, 9, 25, 14):
        X = rng.normal(size=(m, d)) * scale
        X[:, 0] = np.round(X[:, 0])  # ties in a feature, so ties in scores
        out.append((X, rng.integers(0, 4, size=m).astype(float)))
    out.append((rng.normal(size=(5, d)), np.ones(5)))  # no pair
    return out


def _explicit_objective(queries, C: float, w: np.ndarray) -> float:
    """J(w) from the explicit pair differences (the documented objective)."""
    total, Q = 0.0, 0
    for X, y in queries:
        hi, lo = np.nonzero(y[:, None] > y[None, :])
        if hi.size == 0:
            continue
        Q += 1
        total += float(np.sum(np.maximum(0.0, 1.0 - (X[hi] - X[lo]) @ w) ** 2))
    return 0.5 / C * float(w @ w) + total / Q


@pytest.mark.parametrize("seed", range(6))
def test_counting_kernel_equals_enumerated_pairs(seed):
    P = PairwiseProblem.from_queries(_queries(seed), 1.0)
    rng = np.random.default_rng(seed + 100)
    # scores with ties, but no gap of exactly 1 (there the generalised Hessian may take
    # either side of the kink, and rounding decides which)
    s = np.round(rng.normal(size=P.y.shape[0]) * 2, 1) * 1.037
    order = np.empty(s.shape[0], dtype=np.int64)
    value, grad = K.squared_hinge_value_grad(s, P.y, P.offsets, order)
    v = rng.normal(size=s.shape[0])
    hv = K.squared_hinge_hessvec(s, P.y, P.offsets, order, v)
    diag = K.squared_hinge_hess_diag(P.X, s, P.y, P.offsets, order)
    ref_value, ref_grad, ref_hv, ref_diag = 0.0, np.zeros_like(s), np.zeros_like(s), np.zeros(P.X.shape[1])
    for a, b in zip(P.offsets[:-1], P.offsets[1:]):
        val, g, H = squared_hinge_pairs(s[a:b], P.y[a:b])
        ref_value += val
        ref_grad[a:b] = g
        ref_hv[a:b] = H @ v[a:b]
        ref_diag += np.einsum("if,ij,jf->f", P.X[a:b], H, P.X[a:b])
    assert value == pytest.approx(ref_value, rel=1e-12, abs=1e-12)
    np.testing.assert_allclose(grad, ref_grad, atol=1e-10)
    np.testing.assert_allclose(hv, ref_hv, atol=1e-10)
    np.testing.assert_allclose(diag, ref_diag, rtol=1e-10, atol=1e-10)


def test_objective_is_the_documented_one_and_its_gradient_matches_finite_differences():
    queries = _queries(7)
    P = PairwiseProblem.from_queries(queries, 0.5)
    w = np.random.default_rng(1).normal(size=4)
    here = P.at(w)
    assert here.J == pytest.approx(_explicit_objective(queries, 0.5, w), rel=1e-12)
    h = 1e-6
    numeric = np.array([(P.at(w + h * e).J - P.at(w - h * e).J) / (2 * h) for e in np.eye(4)])
    np.testing.assert_allclose(here.g, numeric, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("C,scale", [(0.01, 1.0), (1.0, 1.0), (100.0, 1.0), (1.0, 1e6)])
def test_newton_reaches_the_minimum_of_the_explicit_objective(C, scale):
    queries = _queries(3, scale=scale)
    P = PairwiseProblem.from_queries(queries, C)
    w, conv = newton_ranksvm(P, eps=1e-10)
    assert conv.converged and not conv.at_cap
    ref = minimize(lambda v: _explicit_objective(queries, C, v), np.zeros(4), method="BFGS",
                   options={"gtol": 1e-12, "maxiter": 10_000})
    assert _explicit_objective(queries, C, w) <= ref.fun * (1 + 1e-7)
    assert conv.objective == pytest.approx(_explicit_objective(queries, C, w), rel=1e-12)


def test_warm_start_and_reference_path_reach_the_same_optimum(monkeypatch):
    queries = _queries(11)
    cold = fit_ranksvm(queries, C=1.0, eps=1e-12)
    from ltr_cli.learners.batch.convergence import FitContext

    warm = fit_ranksvm(queries, C=1.0, eps=1e-12, context=FitContext(fit_ranksvm(queries, C=0.1)))
    np.testing.assert_allclose(warm.w, cold.w, rtol=1e-6, atol=1e-9)
    monkeypatch.setattr(kernels, "ENABLED", False)
    slow = fit_ranksvm(queries, C=1.0, eps=1e-12)
    np.testing.assert_allclose(slow.w, cold.w, rtol=1e-6, atol=1e-9)
    record = cold.info["convergence"]
    assert record["solver"] == "Newton-CG" and record["converged"] and record["gap"] <= 1e-12 * record["objective"]


def test_hinge_loss_is_bmrm_on_the_l1_objective_and_the_cap_is_reported():
    queries = _queries(5)
    model = fit_ranksvm(queries, C=1.0, loss="hinge", eps=1e-6)
    rec = model.info["convergence"]
    assert rec["solver"] == "BMRM" and rec["converged"]
    capped = fit_ranksvm(queries, C=1.0, loss="hinge", eps=1e-12, max_iter=2)
    rec = capped.info["convergence"]
    assert rec["at_cap"] and not rec["converged"] and rec["iterations"] == 2
