"""The batch k-fold protocol of the direct-optimisation paper (LETOR): for each fold, fit
every hyper-parameter setting of the grid on ``train``, keep the one with the best
``select_by`` metric on ``vali``, and evaluate it on ``test``. Metrics follow a named
convention (default ``letor3``, LETOR 3.0's Eval-Score-3.0.pl), the same code as ``ltr eval``.
"""

from __future__ import annotations

import json
import time
from typing import Any

import numpy as np
import pandas as pd

from ltr_cli.errors import LtrError, QueryTooLong
from ltr_cli.learners.batch.convergence import Convergence, FitContext
from ltr_cli.measures.registry import parse_metric
from ltr_cli.measures.conventions import Convention, Measure, bind
from ltr_cli.protocols.cv_checkpoint import FoldCheckpoint
from ltr_cli.protocols.cv_folds import Fold, named_split
from ltr_cli.data.normalize import Normalizer
from ltr_cli.protocols.cv_progress import CVHooks
from ltr_cli.protocols.no_relevant_rules import fold_rules, run_rules
from ltr_cli.core.schema import BatchLearnerConfig
from ltr_cli.measures.stacked import Table, evaluate_lists, evaluate_pairs

# what models.json keeps of a model's info besides its convergence (AdaRank's weak rankers)
MODEL_INFO = ("selected_features", "rounds", "feature_scale", "pairwise_debias")

