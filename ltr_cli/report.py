"""``ltr report``: last-ten-rounds averages per run, with the paper's printed numbers."""

from __future__ import annotations

import csv
import io
from typing import Any

from ltr_cli.paper_numbers import paper_value
from ltr_cli.results import Run


def report_rows(runs: list[Run]) -> list[dict[str, Any]]:
    """One row per (run, metric): the paper's statistic (mean of the time-averaged curve
    over the last ten rounds), the final time average, and the paper's number if any."""
    rows = []
    for run in sorted(runs, key=lambda r: (r.experiment, r.label, r.path.name)):
        s = run.summary
        for metric, values in s.get("metrics", {}).items():
            paper = paper_value(str(s.get("dataset", "")), str(s.get("role", "")), metric)
            last10 = values.get("last10_mean_of_time_average")
            rows.append({
                "experiment": run.experiment,
                "dataset": s.get("dataset", ""),
                "learner": s.get("learner", run.path.name),
                "label": run.label,
                "metric": metric,
                "rounds": s.get("rounds"),
                "last10": last10,
                "final": values.get("final_time_average"),
                "paper": paper,
                "difference": None if paper is None or last10 is None else last10 - paper,
            })
    return rows


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)


COLUMNS = ["experiment", "dataset", "learner", "label", "metric", "rounds", "last10", "final",
           "paper", "difference"]


def to_markdown(rows: list[dict[str, Any]]) -> str:
    head = "| " + " | ".join(COLUMNS) + " |"
    rule = "|" + "|".join("---" for _ in COLUMNS) + "|"
    body = ["| " + " | ".join(_fmt(r[c]) for c in COLUMNS) + " |" for r in rows]
    note = ("\n`last10`: mean of the time-averaged curve over the last ten rounds (the perceptron "
            "paper's statistic); `paper`: the number printed in the paper, where there is one.\n")
    return "\n".join([head, rule, *body]) + "\n" + note


def to_csv(rows: list[dict[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({c: ("" if r[c] is None else r[c]) for c in COLUMNS})
    return buf.getvalue()
