"""Examination propensities from a click log, relative to position 1, with standard errors.

Both estimators work on the log's counts per (query, document, position): impressions n and
clicks c. Under a position-based model P(click) = p_k g_d, with p_k the examination
propensity of position k and g_d the document's click probability once examined.

- ``randomisation`` (result randomisation; shuffle or swap logs): for each position k, the
  documents shown both at k and at position 1 give, with weights w_d = n_dk n_d1 /
  (n_dk + n_d1) that do not depend on clicks, A = sum_d w_d c_dk / n_dk and
  B = sum_d w_d c_d1 / n_d1; E[A] / E[B] = p_k / p_1, estimated by A / B. Its standard
  error is the delta method's: (A/B) sqrt(Var A / A^2 + Var B / B^2), Var A = sum_d w_d^2
  r_dk (1 - r_dk) / n_dk with r = c / n (A and B come from different sessions); position 1
  is 1 by definition, with error 0.
- ``em`` (Wang et al. 2018, with one relevance parameter per query-document pair): EM on
  the latent examination and relevance of each impression, to a fixed point (accelerated
  by SQUAREM; a pair never clicked starts, and stays, at g = 0); the relative
  propensities are p_k / p_1 and their standard errors the bootstrap's over queries
  (resampled with replacement, seeded); ``converged`` says whether EM settled within its
  step limit. EM needs the documents to move between positions
  (a shuffle or swap log); on a deterministic log p and g cannot be told apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr_cli.errors import LtrError

METHODS: tuple[str, ...] = ("randomisation", "em")


@dataclass(frozen=True)
class Counts:
    """Impressions ``n`` and clicks ``c`` per group (float arrays), each group a (``pair``,
    ``position``) with ``pair`` the index of its query-document pair and ``position`` 1-based;
    ``pair_query`` the query of each pair."""

    pair: np.ndarray
    position: np.ndarray
    n: np.ndarray
    c: np.ndarray
    pair_query: np.ndarray


def _dense_unique(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the distinct keys ascending, each key's index among them), as ``np.unique`` with
    ``return_inverse``; by a bincount when the keys span a small range (no sort)."""
    top = int(keys.max()) + 1
    if top > 4 * len(keys) + 1_000_000:
        uniq, inv = np.unique(keys, return_inverse=True)
        return uniq, inv.reshape(-1)
    seen = np.bincount(keys, minlength=top) > 0
    index = np.cumsum(seen) - 1
    return np.flatnonzero(seen), index[keys]


