"""``ltr bench --neural``: what training a neural scorer costs in ltr, on generated MSLR-shaped
data, against the machine's floor and allRank's own training loop.

The data: ``queries`` generated MSLR-shaped queries (136 features, Poisson lengths of mean
120, nonlinear relevance) written as ``Fold1/train.txt`` (and a small ``vali.txt``, which
allRank's loader asks for). The models (:data:`~ltr_cli.bench.neural_child.MODELS`): an MLP
136 -> 128 -> 1 (ReLU) and the NeuralNDCG paper's Transformer (an input layer of 96, 2
encoder blocks of 1 head, d_ff 384, dropout 0.1), both on ListNet, Adam (lr 0.001), batches
of 64 queries, slates of 240.

* ltr's documents per second: a child (:mod:`ltr_cli.bench.neural_child`, JAX's persistent
  compilation cache off) trains ``epochs`` epochs; an epoch is its training batches
  (forward, loss, backward, update); the figure is the epoch's real (unpadded) documents
  over the fastest epoch after the first.
* (a) the FLOP floor of the MLP: an epoch's documents times the MLP's FLOPs per document
  (forward ``2(dh + h)``, backward ``2dh + 4h``: the weights' gradients and the hidden
  layer's, none for the input) over the machine's float32 matmul rate, measured here
  (numpy's BLAS, best of 5 products of two 2048 x 2048 matrices); the ratio is ltr's epoch
  over the floor (target 2x).
* (b) allRank: with ``--reference DIR`` (an allRank checkout) and a Python with torch
  (``--reference-python`` or ``LTR_ALLRANK_PYTHON``), :mod:`ltr_cli.bench.neural_reference`
  runs allRank's own loop (its loader, model, optimiser, loss and ``loss_batch``) on the same
  file as a separate process outside the repository; skipped with a note otherwise. Target:
  ltr at least 2x allRank's documents per second.
* (c) the first epoch's compile seconds (every padded length it meets; target < 10 s).
* (d) peak resident memory of a child running one epoch on a fold of ``documents``
  documents (default 2,270,000, WEB30K's training fold) made in memory, per model (target
  < 4 GB).
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.core.children import PYTHON
from ltr_cli.errors import LtrError

ENV_REF = "LTR_ALLRANK"
ENV_PYTHON = "LTR_ALLRANK_PYTHON"
MARKERS = ("allrank/models/losses/listNet.py", "allrank/training/train_utils.py", "allrank/config.py")
WEB30K_TRAIN_DOCS = 2_270_000
DOCS_PER_QUERY = 120.0
HIDDEN, FEATURES = 128, 136
TARGETS = {"vs_allrank": 2.0, "vs_floor": 2.0, "compile_seconds": 10.0, "rss_gb": 4.0}
NOTE = (f"no allRank given, its column is skipped; point --reference DIR (or {ENV_REF}) at an allRank checkout and "
        f"--reference-python (or {ENV_PYTHON}) at a Python with torch, scikit-learn and attrs to time it")
#: ltr's model -> allRank's config JSON ``model`` block of the same architecture
ALLRANK_MODELS: dict[str, dict[str, Any]] = {
    "mlp": {"fc_model": {"sizes": [HIDDEN], "input_norm": False, "activation": "ReLU", "dropout": 0.0},
            "transformer": None, "post_model": {"output_activation": None, "d_output": 1}},
    "transformer": {"fc_model": {"sizes": [96], "input_norm": False, "activation": None, "dropout": 0.0},
                    "transformer": {"N": 2, "d_ff": 384, "h": 1, "positional_encoding": None, "dropout": 0.1},
                    "post_model": {"output_activation": None, "d_output": 1}},
}


def find_reference(option: Path | None, python: str | None) -> tuple[Path, str] | None:
    """The allRank checkout and the Python to run it, from the options or the environment;
    None when no checkout is given; one line when the folder is not a checkout."""
    from ltr_cli.bench.checkouts import find_checkout

    path = find_checkout(option, ENV_REF, MARKERS, "not an allRank checkout; clone allegro/allRank and give its folder")
    if path is None:
        return None
    return path, python or os.environ.get(ENV_PYTHON) or PYTHON[0]


def mlp_flops(d: int = FEATURES, h: int = HIDDEN) -> int:
    """FLOPs per document of one training step of the MLP d -> h -> 1 (see the module docstring)."""
    return 2 * (d * h + h) + 2 * d * h + 4 * h


def matmul_rate(n: int = 2048, repeats: int = 5) -> float:
    """The machine's float32 matmul rate, FLOP/s: the best of ``repeats`` products of two
    ``n`` x ``n`` matrices."""
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n), dtype=np.float32), rng.random((n, n), dtype=np.float32)
    a @ b
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2.0 * n**3 / best


def write_data(root: Path, queries: int, seed: int = 0) -> Path:
    """The bench's fold folder (train.txt, and a vali.txt of a tenth as many queries)."""
    from ltr_cli.data.registry import get_dataset
    from ltr_cli.data.synthetic import ShapeSpec, shaped_queries, write_svmlight

    info = get_dataset("mslr-web10k")
    fold = root / "Fold1"
    fold.mkdir(parents=True, exist_ok=True)
    write_svmlight(fold / "train.txt", shaped_queries(info, ShapeSpec(queries, DOCS_PER_QUERY, seed=seed,
                                                                       relevance="nonlinear")))
    write_svmlight(fold / "vali.txt", shaped_queries(info, ShapeSpec(max(2, queries // 10), DOCS_PER_QUERY,
                                                                      seed=seed + 1, relevance="nonlinear")))
    return fold


def _lines(argv: list[str], what: str, env: dict[str, str] | None = None, cwd: str | None = None) -> list[dict[str, Any]]:
    """The JSON objects a child prints, one a line; one line of error when it fails."""
    done = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd)
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.strip()]
        raise LtrError(f"bench --neural: {what} failed: {said[-1][:300] if said else f'exit status {done.returncode}'}")
    out = []
    for line in done.stdout.splitlines():
        try:
            got = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(got, dict):
            out.append(got)
    if not out or not all(isinstance(o.get("epoch_seconds"), list) and o["epoch_seconds"] for o in out):
        raise LtrError(f"bench --neural: {what} printed no result line with epoch_seconds")
    return out