# the per-fold test table's default columns (cv.metrics overrides them)
TEST_METRICS = ("ap", "ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "p@1", "p@3", "p@5", "p@10")


def evaluate(model: Any, queries: list, conv: Convention,
             measures: list[Measure] | None = None) -> dict[str, float | None]:
    """Mean ``measures`` (default: the convention's columns) of ``model`` on ``[(X, y), ...]``
    under a convention."""
    return evaluate_lists([(model.scores(X), y) for X, y in queries], conv, measures)


def evaluate_each(model: Any, queries: list, conv: Convention, measures: list[Measure]) -> Table:
    """Each query's ``measures`` of ``model`` on ``[(X, y), ...]`` under a convention:
    :func:`evaluate` is the average of this table."""
    return evaluate_pairs([(model.scores(X), y) for X, y in queries], conv, measures)


def _vali_score(model: Any, queries: list, conv: Convention, select: Measure) -> float:
    """The selection score on vali: the mean of ``select`` under the convention (NaN where
    it defines none)."""
    value = evaluate(model, queries, conv, [select]).get(select.name)
    return float("nan") if value is None else value


def degenerate(model: Any, queries: list) -> bool:
    """True when ``model`` gives every document of each query (of two or more documents)
    the same score, so it ranks in file order: e.g. all-zero weights, where a solver ended
    at its cap without leaving w = 0. Its test numbers then measure the file order, not
    the method."""
    for X, _ in queries:
        if X.shape[0] > 1:
            s = np.asarray(model.scores(X), dtype=np.float64)
            if not (s == s[0]).all():
                return False
    return True


def row_columns(select_by: str, tests: list[str] | None = None) -> tuple[str, ...]:
    """The value columns of a fold's table row (besides ``fold`` and ``chosen``): the vali
    score of the selection metric, then each test metric (default :data:`TEST_METRICS`),
    by their canonical names."""
    return ("vali_" + parse_metric(select_by).name,
            *(parse_metric(t).name for t in (tests if tests is not None else TEST_METRICS)))


def _fit_grid(fold: Fold, train: list, vali: list, estimator: BatchLearnerConfig, select: Measure, label: str,
              conv: Convention, hooks: CVHooks, clicks: Any = None, vali_clicks: Any = None,
              vali_ids: list[str] | None = None, seed: int = 0,
              checkpoint: FoldCheckpoint | None = None) -> list[dict[str, Any]]:
    """Every grid point fitted on ``train`` (each warm-started from the previous point's
    model; on the fold's click log ``clicks`` when given) and scored on ``vali`` (its
    labels; with ``vali_clicks``, a log of the vali queries, chosen by the click estimate
    of DCG@10 from it, kept as ``vali_clicks``). A fit that checkpoints itself between
    iterations does so in ``checkpoint``'s store for the fold and grid point."""
    tried: list[dict[str, Any]] = []
    warm = None
    for params in estimator.grid_points():
        hooks.start_fit(fold.number, params)
        store = checkpoint.fit_store(str(fold.number), params) if checkpoint is not None else None
        model = estimator.fit(train, params, FitContext(warm, hooks.fit_progress, conv.gains, clicks, vali, vali_ids,
                                                        select, conv, seed, fold.number, store, vali_clicks))
        warm = model
        score = _vali_score(model, vali, conv, select)
        record = model.info.get("convergence")
        tried.append({"params": params, "vali": score, "model": model, "convergence": record})
        said = f"fold {fold.number} {params}: vali {label} {score:.4f}"
        if vali_clicks is not None:
            from ltr_cli.learners.batch.click_data import click_score

            tried[-1]["vali_clicks"] = click_score(model, vali, vali_clicks)
            said += f", click estimate of DCG@10 {tried[-1]['vali_clicks']:.4f}"
        hooks.end_fit(said, Convergence(**record).warning(hooks.learner) if record else None)
    return tried


def _fit_fold(fold: Fold, estimator: BatchLearnerConfig, select: Measure, label: str, conv: Convention,
              tests: list[Measure], hooks: CVHooks, normalize: str, seed: int = 0,
              checkpoint: FoldCheckpoint | None = None) -> dict[str, Any]:
    """One fold: normalise, fit the grid, keep the first best on vali, evaluate it on test.
    Returns the fold's record (table row, each test query's values, grid tried, selected
    model, counts), as the fold checkpoint keeps it."""
    (train, train_ids), (vali, vali_ids) = named_split(fold.train), named_split(fold.vali)
    test, test_ids = named_split(fold.test)
    normalizer = Normalizer.fit(normalize, train)
    if normalizer.kind == "zscore":
        train, vali, test = ([(normalizer.apply(X), y) for X, y in part] for part in (train, vali, test))
    signal, clicks, on_clicks = getattr(estimator, "clicks", None), None, None
    if signal is not None:  # the fold trains on its own training queries' click log
        from ltr_cli.learners.batch.click_data import fold_clicks, vali_clicks

        clicks = fold_clicks(signal, train, train_ids, fold.number, getattr(estimator, "reads_clicks", "weights"))
        if signal.select == "clicks":
            on_clicks = vali_clicks(signal, train, vali, fold.number, clicks.weights,
                                    getattr(estimator, "reads_clicks", "weights"))
    tried = _fit_grid(fold, train, vali, estimator, select, label, conv, hooks, clicks, on_clicks, vali_ids, seed,
                      checkpoint)
    if on_clicks is None:
        best = max(tried, key=lambda r: (r["vali"], -tried.index(r)))  # first best on ties
    else:
        best = max(tried, key=lambda r: (np.nan_to_num(r["vali_clicks"], nan=-np.inf), -tried.index(r)))
    try:
        scored = [(best["model"].scores(X), y) for X, y in test]
    except QueryTooLong as exc:  # a query the device cannot score whole
        qid = next((q for q, (X, _) in zip(test_ids, test) if X.shape[0] == exc.size), "?")
        raise LtrError(f"fold {fold.number}: test query {qid}: {exc}") from None
    each = evaluate_pairs(scored, conv, tests)
    metrics = each.average(conv)  # the fold's test row: the means of the per-query values below
    values = each.contributions(conv)
    odd = sum(conv.outside_gain_table(y) for part in (vali, test) for _, y in part)
    record: dict[str, Any] = {
        "odd_labels": odd, "degenerate": degenerate(best["model"], train),
        "test_queries": len(test), "test_documents": int(sum(y.shape[0] for _, y in test)),
        # the test means under each rule for queries without a relevant document
        "no_relevant": fold_rules(scored, conv, tests),
        "row": {"fold": fold.number, "chosen": json.dumps(best["params"]), "vali_" + select.name: best["vali"],
                **{m.name: metrics.get(m.name) for m in tests}},
        # what each test query adds to the row's means (None: left out of them)
        "queries": {"qid": test_ids, **{m.name: [None if np.isnan(v) else float(v) for v in values[:, j]]
                                        for j, m in enumerate(tests)}},
        "grid": {"fold": fold.number, "tried": [{"params": r["params"], "vali": r["vali"],
                                                 **({"vali_clicks": r["vali_clicks"]} if "vali_clicks" in r else {}),
                                                 "convergence": r["convergence"]} for r in tried]},
        "model": {**best["model"].to_dict(), "params": best["params"],
                  **({"normalize": normalizer.to_dict()} if normalizer.kind != "none" else {}),
                  **{k: v for k, v in best["model"].info.items() if k in MODEL_INFO},
                  **({"clicks": log_record(clicks)} if clicks is not None else {}),
                  "fits": [{"params": r["params"], "convergence": r["convergence"]} for r in tried]},
    }
    return record


def log_record(clicks: Any) -> dict[str, Any]:
    from ltr_cli.learners.batch.click_data import log_record as record

    return record(clicks)


def run_cv(
    folds: list[Fold], estimator: BatchLearnerConfig, select_by: str, conv: Convention,
    hooks: CVHooks | None = None, tests: list[Measure] | None = None,
    checkpoint: FoldCheckpoint | None = None, normalize: str = "none", select: Measure | None = None,
    seed: int = 0,
) -> tuple[pd.DataFrame, dict[str, Any], dict[str, Any], pd.DataFrame]:
    """One estimator through every fold: each grid point is fitted on train and scored
    by the metric ``select_by`` on vali under ``conv`` (``select``: that metric bound with
    its settings, e.g. ERU's; default: bound under ``conv``); the first best is evaluated on test by ``tests`` (default:
    :data:`TEST_METRICS`) under ``conv``. Returns the per-fold table, the summary, the
    selected model of each fold (``models.json``, with every fit's convergence record) and
    the per-query test table (:func:`query_table`).
    ``hooks`` reports progress, one line per fit and a warning per fit that stopped at its
    iteration cap; ``checkpoint``
    holds folds finished earlier (they are not fitted again) and receives each new one.
    ``normalize``: ``zscore`` is fitted on each fold's train split and applied to all three
    (``query-level`` rows arrive normalised); each fold's model records it for ``ltr score``.
    ``seed``: the experiment's, handed to every fit (the neural learners' seed)."""
    hooks = hooks or CVHooks()
    select = select or Measure(select_by, conv=conv)
    tests = tests or bind(list(TEST_METRICS), conv)
    done = checkpoint.folds if checkpoint is not None else {}
    rows, grids, queries = [], [], []
    rules: list[dict[str, Any] | None] = []
    odd_labels = test_queries = test_documents = 0
    degenerate_folds: list[int | None] = []
    models: dict[str, Any] = {}
    start = time.perf_counter()
    for fold in folds:
        fold_key = str(fold.number)
        if fold_key not in done:
            record = _fit_fold(fold, estimator, select, select_by, conv, tests, hooks, normalize, seed, checkpoint)
            if checkpoint is not None:
                checkpoint.save(fold_key, record)
        else:
            record = done[fold_key]
            hooks.skip_fold(fold.number, len(estimator.grid_points()))
        odd_labels += int(record.get("odd_labels", 0))
        if record.get("degenerate", False):
            degenerate_folds.append(fold.number)
            hooks.warn(f"fold {fold.number}: the selected model gives every training document of a query the "
                       "same score (it ranks in file order); its test numbers are not the method's - for a "
                       "structural SVM on raw features, keep feature_scale: auto or set normalize")
        test_queries += int(record.get("test_queries", 0))
        test_documents += int(record.get("test_documents", 0))
        rows.append(record["row"])
        rules.append(record.get("no_relevant"))
        grids.append(record["grid"])
        queries.append((fold.number, record["queries"]))
        models[fold_key] = record["model"]
    hooks.close()
    if odd_labels:
        hooks.warn(conv.outside_gain_table_warning(odd_labels, "vali and test documents")
                   + f" (cv.convention: {conv.name}; another convention may suit these labels)")
    table = pd.DataFrame(rows)
    summary = {
        "protocol": "batch-cv",
        "folds": [f.number for f in folds],
        "selected_by": (f"vali {parse_metric(select_by).name}" if getattr(getattr(estimator, "clicks", None), "select",
                                                                      "labels") != "clicks"
                        else "vali clicks: the click estimate of DCG@10 from a simulated log of the vali queries"),
        "convention": conv.name,
        "metrics": {m.name: _mean([r.get(m.name) for r in rows]) for m in tests},
        **({"no_relevant": found} if (found := run_rules(rules, conv.no_relevant)) is not None else {}),
        "per_fold": rows,
        "grid": grids,
        "labels_outside_gain_table": odd_labels,
        # every query is a test query of exactly one fold: the dataset's size
        "test_queries": test_queries, "test_documents": test_documents,
        "fits_at_cap": sum(1 for g in grids for r in g["tried"] if (r.get("convergence") or {}).get("at_cap")),
        # folds whose selected model scores every training document of a query alike
        "degenerate_folds": degenerate_folds,
        "wall_seconds": round(time.perf_counter() - start, 3),
    }
    return table, summary, models, query_table(queries, [m.name for m in tests])


def query_table(folds: list[tuple[int | None, dict[str, Any]]], metrics: list[str]) -> pd.DataFrame:
    """``test_queries.parquet``: one row per test query of each fold (``fold``, ``qid``) and
    one column per test metric, the value the query adds to its fold's mean in the per-fold
    table (NaN: left out of it). The per-fold table's values are these columns' means."""
    numbers: list[int | None] = []
    qids: list[str] = []
    columns: dict[str, list[float | None]] = {m: [] for m in metrics}
    for number, q in folds:
        numbers += [number] * len(q["qid"])
        qids += q["qid"]
        for m in metrics:
            columns[m] += q[m]
    return pd.DataFrame({"fold": pd.array(numbers, dtype="Int64"), "qid": pd.Series(qids, dtype=object),
                         **{m: np.array([np.nan if v is None else v for v in values], dtype=np.float64)
                            for m, values in columns.items()}})


def _mean(values: list[float | None]) -> float | None:
    """The mean over folds of a test metric (folds where it is undefined left out; None if all are)."""
    kept = [v for v in values if v is not None]
    return float(np.mean(kept)) if kept else None
