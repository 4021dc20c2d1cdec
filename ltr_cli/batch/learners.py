"""The batch learners of the direct-optimisation paper, fitted on lists of queries
``[(X_q, y_q), ...]``. Each returns a model with ``scores(X)``.

* SVMmap: BMRM on the mean AP structural hinge, lambda = 1/C.
* Ranking SVM: BMRM on the mean (per query summed) pairwise hinge, lambda = 1/C.
* BMRM with the NDCG structural loss (Le & Smola / CofiRank).
* AdaRank (Xu & Li 2007), the paper's update as rueycheng/AdaRank implements it: single
  features as weak rankers, query weights ``P_q ~ exp(-E(f_t, q))`` from the combined model.
* RankBoost (Freund et al. 2003), "RB-c": threshold stumps ``1[x_f > theta]`` at midpoints
  between distinct feature values, the stump with the largest |r|, ``alpha = 1/2 ln((1+r)/(1-r))``.
* PermuRank (Xu et al. 2008) as reconstructed in BATCH-REFERENCE s.3 (the paper itself was
  not available): slack-rescaled bound over working sets of perfect (lowest-scoring) and
  imperfect (highest-scoring) permutations, n-slack dual with per-query caps, until the
  sets stop changing. Each round adds the cut of its newest pair only.

Measures for AdaRank and PermuRank: ``map`` (AP on labels > threshold) or ``ndcg@k``
(paper gains, a query without relevant documents scores 0 in AdaRank's averages).
Rankings sort scores descending with ties by document index everywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ltr_cli.batch.bmrm import bmrm
from ltr_cli.batch.losses import ap_structural_hinge, mean_risk, ndcg_structural_hinge, pairwise_hinge
from ltr_cli.batch.qp import solve_dual_qp
from ltr_cli.metrics import average_precision, ndcg_at_k
from ltr_cli.models import LinearModel, StumpModel, model_from_dict  # noqa: F401 (re-exported)

Queries = list[tuple[np.ndarray, np.ndarray]]


def _rank(scores: np.ndarray) -> np.ndarray:
    return np.argsort(-scores, kind="stable")


def measure_fn(measure: str, threshold: float = 0.0):
    """E(ranking, labels) in [0, 1] for ``map`` or ``ndcg@k`` / ``ndcg``."""
    from ltr_cli.metrics import parse_cutoff

    kind, at, cut = measure.partition("@")
    if measure == "map":
        return lambda r, y: average_precision(r, y, threshold, "zero")
    k = parse_cutoff(cut) if at else None
    if kind == "ndcg" and (not at or k is not None):
        return lambda r, y: ndcg_at_k(r, y, k, "zero")
    raise ValueError(f"unknown measure {measure!r}; expected map, ndcg or ndcg@K")


def fit_svmmap(train: Queries, C: float, threshold: float = 0.0, eps: float = 1e-4,
               max_iter: int = 1000) -> LinearModel:
    risk = mean_risk(train, lambda X, y, w: ap_structural_hinge(X, y, w, threshold))
    res = bmrm(risk, train[0][0].shape[1], 1.0 / C, eps, max_iter)
    return LinearModel(res.w, {"iterations": res.iterations, "objective": res.objective})


def fit_ranksvm(train: Queries, C: float, eps: float = 1e-4, max_iter: int = 1000) -> LinearModel:
    res = bmrm(mean_risk(train, pairwise_hinge), train[0][0].shape[1], 1.0 / C, eps, max_iter)
    return LinearModel(res.w, {"iterations": res.iterations, "objective": res.objective})


def fit_bmrm_ndcg(train: Queries, C: float, k: int = 10, weights: str = "bmrm", eps: float = 1e-4,
                  max_iter: int = 1000) -> LinearModel:
    risk = mean_risk(train, lambda X, y, w: ndcg_structural_hinge(X, y, w, k, weights))
    res = bmrm(risk, train[0][0].shape[1], 1.0 / C, eps, max_iter)
    return LinearModel(res.w, {"iterations": res.iterations, "objective": res.objective})


def fit_bmrm_surrogate(train: Queries, C: float, loss: str, cost: Any = "uniform", eps: float = 1e-4,
                       max_iter: int = 1000) -> LinearModel:
    """BMRM on a score-space surrogate of the ranking-losses supplement (``ordinal`` by its
    Algorithm 1, ``preference`` by its Algorithm 2), mean over queries, lambda = 1/C."""
    from ltr_cli.surrogates import SURROGATES

    fn = SURROGATES[loss]

    def per_query(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray] | None:
        if np.unique(y).shape[0] < 2:
            return None
        value, grad_s = fn(X @ w, y, cost=cost)
        return value, X.T @ grad_s

    res = bmrm(mean_risk(train, per_query), train[0][0].shape[1], 1.0 / C, eps, max_iter)
    return LinearModel(res.w, {"iterations": res.iterations, "objective": res.objective})


def fit_adarank(train: Queries, measure: str = "map", rounds: int = 500, tol: float | None = 0.002,
                threshold: float = 0.0, alpha_cap: float = 10.0) -> LinearModel:
    """AdaRank; stops early when the mean training measure does not improve by more than
    ``tol`` (None: run all rounds) and returns the best model seen."""
    E = measure_fn(measure, threshold)
    d = train[0][0].shape[1]
    m = len(train)
    Eh = np.array([[E(_rank(X[:, k]), y) for X, y in train] for k in range(d)])  # (d, m)
    P = np.full(m, 1.0 / m)
    w = np.zeros(d)
    best_w, best_mean = w.copy(), -np.inf
    trace = []
    for t in range(1, rounds + 1):
        k = int(np.argmax(Eh @ P))
        num, den = float(P @ (1 + Eh[k])), float(P @ (1 - Eh[k]))
        alpha = alpha_cap if den <= 0 else min(alpha_cap, 0.5 * np.log(num / den))
        w[k] += alpha
        Ef = np.array([E(_rank(X @ w), y) for X, y in train])
        P = np.exp(-Ef) / np.exp(-Ef).sum()
        mean = float(Ef.mean())
        trace.append({"round": t, "feature": k, "alpha": alpha, "mean": mean})
        if mean > best_mean + (tol or 0.0) or (tol is None and mean >= best_mean):
            best_w, best_mean = w.copy(), max(mean, best_mean)
        elif tol is not None:
            break
    return LinearModel(best_w, {"rounds": len(trace), "train_measure": best_mean, "trace": trace})


def _pairs(train: Queries) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """All within-query (lower, higher) document index pairs, over stacked documents."""
    lows, highs = [], []
    offset = 0
    for _, y in train:
        lo, hi = np.nonzero(y[:, None] < y[None, :])
        lows.append(lo + offset)
        highs.append(hi + offset)
        offset += y.shape[0]
    X = np.vstack([X for X, _ in train])
    return X, np.concatenate(lows), np.concatenate(highs)


def fit_rankboost(train: Queries, rounds: int = 300) -> StumpModel:
    """RankBoost RB-c with threshold stumps at midpoints between distinct values."""
    X, lo, hi = _pairs(train)
    n, d = X.shape
    if lo.size == 0:
        return StumpModel([], [], [], {"rounds": 0}, n_features=d)
    D = np.full(lo.size, 1.0 / lo.size)
    order = [np.argsort(-X[:, f], kind="stable") for f in range(d)]
    model = StumpModel([], [], [], n_features=d)
    for _ in range(rounds):
        pot = np.zeros(n)
        np.add.at(pot, hi, D)
        np.subtract.at(pot, lo, D)
        best = (0.0, -1, 0.0)
        for f in range(d):
            xs = X[order[f], f]
            cum = np.cumsum(pot[order[f]])
            cuts = np.flatnonzero(xs[:-1] > xs[1:])  # between distinct values
            if cuts.size == 0:
                continue
            r = cum[cuts]
            i = int(np.argmax(np.abs(r)))
            if abs(r[i]) > abs(best[0]) + 1e-15:
                best = (float(r[i]), f, float((xs[cuts[i]] + xs[cuts[i] + 1]) / 2))
        r, f, theta = best
        if f < 0 or abs(r) >= 1 - 1e-12:
            if f >= 0:  # a perfect stump: take it with a capped weight and stop
                model.features.append(f)
                model.thresholds.append(theta)
                model.alphas.append(float(np.sign(r) * 10.0))
            break
        alpha = 0.5 * np.log((1 + r) / (1 - r))
        h = (X[:, f] > theta).astype(np.float64)
        D = D * np.exp(alpha * (h[lo] - h[hi]))
        D /= D.sum()
        model.features.append(f)
        model.thresholds.append(theta)
        model.alphas.append(float(alpha))
    model.info["rounds"] = len(model.alphas)
    return model


# --- PermuRank ----------------------------------------------------------------------------

def permutation_features(X: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """Phi(pi) = 2/(n(n-1)) sum_{k<l} (x_{pi(k)} - x_{pi(l)}): position p weighs n-1-2p."""
    n = X.shape[0]
    coef = (n - 1 - 2 * np.arange(n)).astype(np.float64)
    return (coef @ X[perm]) / (n * (n - 1) / 2)


def lowest_perfect(f: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Perfect permutation (labels non-increasing) with the lowest F: scores ascending within a level."""
    return np.lexsort((np.arange(f.shape[0]), f, -y))


