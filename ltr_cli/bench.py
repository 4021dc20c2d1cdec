"""``ltr bench``: speed and memory of this machine's run, as ratios measured side by side.

* parse: our reader vs ``sklearn.datasets.load_svmlight_file`` on the same generated
  MSLR-shaped (dense) and Yahoo-shaped (sparse) files (scikit-learn from the ``bench`` extra);
* per round: each online learner's rank + update time vs. the "floor", two float32
  matrix-vector passes (X w, X^T g) over the same rows;
* memory: peak RSS of streaming a file and of streaming one 4x larger, in fresh processes.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.data.registry import get_dataset
from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader
from ltr_cli.data.synthetic import ShapeSpec, shaped_queries, write_svmlight
from ltr_cli.learners.base import Feedback
from ltr_cli.protocols.online import reveal

LEARNERS: dict[str, dict[str, Any]] = {
    "slam-ndcg": {"type": "slam-perceptron", "measure": "ndcg", "mistake": "ndcg@10",
                  "weights": "level-averaged", "margin": "label-difference"},
    "slam-ap": {"type": "slam-perceptron", "measure": "ap", "weights": "level-averaged"},
    "alg3": {"type": "alg3", "mistake": "ndcg@10", "step": {"rule": "constant", "eta": 1.0, "loss_scaled": True}},
    "listnet": {"type": "listnet"},
    **{f"rtopkf-{s}": {"type": "rtopkf", "surrogate": s, "schedule": "authors-code"}
       for s in ("squared", "kl", "smoothdcg", "ranksvm")},
}


def _write(path: Path, dataset: str, queries: int, seed: int = 0) -> Path:
    info = get_dataset(dataset)
    write_svmlight(path, shaped_queries(info, ShapeSpec(queries, seed=seed)), qid_style="token",
                   sparse=info.sparse)
    return path


def bench_parse(tmp: Path, queries: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for label, dataset in (("dense_mslr", "mslr-web10k"), ("sparse_yahoo", "yahoo-set1")):
        info = get_dataset(dataset)
        path = _write(tmp / f"{label}.txt", dataset, queries)
        size_mb = path.stat().st_size / 1e6
        start = time.perf_counter()
        docs = sum(q.m for q in SVMLightReader(path, ReaderOptions(n_features=info.n_features)))
        ours = time.perf_counter() - start
        row = {"megabytes": round(size_mb, 2), "documents": docs, "ours_mb_per_s": round(size_mb / ours, 1)}
        try:
            from sklearn.datasets import load_svmlight_file

            start = time.perf_counter()
            load_svmlight_file(str(path), n_features=info.n_features, zero_based=False, query_id=True)
            theirs = time.perf_counter() - start
            row.update(sklearn_mb_per_s=round(size_mb / theirs, 1), speedup_vs_sklearn=round(theirs / ours, 2))
        except ImportError:
            row["sklearn"] = "not installed (pip install -e '.[bench]')"
        out[label] = row
    return out


def bench_rounds(queries: int, rounds: int) -> dict[str, Any]:
    from ltr_cli.config import parse_config
    from ltr_cli.learners import build_learner

    info = get_dataset("mslr-web10k")
    qs = list(shaped_queries(info, ShapeSpec(queries, seed=1)))
    X32 = [q.X.astype(np.float32) for q in qs]
    w = np.random.default_rng(0).normal(size=info.n_features).astype(np.float32)
    start = time.perf_counter()
    for i in range(rounds):
        X = X32[i % len(qs)]
        s = X @ w
        _ = X.T @ s
    floor = (time.perf_counter() - start) / rounds
    out: dict[str, Any] = {"floor_us_per_round": round(floor * 1e6, 2), "learners": {}}
    for name, spec in LEARNERS.items():
        lspec = parse_config({"experiment": "bench", "dataset": {"kind": "separable"},
                              "learners": {name: spec}}).learners[name]
        # a throwaway learner first: loading (or compiling) its kernels is a once-per-process
        # cost, reported apart from the per-round time
        start = time.perf_counter()
        _rounds(build_learner(lspec, info.n_features, "reverse-input", np.random.default_rng(1), rounds),
                qs, X32, min(rounds, 20))
        warmup = time.perf_counter() - start
        learner = build_learner(lspec, info.n_features, "reverse-input", np.random.default_rng(1), rounds)
        start = time.perf_counter()
        _rounds(learner, qs, X32, rounds)
        per = (time.perf_counter() - start) / rounds
        out["learners"][name] = {"us_per_round": round(per * 1e6, 1), "ratio_to_floor": round(per / floor, 1),
                                 "warmup_ms": round(warmup * 1e3, 1)}
    return out


def _rounds(learner: Any, qs: list, X32: list[np.ndarray], rounds: int) -> None:
    """rank + reveal + update, on the same float32 rows as the floor (the reader's and the
    cache's dtype), so the ratio compares work, not the bytes of a wider dtype."""
    rng = np.random.default_rng(0)
    for i in range(rounds):
        j = i % len(qs)
        X = X32[j]
        ranking = learner.rank(X, rng)
        learner.update(X, reveal(learner, ranking, qs[j].y))


_RSS = """
import resource, sys
from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader
n = sum(q.m for q in SVMLightReader(sys.argv[1], ReaderOptions(n_features=136)))
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def bench_memory(tmp: Path, queries: int) -> dict[str, Any]:
    sizes = {}
    for factor in (1, 4):
        path = _write(tmp / f"rss{factor}.txt", "mslr-web10k", queries * factor, seed=factor)
        kb = int(subprocess.run([sys.executable, "-c", _RSS, str(path)], capture_output=True, text=True,
                                check=True).stdout.strip())
        sizes[factor] = {"megabytes": round(path.stat().st_size / 1e6, 1), "peak_rss_mb": round(kb / 1024, 1)}
    growth = sizes[4]["peak_rss_mb"] / sizes[1]["peak_rss_mb"] - 1
    return {"file_1x": sizes[1], "file_4x": sizes[4], "peak_rss_growth": round(growth, 3)}


def run_bench(queries: int = 200, rounds: int = 2000) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        return {"parse": bench_parse(t, queries), "per_round": bench_rounds(min(queries, 200), rounds),
                "memory": bench_memory(t, queries)}


def format_table(result: dict[str, Any]) -> str:
    lines = ["parse (MB/s)                 ours    sklearn  speed-up"]
    for label, row in result["parse"].items():
        lines.append(f"  {label:24s} {row['ours_mb_per_s']:7.1f}  {row.get('sklearn_mb_per_s', float('nan')):7.1f}"
                     f"  {row.get('speedup_vs_sklearn', float('nan')):6.2f}x")
    pr = result["per_round"]
    lines.append(f"per round (us)  floor (2 float32 matvecs) = {pr['floor_us_per_round']}")
    for name, row in pr["learners"].items():
        lines.append(f"  {name:24s} {row['us_per_round']:9.1f}  {row['ratio_to_floor']:7.1f}x floor")
    m = result["memory"]
    lines.append(f"peak RSS streaming {m['file_1x']['megabytes']} MB: {m['file_1x']['peak_rss_mb']} MB; "
                 f"4x file ({m['file_4x']['megabytes']} MB): {m['file_4x']['peak_rss_mb']} MB; "
                 f"growth {m['peak_rss_growth']:+.1%}")
    return "\n".join(lines) + "\n"


def main_json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2)
