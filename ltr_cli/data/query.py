"""One query of a ranking data set, as every reader and generator yields it."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Query:
    """One query: ``X`` (m, d) float64, ``y`` (m,) float64 labels, in file order.

    ``qid`` is a string (a ``qid:`` token, a comment or the 1-based group number);
    ``line`` is the 1-based line number of its first document.
    """

    qid: str
    X: np.ndarray
    y: np.ndarray
    line: int = 0

    @property
    def m(self) -> int:
        return int(self.y.shape[0])
