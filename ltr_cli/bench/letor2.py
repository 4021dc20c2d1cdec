"""``ltr bench --batch --letor2``: the three LETOR 2.0 configs' full cross-validation, every
learner with its shipped grid, on generated data of the real sizes, timed against a budget.

For each of ``configs/letor2_ohsumed.yaml``, ``letor2_td2003.yaml`` and ``letor2_td2004.yaml``
the dataset's folds are written in LETOR's rotation (:func:`ltr_cli.data.synthetic.write_fold_layout`,
what ``ltr data synth --like NAME --folds`` writes; seeded) into a temporary folder, with the
registry's numbers of queries and documents per query (both times ``scale``, for a quick
check), and each learner runs as ``ltr run CONFIG --learner NAME`` would (the same code path,
its run folder in the temporary folder). The binary cache of the fold files is built before
the timing, so a learner's wall time is its five folds: every grid point fitted, scored on
vali, the chosen one evaluated on test, the run folder written.

PermuRank is timed like the others but shown apart from the total (its method is being
rewritten), so the total is what the other learners need.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ltr_cli.data.registry import get_dataset
from ltr_cli.data.synthetic import ShapeSpec, write_fold_layout
from ltr_cli.errors import LtrError

CONFIGS = {"letor2-ohsumed": "letor2_ohsumed.yaml", "letor2-td2003": "letor2_td2003.yaml",
           "letor2-td2004": "letor2_td2004.yaml"}
BUDGET_S = 600.0  # the target: the three configs' full CV grids in 10 minutes
APART = ("permurank",)  # timed, but reported apart from the total


def default_configs() -> Path:
    """The repository's ``configs/`` folder (beside the package in a source checkout), else
    ``./configs``."""
    beside = Path(__file__).resolve().parents[2] / "configs"
    return beside if beside.is_dir() else Path("configs")


def sized(name: str, scale: float) -> ShapeSpec:
    """The dataset's number of queries and documents per query, times ``scale`` (at least
    5 queries, one per subset, and 10 documents per query)."""
    info = get_dataset(name)
    queries = max(5, round((info.queries or 0) * scale))
    return ShapeSpec(queries, max(10.0, info.docs_per_query * scale), seed=0)


def _load() -> float | None:
    """The machine's one-minute load average (None where the system has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _warm_cache(spec: Any, cache: Path) -> None:
    """Read every split of every fold once, so the binary cache exists before the timing."""
    from ltr_cli.protocols.cv_folds import named_split, open_folds
    from ltr_cli.runs.plan import folds_plan

    for fold in open_folds(folds_plan(spec, cache)):
        for source in (fold.train, fold.vali, fold.test):
            named_split(source)


