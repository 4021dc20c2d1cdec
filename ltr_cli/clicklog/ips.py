"""Inverse-propensity estimates of a ranker's DCG from a click log.

For a ranker that puts document d of a query at rank rank(d), a session's IPS estimate of
its DCG@K is the sum over the session's clicked documents with rank(d) <= K of
1 / log2(1 + rank(d)) / p(position of d in the session), with p the examination propensity
per logged position; the naive estimate drops the division by p. Under a position-based
model, P(click) = p_k g_d, so the IPS estimate's expectation is sum_d g_d / log2(1 + rank(d))
over the documents the log shows: the DCG@K whose gain is the click model's P(click |
examined, grade). The naive estimate's expectation weights each g_d by p of its logged position.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.errors import LtrError


def session_estimates(session: np.ndarray, query: np.ndarray, doc: np.ndarray, position: np.ndarray,
                      click: np.ndarray, ranks: list[np.ndarray], propensity: np.ndarray,
                      cutoff: int = 10) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per session: (its query, the IPS estimate, the naive estimate), arrays of shape
    (sessions,); ``ranks[q][d]`` is document d's rank (1 first) under the ranker evaluated,
    ``propensity[k - 1]`` the examination probability of logged position k."""
    propensity = np.asarray(propensity, dtype=float)
    if int(position.max(initial=0)) > len(propensity) or np.any(propensity <= 0):
        raise LtrError("IPS: give a positive propensity for every logged position")
    offsets = np.concatenate(([0], np.cumsum([len(r) for r in ranks])))
    flat = np.concatenate([np.asarray(r, dtype=np.int64) for r in ranks])
    rank = flat[offsets[query] + doc]
    gain = np.where(click & (rank <= cutoff), 1.0 / np.log2(1.0 + rank), 0.0)
    sessions = int(session.max()) + 1
    ips = np.bincount(session, weights=gain / propensity[position - 1], minlength=sessions)
    naive = np.bincount(session, weights=gain, minlength=sessions)
    owner = np.zeros(sessions, dtype=np.int64)
    owner[session] = query
    return owner, ips, naive


def query_mean(owner: np.ndarray, values: np.ndarray, queries: int) -> tuple[float, float]:
    """The mean over queries of each query's mean over its sessions, and its standard error
    (the sessions independent: sum over queries of var_q / m_q, over queries^2)."""
    m = np.bincount(owner, minlength=queries).astype(float)
    if np.any(m < 2):
        raise LtrError("IPS: every query needs at least two sessions for a standard error")
    mean = np.bincount(owner, weights=values, minlength=queries) / m
    var = (np.bincount(owner, weights=values ** 2, minlength=queries) - m * mean ** 2) / (m - 1)
    return float(mean.mean()), float(np.sqrt(np.sum(var / m)) / queries)
