"""``ltr report``: last-ten-rounds averages per run, with the paper's printed numbers."""

from __future__ import annotations

import csv
import io
from typing import Any

import numpy as np

from ltr_cli.reports.captions import conventions_line, run_convention
from ltr_cli.reports.click_runs import click_model, discounted_cumulative, final_heldout, gamma
from ltr_cli.reports.comparability import direct_optimisation_verdict, perceptron_verdict
from ltr_cli.reports.neural_papers import NEURAL_PAPERS, named_papers
from ltr_cli.reports.paper_numbers import config_paper, other_protocol, paper_value, printed_elsewhere, run_protocol
from ltr_cli.measures.registry import canonical_name
from ltr_cli.names import settings_text
from ltr_cli.results.folders import Run, group_seeds
from ltr_cli.reports.run_labels import describe_settings, differing_settings


def report_rows(runs: list[Run]) -> list[dict[str, Any]]:
    """One row per (experiment, learner, metric): the paper's statistic (mean of the
    time-averaged curve over the last ten rounds) averaged over the learner's seeds, its
    spread (sample standard deviation, min, max over seeds), the final time average, and
    the paper's number if any, with the verdict on whether the run's data and protocol
    match the paper's setup; the difference is shown only for a comparable run. Runs of
    one learner with different settings are separate rows, named by those settings.
    Runs with a held-out set or click feedback also give the last held-out value
    (``heldout_last``) and the discounted cumulative online value (``discounted_cumulative``),
    each as a mean with its sample standard deviation over seeds, and their click model
    (:func:`report_columns` shows these columns only when some row has them)."""
    rows = []
    # a learner's rows in the order of their click models (click runs), else of their config ids
    groups = sorted(group_seeds(runs).items(), key=lambda g: (g[0][:2], click_model(g[1][0]) or "", g[0][2]))
    settings = _settings_by_group([seeds for _, seeds in groups])
    for ((experiment, learner, _), seeds), differ in zip(groups, settings):
        first = seeds[0].summary
        for metric in first.get("metrics", {}):
            last10 = [v for r in seeds if (v := _metric(r, metric, "last10_mean_of_time_average")) is not None]
            final = [v for r in seeds if (v := _metric(r, metric, "final_time_average")) is not None]
            mean = float(np.mean(last10)) if last10 else None
            dataset, role = str(first.get("dataset", "")), str(first.get("role", ""))
            named = config_paper(seeds[0].config)
            protocol = run_protocol(seeds[0].config)
            paper = paper_value(named, dataset, role, metric, protocol)
            verdict = perceptron_verdict(seeds) if paper is not None else None
            comparable = verdict is not None and verdict.comparable
            elsewhere = printed_elsewhere(dataset, role, metric, protocol) if named is None else None
            # the paper prints a number for this learner and data, under another protocol
            other = other_protocol(dataset, protocol) if named is not None and paper is None and \
                paper_value(named, dataset, role, metric) is not None else []
            rows.append({
                "experiment": experiment,
                "dataset": dataset_cell(seeds),
                "learner": learner,
                "label": seeds[0].label,
                "settings": describe_settings(differ),
                "metric": metric,
                "rounds": first.get("rounds"),
                "seeds": len(seeds),
                "last10": mean,
                "last10_std": float(np.std(last10, ddof=1)) if len(last10) > 1 else None,
                "last10_min": min(last10) if len(last10) > 1 else None,
                "last10_max": max(last10) if len(last10) > 1 else None,
                "final": float(np.mean(final)) if final else None,
                "click_model": click_model(seeds[0]),
                "gamma": gamma(seeds[0]),
                **_spread("heldout_last", [final_heldout(r, metric) for r in seeds]),
                **_spread("discounted_cumulative", [discounted_cumulative(r, metric) for r in seeds]),
                "paper": paper,
                "difference": None if not comparable or mean is None or paper is None else mean - paper,
                "vs_paper": (verdict.text() if verdict is not None else
                             f"no paper number: the {named} paper's is for another protocol ("
                             + "; ".join(other) + ")" if other else
                             f"the config names no paper: set paper: {elsewhere} to compare with its number"
                             if elsewhere else ""),
                "notes": "; ".join(_notes(seeds)),
                "runs": " ".join(sorted(r.path.name for r in seeds)),
                "convention": run_convention(seeds[0]),
            })
    return by_gamma(rows)


