"""``ltr report``'s table of click learners by condition: each learner's (estimator's) mean
test metric in each condition of simulated click logs, with its 95% interval over the logs
and the test queries.

The conditions, logs and per-query values are those of ``ltr compare --logs``
(:mod:`ltr_cli.reports.log_pairs`): a run's condition is its data and its
``clicks.generate`` settings but the seed, its log the seed. A learner's cell pools its R
logs' test queries (the queries with a value in every one of its logs) into an R x Q table
of values and gives the table's mean with the interval of the crossed random-effects model
of log and query (``crossed_test``: one log, the queries' t interval). The metric is the
runs' selection metric (``cv.select_by``), NDCG@10 when they name none. Learners without a
simulated log (trained on labels) have no condition and are not in this table; the batch
table above it has them. Differences between learners, with their tests, are
``ltr compare --logs``'s.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.results.folders import Run

#: the metric when the runs name no selection metric
DEFAULT_METRIC = "ndcg@10"


def _metric(runs: list[Run]) -> str:
    for run in runs:
        selected = str(run.summary.get("selected_by", ""))
        name = selected.removeprefix("vali ")
        if selected.startswith("vali ") and name in (run.summary.get("metrics") or {}):
            return name
    return DEFAULT_METRIC


def condition_rows(runs: list[Run]) -> list[dict[str, Any]]:
    """One row per condition with a simulated log (none unless a learner has several logs in
    a condition; with one log each the batch table has the numbers): ``condition``,
    ``metric``, ``logs`` (the most logs a learner has in it), ``queries``, and per learner a
    cell ``mean [low, high]`` (the module docstring)."""
    from ltr_cli.reports.log_pairs import _groups, _query_table, crossed_test

    groups, labels = _groups(runs)
    if not any(len(by_log) > 1 for learners in groups.values() for by_log in learners.values()):
        return []  # one log per learner: the batch table has its numbers
    metric = _metric(runs)
    rows = []
    for condition in sorted(groups, key=lambda c: labels[c]):
        row: dict[str, Any] = {"condition": labels[condition], "metric": metric}
        logs = queries = 0
        for learner, by_log in sorted(groups[condition].items()):
            tables = [_query_table(by_log[r], metric) for r in sorted(by_log)]
            keys = sorted(set.intersection(*(set(t) for t in tables)), key=str)
            values = np.array([[t[k] for k in keys] for t in tables], dtype=np.float64).reshape(len(tables), -1)
            logs, queries = max(logs, len(tables)), max(queries, values.shape[1])
            if values.shape[1] == 0:
                row[learner] = "no test query with a value in every log"
                continue
            mean, low, high, _, _, _ = crossed_test(values)
            row[learner] = f"{mean:.4f}" + ("" if low is None or high is None else f" [{low:.4f}, {high:.4f}]")
        rows.append({**row, "logs": logs, "queries": queries})
    return rows


def condition_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The table's columns: condition, metric, logs, queries, then the learners by name."""
    fixed = ["condition", "metric", "logs", "queries"]
    learners = sorted({k for r in rows for k in r} - set(fixed))
    return fixed + learners
