"""Logging policies: which documents a session shows, in which order.

A policy turns the logging ranking of a query (its documents, best first) into ``m``
sessions' shown lists of its top ``k`` documents (k = shown, or fewer when the query has
fewer documents): an int array (m, k) of document indices, position 1 first.

- ``ranking``: the logging ranking's top k, in every session;
- ``shuffle``: the top k uniformly permuted, anew in each session (result randomisation);
- ``swap``: the top k with the document at position 1 swapped with the one at a position
  drawn uniformly from 1..k (position 1: no swap), the swap intervention of Joachims et al.
  (2017);
- ``plackett-luce``: a stochastic ranking, drawn anew in each session: the k shown
  documents are drawn one after another without replacement from all of the query's
  documents, each with probability proportional to exp(score / temperature) among those
  left (sampled exactly as the top k of the scores plus Gumbel noise). Without scores, the
  score of the document at rank r of the logging ranking is -log(r), so a document's
  weight is 1/r.
"""

from __future__ import annotations

import numpy as np

from ltr_cli.errors import LtrError

#: the policies, deterministic first
POLICIES: tuple[str, ...] = ("ranking", "shuffle", "swap", "plackett-luce")


def check_policy(name: str, where: str = "--policy") -> str:
    if name not in POLICIES:
        raise LtrError(f"{where} {name!r}: unknown logging policy; the policies are {', '.join(POLICIES)}")
    return name


def plackett_luce(ranking: np.ndarray, shown: int, sessions: int, rng: np.random.Generator,
                  scores: np.ndarray | None = None, temperature: float = 1.0) -> np.ndarray:
    """``sessions`` Plackett-Luce draws of ``shown`` documents (int64 (sessions, k)) from
    the softmax of ``scores / temperature`` (default scores: -log(rank) of ``ranking``)."""
    ranking = np.asarray(ranking, dtype=np.int64)
    m = len(ranking)
    if scores is None:
        scores = np.empty(m)
        scores[ranking] = -np.log(np.arange(1, m + 1, dtype=float))
    logits = np.asarray(scores, dtype=float) / temperature
    noisy = logits[None, :] + rng.gumbel(size=(sessions, m))
    k = min(shown, m)
    top = np.argpartition(-noisy, k - 1, axis=1)[:, :k] if k < m else np.broadcast_to(np.arange(m), (sessions, m))
    order = np.argsort(-np.take_along_axis(noisy, top, axis=1), axis=1, kind="stable")
    return np.take_along_axis(np.asarray(top, dtype=np.int64), order, axis=1)


def shown_lists(policy: str, ranking: np.ndarray, shown: int, sessions: int,
                rng: np.random.Generator, scores: np.ndarray | None = None) -> np.ndarray:
    """``sessions`` shown lists, int64 (sessions, k), from ``ranking`` (document indices,
    best first) under ``policy``; ``ranking`` only draws nothing from ``rng``; ``scores``
    (the query's documents' scores) are ``plackett-luce``'s (default: from the ranks)."""
    if policy == "plackett-luce":
        return plackett_luce(ranking, shown, sessions, rng, scores)
    top = np.asarray(ranking, dtype=np.int64)[:shown]
    k = len(top)
    if policy == "ranking":
        return np.broadcast_to(top, (sessions, k)).copy()
    if policy == "shuffle":
        return top[np.argsort(rng.random((sessions, k)), axis=1, kind="stable")]
    if policy == "swap":
        order = np.broadcast_to(np.arange(k), (sessions, k)).copy()
        other = rng.integers(0, k, sessions)
        rows = np.arange(sessions)
        order[rows, 0], order[rows, other] = other, 0
        return top[order]
    raise LtrError(f"logging policy {policy!r}: unknown; the policies are {', '.join(POLICIES)}")
