"""Regression EM (Wang, Golbandi, Bendersky, Metzler & Najork, WSDM 2018): position
propensities from an ordinary click log, without randomisation.

The model is a position-based one with binary relevance: a document d of query q shown at
position k is clicked when the position is examined (theta_k) and the document is relevant
(gamma_qd), P(C = 1) = theta_k gamma_qd. A log that always shows a document at the same
place cannot tell theta from gamma with one gamma per (query, document); regression EM ties
the gammas together through the features instead, gamma_qd = f(x_qd), f a regression fitted
to the relevance the E-step infers (the paper: a GBDT), so documents of like features shown
at different positions identify the theta's.

One EM iteration, on the impressions grouped by (query, document, position) (n shown, c
clicked):

* E-step, for the unclicked impressions: P(E = 1, R = 0 | C = 0) = theta (1 - gamma) /
  (1 - theta gamma) and P(E = 0, R = 1 | C = 0) = (1 - theta) gamma / (1 - theta gamma);
* M-step: theta_k = sum (c + (n - c) P(E = 1 | C = 0)) / sum n over the impressions at k;
  f is refitted to the soft relevance label of each (query, document),
  sum_k (c + (n - c) P(R = 1 | C = 0)) / sum_k n, weighing sum_k n, by the weighted
  cross-entropy (the expected complete-data log-likelihood; the paper and ULTRA's
  ``RegressionEM`` draw Bernoulli labels from the same posterior instead).

The regressions: ``gbdt`` (LightGBM's ``cross_entropy`` objective, single-threaded and
deterministic; each refit a new model) or ``logistic`` (a linear logistic regression with an
L2 penalty, by L-BFGS from the previous iteration's coefficients). EM is slow here, as for
any position-based model (it moves along the ridge of theta x gamma): a few hundred
iterations on a log of 10^4 sessions; the record says whether it settled. It starts from theta_k = 0.9 (ULTRA's start) and f fitted to the click rates,
and stops after ``iterations`` or when no theta_k moves by more than ``tol``. The
propensities are returned relative to position 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.clicklog.simulate import Sessions
from ltr_cli.errors import LtrError

#: the start of every position's examination (ULTRA's RegressionEM starts there too)
START = 0.9
#: theta and gamma are kept inside (EPS, 1 - EPS)
EPS = 1e-6


def _logistic(X: np.ndarray, y: np.ndarray, w: np.ndarray, l2: float,
              warm: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Weighted logistic regression on soft labels ``y`` in [0, 1], from the coefficients
    ``warm`` (else 0): the predictions (n,) and the coefficients."""
    from scipy.optimize import minimize

    Xb = np.hstack([X, np.ones((len(X), 1))])
    total = float(w.sum())

    def loss(beta: np.ndarray) -> tuple[float, np.ndarray]:
        z = Xb @ beta
        # log(1 + e^z) - y z, stably
        value = float(w @ (np.logaddexp(0.0, z) - y * z)) / total + 0.5 * l2 * float(beta[:-1] @ beta[:-1])
        p = 1.0 / (1.0 + np.exp(-z))
        grad = Xb.T @ (w * (p - y)) / total
        grad[:-1] += l2 * beta[:-1]
        return value, grad

    start = np.zeros(Xb.shape[1]) if warm is None else warm
    beta = minimize(loss, start, jac=True, method="L-BFGS-B", options={"maxiter": 500}).x
    return 1.0 / (1.0 + np.exp(-(Xb @ beta))), beta


def _gbdt(X: np.ndarray, y: np.ndarray, w: np.ndarray, trees: int, seed: int) -> np.ndarray:
    try:
        import lightgbm as lgb
    except ImportError as exc:
        raise LtrError(f"clicks.em.relevance: gbdt needs LightGBM ({exc}); pip install -e '.[gbdt]', or give "
                       "clicks.em.relevance: logistic") from None
    params = {"objective": "cross_entropy", "learning_rate": 0.1, "num_leaves": 15, "min_data_in_leaf": 20,
              "num_threads": 1, "deterministic": True, "force_col_wise": True, "seed": seed, "verbose": -1}
    booster = lgb.train(params, lgb.Dataset(X, label=y, weight=w), num_boost_round=trees)
    return np.asarray(booster.predict(X), dtype=float)


