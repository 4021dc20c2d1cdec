"""``ltr eval`` against pytrec_eval, whole process, on one generated MSLR-shaped run file.

Both evaluate NDCG@1..10, P@1..10 and MAP of the same scores. ``ltr eval`` is the CLI (MSLR
convention); the pytrec_eval side is the short script a researcher would write: read the
labelled file's label and qid, and the score file, into its dictionaries, then evaluate
(``map``, ``ndcg_cut``, ``P``). Each side runs as its own process, timed from start to exit.
"""

from __future__ import annotations

import importlib.util
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.core.children import PYTHON

PYTREC_SCRIPT = r"""
import sys
import pytrec_eval
qrel, run = {}, {}
with open(sys.argv[1]) as data, open(sys.argv[2]) as scores:
    for i, (line, score) in enumerate(zip(data, scores)):
        label, qid = line.split(None, 2)[:2]
        doc = f"d{i}"
        qrel.setdefault(qid, {})[doc] = int(label)
        run.setdefault(qid, {})[doc] = float(score)
cutoffs = ",".join(str(k) for k in range(1, 11))
evaluator = pytrec_eval.RelevanceEvaluator(qrel, {"map", "ndcg_cut." + cutoffs, "P." + cutoffs})
per_query = evaluator.evaluate(run)
keys = next(iter(per_query.values())).keys()
print({k: sum(q[k] for q in per_query.values()) / len(per_query) for k in keys}["map"])
"""


def write_run_files(folder: Path, queries: int, seed: int = 0) -> tuple[Path, Path, int]:
    """A labelled file (MSLR-like label distribution, ~116 documents per query, three
    features per line) and a score file; returns their paths and the document count."""
    rng = np.random.default_rng(seed)
    data, scores = folder / "data.txt", folder / "scores.txt"
    documents = 0
    with open(data, "w") as f, open(scores, "w") as g:
        for q in range(queries):
            m = max(1, int(rng.poisson(116)))
            y = rng.choice(5, size=m, p=[0.5, 0.3, 0.13, 0.05, 0.02])
            s = y * 0.3 + rng.normal(size=m)
            X = rng.random((m, 3))
            f.write("".join(f"{y[i]} qid:{q + 1} 1:{X[i, 0]:.4f} 2:{X[i, 1]:.4f} 3:{X[i, 2]:.4f}\n"
                            for i in range(m)))
            g.write("".join(f"{v:.6f}\n" for v in s))
            documents += m
    return data, scores, documents


def _process_seconds(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def bench_eval(queries: int = 5000) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ltr-bench-eval-") as tmp:
        data, scores, documents = write_run_files(Path(tmp), queries)
        ltr = [*PYTHON, "-m", "ltr_cli", "eval", str(data), str(scores), "--convention", "mslr"]
        _process_seconds(ltr)  # compile and cache the kernels first
        row: dict[str, Any] = {"queries": queries, "documents": documents, "ours_s": _process_seconds(ltr)}
        if importlib.util.find_spec("pytrec_eval") is None:  # it runs in its own process below
            row["pytrec_eval"] = "not installed (pip install pytrec-eval-terrier)"
            return row
        script = Path(tmp) / "pytrec.py"
        script.write_text(PYTREC_SCRIPT)
        row["pytrec_eval_s"] = _process_seconds([*PYTHON, str(script), str(data), str(scores)])
        row["speedup_vs_pytrec_eval"] = row["pytrec_eval_s"] / row["ours_s"]
        return row
