"""One measured training run of ltr's neural loop, for ``ltr bench --neural``:
``python -P -m ltr_cli.bench.neural_child --model mlp ...`` prints one JSON line per model.

* ``--queries Q --docs-per-query M``: the generated MSLR-shaped queries (nonlinear relevance,
  seed ``--seed``) of the bench's ``train.txt``, drawn again by the same generator
  (:func:`ltr_cli.data.synthetic.shaped_queries`), features as the file holds them.
* ``--documents N``: a fold of about ``N`` documents made in memory (float32 features
  uniform on [0, 1], grades 0-4, Poisson query lengths of mean ``--docs-per-query``), for
  the peak memory of one epoch at WEB30K's size without writing gigabytes of text.

Each model trains ``--epochs`` epochs under :func:`ltr_cli.neural.train.fit` (forward,
loss, backward, Adam step per batch; no vali evaluation); printed: each epoch's seconds,
the first epoch's compile seconds, the documents of an epoch, and the process's peak
resident memory so far (:func:`peak_rss`). Run it with ``LTR_JAX_CACHE=off`` for a cold compile.
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
from typing import Any

import numpy as np

#: the bench's models: (scorer block, loss block, train settings)
MODELS: dict[str, tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "mlp": ({"kind": "mlp", "hidden": [128], "activation": "relu", "dropout": 0.0}, {"name": "listnet"},
            {"batch_queries": 64, "slate": 240, "lr": 0.001}),
    # the NeuralNDCG paper's Transformer (allRank's reproducibility config for WEB30K)
    "transformer": ({"kind": "attention", "input": 96, "blocks": 2, "heads": 1, "ff": 384, "dropout": 0.1},
                    {"name": "listnet"}, {"batch_queries": 64, "slate": 240, "lr": 0.001}),
}
FEATURES = 136


def generated(queries: int, docs_per_query: float, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The bench's training queries, as :func:`~ltr_cli.data.synthetic.shaped_queries` draws them."""
    from ltr_cli.data.registry import get_dataset
    from ltr_cli.data.synthetic import ShapeSpec, shaped_queries

    spec = ShapeSpec(queries, docs_per_query, seed=seed, relevance="nonlinear")
    return [(q.X.astype(np.float32), q.y.astype(np.float32)) for q in shaped_queries(get_dataset("mslr-web10k"), spec)]


def in_memory(documents: int, docs_per_query: float, seed: int) -> Any:
    """A packed fold of about ``documents`` documents (see the module docstring)."""
    from ltr_cli.neural.batching import Packed

    rng = np.random.default_rng(seed)
    lengths = np.maximum(1, rng.poisson(docs_per_query, size=max(1, int(documents / docs_per_query))))
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    n = int(offsets[-1])
    X = np.empty((n, FEATURES), dtype=np.float32)
    for start in range(0, n, 1 << 18):  # in pieces: no float64 copy of the whole fold
        stop = min(n, start + (1 << 18))
        X[start:stop] = rng.random((stop - start, FEATURES), dtype=np.float32)
    y = rng.integers(0, 5, size=n).astype(np.float32)
    return Packed(X, y, offsets)


def train(model: str, data: Any, epochs: int, seed: int) -> dict[str, Any]:
    """``epochs`` epochs of one model on packed data: its timings and the peak memory."""
    from ltr_cli.neural import scorers
    from ltr_cli.neural.losses import resolve
    from ltr_cli.neural.train import TrainSettings, fit

    block, loss, settings = MODELS[model]
    kind = resolve(loss["name"])
    bound = kind.bind({k: v for k, v in loss.items() if k != "name"})
    scorer = scorers.build(scorers.normalized(block), kind.n_outputs(bound))
    s = TrainSettings.model_validate({**settings, "epochs": epochs})
    result = fit(scorer, lambda out, y, mask: kind.fn(out, y, mask, **bound), data, s, (seed, 1),
                 lambda params: float("nan"), "bench")
    return {"model": model, "epoch_seconds": result.seconds, "compile_seconds": result.compile_seconds,
            "documents": result.documents, "queries": len(data), "train_loss": result.curves["train_loss"],
            "max_rss": peak_rss()}


def peak_rss() -> int:
    """This process's peak resident bytes: ``VmHWM`` (Linux; ``ru_maxrss`` there carries the
    parent's peak across exec), else ``ru_maxrss``."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    usage = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(usage) * (1 if sys.platform == "darwin" else 1024)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ltr_cli.bench.neural_child", description="ltr's neural loop, timed")
    p.add_argument("--model", action="append", choices=sorted(MODELS), required=True)
    p.add_argument("--queries", type=int, default=0)
    p.add_argument("--documents", type=int, default=0)
    p.add_argument("--docs-per-query", type=float, default=120.0)
    p.add_argument("--epochs", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args(argv)
    from ltr_cli.neural.batching import pack

    data = in_memory(a.documents, a.docs_per_query, a.seed) if a.documents else \
        pack(generated(a.queries, a.docs_per_query, a.seed), FEATURES)
    for model in a.model:
        print(json.dumps(train(model, data, a.epochs, a.seed)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