def run_letor2_bench(scale: float = 1.0, configs: Path | None = None, learners: list[str] | None = None,
                     skip: list[str] | None = None, datasets: list[str] | None = None,
                     log: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Each LETOR 2.0 config's CV, learner by learner, on generated folds; wall seconds per
    dataset and learner, the total (learners in :data:`APART` left out) and the budget."""
    from ltr_cli.config.experiment import load_config
    from ltr_cli.core.schema import BatchLearnerConfig
    from ltr_cli.runs.runner import run_experiment

    folder = configs or default_configs()
    chosen = datasets or list(CONFIGS)
    unknown = [n for n in chosen if n not in CONFIGS]
    if unknown:
        raise LtrError(f"unknown LETOR 2.0 dataset {unknown[0]!r}; expected one of {', '.join(CONFIGS)}")
    out: dict[str, Any] = {"scale": scale, "budget_s": BUDGET_S, "apart": list(APART), "datasets": {},
                           "load_before": _load()}
    with tempfile.TemporaryDirectory(prefix="ltr-letor2-") as tmp:
        t = Path(tmp)
        for name in chosen:
            path = folder / CONFIGS[name]
            if not path.is_file():
                raise LtrError(f"{path}: no such config (give the folder of configs/letor2_*.yaml)")
            shape = sized(name, scale)
            root = t / name
            root.mkdir()
            facts = write_fold_layout(root, get_dataset(name), shape)
            cache = t / "cache"
            spec = load_config(path, [f"dataset.root={root}", f"cache.dir={cache}"])
            _warm_cache(spec, cache)
            names = [n for n in spec.learners if (learners is None or n in learners) and n not in (skip or [])]
            row: dict[str, Any] = {"queries": facts["queries"], "documents": facts["documents"],
                                   "features": facts["features"], "learners": {}}
            for learner in names:
                lspec = spec.learners[learner]
                need = lspec.missing()
                if need:
                    row["learners"][learner] = {"missing": need}
                    continue
                assert isinstance(lspec, BatchLearnerConfig)
                start, cpu = time.perf_counter(), time.process_time()
                run_experiment(spec, out=t / "results", quiet=True, learners=[learner])
                wall, cpu = time.perf_counter() - start, time.process_time() - cpu
                row["learners"][learner] = {"seconds": round(wall, 2), "cpu_seconds": round(cpu, 2),
                                            "fits": 5 * len(lspec.grid_points())}
                if log is not None:
                    log(f"{name} {learner}: {wall:.1f} s ({cpu:.1f} s CPU)")
            out["datasets"][name] = row
    out["total_s"] = round(sum(r["seconds"] for d in out["datasets"].values() for n, r in d["learners"].items()
                               if "seconds" in r and n not in APART), 2)
    out["cpu_total_s"] = round(sum(r["cpu_seconds"] for d in out["datasets"].values()
                                   for n, r in d["learners"].items() if "seconds" in r and n not in APART), 2)
    out["load_after"] = _load()
    out["apart_s"] = round(sum(r["seconds"] for d in out["datasets"].values() for n, r in d["learners"].items()
                               if "seconds" in r and n in APART), 2)
    return out


def format_letor2_table(result: dict[str, Any]) -> str:
    """One row per learner, one column per dataset, wall seconds; the total against the budget."""
    data = result["datasets"]
    names = list(dict.fromkeys(n for d in data.values() for n in d["learners"]))
    head = f"LETOR 2.0 configs, full CV grids (5 folds), generated data at scale {result['scale']:g}"
    lines = [head, f"  {'wall seconds':22s}" + "".join(f"{n.removeprefix('letor2-'):>12s}" for n in data)
             + f"{'all':>12s}"]
    sizes = "".join(f"{str(d['queries']) + 'q/' + str(d['documents']):>12s}" for d in data.values())
    lines.append(f"  {'(queries/documents)':22s}{sizes}")
    for learner in names:
        cells, total = [], 0.0
        for d in data.values():
            r = d["learners"].get(learner)
            if r is None:
                cells.append(f"{'-':>12s}")
            elif "seconds" in r:
                cells.append(f"{r['seconds']:12.1f}")
                total += r["seconds"]
            else:
                cells.append(f"{'missing':>12s}")
        mark = " (apart)" if learner in result["apart"] else ""
        lines.append(f"  {learner + mark:22s}" + "".join(cells) + f"{total:12.1f}")
    verdict = "within" if result["total_s"] <= result["budget_s"] else "OVER"
    lines.append(f"  total without {', '.join(result['apart'])}: {result['total_s']:.1f} s, {verdict} the "
                 f"{result['budget_s']:.0f} s budget ({result['total_s'] / result['budget_s']:.0%} of it)"
                 + (f"; {', '.join(result['apart'])}: {result['apart_s']:.1f} s apart" if result["apart_s"] else ""))
    lines.append(f"  the same learners' CPU time: {result['cpu_total_s']:.1f} s (about the wall time on an idle machine: the fits run single-threaded; "
                 f"load average {result['load_before']} before, {result['load_after']} after on "
                 f"{os.cpu_count()} CPUs)")
    for d in data.values():
        for learner, r in d["learners"].items():
            if "missing" in r:
                lines.append(f"  {learner}: not timed, {r['missing']}")
                break
    return "\n".join(lines) + "\n"
