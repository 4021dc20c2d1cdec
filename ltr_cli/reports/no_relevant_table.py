"""``ltr report``'s table of batch runs under the three rules for test queries without a
relevant document (counted as 1, as 0, or left out), from each run's summary
(:mod:`ltr_cli.protocols.no_relevant_rules`).

A row per run and metric: the run's selection metric (``cv.select_by``) and NDCG@10, each
only where some test query has no relevant document under it (otherwise the rules agree
and the batch table has the number). ``rule`` is the one the run's numbers use. Published
numbers state different rules (the neural papers' ``paper_empty``): compare a run's number
under the rule of the number beside it.
"""

from __future__ import annotations

from typing import Any

from ltr_cli.protocols.no_relevant_rules import RULES
from ltr_cli.results.folders import Run

COLUMNS = ["experiment", "learner", "label", "metric", "empty_queries", "test_queries", "empty_as_1", "empty_as_0",
           "empty_left_out", "rule"]


def _metrics(run: Run) -> list[str]:
    selected = str(run.summary.get("selected_by", ""))
    chosen = [selected.removeprefix("vali ")] if selected.startswith("vali ") else []
    return [m for m in dict.fromkeys(chosen + ["ndcg@10"])]


def no_relevant_rows(runs: list[Run]) -> list[dict[str, Any]]:
    """The table's rows (the module docstring); none when no run has such a query."""
    rows = []
    for run in sorted(runs, key=lambda r: (r.experiment, str(r.summary.get("learner")), r.path.name)):
        found = run.summary.get("no_relevant")
        if not isinstance(found, dict):
            continue
        queries, means = found.get("queries") or {}, found.get("metrics") or {}
        for metric in _metrics(run):
            count = queries.get(metric)
            if not isinstance(count, int) or count <= 0:
                continue
            rows.append({"experiment": run.experiment, "learner": run.summary.get("learner"), "label": run.label,
                         "metric": metric, "empty_queries": count, "test_queries": run.summary.get("test_queries"),
                         **{f"empty_{'left_out' if rule == 'skip' else 'as_' + RULES[rule]}":
                            (means.get(rule) or {}).get(metric) for rule in RULES},
                         "rule": f"{found.get('rule')} (empty as {RULES.get(str(found.get('rule')), '?')})"})
    return rows
