"""Simulated sessions: a logging policy shows lists, a click model clicks on them.

Sessions are drawn per query, all of a query's sessions at once (vectorised over sessions),
from one ``numpy.random.default_rng(seed)``: first the number of sessions of each query
(``per_query``: the same number for every query; otherwise a uniform draw of a query for each
session, with replacement, as a multinomial), then for each query in order its shown lists
and their clicks. The same inputs give the same sessions.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ltr_cli.clicklog.policies import check_policy, shown_lists
from ltr_cli.clicks.base import ClickModel
from ltr_cli.errors import LtrError

#: the most sessions one log simulates
MAX_SESSIONS = 100_000_000
#: the most documents a session shows
MAX_SHOWN = 1000


@dataclass(frozen=True)
class Sessions:
    """One row per shown document: ``session`` (int64), ``query`` (int32, the query's index),
    ``doc`` (int32, the document's index within its query), ``position`` (int16, 1 first),
    ``click`` (bool); rows in session order, positions ascending within a session."""

    session: np.ndarray
    query: np.ndarray
    doc: np.ndarray
    position: np.ndarray
    click: np.ndarray


def session_counts(queries: int, sessions: int, per_query: bool, rng: np.random.Generator) -> np.ndarray:
    """Sessions per query, int64 (queries,)."""
    if per_query:
        return np.full(queries, sessions, dtype=np.int64)
    return rng.multinomial(sessions, np.full(queries, 1.0 / queries)).astype(np.int64)


def simulate(labels: list[np.ndarray], rankings: list[np.ndarray], model: ClickModel, policy: str,
             shown: int, sessions: int, seed: int, per_query: bool = False,
             scores: list[np.ndarray] | None = None) -> Sessions:
    """The sessions of ``policy`` on each query's ``rankings`` (document indices, best
    first) with clicks of ``model`` on the documents' ``labels``: ``sessions`` in total, or
    per query if ``per_query``; ``scores``: each query's document scores, for the
    ``plackett-luce`` policy (default: from the ranks)."""
    check_policy(policy)
    if not labels or len(labels) != len(rankings):
        raise LtrError("click log: give one logging ranking per query, and at least one query")
    if shown < 1 or sessions < 1:
        raise LtrError(f"click log: shown ({shown}) and sessions ({sessions}) must be at least 1")
    if shown > MAX_SHOWN:
        raise LtrError(f"click log: {shown} documents shown per session; at most {MAX_SHOWN}")
    total = sessions * (len(labels) if per_query else 1)
    if total > MAX_SESSIONS:
        raise LtrError(f"click log: {total} sessions; at most {MAX_SESSIONS} per log")
    rng = np.random.default_rng(seed)
    counts = session_counts(len(labels), sessions, per_query, rng)
    parts: list[tuple[int, np.ndarray, np.ndarray]] = []
    for q, (lab, ranking, m) in enumerate(zip(labels, rankings, counts)):
        ranking = np.asarray(ranking, dtype=np.int64)
        if sorted(ranking.tolist()) != list(range(len(lab))):
            raise LtrError(f"click log: the logging ranking of query {q + 1} is not an order of its "
                           f"{len(lab)} documents")
        if m == 0 or len(lab) == 0:
            continue
        docs = shown_lists(policy, ranking, shown, int(m), rng, None if scores is None else scores[q])
        clicks = model.sample_lists(np.asarray(lab, dtype=np.int64)[docs], rng)
        parts.append((q, docs, clicks))
    k_of = [d.shape[1] for _, d, _ in parts]
    m_of = [d.shape[0] for _, d, _ in parts]
    session = np.repeat(np.arange(sum(m_of), dtype=np.int64), np.repeat(k_of, m_of)) if parts else np.zeros(0, np.int64)
    return Sessions(
        session=session,
        query=np.concatenate([np.full(d.size, q, np.int32) for q, d, _ in parts] or [np.zeros(0, np.int32)]),
        doc=np.concatenate([d.ravel().astype(np.int32) for _, d, _ in parts] or [np.zeros(0, np.int32)]),
        position=np.concatenate([np.tile(np.arange(1, d.shape[1] + 1, dtype=np.int16), d.shape[0])
                                 for _, d, _ in parts] or [np.zeros(0, np.int16)]),
        click=np.concatenate([c.ravel() for _, _, c in parts] or [np.zeros(0, bool)]))
