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


#: ``feature_scale: auto`` scales the columns when some feature's largest |value| on the
#: training split exceeds this (raw counts and lengths, as MSLR-WEB's; LETOR's normalised
#: features and z-scores stay as they are)
AUTO_SCALE_ABOVE = 100.0
FEATURE_SCALE_HELP = (
    "auto: when some feature's largest |value| on the training split exceeds 100, solve with every "
    "column divided by its largest |value| there (the regulariser then acts on the scaled weights) "
    "and map the weights back, so the model scores raw rows | max-abs: always | none: never")


def column_scale(train: Queries, rule: str) -> np.ndarray | None:
    """The divisors (d,) of ``feature_scale`` ``rule`` for the training queries: each column's
    largest |value| (1 for an all-zero column), or None when the rule leaves the features
    as they are (``none``; ``auto`` on features within :data:`AUTO_SCALE_ABOVE`)."""
    if rule == "none" or not train:
        return None
    peak = np.zeros(train[0][0].shape[1])
    for X, _ in train:
        if X.shape[0]:
            np.maximum(peak, np.abs(X).max(axis=0), out=peak)
    if rule == "auto" and not (peak > AUTO_SCALE_ABOVE).any():
        return None
    if rule not in ("auto", "max-abs"):
        raise ValueError(f"unknown feature_scale {rule!r}")
    return np.where(peak > 0, peak, 1.0)


def batch_measure(value: str) -> str:
    """Validator: an AdaRank / PermuRank measure, ``map``, ``ndcg`` or ``ndcg@K``."""
    measure_fn(value)
    return value
