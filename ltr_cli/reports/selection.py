"""Hyper-parameter selection as the perceptron paper describes it: for each learner, the
settings whose time-averaged metric over a fixed interval (the last ``window`` rounds) is
best, averaged over seeds.

Runs are grouped by (experiment, learner, config id without the seed); the settings that
distinguish the groups of one learner are read from their ``config.yaml`` files.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ltr_cli.errors import LtrError, ResultsError
from ltr_cli.measures.registry import is_metric_name, parse_metric
from ltr_cli.measures.metrics import time_average
from ltr_cli.results.folders import Run, group_seeds


@dataclass
class Choice:
    experiment: str
    learner: str
    config_id: str
    score: float
    scores: list[float]
    settings: dict[str, Any]
    runs: list[Run]
    candidates: int
    tied: int = 0  # other settings with exactly the same score
    metric: str = ""  # the metric it was chosen by, as the registry names it


def window_score(run: Run, metric: str, window: int) -> float:
    """Mean of the time-averaged curve of ``metric`` over the last ``window`` rounds."""
    if metric not in run.rounds.columns:
        raise ResultsError(f"{run.path}: no metric {metric!r} (it has "
                           f"{', '.join(c for c in run.rounds.columns if is_metric_name(c))})")
    tail = time_average(run.rounds[metric].to_numpy(dtype=np.float64))[-window:]
    finite = tail[np.isfinite(tail)]
    return float(finite.mean()) if finite.size else float("nan")  # NaN: no score (ranked last)


def _flatten(data: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(data, dict):
        out: dict[str, Any] = {}
        for k, v in data.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): data}


def _settings(group: list[Run], others: list[list[Run]]) -> dict[str, Any]:
    """Config keys (other than the seed) whose values differ between the groups."""
    mine = _flatten(group[0].config)
    flats = [_flatten(g[0].config) for g in others]
    keys = set(mine)
    for f in flats:
        keys |= set(f)
    differing = sorted(k for k in keys if k not in ("seed", "seeds")
                       and any(f.get(k) != mine.get(k) for f in flats))
    return {k: mine.get(k) for k in differing}


def select(runs: list[Run], metric: str, window: int) -> list[Choice]:
    """The best settings per (experiment, learner). Exact ties (e.g. step sizes that give
    the same rankings) go to the smallest config id, deterministically; ``tied`` counts them.
    ``metric`` is read by the registry's parser (``map`` is ``ap``)."""
    try:
        metric = parse_metric(metric).name
    except ValueError as exc:
        raise LtrError(f"--select-by: {exc}; 'ltr list' shows the metrics") from None
    by_learner: dict[tuple[str, str], list[tuple[str, list[Run]]]] = {}
    for (experiment, learner, config_id), members in group_seeds(runs).items():
        by_learner.setdefault((experiment, learner), []).append((config_id, members))
    choices = []
    for (experiment, learner), groups in sorted(by_learner.items()):
        scored = []
        for config_id, members in groups:
            scores = [window_score(r, metric, window) for r in sorted(members, key=lambda r: r.path.name)]
            finite = [s for s in scores if s is not None and np.isfinite(s)]
            # settings without one finite score rank last (NaN must never look best)
            scored.append((-float(np.mean(finite)) if finite else float("inf"), config_id, scores, members))
        scored.sort(key=lambda x: (x[0], x[1]))
        neg, config_id, scores, members = scored[0]
        others = [g for cid, g in groups if cid != config_id]
        tied = sum(1 for s in scored[1:] if s[0] == neg)
        choices.append(Choice(experiment, learner, config_id, -neg, scores,
                              _settings(members, others) if others else {}, members, len(groups), tied, metric))
    return choices