def child_argv(models: list[str], *, queries: int = 0, documents: int = 0, epochs: int = 3, seed: int = 0) -> list[str]:
    argv = [*PYTHON, "-m", "ltr_cli.bench.neural_child", "--epochs", str(epochs), "--seed", str(seed),
            "--docs-per-query", str(DOCS_PER_QUERY)]
    argv += ["--documents", str(documents)] if documents else ["--queries", str(queries)]
    for m in models:
        argv += ["--model", m]
    return argv


def reference_argv(python: str, ref: Path, config: Path, fold: Path, epochs: int, seed: int = 0) -> list[str]:
    """allRank's loop as a child outside the repository (a script path: no ltr import)."""
    script = Path(__file__).with_name("neural_reference.py")
    return [python, "-P", str(script), "--ref", str(ref), "--config", str(config), "--data", str(fold),
            "--epochs", str(epochs), "--seed", str(seed)]


def allrank_config(model: str) -> dict[str, Any]:
    """allRank's config JSON for the bench's ``model`` (the settings of neural_child.MODELS)."""
    return {"model": ALLRANK_MODELS[model],
            "data": {"path": "unused", "validation_ds_role": "vali", "num_workers": 0, "batch_size": 64,
                     "slate_length": 240},
            "optimizer": {"name": "Adam", "args": {"lr": 0.001}}, "lr_scheduler": {"name": None, "args": {}},
            "training": {"epochs": 1, "early_stopping_patience": 0, "gradient_clipping_norm": None},
            "val_metric": "ndcg_10", "metrics": ["ndcg_10"], "loss": {"name": "listNet", "args": {}}}


def docs_per_second(run: dict[str, Any]) -> float:
    """Real documents of an epoch over the fastest epoch after the first (the first alone
    when there is one)."""
    seconds = run["epoch_seconds"][1:] or run["epoch_seconds"]
    return float(run["documents"]) / max(min(seconds), 1e-9)


