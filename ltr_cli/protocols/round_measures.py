"""The measures of one round, on the full labels of the shown ranking.

:class:`RoundMeasures` computes every configured measure of a round and whether the query
had no relevant document. NDCG, AP and precision@k of a round are one compiled call
(:func:`ltr_cli.kernels` ``round_measures``) when every measure's kind has a kernel in the
registry (:mod:`ltr_cli.measures.registry`: NDCG, AP, P@k, ERR, RR); otherwise, or with
``LTR_KERNELS=0``, every measure uses its reference function (the tests keep the two
equal), and :attr:`RoundMeasures.note` says which measure sends the run to the Python path.
"""

from __future__ import annotations

import numpy as np

from ltr_cli import kernels
from ltr_cli.learners.online.base import as_labels
from ltr_cli.measures.conventions import Measure
from ltr_cli.measures.metrics import has_relevant


class RoundMeasures:
    """``measures(ranking (m,), labels (m,)) -> (values in measure order, no_relevant)``."""

    def __init__(self, measures: list[Measure]):
        self.measures = list(measures)
        self.names = [m.name for m in self.measures]
        rows = [m.kernel_row() for m in self.measures]
        self._spec = np.array(rows, dtype=np.float64) if kernels.ENABLED and None not in rows else None
        self.compiled = self._spec is not None
        slow = [m.name for m, row in zip(self.measures, rows) if row is None]
        self.note = (f"metric {', '.join(slow)} has no compiled kernel: every learner of this run takes the "
                     "reference (Python) round loop; drop it from metrics.names for the compiled loop"
                     if kernels.ENABLED and slow else None)

    @property
    def spec(self) -> np.ndarray:
        """The compiled measures' rows (kind, cut-off, threshold, no-relevant value, 2^gmax);
        only when :attr:`compiled`."""
        assert self._spec is not None
        return self._spec

    def __call__(self, ranking: np.ndarray, labels: np.ndarray) -> tuple[list[float], bool]:
        if self._spec is not None:
            values = (kernels.module or kernels.load()).measures.round_measures(
                ranking, as_labels(labels), self._spec, kernels.discounts(labels.shape[0])).tolist()
            return values[:len(self.measures)], values[-1] == 0.0
        return [meas(ranking, labels) for meas in self.measures], not has_relevant(labels)
