"""A batch run's test metrics under all three rules for queries without a relevant
document, beside the rule its convention applies.

Libraries disagree on what such a query adds to a mean: LightGBM, XGBoost and allRank count
it as 1 (``one``), TF-Ranking and Rax as 0 (``zero``), Qin et al. (ICLR 2021) and PT-Ranking
drop it (``skip``); on WEB30K Fold1 the choice moves NDCG@10 by about 1.5 points. A run
computes its numbers under one rule (``cv.convention`` and its ``no_relevant``), and records
the other two beside them: each fold's selected model is scored once on its test queries,
and the scores are measured under each rule (the same ranking, the same convention
otherwise). The summary's ``no_relevant`` holds, per metric whose kind has a no-relevant
value (NDCG, AP, ERR, ...; not P@k, which is 0 there by definition), the number of test
queries the rule applies to and the mean over folds of each rule's fold means, as
``metrics`` has the run's own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.measures.conventions import Convention, Measure
from ltr_cli.measures.stacked import evaluate_pairs

#: the rules, as the summary names them, and what each counts an empty query as
RULES: dict[str, str] = {"one": "1", "zero": "0", "skip": "left out"}


def _under(measure: Measure, rule: str) -> Measure:
    return Measure(measure.spec, rule, measure.threshold, measure.eru_d, measure.eru_alpha, measure.conv)


def fold_rules(scored: list[tuple[np.ndarray, np.ndarray]], conv: Convention, tests: list[Measure]) -> dict[str, Any]:
    """One fold's record: ``{"queries": {metric: test queries without a relevant document},
    "means": {rule: {metric: the fold's mean}}}`` over ``scored``, the test queries' (scores
    (m,), labels (m,)), for the metrics of ``tests`` that have a no-relevant value."""
    chosen = [m for m in tests if m.info.no_relevant]
    if not chosen or not scored:
        return {"queries": {}, "means": {rule: {} for rule in RULES}}
    tables = {rule: evaluate_pairs(scored, conv, [_under(m, rule) for m in chosen]) for rule in RULES}
    one, zero = tables["one"].contributions(conv), tables["zero"].contributions(conv)
    differ = ~np.isclose(one, zero, rtol=0.0, atol=0.0, equal_nan=True)
    return {"queries": {m.name: int(differ[:, j].sum()) for j, m in enumerate(chosen)},
            "means": {rule: table.average(conv) for rule, table in tables.items()}}


def run_rules(records: list[dict[str, Any] | None], rule: str) -> dict[str, Any] | None:
    """The run summary's ``no_relevant`` from its folds' records (None when a fold has none:
    a fold saved by an earlier version): the run's ``rule``, the queries per metric summed
    over folds, and each rule's mean over folds of the fold means (folds where a mean is
    undefined left out, as the run's ``metrics``)."""
    folds = [r for r in records if r is not None]
    if not folds or len(folds) < len(records):
        return None
    metrics = list(folds[0]["queries"])
    means: dict[str, dict[str, float | None]] = {}
    for name in RULES:
        means[name] = {}
        for m in metrics:
            kept = [v for r in folds if (v := r["means"][name].get(m)) is not None]
            means[name][m] = float(np.mean(kept)) if kept else None
    return {"rule": rule, "queries": {m: int(sum(r["queries"].get(m, 0) for r in folds)) for m in metrics},
            "metrics": means}


def rules_problem(record: Any) -> str | None:
    """What is wrong with a fold's ``no_relevant`` record restored from a checkpoint, or
    None (absent: a fold saved before runs recorded it)."""
    if record is None:
        return None
    if not isinstance(record, dict) or set(record) != {"queries", "means"}:
        return "its no-relevant record is not queries and means"
    queries, means = record["queries"], record["means"]
    if not isinstance(queries, dict) or not all(isinstance(k, str) and type(v) is int and v >= 0
                                                for k, v in queries.items()):
        return "its no-relevant query counts are not counts"
    if not isinstance(means, dict) or set(means) != set(RULES) or not all(
            isinstance(m, dict) and set(m) == set(queries) and all(
                v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and v == v) for v in m.values())
            for m in means.values()):
        return "its no-relevant means are not one number per rule and metric"
    return None
