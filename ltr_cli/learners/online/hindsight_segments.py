"""ListNet and SmoothDCG summed over all the queries of a :class:`~ltr_cli.learners.online.
hindsight.QueryBlock` at once, for the comparator in hindsight: the per-query surrogates of
:mod:`ltr_cli.surrogates.listwise` (the reference; tests hold the two equal), with each
query's softmax taken over its segment of the block's rows by ``reduceat`` instead of a
Python call per query. Only queries shown in some round (count > 0) and with documents
take part."""

from __future__ import annotations

import numpy as np

from ltr_cli.measures.metrics import exp2_gain


class Segments:
    """The counted queries' rows of a block, gathered: ``rows`` (indices into the block),
    ``starts`` (each query's first position among them), ``query`` (each position's query
    among them) and ``weight`` (each position's query count)."""

    def __init__(self, starts: np.ndarray, ends: np.ndarray, counts: np.ndarray):
        keep = (counts > 0) & (ends > starts)
        a, b, c = starts[keep].astype(np.int64), ends[keep].astype(np.int64), counts[keep].astype(np.float64)
        lengths = b - a
        self.starts = np.concatenate(([0], np.cumsum(lengths)[:-1])).astype(np.int64) if a.size else a
        self.query = np.repeat(np.arange(a.shape[0]), lengths)
        self.rows = (np.repeat(a - self.starts, lengths) + np.arange(int(lengths.sum()))) if a.size else a
        self.weight = c[self.query]

    def _softmax(self, v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(log softmax, softmax)`` of ``v`` within each query."""
        shifted = v - np.maximum.reduceat(v, self.starts)[self.query]
        e = np.exp(shifted)
        total = np.add.reduceat(e, self.starts)
        return shifted - np.log(total)[self.query], e / total[self.query]

    def listnet(self, s: np.ndarray, y: np.ndarray, n_rows: int) -> tuple[float, np.ndarray]:
        """``sum_q c_q ListNet(s_q, y_q)`` and its gradient w.r.t. the block's scores (n_rows,)."""
        grad = np.zeros(n_rows)
        if not self.rows.size:
            return 0.0, grad
        log_p, p = self._softmax(s[self.rows])
        _, py = self._softmax(np.asarray(y, dtype=np.float64)[self.rows])
        grad[self.rows] = self.weight * (p - py)
        return float(-(self.weight * py) @ log_p), grad

    def smoothdcg(self, s: np.ndarray, y: np.ndarray, n_rows: int, epsilon: float = 0.01
                  ) -> tuple[float, np.ndarray]:
        """``sum_q c_q SmoothDCG(s_q, y_q)`` (the negative smoothed DCG@1) and its gradient."""
        grad = np.zeros(n_rows)
        if not self.rows.size:
            return 0.0, grad
        _, p = self._softmax(s[self.rows] / epsilon)
        g = exp2_gain(np.asarray(y, dtype=np.float64)[self.rows])
        gain = np.add.reduceat(p * g, self.starts)
        grad[self.rows] = -self.weight * (p * (g - gain[self.query])) / epsilon
        return float(-(self.weight[self.starts] @ gain)), grad
