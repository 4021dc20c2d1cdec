"""Bootstrap intervals of a fitted click model's parameters.

The training sessions are resampled with replacement ``draws`` times (a generator seeded by
the fit's seed, a stream apart from the split's), the model is refitted on each resample
with the same iterations and the same query-document pairs (a pair no resampled session
shows keeps its prior, 1/2), and each parameter's interval is the central ``level`` share
of its refitted values (the percentile bootstrap). The intervals have the shape of the
parameters' record (:meth:`FitModel.describe`): every number of it becomes ``[low, high]``,
every other value (a query id, a document index, a rank) stays as it is.

The intervals count the sampling error of the sessions; not the EM's own error from too
few iterations, and not the scale that PBM and UBM leave free (their examination and
attractiveness are identified up to a common factor, so their intervals hold for the
scale the fit lands on).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.clicklog.fit.em import FitModel
from ltr_cli.clicklog.fit.grid import Grid, Pairs
from ltr_cli.errors import LtrError

#: the most resamples one command refits
MAX_DRAWS = 2_000


def _leaves(record: Any) -> list[float]:
    """The record's numbers (floats), in a fixed walk order."""
    if isinstance(record, dict):
        return [v for key in record for v in _leaves(record[key])]
    if isinstance(record, list):
        return [v for item in record for v in _leaves(item)]
    return [record] if isinstance(record, float) else []


def _fill(record: Any, bounds: list[list[float]]) -> Any:
    """``record`` with each of its numbers replaced, in walk order, by the next bound."""
    if isinstance(record, dict):
        return {key: _fill(value, bounds) for key, value in record.items()}
    if isinstance(record, list):
        return [_fill(item, bounds) for item in record]
    return bounds.pop(0) if isinstance(record, float) else record


def check_draws(draws: int) -> None:
    """A one-line error unless ``draws`` is a number of resamples this module takes."""
    if not 2 <= draws <= MAX_DRAWS:
        raise LtrError(f"--bootstrap {draws}: give 2 to {MAX_DRAWS} resamples (100 is usual), or leave it out")


def bootstrap_intervals(model: FitModel, grid: Grid, pairs: Pairs, iterations: int, draws: int, seed: int,
                        level: float = 0.95) -> dict[str, Any]:
    """The ``level`` percentile intervals of ``model``'s parameters over ``draws``
    resamples of ``grid``'s sessions (the module docstring): ``{"level", "draws",
    "parameters"}``, ``parameters`` shaped as ``model.describe`` with ``[low, high]`` for
    each number."""
    check_draws(draws)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 1]))
    shape: Any = None
    values: list[list[float]] = []
    for _ in range(draws):
        rows = rng.integers(0, grid.sessions, grid.sessions)
        described = model.describe(model.fit(grid.take(np.sort(rows)), pairs, iterations), pairs)
        shape = described
        values.append(_leaves(described))
    table = np.asarray(values, dtype=float)  # (draws, numbers)
    tail = (1.0 - level) / 2.0
    low, high = np.quantile(table, [tail, 1.0 - tail], axis=0)
    bounds = [[float(f"{a:.12g}"), float(f"{b:.12g}")] for a, b in zip(low, high)]
    return {"level": level, "draws": draws, "method": "percentile bootstrap over the training sessions",
            "parameters": _fill(shape, bounds)}
