"""The batch k-fold protocol of the direct-optimisation paper (LETOR): for each fold, fit
every hyper-parameter setting of the grid on ``train``, keep the one with the best
``select_by`` metric on ``vali``, and evaluate it on ``test``. Metrics follow a named
convention (default ``letor3``, LETOR 3.0's Eval-Score-3.0.pl), the same code as ``ltr eval``.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

import numpy as np
import pandas as pd

from ltr_cli.config import ExperimentSpec
from ltr_cli.data.identity import check_unchanged, file_identity
from ltr_cli.data.registry import get_dataset, resolve_files
from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader
from ltr_cli.evaluation import CONVENTIONS, average_metrics, evaluate_query

TEST_METRICS = ("ap", "ndcg@1", "ndcg@3", "ndcg@5", "ndcg@10", "p@1", "p@3", "p@5", "p@10")


def _fold_file(spec: ExperimentSpec, split: str, fold: int | None) -> Any:
    info = get_dataset(spec.dataset.name)  # type: ignore[union-attr]
    (path,) = resolve_files(info, spec.dataset.root, split, [fold] if info.folds else None)  # type: ignore[union-attr]
    return path


def cv_folds(spec: ExperimentSpec) -> list[int | None]:
    info = get_dataset(spec.dataset.name)  # type: ignore[union-attr]
    return spec.dataset.folds or list(info.folds) or [None]  # type: ignore[union-attr]


def data_identity(spec: ExperimentSpec) -> dict[str, Any]:
    """Identity (path, size, content digest, stat key) of every file the CV reads, in the
    order it reads them (:mod:`ltr_cli.data.identity`)."""
    cv = spec.cv
    assert cv is not None
    paths = [_fold_file(spec, cv.splits[split], fold)
             for fold in cv_folds(spec) for split in ("train", "vali", "test")]
    return {"files": [file_identity(p) for p in dict.fromkeys(paths)]}


def load_queries(spec: ExperimentSpec, split: str, fold: int | None,
                 identity: dict[str, Any] | None = None) -> list[tuple[np.ndarray, np.ndarray]]:
    """All queries of one split of one fold, in memory (LETOR sets are small). With the
    run's recorded ``identity``, the file must still be the one recorded (unchanged
    before and after it is read), else DataChanged."""
    ds = spec.dataset
    info = get_dataset(ds.name)  # type: ignore[union-attr]
    path = _fold_file(spec, split, fold)
    opts = ReaderOptions(n_features=info.n_features, index_base=info.index_base,
                         qid_source=info.qid_source,  # type: ignore[arg-type]
                         null_value=ds.null_value, split_qids=ds.split_qids,  # type: ignore[union-attr]
                         **ds.limits())  # type: ignore[union-attr]
    dtype = np.dtype(ds.storage).type  # type: ignore[union-attr]
    recorded = None
    if identity is not None:
        resolved = str(path.resolve())
        recorded = next((f["stat"] for f in identity["files"] if f["path"] == resolved), None)
        if recorded is not None:
            check_unchanged(path, recorded)
    queries = [(q.X, q.y) for q in SVMLightReader(path, opts).dense_queries(dtype)]
    if recorded is not None:
        check_unchanged(path, recorded)
    return queries


def evaluate(model: Any, queries: list, convention: str) -> dict[str, float | None]:
    conv = CONVENTIONS[convention]
    per_query = [evaluate_query(model.scores(X), y, conv) for X, y in queries]
    return average_metrics(per_query, conv)


def _select_key(select_by: str) -> str:
    return "ap" if select_by == "map" else select_by


def run_cv(
    spec: ExperimentSpec, name: str, lspec: Any, quiet: bool, identity: dict[str, Any] | None = None,
) -> tuple[pd.DataFrame, dict[str, Any], dict[str, Any]]:
    """One learner through every fold; returns the per-fold table, the summary and the
    selected model of each fold (``models.json``). ``identity``: the data the run records
    (:func:`data_identity`); every file read must still match it."""
    cv = spec.cv
    assert cv is not None
    folds = cv_folds(spec)
    key = _select_key(cv.select_by)
    rows = []
    grids = []
    models: dict[str, Any] = {}
    start = time.perf_counter()
    for fold in folds:
        train = load_queries(spec, cv.splits["train"], fold, identity)
        vali = load_queries(spec, cv.splits["vali"], fold, identity)
        test = load_queries(spec, cv.splits["test"], fold, identity)
        tried = []
        for params in lspec.grid_points():
            model = lspec.fit(train, params)
            score = evaluate(model, vali, cv.convention)[key]
            tried.append({"params": params, "vali": score, "model": model})
            if not quiet:
                print(f"[{spec.experiment}] {name} fold {fold} {params}: vali {cv.select_by} {score:.4f}",
                      file=sys.stderr)
        best = max(tried, key=lambda r: (r["vali"], -tried.index(r)))  # first best on ties
        metrics = evaluate(best["model"], test, cv.convention)
        rows.append({"fold": fold, "chosen": json.dumps(best["params"]), "vali_" + key: best["vali"],
                     **{m: metrics.get(m) for m in TEST_METRICS}})
        grids.append({"fold": fold, "tried": [{"params": r["params"], "vali": r["vali"]} for r in tried]})
        models[str(fold)] = {**best["model"].to_dict(), "params": best["params"]}
    table = pd.DataFrame(rows)
    summary = {
        "protocol": "batch-cv",
        "folds": [int(f) if f is not None else None for f in folds],
        "selected_by": f"vali {cv.select_by}",
        "convention": cv.convention,
        "metrics": {m: float(np.mean([r[m] for r in rows if r[m] is not None])) for m in TEST_METRICS},
        "per_fold": rows,
        "grid": grids,
        "wall_seconds": round(time.perf_counter() - start, 3),
    }
    return table, summary, models