def bench_neural(tmp: Path, reference: tuple[Path, str] | None, queries: int = 1000, documents: int = WEB30K_TRAIN_DOCS,
                 epochs: int = 3, models: tuple[str, ...] = ("mlp", "transformer"), seed: int = 0,
                 jax_cache: str = "off") -> dict[str, Any]:
    """Every figure of ``ltr bench --neural`` (see the module docstring; ``jax_cache``: the
    children's ``LTR_JAX_CACHE``, off for a cold compile)."""
    fold = write_data(tmp / "data", queries, seed)
    env = {**os.environ, "LTR_JAX_CACHE": jax_cache}
    rate = matmul_rate()
    result: dict[str, Any] = {"queries": queries, "documents_rss": documents, "epochs": epochs,
                              "matmul_gflops": round(rate / 1e9, 2), "mlp_flops_per_doc": mlp_flops(),
                              "reference": None if reference is None else str(reference[0]),
                              "reference_python": None if reference is None else reference[1],
                              "targets": TARGETS, "models": {}}
    runs = {r["model"]: r for r in _lines(child_argv(list(models), queries=queries, epochs=epochs, seed=seed),
                                          "ltr's training child", env, cwd=str(tmp))}
    for model in models:
        run = runs[model]
        ours = docs_per_second(run)
        row: dict[str, Any] = {"documents": run["documents"], "ltr_docs_per_s": round(ours, 1),
                               "epoch_seconds": [round(s, 4) for s in run["epoch_seconds"]],
                               "compile_seconds": round(run["compile_seconds"], 3)}
        if model == "mlp":
            floor = run["documents"] * mlp_flops() / rate
            row["floor_seconds"] = round(floor, 4)
            row["vs_floor"] = round(run["documents"] / ours / floor, 2)
        if reference is not None:
            config = tmp / f"allrank-{model}.json"
            config.write_text(json.dumps(allrank_config(model)))
            (theirs,) = _lines(reference_argv(reference[1], reference[0], config, fold, 2, seed), "allRank's loop",
                               cwd=str(tmp))
            row["allrank_docs_per_s"] = round(docs_per_second(theirs), 1)
            row["allrank_documents"] = theirs["documents"]
            row["vs_allrank"] = round(ours / docs_per_second(theirs), 2)
        (big,) = _lines(child_argv([model], documents=documents, epochs=1, seed=seed), f"ltr's {model} memory child",
                        env, cwd=str(tmp))
        row["rss_documents"] = big["documents"]
        row["rss_gb"] = round(big["max_rss"] / 1e9, 3)
        row["rss_epoch_seconds"] = round(big["epoch_seconds"][0], 2)
        result["models"][model] = row
    return result


def run_neural_bench(reference: tuple[Path, str] | None, queries: int = 1000, documents: int = WEB30K_TRAIN_DOCS,
                     epochs: int = 3, models: tuple[str, ...] = ("mlp", "transformer")) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ltr-bench-neural-") as tmp:
        return bench_neural(Path(tmp), reference, queries, documents, epochs, models)


def _verdict(ok: bool) -> str:
    return "meets" if ok else "MISSES"


def format_neural_table(r: dict[str, Any]) -> str:
    """The per-model table and the targets, each marked meets or MISSES."""
    t = r["targets"]
    lines = [f"neural training (generated MSLR-shaped data, {r['queries']:,} training queries, ListNet, Adam, batches "
             f"of 64, slates of 240; docs/s: real documents of an epoch over its fastest epoch after the first; "
             f"float32 matmul rate {r['matmul_gflops']:g} GFLOP/s)"]
    if r["reference"] is None:
        lines.append(f"  {NOTE}")
    else:
        lines.append(f"  allRank: {r['reference']} (python {r['reference_python']})")
    lines.append("  model         ltr docs/s   allRank docs/s   ltr/allRank   epoch/floor   compile s   peak RSS GB "
                 "(documents)")
    for name, row in r["models"].items():
        ratio = row.get("vs_allrank")
        floor = row.get("vs_floor")
        lines.append(f"  {name:12s} {row['ltr_docs_per_s']:11,.0f}   "
                     f"{(format(row['allrank_docs_per_s'], '14,.0f') if 'allrank_docs_per_s' in row else 'skipped'.rjust(14))}   "
                     f"{(format(ratio, '10.2f') + 'x') if ratio is not None else '-'.rjust(11)}   "
                     f"{(format(floor, '10.2f') + 'x') if floor is not None else '-'.rjust(11)}   "
                     f"{row['compile_seconds']:9.2f}   {row['rss_gb']:11.2f} ({row['rss_documents']:,})")
    lines.append("  targets:")
    for name, row in r["models"].items():
        checks = []
        if "vs_allrank" in row:
            checks.append(f">= {t['vs_allrank']:g}x allRank's docs/s: {_verdict(row['vs_allrank'] >= t['vs_allrank'])}")
        if "vs_floor" in row:
            checks.append(f"epoch within {t['vs_floor']:g}x its FLOP floor: {_verdict(row['vs_floor'] <= t['vs_floor'])}")
        checks.append(f"first-epoch compile < {t['compile_seconds']:g} s: "
                      f"{_verdict(row['compile_seconds'] < t['compile_seconds'])}")
        checks.append(f"peak RSS < {t['rss_gb']:g} GB: {_verdict(row['rss_gb'] < t['rss_gb'])}")
        lines.append(f"    {name}: " + "; ".join(checks))
    return "\n".join(lines) + "\n"
