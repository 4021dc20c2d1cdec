"""What ``ltr plot --regret`` draws (:func:`ltr_cli.reports.plot.plot_regret`): each
learner's cumulative regret (``protocol.log_regret`` runs, :mod:`ltr_cli.protocols.regret`)
beside ``c T^(2/3)``, the rate of Theorem 4.1 (top-k paper).

One figure per experiment, ``<experiment>_regret.png`` / ``.pdf``, one panel per learner
(the surrogates' scales differ too much to share an axis): the regret curve (mean over
seeds, their range as a band) and, dashed, ``c t^(2/3)`` with ``c`` chosen so the line meets
the mean curve at the last round. A curve above its line before the end grows more
slowly than ``t^(2/3)`` from there on; one below it, faster.
"""

from __future__ import annotations

import math
from collections import defaultdict
import numpy as np

from ltr_cli.errors import ResultsError
from ltr_cli.protocols.round_log import REGRET
from ltr_cli.results.folders import Run, group_seeds

EXPONENT = 2.0 / 3.0


def regret_plan(runs: list[Run]) -> dict[str, list[list[Run]]]:
    """Experiment -> its learners' seed groups that have a regret column."""
    by_experiment: dict[str, list[list[Run]]] = defaultdict(list)
    for (experiment, _, _), seeds in sorted(group_seeds([r for r in runs if REGRET in r.rounds.columns]).items()):
        by_experiment[experiment].append(seeds)
    if not by_experiment:
        raise ResultsError("--regret: no run has a regret column (run a config with protocol.log_regret: true; "
                           "learners with a surrogate and a projection radius log it)")
    return dict(by_experiment)


def regret_names(runs: list[Run]) -> list[str]:
    return [f"{e}_regret.{ext}" for e in regret_plan(runs) for ext in ("png", "pdf")]


def mean_regret(seeds: list[Run]) -> tuple[np.ndarray, np.ndarray]:
    """``(t, curves[seed, t])`` of one learner's seeds, cut to the shortest."""
    curves = [r.rounds[REGRET].to_numpy(dtype=np.float64) for r in seeds]
    n = min(len(c) for c in curves)
    return np.arange(1, n + 1), np.vstack([c[:n] for c in curves])


def rate_constant(t: np.ndarray, mean: np.ndarray) -> float | None:
    """``c`` with ``c T^(2/3)`` equal to the mean regret at the last round T (None: empty or NaN)."""
    if not t.size or not math.isfinite(mean[-1]):
        return None
    return float(mean[-1] / t[-1] ** EXPONENT)