def by_gamma(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows whose click runs discount their ``discounted_cumulative`` by different gammas get
    a pair of columns per gamma, ``discounted_cumulative@<gamma>`` (and its ``_std``), each
    row's values in its own gamma's: sums under different discounts never share a column.
    Under one gamma the rows are as they are (one column, the gamma in the table's note)."""
    gammas = list(dict.fromkeys(r["gamma"] for r in rows if r.get("discounted_cumulative") is not None))
    if len(gammas) < 2:
        return rows
    for r in rows:
        value, std = r.pop("discounted_cumulative", None), r.pop("discounted_cumulative_std", None)
        for g in gammas:
            name = f"discounted_cumulative@{g:g}"
            r[name], r[f"{name}_std"] = (value, std) if r["gamma"] == g else (None, None)
    return rows


def discounted_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The ``discounted_cumulative`` columns the rows have (one, or one per gamma)."""
    keys = dict.fromkeys(k for r in rows for k in r if k.startswith("discounted_cumulative") and not k.endswith("_std"))
    return [k for k in keys if any(r.get(k) is not None for r in rows)]


def _spread(name: str, values: list[float | None]) -> dict[str, float | None]:
    """``name``: the mean of the seeds' values, ``name_std``: their sample standard
    deviation (None for fewer than two); None when a seed has no value."""
    if not values or any(v is None for v in values):
        return {name: None, f"{name}_std": None}
    have = [v for v in values if v is not None]
    return {name: float(np.mean(have)), f"{name}_std": float(np.std(have, ddof=1)) if len(have) > 1 else None}


def report_columns(rows: list[dict[str, Any]]) -> list[str]:
    """The online table's columns: :data:`COLUMNS`, with ``click_model`` when the rows'
    click runs differ in their click model, and ``heldout_last`` and
    ``discounted_cumulative`` (each with its ``_std``) when some row has that value."""
    extra = []
    if len({r["click_model"] for r in rows if r.get("click_model") is not None}) > 1:
        extra.append("click_model")
    for name in ("heldout_last", *discounted_columns(rows)):
        if any(r.get(name) is not None for r in rows):
            extra += [name, f"{name}_std"]
    at = COLUMNS.index("final") + 1
    return COLUMNS[:at] + extra + COLUMNS[at:]


def dataset_cell(runs: list[Run]) -> str:
    """A row's dataset, as the figures name it (:func:`ltr_cli.reports.captions.table_dataset`):
    its name, ``<name> sample (<read> of <all> queries)`` for a partial read of a registry
    dataset, ``generated, shaped like <dataset>`` for generated data."""
    from ltr_cli.reports.captions import table_dataset

    return table_dataset(runs)


def _settings_by_group(groups: list[list[Run]]) -> list[dict[str, Any]]:
    """For groups of one experiment sharing a learner label, the settings that differ
    between them; {} for a label shown once."""
    out: list[dict[str, Any]] = [{} for _ in groups]
    by_label: dict[tuple[str, str], list[int]] = {}
    for i, seeds in enumerate(groups):
        by_label.setdefault((seeds[0].experiment, seeds[0].label), []).append(i)
    for idx in by_label.values():
        if len(idx) > 1:
            for i, differ in zip(idx, differing_settings([groups[i][0].config for i in idx])):
                out[i] = differ
    return out


# the top-k paper's plotting script adds these to two curves before drawing its figure
TOPK_FIGURE_SHIFTS = {"rtopkf-smoothdcg": 0.008, "rtopkf-ranksvm": 0.005}


def _notes(seeds: list[Run]) -> list[str]:
    """Marks of the runs (NaN weights, SmoothDCG direction) and the top-k figure's shifts."""
    notes: list[str] = []
    for run in seeds:
        for mark in run.marks:
            if mark.startswith("NaN") and len(seeds) > 1:
                mark = f"seed {run.summary.get('seed')}: {mark}"
            if mark not in notes:
                notes.append(mark)
    shift = TOPK_FIGURE_SHIFTS.get(str(seeds[0].summary.get("role", "")))
    if shift is not None:
        notes.append(f"the top-k paper's figure draws this curve shifted by +{shift:g}")
    return notes


def selection_rows(choices: list[Any], metric: str, window: int) -> list[dict[str, Any]]:
    """One row per (experiment, learner): the selected settings and their score over seeds."""
    rows = []
    for c in choices:
        rows.append({
            "experiment": c.experiment,
            "learner": c.learner,
            "label": c.runs[0].label,
            "selected_by": f"{metric}, last {window} rounds of the time average",
            "settings": settings_text(c.settings, c.learner) or "(only one setting)",
            "candidates": c.candidates,
            "tied": c.tied,
            "seeds": len(c.scores),
            "score": c.score,
            "score_std": float(np.std(c.scores, ddof=1)) if len(c.scores) > 1 else None,
            "score_min": min(c.scores),
            "score_max": max(c.scores),
            "convention": run_convention(c.runs[0]),
        })
    return rows


SELECTION_COLUMNS = ["experiment", "learner", "label", "selected_by", "settings", "candidates",
                     "tied", "seeds", "score", "score_std", "score_min", "score_max"]


_BATCH_HEAD = ["experiment", "dataset", "learner", "label", "folds"]
_BATCH_TAIL = ["paper_ap", "paper_ndcg@3", "vs_paper"]
_WITH_SPREAD = ("ap", "ndcg@3")  # the batch papers' headline metrics: their spread over folds is shown


def _batch_metrics(runs: list[Run]) -> list[str]:
    """The test metrics of the batch runs, in the order the runs list them."""
    names: list[str] = []
    for run in runs:
        names += [k for k in run.summary.get("metrics", {}) if k not in names]
    return names


def _spread_metrics(runs: list[Run]) -> tuple[str, ...]:
    """The test metrics whose spread over folds the batch table shows: MAP and NDCG@3 (the
    papers' headline metrics) and each run's selection metric (``cv.select_by``)."""
    chosen = list(_WITH_SPREAD)
    for run in runs:
        selected = str(run.summary.get("selected_by", ""))
        name = selected.removeprefix("vali ") if selected.startswith("vali ") else ""
        if name in run.summary.get("metrics", {}) and name not in chosen:
            chosen.append(name)
    return tuple(chosen)


def batch_columns(runs: list[Run]) -> list[str]:
    """The batch table's columns: the runs' test metrics by their one spelling, the spread
    over folds beside MAP, NDCG@3 and the selection metric (:func:`_spread_metrics`), and
    the paper's numbers (:data:`BATCH_COLUMNS` for the default test metrics, selected by MAP)."""
    cols = list(_BATCH_HEAD)
    if any(differ for differ in _settings_by_group([[run] for run in runs])):  # a label shown with settings
        cols.insert(cols.index("label") + 1, "settings")
    spread = _spread_metrics(runs)
    for metric in _batch_metrics(runs):
        cols += [metric] + ([f"{metric}_std"] if metric in spread else [])
    if named_papers(runs):  # the neural papers print NDCG@5 and @10, each under its empty-query rule
        return cols + NEURAL_TAIL
    return cols + _BATCH_TAIL


NEURAL_TAIL = ["paper_ndcg@5", "paper_ndcg@10", "paper_empty", "vs_paper"]


BATCH_COLUMNS = ["experiment", "dataset", "learner", "label", "folds", "ap", "ap_std", "ndcg@1", "ndcg@3",
                 "ndcg@3_std", "ndcg@5", "ndcg@10", "p@1", "p@3", "p@5", "p@10", "paper_ap", "paper_ndcg@3", "vs_paper"]


def batch_rows(runs: list[Run]) -> list[dict[str, Any]]:
    """Batch (k-fold) runs: test metrics averaged over folds, the spread over folds (sample
    standard deviation of the per-fold test values) of the headline metrics and the
    selection metric, and the
    direct-optimisation paper's Table 2 (MAP) and Table 3 (NDCG@3) numbers beside them. A
    learner the paper has no row for, on the paper's data, is marked "not in the paper"
    and compared with nothing."""
    from ltr_cli.reports.paper_numbers import batch_paper_value, in_batch_paper

    names = _batch_metrics(runs)
    spread = _spread_metrics(runs)
    rows = []
    ordered = sorted(runs, key=lambda r: (r.experiment, str(r.summary.get("learner"))))
    settings = _settings_by_group([[run] for run in ordered])
    for run, differ in zip(ordered, settings):
        s = run.summary
        m = s.get("metrics", {})
        dataset, role = str(s.get("dataset", "")), str(s.get("role", ""))
        degenerate = s.get("degenerate_folds") or []
        named = config_paper(run.config)
        verdict = None if degenerate or named != "direct-optimisation" else direct_optimisation_verdict(run)
        extra = verdict is not None and not in_batch_paper(role)
        rows.append({
            "experiment": run.experiment, "dataset": dataset_cell([run]), "learner": s.get("learner"),
            "label": run.label, "settings": describe_settings(differ), "folds": len(s.get("folds", [])),
            # a degenerate model's numbers measure the file order, never the method
            **{k: None if degenerate else m.get(k) for k in names},
            **{f"{k}_std": None if degenerate else _fold_std(run, k) for k in names if k in spread},
            "paper_ap": None if extra else batch_paper_value(dataset, role, "ap", named),
            "paper_ndcg@3": None if extra else batch_paper_value(dataset, role, "ndcg@3", named),
            "vs_paper": (f"degenerate model (constant scores, file order) in "
                         f"{'fold' if len(degenerate) == 1 else 'folds'} {', '.join(map(str, degenerate))}: no numbers"
                         if degenerate
                         else f"not in the paper: its tables have no {role} row, nothing to compare" if extra
                         else "" if verdict is None else verdict.text()),
            "runs": run.path.name,
            "convention": run_convention(run),
        })
        if named in NEURAL_PAPERS:
            _neural_paper(rows[-1], run)
    return rows


def _neural_paper(row: dict[str, Any], run: Run) -> None:
    """A batch row of a config naming a neural paper: that paper's number for the run's
    learner, the paper's empty-query rule, and what the difference can mean."""
    from ltr_cli.reports.neural_papers import EMPTY_TEXT, primary, verdict

    entry = primary(run)
    row.update({"paper_ndcg@5": entry.values.get("ndcg@5") if entry else None,
                "paper_ndcg@10": entry.values.get("ndcg@10") if entry else None,
                "paper_empty": EMPTY_TEXT[entry.empty] if entry else None,
                "vs_paper": verdict(entry, run, row["convention"]) if entry else "the paper prints no number for "
                "this learner"})


def _fold_std(run: Run, metric: str) -> float | None:
    """Sample standard deviation of a test metric over a batch run's folds (None for one fold)."""
    if metric not in run.rounds.columns:
        return None
    values = run.rounds[metric].to_numpy(dtype=np.float64)
    values = values[np.isfinite(values)]
    return float(np.std(values, ddof=1)) if values.size > 1 else None


def _metric(run: Run, metric: str, key: str) -> float | None:
    return (run.summary.get("metrics", {}).get(metric) or {}).get(key)


def _fmt(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4f}"
    return str(v)


COLUMNS = ["experiment", "dataset", "learner", "label", "settings", "metric", "rounds", "seeds", "last10",
           "last10_std", "last10_min", "last10_max", "final", "paper", "difference", "vs_paper", "notes", "runs"]


def to_markdown(rows: list[dict[str, Any]], columns: list[str] | None = None, note: bool | None = None) -> str:
    """A Markdown table of ``columns`` (default :data:`COLUMNS`, with the online table's
    note unless ``note`` is False); a value a row lists in ``marked`` gets the mark of
    :mod:`ltr_cli.reports.report_marks` beside it."""
    from ltr_cli.reports.report_marks import MARK

    cols = columns or COLUMNS
    head = "| " + " | ".join(cols) + " |"
    rule = "|" + "|".join("---" for _ in cols) + "|"
    body = ["| " + " | ".join((_fmt(r[c]) + (MARK if c in r.get("marked", ()) else "")).replace("|", "\\|")
                              for c in cols) + " |" for r in rows]
    said = conventions_line(rows)
    conv = f"\n{said}\n" if said else ""
    if not (columns is None if note is None else note):
        return "\n".join([head, rule, *body]) + "\n" + conv
    text = conv + ("\n`last10`: mean of the time-averaged curve over the last ten rounds (the perceptron "
            "paper's statistic), averaged over seeds, with its spread over seeds "
            "(`last10_std`, `_min`, `_max`); `paper`: the number printed in the paper, where "
            "there is one; `notes`: weights that became NaN (the authors' numerics), SmoothDCG's "
            "step direction, and the top-k paper's figure shifts (+0.008 SmoothDCG, +0.005 RankSVM).\n")
    if "heldout_last" in cols:
        text += ("`heldout_last`: the metric of the last held-out evaluation (the final offline value), "
                 "mean over seeds, with its sample standard deviation (`heldout_last_std`).\n")
    discounted = [c for c in cols if c.startswith("discounted_cumulative") and not c.endswith("_std")]
    if discounted:
        gammas = sorted({r["gamma"] for r in rows if r.get("gamma") is not None})
        under = (f" (gamma {gammas[0]:g})" if len(gammas) == 1 else
                 ", one column per gamma (`discounted_cumulative@<gamma>`)" if len(discounted) > 1 else "")
        text += (f"`discounted_cumulative`: the sum over rounds t of gamma^(t-1) x the round's online "
                 f"metric (click runs){under}, mean over seeds, with its sample standard deviation.\n")
    return "\n".join([head, rule, *body]) + "\n" + text


def to_csv(rows: list[dict[str, Any]], columns: list[str] | None = None, note: bool | None = None) -> str:
    """A CSV table of ``columns`` (default :data:`COLUMNS`); ``note`` is :func:`to_markdown`'s
    (a CSV file carries no notes)."""
    cols = list(columns or COLUMNS)
    if any(r.get("convention") for r in rows) and "convention" not in cols:  # a CSV file carries no notes
        cols.insert(cols.index("vs_paper") if "vs_paper" in cols else len(cols), "convention")
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    writer.writeheader()
    for r in rows:
        writer.writerow({c: ("" if r[c] is None else r[c]) for c in cols})
    return buf.getvalue()


def render_report(runs: list[Run], fmt: str, select_by: str | None = None, window: int = 10,
                  baseline: str | None = None, adjustment: str = "holm") -> str:
    """``ltr report``: the online table (or, with ``select_by``, each learner's best
    settings by that metric over the last ``window`` rounds) and the batch table, as
    ``markdown`` or ``csv``; with ``baseline``, each row's paired t-test against that
    learner (:mod:`ltr_cli.reports.report_marks`), p adjusted by ``adjustment``."""
    from ltr_cli.reports.selection import select

    batch = [r for r in runs if r.summary.get("protocol") == "batch-cv"]
    online = [r for r in runs if r.summary.get("protocol") != "batch-cv"]
    if fmt == "latex":
        from ltr_cli.reports.latex import to_latex
        from ltr_cli.reports.report_marks import legend

        said = legend(baseline, adjustment) if baseline else None
        render: Any = lambda rows, columns=None, note=None: to_latex(rows, columns or COLUMNS, said)  # noqa: E731
    else:
        render = to_csv if fmt == "csv" else to_markdown
    parts = []
    if baseline:
        from ltr_cli.reports.report_marks import check_baseline

        check_baseline(runs, baseline)
    if select_by:
        parts.append(render(selection_rows(select(online, select_by, window), canonical_name(select_by), window),
                            SELECTION_COLUMNS))
    elif online and baseline:
        from ltr_cli.reports.report_marks import COLUMN, mark_online

        rows = report_rows(online)
        mark_online(rows, online, baseline, adjustment)
        parts.append(render(rows, report_columns(rows) + [COLUMN], note=True))
    elif online:
        rows = report_rows(online)
        columns = report_columns(rows)
        parts.append(render(rows) if columns == COLUMNS else render(rows, columns, note=True))
    if batch and baseline:
        from ltr_cli.reports.report_marks import COLUMN, mark_batch

        rows = batch_rows(batch)
        names = _batch_metrics(batch)
        mark_batch(rows, batch, baseline, names, {m: m for m in names}, adjustment)
        parts.append(render(rows, batch_columns(batch) + [COLUMN]))
    elif batch:
        parts.append(render(batch_rows(batch), batch_columns(batch)))
    if batch and fmt != "csv":  # one table per CSV; summary.json's no_relevant has these numbers
        from ltr_cli.reports.no_relevant_table import COLUMNS as EMPTY_COLUMNS, no_relevant_rows

        empty = no_relevant_rows(batch)
        if empty:
            parts.append(render(empty, EMPTY_COLUMNS, note=False))
    if batch and fmt != "csv":  # one table per CSV; ltr compare --logs --json has these numbers
        from ltr_cli.reports.condition_table import condition_columns, condition_rows

        conditions = condition_rows(batch)
        if conditions:
            parts.append(render(conditions, condition_columns(conditions), note=False))
            if fmt == "markdown":
                parts.append("Per condition of simulated click logs: each learner's mean test value over its logs "
                             "and test queries [95% interval counting both]; ltr compare RESULTS --logs tests the "
                             "differences.\n")
    if batch and named_papers(batch):  # every number of the neural papers named, beside its runs
        from ltr_cli.reports.neural_papers import COLUMNS as PUBLISHED_COLUMNS, published_rows

        parts.append(render(published_rows(batch), PUBLISHED_COLUMNS, note=False))
    if baseline and fmt == "markdown":
        from ltr_cli.reports.report_marks import legend

        parts.append(legend(baseline, adjustment))
    return "\n".join(parts)
