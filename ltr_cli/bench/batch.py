"""``ltr bench --batch``: the batch solvers on generated MSLR- and LETOR-shaped data, as
ratios measured side by side in one run.

* RankSVM: our Newton fit (stacking included) against scikit-learn's ``LinearSVC`` on the
  explicit pair differences (building the pairs included), at the same C, with both
  objectives printed (``J`` of :mod:`ltr_cli.learners.batch.ranksvm`; each pair enters the
  LinearSVC problem twice, as +d and -d, so its C is ``C / (2 Q)``). scikit-learn is a
  bench-only extra: without it the row says so.
* SVMmap and PermuRank: one fit each at C = 1 (default tolerances), time and convergence.
* ``ltr eval`` against pytrec_eval, when it is installed (:mod:`ltr_cli.bench.eval`).

Compilation is done before timing (a warm-up fit on a tiny problem), so the figures are
what a fit costs once the kernels are cached on disk.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from ltr_cli.learners.batch.common import Queries
from ltr_cli.data.registry import get_dataset
from ltr_cli.data.synthetic import ShapeSpec, shaped_queries

SHAPES = {"MSLR-shaped": "mslr-web10k", "LETOR-shaped (TD2003)": "letor3-td2003"}


def shaped(name: str, queries: int, seed: int = 0, docs: float | None = None) -> Queries:
    """Generated training queries with a registry dataset's width, depth and labels."""
    info = get_dataset(name)
    return [(np.asarray(q.X, dtype=np.float64), np.asarray(q.y, dtype=np.float64))
            for q in shaped_queries(info, ShapeSpec(queries, docs, seed=seed))]


def _timed(fn: Any, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return time.perf_counter() - start, out


def _linear_svc(queries: Queries, C: float) -> np.ndarray:
    """scikit-learn's pairwise pipeline: every pair difference, both signs, LinearSVC."""
    from sklearn.svm import LinearSVC

    diffs = []
    for X, y in queries:
        hi, lo = np.nonzero(y[:, None] > y[None, :])
        diffs.append(X[hi] - X[lo])
    D = np.vstack(diffs)
    n_queries = sum(1 for _, y in queries if np.unique(y).shape[0] > 1)
    svc = LinearSVC(C=C / (2 * n_queries), loss="squared_hinge", fit_intercept=False, max_iter=100_000)
    svc.fit(np.vstack((D, -D)), np.concatenate((np.ones(D.shape[0]), -np.ones(D.shape[0]))))
    return svc.coef_.ravel()


def bench_ranksvm(queries: Queries, C: float = 1.0) -> dict[str, Any]:
    from ltr_cli.learners.batch.ranksvm import PairwiseProblem, fit_ranksvm

    fit_ranksvm(queries[:2], C)  # compile / load the kernels outside the timing
    ours_s, model = _timed(fit_ranksvm, queries, C)
    problem = PairwiseProblem.from_queries(queries, C)
    row: dict[str, Any] = {"pairs": int(sum(np.count_nonzero(y[:, None] > y[None, :]) for _, y in queries)),
                           "ours_s": round(ours_s, 3), "ours_objective": problem.at(model.w).J,
                           "ours_iterations": model.info["convergence"]["iterations"]}
    try:
        theirs_s, w = _timed(_linear_svc, queries, C)
    except ImportError:
        row["sklearn"] = "not installed (pip install -e '.[bench]')"
        return row
    row.update(sklearn_s=round(theirs_s, 3), sklearn_objective=problem.at(w).J,
               speedup_vs_sklearn=round(theirs_s / ours_s, 1))
    row["objective_rel_diff"] = (row["ours_objective"] - row["sklearn_objective"]) / abs(row["sklearn_objective"])
    return row


def bench_fit(learner: str, queries: Queries, C: float = 1.0) -> dict[str, Any]:
    from ltr_cli.learners.registry import REGISTRY
    from ltr_cli.core.schema import BatchLearnerConfig

    spec = REGISTRY[learner].model_validate({"type": learner})
    assert isinstance(spec, BatchLearnerConfig)
    spec.fit(queries[:2], {"C": C})  # warm-up
    seconds, model = _timed(spec.fit, queries, {"C": C})
    record = model.info.get("convergence", {})
    return {"seconds": round(seconds, 3), "iterations": record.get("iterations"),
            "converged": record.get("converged")}


def run_batch_bench(queries: int = 40, letor_queries: int = 10, eval_queries: int = 5000,
                    click_sessions: list[int] | None = None, click_queries: int = 600) -> dict[str, Any]:
    """Every batch figure, on ``queries`` MSLR-shaped and ``letor_queries`` TD2003-shaped
    training queries, ``eval_queries`` queries for the evaluation comparison, and click
    logs of each of ``click_sessions`` sessions on ``click_queries`` MSLR-shaped queries."""
    from ltr_cli.bench.clicks_batch import bench_click_ranksvm
    from ltr_cli.bench.eval import bench_eval

    out: dict[str, Any] = {"ranksvm": {}, "fits": {}}
    for label, name in SHAPES.items():
        qs = shaped(name, queries if name.startswith("mslr") else letor_queries)
        out["ranksvm"][label] = {"queries": len(qs), "documents": sum(y.shape[0] for _, y in qs),
                                 **bench_ranksvm(qs)}
        out["fits"][label] = {learner: bench_fit(learner, qs) for learner in ("svmmap", "permurank")}
    out["eval"] = bench_eval(eval_queries)
    if click_sessions:
        qs = shaped("mslr-web10k", click_queries)
        out["clicks"] = {"queries": len(qs), "rows": [bench_click_ranksvm(qs, n) for n in click_sessions]}
    return out


def format_batch_table(result: dict[str, Any]) -> str:
    lines = ["RankSVM (C = 1)             pairs   ours (s)  sklearn (s)  speed-up   objective ours / sklearn"]
    for label, row in result["ranksvm"].items():
        if "sklearn_s" in row:
            lines.append(f"  {label:24s} {row['pairs']:8d}  {row['ours_s']:8.3f}  {row['sklearn_s']:10.3f}  "
                         f"{row['speedup_vs_sklearn']:7.1f}x   {row['ours_objective']:.10g} / "
                         f"{row['sklearn_objective']:.10g} (rel. diff {row['objective_rel_diff']:+.1e})")
        else:
            lines.append(f"  {label:24s} {row['pairs']:8d}  {row['ours_s']:8.3f}  {row['sklearn']}")
    lines.append("one fit at C = 1 (default tolerances)   seconds  iterations  converged")
    for label, fits in result["fits"].items():
        for learner, row in fits.items():
            lines.append(f"  {label:24s} {learner:10s} {row['seconds']:8.3f}  {row['iterations']!s:>10}  "
                         f"{row['converged']}")
    ev = result["eval"]
    head = f"ltr eval, {ev['queries']} queries / {ev['documents']} documents (whole process)"
    if "pytrec_eval_s" in ev:
        lines.append(f"{head}: ours {ev['ours_s']:.2f} s, pytrec_eval {ev['pytrec_eval_s']:.2f} s, "
                     f"speed-up {ev['speedup_vs_pytrec_eval']:.1f}x")
    else:
        lines.append(f"{head}: ours {ev['ours_s']:.2f} s; pytrec_eval {ev['pytrec_eval']}")
    if "clicks" in result:
        from ltr_cli.bench.clicks_batch import format_click_rows

        lines += format_click_rows(result["clicks"]["rows"], result["clicks"]["queries"])
    return "\n".join(lines) + "\n"