def _impressions(s: Sessions, shown: int, width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(pair, position index, n, c): the impressions grouped by (query, document, position),
    ``pair`` indexing the distinct (query, document) in key order, keys ``query * width + doc``."""
    key = (s.query.astype(np.int64) * width + s.doc) * shown + (s.position.astype(np.int64) - 1)
    uniq, inv = np.unique(key, return_inverse=True)
    n = np.bincount(inv, minlength=len(uniq)).astype(float)
    c = np.bincount(inv, weights=s.click.astype(float), minlength=len(uniq))
    pairs, pair = np.unique(uniq // shown, return_inverse=True)
    return pairs, pair.reshape(-1), (uniq % shown).astype(np.int64), np.stack([n, c])


def regression_em(s: Sessions, train: list[tuple[np.ndarray, np.ndarray]], shown: int, relevance: str = "gbdt",
                  iterations: int = 100, trees: int = 30, tol: float = 1e-4, l2: float = 1e-3,
                  seed: int = 0) -> tuple[np.ndarray, dict[str, Any]]:
    """The propensities of positions 1..``shown`` relative to position 1, float (shown,),
    from the log ``s`` on the queries ``train`` (``(X (m, d), y)`` each; ``s.query``
    indexes them), and what the fit did (``iterations``, ``converged``, ``examination``:
    the absolute theta's)."""
    width = max(len(y) for _, y in train)
    pairs, pair, pos, (n, c) = _impressions(s, shown, width)
    q, d = pairs // width, pairs % width
    X = np.vstack([np.asarray(train[int(qq)][0], dtype=np.float64)[int(dd)] for qq, dd in zip(q, d)]) \
        if len(pairs) else np.zeros((0, 1))
    n_pair = np.bincount(pair, weights=n, minlength=len(pairs))
    shown_at = np.bincount(pos, weights=n, minlength=shown)
    if np.any(shown_at == 0):
        k = int(np.flatnonzero(shown_at == 0)[0]) + 1
        raise LtrError(f"clicks.propensity: regression-em: no session shows position {k}; log more sessions or "
                       "show fewer documents (clicks.generate.shown)")

    beta: list[np.ndarray] = []

    def fit(label: np.ndarray) -> np.ndarray:
        y = np.clip(label, 0.0, 1.0)
        if relevance == "gbdt":
            g = _gbdt(X, y, n_pair, trees, seed)
        else:
            g, b = _logistic(X, y, n_pair, l2, beta[0] if beta else None)
            beta[:] = [b]
        return np.clip(g, EPS, 1.0 - EPS)

    theta = np.full(shown, START)
    gamma = fit(np.bincount(pair, weights=c, minlength=len(pairs)) / n_pair)
    done, it = False, 0
    while it < iterations and not done:
        it += 1
        t, g = theta[pos], gamma[pair]
        joint = 1.0 - t * g
        p_exam = t * (1.0 - g) / joint
        p_rel = (1.0 - t) * g / joint
        new = np.bincount(pos, weights=c + (n - c) * p_exam, minlength=shown) / shown_at
        new = np.clip(new, EPS, 1.0 - EPS)
        done = bool(np.max(np.abs(new - theta)) <= tol)
        theta = new
        gamma = fit(np.bincount(pair, weights=c + (n - c) * p_rel, minlength=len(pairs)) / n_pair)
    return theta / theta[0], {"method": "regression-em", "relevance": relevance, "iterations": it,
                              "converged": done, "examination": [float(f"{v:.12g}") for v in theta]}
