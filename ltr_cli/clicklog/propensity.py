"""Examination propensities from a click log, relative to position 1, with standard errors.

Both estimators work on the log's counts per (query, document, position): impressions n and
clicks c. Under a position-based model P(click) = p_k g_d, with p_k the examination
propensity of position k and g_d the document's click probability once examined.

- ``randomisation`` (result randomisation; shuffle or swap logs): for each position k, the
  documents shown both at k and at position 1 give, with weights w_d = n_dk n_d1 /
  (n_dk + n_d1) that do not depend on clicks, A = sum_d w_d c_dk / n_dk and
  B = sum_d w_d c_d1 / n_d1; E[A] / E[B] = p_k / p_1, estimated by A / B.
- ``em`` (Wang et al. 2018, with one relevance parameter per query-document pair): EM on
  the latent examination and relevance of each impression, to a fixed point (accelerated
  by SQUAREM; a pair never clicked starts, and stays, at g = 0); the relative
  propensities are p_k / p_1; ``converged`` says whether EM settled within its step limit.
  EM needs the documents to move between positions (a shuffle or swap log); on a
  deterministic log p and g cannot be told apart.

The standard errors of both are the bootstrap's over sessions (:data:`RESAMPLES` resamples
of the log's sessions with replacement, seeded; a session's clicks stay together): the
standard deviation of the estimate over the resamples. Position 1 is 1 by definition, with
error 0. A position whose resamples all give the same ratio (or fewer than two give one)
has no error: the log is too small to say how precise its estimate is, and the record's
``notes`` say so, rather than a standard error of 0.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ltr_cli.errors import LtrError

METHODS: tuple[str, ...] = ("randomisation", "em")
#: bootstrap resamples of the sessions, per method (an EM fit costs far more than a ratio)
RESAMPLES: dict[str, int] = {"randomisation": 100, "em": 30}


@dataclass(frozen=True)
class Counts:
    """Impressions ``n`` and clicks ``c`` per group (float arrays), each group a (``pair``,
    ``position``) with ``pair`` the index of its query-document pair and ``position`` 1-based;
    ``pair_query`` the query of each pair; for the bootstrap, each row's group
    (``row_group``), its session as 0..S-1 (``row_session``) and its click (``row_click``)."""

    pair: np.ndarray
    position: np.ndarray
    n: np.ndarray
    c: np.ndarray
    pair_query: np.ndarray
    row_group: np.ndarray | None = None
    row_session: np.ndarray | None = None
    row_click: np.ndarray | None = None


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


def counts(query: np.ndarray, doc: np.ndarray, position: np.ndarray, click: np.ndarray,
           session: np.ndarray | None = None) -> Counts:
    """The log's rows grouped by (query, document, position); with ``session`` (each row's
    session id), what :func:`resample` needs too."""
    if len(query) == 0:
        raise LtrError("click log: no sessions to estimate propensities from")
    q, d = query.astype(np.int64), doc.astype(np.int64)
    width = int(d.max()) + 1
    pair_codes, pair = _dense_unique(q * width + d)
    k = int(position.max())
    groups, inv = _dense_unique(pair * k + (position.astype(np.int64) - 1))
    n = np.bincount(inv).astype(float)
    c = np.bincount(inv, weights=click.astype(float))
    sessions = None if session is None else _dense_unique(np.asarray(session, dtype=np.int64))[1]
    return Counts(groups // k, (groups % k + 1).astype(np.int64), n, c, pair_codes // width,
                  inv if session is not None else None, sessions, np.asarray(click, dtype=bool))


def resample(cnt: Counts, rng: np.random.Generator) -> Counts:
    """The counts of one bootstrap resample: as many sessions as the log has, drawn from its
    sessions uniformly with replacement (a session drawn twice counts twice; groups keep
    their order, a group no drawn session shows has n = 0)."""
    assert cnt.row_group is not None and cnt.row_session is not None and cnt.row_click is not None
    sessions = int(cnt.row_session.max()) + 1
    times = np.bincount(rng.integers(0, sessions, sessions), minlength=sessions).astype(float)
    weight = times[cnt.row_session]
    clicked = cnt.row_click
    n = np.bincount(cnt.row_group, weights=weight, minlength=len(cnt.n))
    c = np.bincount(cnt.row_group[clicked], weights=weight[clicked], minlength=len(cnt.n))
    return replace(cnt, n=n, c=c)


def randomisation(cnt: Counts) -> np.ndarray:
    """p_k / p_1 for k = 1..K, float (K,); NaN where no document was shown both at k and at
    1, or where no click was seen at 1."""
    k_max = int(cnt.position.max())
    pairs = int(cnt.pair.max()) + 1
    n = np.zeros((pairs, k_max))
    c = np.zeros((pairs, k_max))
    n[cnt.pair, cnt.position - 1] = cnt.n
    c[cnt.pair, cnt.position - 1] = cnt.c
    ratio = np.full(k_max, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(n > 0, c / n, 0.0)
    for k in range(k_max):
        both = (n[:, k] > 0) & (n[:, 0] > 0)
        if not both.any():
            continue
        w = n[both, k] * n[both, 0] / (n[both, k] + n[both, 0])
        a, b = float(w @ r[both, k]), float(w @ r[both, 0])
        if b > 0:
            ratio[k] = a / b
    return ratio


def em_fit(cnt: Counts, iterations: int = 5_000, tol: float = 1e-10,
           start: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray, bool]:
    """(p, g, converged): EM's examination per position (K,) and relevance per pair, under
    a PBM, and whether an EM step from the fit moves no parameter by ``tol`` within
    ``iterations`` cycles. Plain EM creeps along this model's ridge and towards g = 1, so
    each cycle is SQUAREM's (Varadhan and Roland 2008): two EM steps, an extrapolation
    along them (never shorter than the two steps) kept inside [0, 1], and one EM step from
    there."""
    k_max = int(cnt.position.max())
    pairs = int(cnt.pair.max()) + 1
    n, c = cnt.n, cnt.c
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


def em(cnt: Counts) -> tuple[np.ndarray, bool, tuple[np.ndarray, np.ndarray]]:
    """(p_k / p_1 for k = 1..K, converged, the fit (p, g) a resample starts from)."""
    p, g, converged = em_fit(cnt)
    ratio = p / p[0] if p[0] > 0 else np.full(len(p), np.nan)
    return ratio, converged, (p, g)


def bootstrap(cnt: Counts, ratio: np.ndarray, method: str, seed: int,
              start: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[np.ndarray, list[int]]:
    """(standard error per position, the positions whose error cannot be estimated): the
    standard deviation of ``method``'s estimate over :data:`RESAMPLES` resamples of the
    sessions (:func:`resample`, one generator seeded ``seed``). Position 1's error is 0 (it
    is 1 by definition); a position with an estimate whose resamples give fewer than two
    ratios, or all the same one, has NaN and is listed."""
    rng = np.random.default_rng(seed)
    reps = []
    for _ in range(RESAMPLES[method]):
        drawn = resample(cnt, rng)
        if method == "randomisation":
            reps.append(randomisation(drawn))
        else:
            pb, _, _ = em_fit(drawn, start=start)
            reps.append(pb / pb[0] if pb[0] > 0 else np.full(len(pb), np.nan))
    table = np.asarray(reps, dtype=float)
    stderr = np.full(len(ratio), np.nan)
    small = []
    for k in range(len(ratio)):
        if np.isnan(ratio[k]):
            continue
        have = table[np.isfinite(table[:, k]), k]
        if k == 0:
            stderr[k] = 0.0
        elif len(have) < 2 or float(np.ptp(have)) == 0.0:
            small.append(k + 1)
        else:
            stderr[k] = float(np.std(have, ddof=1))
    return stderr, small


def estimate(session: np.ndarray, query: np.ndarray, doc: np.ndarray, position: np.ndarray, click: np.ndarray,
             method: str, seed: int = 0, where: str = "click log") -> dict[str, Any]:
    """The record ``ltr clicks propensity`` prints: ``method``, ``positions``,
    ``propensity`` (relative to position 1), ``stderr`` (the bootstrap's over sessions,
    seeded ``seed``; None where it cannot be estimated), ``uncertainty`` (how) and
    ``notes``. A log in which no document was shown at two positions is refused (naming
    ``where``)."""
    if method not in METHODS:
        raise LtrError(f"--method {method!r}: the estimators are {', '.join(METHODS)}")
    cnt = counts(query, doc, position, click, session)
    if np.all(np.bincount(cnt.pair) < 2):
        raise LtrError(f"{where}: no document was shown at more than one position, so examination and "
                       "relevance cannot be told apart; log with policy shuffle or swap")
    if not click.any():
        raise LtrError(f"{where}: the log holds no clicks, so no propensity can be estimated; simulate more "
                       "sessions, or on labels the click model clicks")
    converged = True
    start = None
    if method == "randomisation":
        ratio = randomisation(cnt)
    else:
        ratio, converged, start = em(cnt)
    stderr, small = bootstrap(cnt, ratio, method, seed, start)
    sessions = int(cnt.row_session.max()) + 1 if cnt.row_session is not None else 0
    notes = []
    if small:
        said = ", ".join(map(str, small))
        notes.append(f"position{'s' * (len(small) > 1)} {said}: no standard error: the {sessions} sessions are too "
                     f"few to estimate one (their {RESAMPLES[method]} resamples all gave the same ratio, or fewer "
                     "than two gave one); log more sessions")
    return {"method": method, "positions": list(range(1, len(ratio) + 1)),
            "propensity": [None if np.isnan(v) else float(f"{v:.12g}") for v in ratio],
            "stderr": [None if np.isnan(v) else float(f"{v:.12g}") for v in stderr],
            "uncertainty": f"bootstrap over sessions, {RESAMPLES[method]} resamples, seed {seed}",
            "notes": notes, "converged": converged, "rows": int(len(query)), "sessions": sessions,
            "clicks": int(click.sum())}
