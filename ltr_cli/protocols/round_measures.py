"""The measures of one round, on the full labels of the shown ranking.

:class:`RoundMeasures` computes every configured measure of a round and whether the query
had no relevant document. NDCG, AP and precision@k of a round are one compiled call
(:func:`ltr_cli.kernels` ``round_measures``); ERU/NERU, or ``LTR_KERNELS=0``, use the
reference measures of :mod:`ltr_cli.measures.metrics` (the tests keep the two equal).
"""

from __future__ import annotations

import numpy as np

from ltr_cli import kernels
from ltr_cli.learners.online.base import as_labels
from ltr_cli.measures.metrics import Measure, has_relevant


class RoundMeasures:
    """``measures(ranking (m,), labels (m,)) -> (values in measure order, no_relevant)``."""

    def __init__(self, measures: list[Measure]):
        self.measures = list(measures)
        self.names = [m.name for m in self.measures]
        rows = [m.kernel_row() for m in self.measures]
        self._spec = np.array(rows, dtype=np.float64) if kernels.ENABLED and None not in rows else None
        self.compiled = self._spec is not None

    @property
    def spec(self) -> np.ndarray:
        """The compiled measures' rows (kind, cut-off, threshold, no-relevant value);
        only when :attr:`compiled`."""
        assert self._spec is not None
        return self._spec

    def __call__(self, ranking: np.ndarray, labels: np.ndarray) -> tuple[list[float], bool]:
        if self._spec is not None:
            values = (kernels.module or kernels.load()).measures.round_measures(
                ranking, as_labels(labels), self._spec, kernels.discounts(labels.shape[0])).tolist()
            return values[:len(self.measures)], values[-1] == 0.0
        return [meas(ranking, labels) for meas in self.measures], not has_relevant(labels)
