"""Shared pieces of the batch learners: the query-list type and the measures that AdaRank
and PermuRank optimise (rankings sort scores descending, ties by document index)."""

from __future__ import annotations

import numpy as np

from ltr_cli.measures.metrics import average_precision, ndcg_at_k, parse_cutoff

# the training data of a batch fit: one (X (m, d), y (m,)) pair per query
Queries = list[tuple[np.ndarray, np.ndarray]]


def rank(scores: np.ndarray) -> np.ndarray:
    """Document indices by descending score, ties by index."""
    return np.argsort(-scores, kind="stable")


def measure_fn(measure: str, threshold: float = 0.0):
    """E(ranking, labels) in [0, 1] for ``map`` (or ``ap``) or ``ndcg@k`` / ``ndcg``."""
    kind, at, cut = measure.partition("@")
    if measure in ("map", "ap"):  # both spellings, as in the online configs
        return lambda r, y: average_precision(r, y, threshold, "zero")
    k = parse_cutoff(cut) if at else None
    if kind == "ndcg" and (not at or k is not None):
        return lambda r, y: ndcg_at_k(r, y, k, "zero")
    raise ValueError(f"unknown measure {measure!r}; expected map, ndcg or ndcg@K (K a positive "
                     "integer in ASCII digits)")


def batch_measure(value: str) -> str:
    """Validator: an AdaRank / PermuRank measure, ``map``, ``ndcg`` or ``ndcg@K``."""
    measure_fn(value)
    return value
