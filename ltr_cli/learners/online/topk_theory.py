"""Theorem 5.2's worked example (top-k paper, proof of Theorem 5.2, Table 1).

m = 3 documents, binary relevance; the adversary plays one of the 8 relevance vectors
(000, 110, 101, 011, 100, 010, 001, 111) with probabilities p or p~. Top-1 feedback reveals
``P(R_j = 1) = E[R_j]`` of whichever document is shown first, so two strategies with the
same ``E[R]`` cannot be told apart; an NDCG-calibrated surrogate's minimiser sorts
``E[G(R) / Z_m(R)]`` (Theorem 5.1), so when those argsorts differ the learner cannot play
the right one and its regret is Omega(T).

``G(R) = 2^R - 1`` and ``Z_m(R)`` the ideal DCG over all m positions with the discount
``1/log2(1 + i)`` (the ``paper`` convention of :mod:`ltr_cli.measures.conventions`). For
R = 000 both are 0; ``G/Z`` is then taken as 0 (the vector contributes nothing, and p and
p~ give it probability 0 anyway).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr_cli.measures.conventions import CONVENTIONS

RELEVANCE_VECTORS = ("000", "110", "101", "011", "100", "010", "001", "111")
P = (0.0, 0.1, 0.15, 0.05, 0.2, 0.3, 0.2, 0.0)
P_TILDE = (0.0, 0.3, 0.0, 0.0, 0.15, 0.15, 0.4, 0.0)
# the paper's printed values (4 decimals) and argsorts (1-based documents, best first)
PRINTED: dict[str, dict[str, Any]] = {
    "p": {"expected_relevance": (0.45, 0.45, 0.4), "expected_normalised_gain": (0.3533, 0.3920, 0.3226),
          "argsorts": ((2, 1, 3),)},
    "p_tilde": {"expected_relevance": (0.45, 0.45, 0.4), "expected_normalised_gain": (0.3339, 0.3339, 0.4000),
                "argsorts": ((3, 1, 2), (3, 2, 1))},
}
TIE = 1e-12  # expectations closer than this are equal (their order is open)


def normalised_gain(labels: np.ndarray, convention: str = "paper") -> np.ndarray:
    """``G(R) / Z_m(R)`` (m,): each document's gain over the ideal DCG of the whole list; 0
    for every document when no document is relevant (0/0 taken as 0)."""
    conv = CONVENTIONS[convention]
    gains = conv.gains(labels)
    ideal = conv.dcg(-np.sort(-gains), gains.shape[0])
    return gains / ideal if ideal > 0 else np.zeros_like(gains)


def argsorts(values: np.ndarray, tie: float = TIE) -> list[tuple[int, ...]]:
    """Every ordering of the documents (1-based, best first) that sorts ``values``
    descending: one unless values tie."""
    m = values.shape[0]
    return [tuple(int(j) + 1 for j in order) for order in itertools.permutations(range(m))
            if all(values[order[i]] >= values[order[i + 1]] - tie for i in range(m - 1))]


@dataclass(frozen=True)
class Strategy:
    """One adversary strategy of the example: its probabilities and what they imply."""

    name: str
    probabilities: tuple[float, ...]
    expected_relevance: tuple[float, ...]
    expected_normalised_gain: tuple[float, ...]
    argsorts: tuple[tuple[int, ...], ...]


def strategy(name: str, probabilities: tuple[float, ...], vectors: tuple[str, ...] = RELEVANCE_VECTORS) -> Strategy:
    R = np.array([[float(c) for c in v] for v in vectors])
    p = np.asarray(probabilities, dtype=np.float64)
    expected_r = p @ R
    expected_g = p @ np.vstack([normalised_gain(r) for r in R])
    # rounded to 12 decimals: 0.45, not 0.44999999999999996 (sums of binary fractions)
    return Strategy(name, tuple(probabilities), tuple(round(float(x), 12) for x in expected_r),
                    tuple(round(float(x), 12) for x in expected_g), tuple(argsorts(expected_g)))


def calibration_example() -> dict[str, Any]:
    """Table 1's two strategies, what top-1 feedback sees of them (E[R]) and what an
    NDCG-calibrated surrogate's minimiser sorts (E[G(R)/Z_m(R)]), checked against the
    paper's printed values to 4 decimals."""
    p, q = strategy("p", P), strategy("p~", P_TILDE)
    same_feedback = bool(np.allclose(p.expected_relevance, q.expected_relevance, rtol=0, atol=TIE))
    matches: dict[str, bool] = {}
    for key, s in (("p", p), ("p_tilde", q)):
        printed = PRINTED[key]
        matches[key] = (np.allclose(np.round(s.expected_normalised_gain, 4), printed["expected_normalised_gain"],
                                    rtol=0, atol=1e-12)
                        and np.allclose(s.expected_relevance, printed["expected_relevance"], rtol=0, atol=TIE)
                        and set(s.argsorts) == set(printed["argsorts"]))
    return {
        "source": "top-k paper, proof of Theorem 5.2, Table 1",
        "documents": 3,
        "relevance_vectors": list(RELEVANCE_VECTORS),
        "gain": "G(R) = 2^R - 1",
        "normaliser": "Z_m(R) = ideal DCG over all m positions, discount 1/log2(1 + i)",
        "zero_vector": "R = 000: G(R)/Z_m(R) = 0/0, taken as 0",
        "strategies": {key: {"probabilities": list(s.probabilities),
                             "expected_relevance": list(s.expected_relevance),
                             "expected_normalised_gain": list(s.expected_normalised_gain),
                             "argsorts": [list(a) for a in s.argsorts]}
                       for key, s in (("p", p), ("p_tilde", q))},
        "same_top1_feedback": same_feedback,
        "argsorts_differ": not set(p.argsorts) & set(q.argsorts),
        "paper_printed": {key: {"expected_normalised_gain": list(v["expected_normalised_gain"]),
                                "argsorts": [list(a) for a in v["argsorts"]]} for key, v in PRINTED.items()},
        "matches_paper": matches,
    }