def counts(query: np.ndarray, doc: np.ndarray, position: np.ndarray, click: np.ndarray) -> Counts:
    """The log's rows grouped by (query, document, position)."""
    if len(query) == 0:
        raise LtrError("click log: no sessions to estimate propensities from")
    q, d = query.astype(np.int64), doc.astype(np.int64)
    width = int(d.max()) + 1
    pair_codes, pair = _dense_unique(q * width + d)
    k = int(position.max())
    groups, inv = _dense_unique(pair * k + (position.astype(np.int64) - 1))
    n = np.bincount(inv).astype(float)
    c = np.bincount(inv, weights=click.astype(float))
    return Counts(groups // k, (groups % k + 1).astype(np.int64), n, c, pair_codes // width)


def randomisation(cnt: Counts) -> tuple[np.ndarray, np.ndarray]:
    """(p_k / p_1, standard error) for k = 1..K, float (K,) each; NaN where no document was
    shown both at k and at 1, or where no click was seen at 1."""
    k_max = int(cnt.position.max())
    pairs = int(cnt.pair.max()) + 1
    n = np.zeros((pairs, k_max))
    c = np.zeros((pairs, k_max))
    n[cnt.pair, cnt.position - 1] = cnt.n
    c[cnt.pair, cnt.position - 1] = cnt.c
    ratio, stderr = np.full(k_max, np.nan), np.full(k_max, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(n > 0, c / n, 0.0)
        var = np.where(n > 0, r * (1 - r) / n, 0.0)
    for k in range(k_max):
        both = (n[:, k] > 0) & (n[:, 0] > 0)
        if not both.any():
            continue
        w = n[both, k] * n[both, 0] / (n[both, k] + n[both, 0])
        a, b = float(w @ r[both, k]), float(w @ r[both, 0])
        if b <= 0:
            continue
        va, vb = float(w ** 2 @ var[both, k]), float(w ** 2 @ var[both, 0])
        ratio[k] = a / b
        stderr[k] = 0.0 if k == 0 else (a / b) * np.sqrt((va / a ** 2 if a > 0 else 0.0) + vb / b ** 2)
    return ratio, stderr


def em_fit(cnt: Counts, weight: np.ndarray | None = None, iterations: int = 5_000, tol: float = 1e-10,
           start: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray, bool]:
    """(p, g, converged): EM's examination per position (K,) and relevance per pair, under
    a PBM, and whether an EM step from the fit moves no parameter by ``tol`` within
    ``iterations`` cycles. Plain EM creeps along this model's ridge and towards g = 1, so
    each cycle is SQUAREM's (Varadhan and Roland 2008): two EM steps, an extrapolation
    along them (never shorter than the two steps) kept inside [0, 1], and one EM step from
    there. ``weight`` multiplies each group's counts (the bootstrap's query multiplicities)."""
    k_max = int(cnt.position.max())
    pairs = int(cnt.pair.max()) + 1
    n, c = (cnt.n, cnt.c) if weight is None else (cnt.n * weight, cnt.c * weight)
    pos = cnt.position - 1
    n_pos = np.maximum(np.bincount(pos, weights=n, minlength=k_max), 1e-300)
    n_pair = np.maximum(np.bincount(cnt.pair, weights=n, minlength=pairs), 1e-300)
    # a pair never clicked has its maximum at g = 0, where EM keeps it; EM would creep there
    clicked = np.bincount(cnt.pair, weights=c, minlength=pairs) > 0
    skipped = n - c

    def step(x: np.ndarray) -> np.ndarray:
        p, g = x[:k_max], x[k_max:]
        pk, gd = p[pos], g[cnt.pair]
        miss = np.maximum(1.0 - pk * gd, 1e-300)
        seen = c + skipped * pk * (1.0 - gd) / miss  # expected examined impressions
        relevant = c + skipped * (1.0 - pk) * gd / miss  # expected relevant impressions
        return np.concatenate((np.bincount(pos, weights=seen, minlength=k_max) / n_pos,
                               np.bincount(cnt.pair, weights=relevant, minlength=pairs) / n_pair))

    p0, g0 = start if start is not None else (np.full(k_max, 0.5), np.full(pairs, 0.5))
    x = np.concatenate((p0, np.where(clicked, g0, 0.0)))
    done = False
    for _ in range(iterations):
        x1 = step(x)
        if np.max(np.abs(x1 - x)) < tol:
            x, done = x1, True
            break
        x2 = step(x1)
        r, v = x1 - x, x2 - 2 * x1 + x
        norm_v = float(np.sqrt(v @ v))
        alpha = -float(np.sqrt(r @ r)) / norm_v if norm_v > 0 else -1.0
        x = step(np.clip(x - 2 * min(alpha, -1.0) * r + min(alpha, -1.0) ** 2 * v, 0.0, 1.0))
    return x[:k_max], x[k_max:], done


def em(cnt: Counts, seed: int = 0, bootstrap: int = 30) -> tuple[np.ndarray, np.ndarray, bool]:
    """(p_k / p_1, bootstrap standard error over queries, converged) for k = 1..K."""
    p, g, converged = em_fit(cnt)
    if p[0] <= 0:
        return np.full(len(p), np.nan), np.full(len(p), np.nan), converged
    queries = int(cnt.pair_query.max()) + 1
    group_query = cnt.pair_query[cnt.pair]
    rng = np.random.default_rng(seed)
    reps = []
    for _ in range(bootstrap):
        times = np.bincount(rng.integers(0, queries, queries), minlength=queries).astype(float)
        pb, _, _ = em_fit(cnt, times[group_query], start=(p, g))
        if pb[0] > 0:
            reps.append(pb / pb[0])
    stderr = np.std(np.asarray(reps), axis=0, ddof=1) if len(reps) > 1 else np.full(len(p), np.nan)
    return p / p[0], stderr, converged


def estimate(query: np.ndarray, doc: np.ndarray, position: np.ndarray, click: np.ndarray, method: str,
             seed: int = 0, where: str = "click log") -> dict[str, Any]:
    """The record ``ltr clicks propensity`` prints: ``method``, ``positions``,
    ``propensity`` (relative to position 1), ``stderr`` and ``uncertainty`` (how). A log
    in which no document was shown at two positions is refused (naming ``where``)."""
    if method not in METHODS:
        raise LtrError(f"--method {method!r}: the estimators are {', '.join(METHODS)}")
    cnt = counts(query, doc, position, click)
    if np.all(np.bincount(cnt.pair) < 2):
        raise LtrError(f"{where}: no document was shown at more than one position, so examination and "
                       "relevance cannot be told apart; log with policy shuffle or swap")
    if not click.any():
        raise LtrError(f"{where}: the log holds no clicks, so no propensity can be estimated; simulate more "
                       "sessions, or on labels the click model clicks")
    converged = True
    if method == "randomisation":
        ratio, stderr = randomisation(cnt)
    else:
        ratio, stderr, converged = em(cnt, seed)
    how = ("delta method on the click-rate ratio" if method == "randomisation"
           else "bootstrap over queries, 30 resamples")
    return {"method": method, "positions": list(range(1, len(ratio) + 1)),
            "propensity": [None if np.isnan(v) else float(f"{v:.12g}") for v in ratio],
            "stderr": [None if np.isnan(v) else float(f"{v:.12g}") for v in stderr],
            "uncertainty": how, "converged": converged, "rows": int(len(query)), "clicks": int(click.sum())}
