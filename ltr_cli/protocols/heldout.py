"""Held-out curves of an online run: every ``every`` rounds, each learner's current weights
rank the queries of a held-out file and the run's metrics are averaged over them.

The values are those of :func:`~ltr_cli.measures.stacked.evaluate_stacked` under the run's
measures (their convention, no-relevant policy and threshold) and tie rule, averaged as the
convention averages queries (the paper preset: the mean of the defined values). A ``random``
tie rule draws from a generator seeded by the run's seed afresh at every evaluation, so an
evaluation never touches the run's own generators. The columns are named
``heldout_<metric>`` in the round log (NaN in the rounds between evaluations).

Cost: one matrix-vector product over the held-out rows (summed row by row in one order,
so identical documents tie: :func:`~ltr_cli.measures.stacked.linear_scores`) and the
compiled evaluation per learner and evaluation; the compiled block loop only ends its
blocks at multiples of ``every``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np

from ltr_cli.data.formats import open_dataset
from ltr_cli.data.identity import file_identity
from ltr_cli.data.normalize import query_level
from ltr_cli.data.options import ReaderOptions
from ltr_cli.measures.conventions import Measure
from ltr_cli.measures.stacked import evaluate_stacked, linear_scores
from ltr_cli.core.round_log import HELDOUT_PREFIX as PREFIX


def column(metric: str) -> str:
    return PREFIX + metric


@dataclass
class Heldout:
    """The held-out queries stacked: rows ``X`` (N, d) float64, labels ``y`` (N,), query q
    owning ``offsets[q]:offsets[q + 1]``; the run's ``measures``, tie rule and seed."""

    every: int
    X: np.ndarray
    y: np.ndarray
    offsets: np.ndarray
    measures: list[Measure]
    ties: str
    seed: int
    identity: dict[str, Any]

    @property
    def columns(self) -> list[str]:
        return [column(m.name) for m in self.measures]

    def due(self, t: int) -> bool:
        """Whether the weights after round ``t`` are evaluated."""
        return t > 0 and t % self.every == 0

    def evaluate(self, w: np.ndarray, score_rows: Callable[[np.ndarray], np.ndarray] | None = None) -> list[float]:
        """Each measure's mean over the held-out queries for weights ``w`` (d,); NaN where no
        query defines it. With ``score_rows`` (a learner's own scores (m,) of one query's
        rows, such as a neural learner's), the queries are scored by it and ``w`` unused."""
        if score_rows is None:
            scores = linear_scores(self.X, w)  # identical rows tie exactly
        else:
            o = self.offsets
            scores = np.concatenate([np.asarray(score_rows(self.X[o[q]:o[q + 1]]), dtype=np.float64)
                                     for q in range(o.shape[0] - 1)] or [np.zeros(0)])
        conv = self.measures[0].conv
        table = evaluate_stacked(scores, self.y, self.offsets, conv, self.ties,
                                 rng=np.random.default_rng(self.seed), measures=self.measures)
        means = table.average(conv)
        return [float("nan") if (v := means[m.name]) is None else float(v) for m in self.measures]


def open_heldout(path: Path, options: ReaderOptions, every: int, measures: list[Measure], ties: str,
                 seed: int, normalize: str = "none") -> Heldout:
    """Read the held-out file once (its bounds and errors are the reader's: file and line);
    ``normalize: query-level`` scales each query as the stream's queries are."""
    xs, ys, lengths = [], [], []
    for q in open_dataset(path, options).dense_queries(np.float64):
        xs.append(query_level(q.X) if normalize == "query-level" else q.X)
        ys.append(q.y)
        lengths.append(q.X.shape[0])
    d = options.n_features or 0
    X = np.vstack(xs) if xs else np.zeros((0, d))
    y = np.concatenate(ys) if ys else np.zeros(0)
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    return Heldout(every, X, y, offsets, measures, ties, seed, {"file": file_identity(path), "every": every,
                                                               "queries": len(lengths)})