def highest_imperfect(f: np.ndarray, y: np.ndarray) -> np.ndarray | None:
    """Imperfect permutation with the highest F; None when all labels are equal."""
    o = np.lexsort((np.arange(f.shape[0]), y, -f))  # score descending, ties: lower label first
    if (np.diff(y[o]) > 0).any():
        return o
    boundary = np.flatnonzero(y[o][:-1] != y[o][1:])
    if boundary.size == 0:
        return None
    gaps = f[o][boundary] - f[o][boundary + 1]
    p = int(boundary[np.argmin(gaps)])
    o = o.copy()
    o[p], o[p + 1] = o[p + 1], o[p]
    return o


def fit_permurank(train: Queries, C: float, measure: str = "map", rounds: int = 50,
                  threshold: float = 0.0) -> LinearModel:
    E = measure_fn(measure, threshold)
    d = train[0][0].shape[1]
    w = np.zeros(d)
    perfect: list[list[np.ndarray]] = [[] for _ in train]
    imperfect: list[list[np.ndarray]] = [[] for _ in train]
    alpha = None
    cuts_g: list[np.ndarray] = []
    cuts_l: list[float] = []
    cuts_q: list[int] = []
    seen: set[tuple[int, bytes, bytes]] = set()
    it = 0
    for it in range(1, rounds + 1):
        changed = False
        for q, (X, y) in enumerate(train):
            f = X @ w
            star, bad = lowest_perfect(f, y), highest_imperfect(f, y)
            if bad is None:
                continue
            for pool, perm in ((perfect[q], star), (imperfect[q], bad)):
                if not any(np.array_equal(perm, p) for p in pool):
                    pool.append(perm)
                    changed = True
            # one cut per query and round: this round's lowest perfect x highest imperfect
            # permutation (all |B| x |C| pairs make the QP grow quadratically in the rounds)
            key = (q, star.tobytes(), bad.tobytes())
            if key not in seen:
                seen.add(key)
                loss = 1.0 - E(bad, y)
                cuts_l.append(loss)
                cuts_g.append(loss * (permutation_features(X, star) - permutation_features(X, bad)))
                cuts_q.append(q)
        if not changed:
            break
        if not cuts_g:
            break
        G = np.vstack(cuts_g)
        start = None if alpha is None else np.concatenate((alpha, np.zeros(len(cuts_g) - alpha.shape[0])))
        alpha, _ = solve_dual_qp(G @ G.T, np.asarray(cuts_l), "blocks", cap=C,
                                 blocks=np.asarray(cuts_q), start=start, abs_tol=1e-6)
        w = G.T @ alpha
    return LinearModel(w, {"rounds": it, "cuts": len(cuts_g)})
