"""allRank's own training loop on a fold folder, for ``ltr bench --neural`` (its documents per
second) and for run-level comparisons (its test NDCG@10): ``PYTHON -P neural_reference.py
--ref DIR --config CONFIG.json --data FOLD ...`` prints one JSON line.

This file is a standalone script run by a Python that has torch (never ltr's: torch is no
dependency of ltr); it imports only the standard library, numpy, torch and the allRank
checkout named by ``--ref``, whose code is not part of ltr and is never copied into it. A few
modules allRank imports but this run does not use are stubs, in this process only:
``torchvision.transforms.Compose`` (function composition), ``tensorboardX``, ``gcsfs``,
``pkg_resources`` and ``flatten_dict``.
allRank's data loading needs scikit-learn and attrs in that Python.

The run is allRank's: its config JSON (``allrank.config.Config``), ``load_libsvm_dataset``
(train slates padded or sampled to ``slate_length``, vali padded to its longest query),
``make_model``, the torch optimiser and loss the config names, and per batch its
``train_utils.loss_batch`` (forward, loss, backward, optimiser step). Timed: each epoch's
loop over the training batches alone (``epoch_seconds``); ``documents`` counts the real
(unpadded) training documents of an epoch. ``--select`` (fit mode): after each epoch vali
NDCG@10 by allRank's metric (a slate without a relevant document counts 1), the best
epoch's weights kept, and their test NDCG@10 per query on ``test.txt``.
"""

from __future__ import annotations

import argparse
import copy
import importlib
import json
import sys
import time
import types
from functools import partial
from pathlib import Path
from typing import Any


def _stubs() -> None:
    def compose(steps: list[Any]) -> Any:
        def run(sample: Any) -> Any:
            for step in steps:
                sample = step(sample)
            return sample
        return run

    tv = types.ModuleType("torchvision")
    tvt = types.ModuleType("torchvision.transforms")
    tvt.Compose = compose  # type: ignore[attr-defined]
    tv.transforms = tvt  # type: ignore[attr-defined]
    tbx = types.ModuleType("tensorboardX")
    tbx.SummaryWriter = object  # type: ignore[attr-defined]
    pkg = types.ModuleType("pkg_resources")
    pkg.Requirement = pkg.resource_filename = None  # type: ignore[attr-defined]
    flat = types.ModuleType("flatten_dict")
    flat.flatten = lambda d, **kw: d  # type: ignore[attr-defined]
    for name, module in (("torchvision", tv), ("torchvision.transforms", tvt), ("tensorboardX", tbx),
                         ("gcsfs", types.ModuleType("gcsfs")), ("pkg_resources", pkg), ("flatten_dict", flat)):
        sys.modules.setdefault(name, module)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="allRank's training loop on a fold folder, timed")
    p.add_argument("--ref", type=Path, required=True, help="an allRank checkout (the folder holding allrank/)")
    p.add_argument("--config", type=Path, required=True, help="allRank's config JSON")
    p.add_argument("--data", type=Path, required=True, help="a folder of train.txt, vali.txt (test.txt)")
    p.add_argument("--epochs", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch's threads (0: torch's default)")
    p.add_argument("--select", action="store_true", help="keep the best vali epoch, report its test NDCG@10")
    a = p.parse_args(argv)

    import numpy as np
    torch = importlib.import_module("torch")

    sys.path.insert(0, str(a.ref))
    _stubs()
    asdict = importlib.import_module("attr").asdict
    optim = torch.optim

    imp = importlib.import_module  # the checkout's modules (and torch's): no stubs for a type checker
    losses, loading = imp("allrank.models.losses"), imp("allrank.data.dataset_loading")
    Config, ndcg = imp("allrank.config").Config, imp("allrank.models.metrics").ndcg
    make_model, loss_batch = imp("allrank.models.model").make_model, imp("allrank.training.train_utils").loss_batch
    PADDED_Y_VALUE, load_libsvm_dataset = loading.PADDED_Y_VALUE, loading.load_libsvm_dataset
    load_libsvm_dataset_role, DataLoader = loading.load_libsvm_dataset_role, imp("torch.utils.data").DataLoader

    if a.threads:
        torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    np.random.seed(a.seed)
    config = Config.from_json(str(a.config))
    train_ds, val_ds = load_libsvm_dataset(str(a.data), config.data.slate_length, config.data.validation_ds_role)
    n_features = train_ds.shape[-1]
    train_dl = DataLoader(train_ds, batch_size=config.data.batch_size, shuffle=True, num_workers=0)
    val_dl = DataLoader(val_ds, batch_size=config.data.batch_size, shuffle=False, num_workers=0)
    model = make_model(n_features=n_features, **asdict(config.model, recurse=False))
    optimizer = getattr(optim, config.optimizer.name)(params=model.parameters(), **config.optimizer.args)
    loss_func = partial(getattr(losses, config.loss.name), **config.loss.args)
    clip = config.training.gradient_clipping_norm
    documents = sum(int(min(len(y), config.data.slate_length)) for y in train_ds.y_by_qid)

    def ndcg10(dl: Any) -> Any:
        model.eval()
        with torch.no_grad():
            out = [ndcg(model.score(xb, yb == PADDED_Y_VALUE, idx), yb, ats=[10]) for xb, yb, idx in dl]
        return torch.cat(out)[:, 0].numpy().astype(float)

    seconds, vali, best, best_vali, losses_ = [], [], None, -1.0, []
    for _ in range(a.epochs):
        model.train()
        t0 = time.perf_counter()
        got = [loss_batch(model, loss_func, xb, yb, idx, clip, optimizer) for xb, yb, idx in train_dl]
        seconds.append(time.perf_counter() - t0)
        values, counts = zip(*got)
        losses_.append(float(np.dot(values, counts) / np.sum(counts)))
        if a.select:
            v = float(ndcg10(val_dl).mean())
            vali.append(v)
            if v > best_vali:
                best_vali, best = v, copy.deepcopy(model.state_dict())
    result: dict[str, Any] = {"torch": torch.__version__, "threads": torch.get_num_threads(), "documents": documents,
                              "queries": len(train_ds), "epoch_seconds": seconds, "train_loss": losses_,
                              "parameters": int(sum(p.numel() for p in model.parameters()))}
    if a.select and best is not None:
        model.load_state_dict(best)
        test_ds = load_libsvm_dataset_role("test", str(a.data), config.data.slate_length)
        per_query = ndcg10(DataLoader(test_ds, batch_size=config.data.batch_size, shuffle=False, num_workers=0))
        result.update({"vali": vali, "best_epoch": int(np.argmax(vali)) + 1, "test_ndcg@10": float(per_query.mean()),
                       "test_per_query": per_query.tolist()})
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
