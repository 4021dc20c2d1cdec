"""``ltr report --pivot``: one table across datasets, as papers print them: learners (their
labels) as rows, dataset x metric as columns. An online run's value is the report's
``last10`` (mean over seeds of the time-averaged curve's last ten rounds); a batch run's,
its test metric's mean over folds. Metrics go by their one spelling (``ap``); the LaTeX
table typesets them as the papers do (``MAP``, ``NDCG@10``). A learner with several settings
on one dataset makes one row per setting, named by the settings that differ."""

from __future__ import annotations

from typing import Any

from ltr_cli.measures.registry import is_metric_name
from ltr_cli.reports.captions import conventions_line
from ltr_cli.reports.report import batch_rows, report_rows


def pivot(runs: list[Any]) -> tuple[list[tuple[str, list[str]]], list[tuple[str, list[Any]]], str | None]:
    """``(header, rows, conventions)``: header the (dataset, metrics) column groups in order
    of first appearance; rows (learner, values in header order, None where a learner has
    none); the line naming the conventions
    (:func:`ltr_cli.reports.captions.conventions_line`). A
    learner name that two experiments give a value on one dataset and metric is named with
    its experiment in each of them (``ListNet [yahoo_slam]``): no cell is overwritten."""
    entries: list[tuple[str, str, str, str, Any]] = []  # (name, experiment, dataset, metric, value)
    online = [r for r in runs if r.summary.get("protocol") != "batch-cv"]
    batch = [r for r in runs if r.summary.get("protocol") == "batch-cv"]
    online_rows, batch_rows_ = report_rows(online) if online else [], batch_rows(batch) if batch else []
    said = conventions_line(online_rows + batch_rows_)
    for row in online_rows:
        name = row["label"] + (f" ({row['settings']})" if row["settings"] else "")
        entries.append((name, str(row["experiment"]), str(row["dataset"]), str(row["metric"]), row["last10"]))
    for row in batch_rows_:
        for key, value in row.items():
            if is_metric_name(key):
                entries.append((str(row["label"]), str(row["experiment"]), str(row["dataset"]), key, value))
    experiments: dict[tuple[str, str, str], set[str]] = {}
    for name, experiment, dataset, metric, _ in entries:
        experiments.setdefault((name, dataset, metric), set()).add(experiment)
    shared = {name for (name, _, _), seen in experiments.items() if len(seen) > 1}
    header: dict[str, list[str]] = {}
    cells: dict[str, dict[tuple[str, str], Any]] = {}
    for name, experiment, dataset, metric, value in entries:
        header.setdefault(dataset, [])
        if metric not in header[dataset]:
            header[dataset].append(metric)
        shown = f"{name} [{experiment}]" if name in shared else name
        cells.setdefault(shown, {})[(dataset, metric)] = value
    groups = list(header.items())
    return groups, [(name, [values.get((d, m)) for d, ms in groups for m in ms]) for name, values in cells.items()], said


def pivot_table(runs: list[Any], fmt: str) -> str:
    """The pivot as ``markdown``, ``csv`` (columns ``dataset:metric``) or ``latex``."""
    groups, rows, said = pivot(runs)
    if fmt == "latex":
        from ltr_cli.reports.latex import pivot_to_latex

        return pivot_to_latex(groups, rows, said)
    columns = [f"{d}:{m}" for d, ms in groups for m in ms]
    table = [{"learner": name, **dict(zip(columns, values))} for name, values in rows]
    from ltr_cli.reports.report import to_csv, to_markdown

    if fmt == "csv":  # a CSV file carries no notes: the convention is a column
        return to_csv([{**r, "convention": said} for r in table], ["learner", *columns, "convention"])
    return to_markdown(table, ["learner", *columns], note=False) + (f"\n{said}\n" if said else "")
