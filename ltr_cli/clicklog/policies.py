"""Logging policies: which documents a session shows, in which order.

A policy turns the logging ranking of a query (its documents, best first) into ``m``
sessions' shown lists of its top ``k`` documents (k = shown, or fewer when the query has
fewer documents): an int array (m, k) of document indices, position 1 first.

- ``ranking``: the logging ranking's top k, in every session;
- ``shuffle``: the top k uniformly permuted, anew in each session (result randomisation);
- ``swap``: the top k with the document at position 1 swapped with the one at a position
  drawn uniformly from 1..k (position 1: no swap), the swap intervention of Joachims et al.
  (2017).
"""

from __future__ import annotations

import numpy as np

from ltr_cli.errors import LtrError

#: the policies, deterministic first
POLICIES: tuple[str, ...] = ("ranking", "shuffle", "swap")


def check_policy(name: str, where: str = "--policy") -> str:
    if name not in POLICIES:
        raise LtrError(f"{where} {name!r}: unknown logging policy; the policies are {', '.join(POLICIES)}")
    return name


def shown_lists(policy: str, ranking: np.ndarray, shown: int, sessions: int,
                rng: np.random.Generator) -> np.ndarray:
    """``sessions`` shown lists, int64 (sessions, k), from ``ranking`` (document indices,
    best first) under ``policy``; ``ranking`` only draws nothing from ``rng``."""
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
