"""One run of the click literature's reference code (HarrieO/OnlineLearningToRank), for
``ltr bench --clicks``: ``python -m ltr_cli.bench.clicks_reference --ref DIR ...`` prints one
JSON line with the run's CPU seconds per impression.

The reference code is not part of ltr and is never copied into it: ``--ref`` names a checkout
of it. It is Python 2 code; this module makes it importable under Python 3 and numpy 2 at run
time, in this process only, without editing a file of it:

* its ``utils/`` folder goes on ``sys.path``, so its implicit relative imports resolve;
* ``cPickle`` is ``pickle``; ``sharedmem`` (used only with several processes) is a stub;
* ``numpy.complex`` (gone in numpy 2) is the builtin ``complex``;
* its wall-clock seeding (``utils/datasimulation.py``) is replaced by ``--seed``.

The run is the reference's own: ``DataFold`` reads train and test (query-level min-max
normalisation, features constant over train dropped, test queries without a relevant
document removed), ``SingleSimulation`` draws a training query uniformly per impression and
clicks with the reference's cascade model, and the learner has the hyper-parameters of its
``scripts/CIKM2018.py``. Only the impression loop is timed (not the import or the read).
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pickle
import random
import resource
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

#: learner -> (module, class, parameters over its defaults), as scripts/CIKM2018.py sets them
REFERENCE_LEARNERS: dict[str, tuple[str, str, dict[str, float]]] = {
    "PDGD": ("algorithms.PDGD.pdgd", "PDGD", {"learning_rate": 0.1, "learning_rate_decay": 0.9999977}),
    "P-DBGD": ("algorithms.DBGD.pdbgd", "P_DBGD", {"learning_rate_decay": 0.9999977}),
    "TD-DBGD": ("algorithms.DBGD.tddbgd", "TD_DBGD", {"learning_rate_decay": 0.9999977}),
    "P-MGD": ("algorithms.DBGD.pmgd", "P_MGD", {"learning_rate_decay": 0.9999977}),
    "Pairwise": ("algorithms.baselines.pairwise", "Pairwise", {"learning_rate_decay": 0.9999977, "epsilon": 0.8}),
}
#: grades -> the reference's click-table family
TABLES = {5: "long", 3: "short", 2: "binary"}


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _importable(ref: Path) -> None:
    import numpy as np

    sys.path[:0] = [str(ref), str(ref / "utils")]
    sys.modules.setdefault("cPickle", pickle)
    stub = types.ModuleType("sharedmem")
    stub.empty = np.empty  # type: ignore[attr-defined]
    sys.modules.setdefault("sharedmem", stub)
    if not hasattr(np, "complex"):
        np.complex = complex  # type: ignore[attr-defined]


class _Dataset:
    """What the reference's DataFold asks of its DataSet."""

    def __init__(self, grades: int, features: int):
        self.name, self.max_folds, self.small = "bench", 999, True
        self.click_model_type, self.num_features = TABLES[grades], features

    def num_data_folds(self) -> int:
        return 1

    def num_runs_per_fold(self, sim_args: Any) -> int:
        return 1

    def multileave_feat(self) -> list[str]:
        return []


class _Outputs:
    def __init__(self) -> None:
        self.items: list[Any] = []

    def put(self, item: Any) -> None:
        self.items.append(item)


def run(ref: Path, train: Path, test: Path, learner: str, model: str, impressions: int, seed: int,
        features: int, grades: int = 5, shown: int = 10) -> dict[str, Any]:
    """One reference run; its CPU and wall seconds per impression and its final NDCG@10s."""
    import numpy as np

    _importable(ref)
    sim_args = argparse.Namespace(
        train_only=False, n_impressions=impressions, n_results=shown, print_freq=impressions, all_train=True,
        print_logscale=False, validation=False, validation_in_train=False, n_processing=1,
        store_binarized_data_after_read=False, read_binarized_data=False, purge_test_set=True)
    with tempfile.TemporaryDirectory(prefix="ltr-clicks-reference-") as tmp:
        os.symlink(train.resolve(), Path(tmp) / "train.txt")
        os.symlink(test.resolve(), Path(tmp) / "test.txt")
        fold = importlib.import_module("dataset").DataFold(sim_args, _Dataset(grades, features), 0, tmp + "/")
        fold.read_data()
    module, name, params = REFERENCE_LEARNERS[learner]
    ranker_class = getattr(importlib.import_module(module), name)
    click_model = importlib.import_module("clicks").get_click_models([TABLES[grades], model])[0]
    random.seed(seed)
    np.random.seed(seed)
    args = {**ranker_class.default_parameters(), **params, "n_results": shown, "n_features": features}
    ranker = ranker_class(**args)
    outputs = _Outputs()
    simulation = importlib.import_module("singlesimulation").SingleSimulation(sim_args, outputs, click_model, fold)
    wall0, cpu0 = time.perf_counter(), _cpu()
    simulation.run(ranker, output_key=(learner, "bench"))
    wall, cpu = time.perf_counter() - wall0, _cpu() - cpu0
    final = outputs.items[0][1]["run_results"][-1]
    return {"learner": learner, "click_model": model, "impressions": impressions, "seed": seed,
            "cpu_per_impression": cpu / impressions, "wall_per_impression": wall / impressions,
            "final_offline_ndcg@10": float(final["heldout"]),
            "cumulative_online_ndcg": float(final["cumulative-display"])}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m ltr_cli.bench.clicks_reference",
                                description="one run of the click reference code, timed")
    p.add_argument("--ref", type=Path, required=True, help="a checkout of HarrieO/OnlineLearningToRank")
    p.add_argument("--train", type=Path, required=True)
    p.add_argument("--test", type=Path, required=True)
    p.add_argument("--learner", required=True, choices=sorted(REFERENCE_LEARNERS))
    p.add_argument("--click-model", required=True)
    p.add_argument("--impressions", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--features", type=int, required=True)
    p.add_argument("--grades", type=int, default=5, choices=sorted(TABLES))
    a = p.parse_args(argv)
    result = run(a.ref, a.train, a.test, a.learner, a.click_model, a.impressions, a.seed, a.features, a.grades)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
