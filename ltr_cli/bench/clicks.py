"""``ltr bench --clicks``: what a click-driven round costs in ltr against the click literature's
reference code (HarrieO/OnlineLearningToRank), on the same generated data, per learner.

The data are ``configs/clicks_synthetic.yaml``'s: queries shaped like MSLR-WEB10K (136
features, about 30 documents per query) in its fold layout; Fold1's train.txt is the training
stream and its test.txt the reference's test file.

* ltr: ``ltr run`` of a one-learner click config (uniform query sampling, the cascade click
  model with a stop coin at every position, 10 shown) as a separate process; the per-impression
  cost is (CPU of a run of N impressions - CPU of a run of N/10) / the extra impressions, so
  process start, imports and reading cancel out (the CPU of the child, from its resource usage;
  best of ``repeats``, long and short runs taken in alternation).
* the reference: ``python -m ltr_cli.bench.clicks_reference`` runs its ``SingleSimulation``
  with the same learner, click model and data, and times its impression loop alone. The
  reference is never part of ltr: ``--reference DIR`` or ``LTR_CLICKS_REFERENCE`` names a
  checkout; without one, that column is skipped with a note saying how to give it.

The ratio reference / ltr is the speed-up; the goal is 20x.
"""

from __future__ import annotations

import json
import resource
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ltr_cli.core.yamlio import dump_yaml
from ltr_cli.data.registry import get_dataset
from ltr_cli.data.synthetic import ShapeSpec, write_fold_layout
from ltr_cli.errors import LtrError
from ltr_cli.core.children import PYTHON

#: ltr's name -> (its learner config in the agreed click syntax, the reference's learner)
CLICK_LEARNERS: dict[str, tuple[dict[str, Any], str]] = {  # the reference's own settings (probabilistic: sampled)
    "pdgd": ({"type": "pdgd", "learning_rate": 0.1, "learning_rate_decay": 0.9999977}, "PDGD"),
    "p-dbgd": ({"type": "dbgd", "comparison": "probabilistic", "candidates": 1, "learning_rate": 0.01,
                "delta": 1.0, "learning_rate_decay": 0.9999977}, "P-DBGD"),
    "td-dbgd": ({"type": "dbgd", "comparison": "team-draft", "learning_rate_decay": 0.9999977}, "TD-DBGD"),
    "p-mgd": ({"type": "dbgd", "comparison": "probabilistic", "candidates": 49}, "P-MGD"),
}
GOAL = 20.0
ENV = "LTR_CLICKS_REFERENCE"
#: files every checkout of the reference has
MARKERS = ("utils/clicks.py", "utils/singlesimulation.py", "algorithms/PDGD/pdgd.py")
FEATURES = 136  # mslr-web10k's width, as the generated data has
NOTE = (f"bench --clicks: no reference code given, its column is skipped; point --reference DIR or {ENV} "
        "at a checkout of HarrieO/OnlineLearningToRank to time it")


def find_reference(option: Path | None) -> Path | None:
    """The reference checkout from ``--reference`` or the environment; None when neither is
    given; a one-line error when the folder is not a checkout."""
    from ltr_cli.bench.checkouts import find_checkout

    return find_checkout(option, ENV, MARKERS, "not a checkout of HarrieO/OnlineLearningToRank; clone it and give "
                         "its folder")


def write_data(root: Path, queries: int = 500, docs_per_query: float = 30.0, seed: int = 0) -> tuple[Path, Path]:
    """The generated MSLR-shaped folds of configs/clicks_synthetic.yaml under ``root``;
    Fold1's (train, test) files."""
    write_fold_layout(root, get_dataset("mslr-web10k"), ShapeSpec(queries, docs_per_query, seed=seed))
    return root / "Fold1" / "train.txt", root / "Fold1" / "test.txt"


def click_config(path: Path, train: Path, cache: Path, name: str, spec: dict[str, Any], model: str,
                 rounds: int, seed: int = 0) -> Path:
    """A one-learner click config in the agreed syntax, written to ``path``."""
    raw: dict[str, Any] = {
        "experiment": "bench-clicks", "seed": seed,
        "dataset": {"kind": "files", "name": "mslr-web10k", "files": [str(train)], "normalize": "query-level"},
        "protocol": {"feedback": "clicks", "sampling": "uniform", "max_rounds": rounds, "checkpoint_every": 0,
                     "clicks": {"model": model, "stop": "any-position", "shown": 10, "grades": 5}},
        "metrics": {"names": ["ndcg@10"], "no_relevant": "skip"},
        "cache": {"dir": str(cache)}, "learners": {name: spec}}
    path.write_text(dump_yaml(raw))
    return path


def _failed(what: str, done: subprocess.CompletedProcess[str]) -> LtrError:
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    said = lines[-1].removeprefix("ltr: error: ") if lines else f"exit status {done.returncode}"
    return LtrError(f"bench --clicks: {what} failed: {said}")


def child_cpu(argv: list[str], what: str, env: dict[str, str] | None = None) -> float:
    """CPU seconds (user + system) of the process ``argv``, from the children's resource usage;
    a failing process stops the bench with one line."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise _failed(what, done)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def reference_argv(ref: Path, train: Path, test: Path, learner: str, model: str, impressions: int,
                   seed: int = 0) -> list[str]:
    """The command that runs and times one reference run (:mod:`ltr_cli.bench.clicks_reference`)."""
    return [*PYTHON, "-m", "ltr_cli.bench.clicks_reference", "--ref", str(ref), "--train", str(train),
            "--test", str(test), "--learner", learner, "--click-model", model, "--impressions", str(impressions),
            "--seed", str(seed), "--features", str(FEATURES)]


def run_reference(argv: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run one reference command; the JSON object of its last output line, which must carry a
    positive ``cpu_per_impression``. Any other outcome is one line naming what went wrong."""
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise _failed("the reference code", done)
    lines = [line for line in done.stdout.splitlines() if line.strip()]
    try:
        result = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        result = None
    cost = result.get("cpu_per_impression") if isinstance(result, dict) else None
    if not isinstance(result, dict) or not isinstance(cost, (int, float)) or isinstance(cost, bool) or not cost > 0:
        shown = lines[-1][:80] if lines else "nothing"
        raise LtrError(f"bench --clicks: the reference code printed no result line with a positive "
                       f"cpu_per_impression (its last line: {shown!r})")
    return result


def ltr_per_impression(cpu_of: Callable[[int], float], long_rounds: int, short_rounds: int,
                       repeats: int) -> float | None:
    """CPU seconds per impression from ``cpu_of(rounds)``: (best long - best short) / extra
    rounds, long and short taken in alternation; None when the difference is not positive."""
    long_s = short_s = float("inf")
    for _ in range(repeats):
        long_s = min(long_s, cpu_of(long_rounds))
        short_s = min(short_s, cpu_of(short_rounds))
    per = (long_s - short_s) / (long_rounds - short_rounds)
    return per if per > 0 else None


def _ltr(*args: str) -> list[str]:
    return [*PYTHON, "-m", "ltr_cli", *args]


def bench_clicks(tmp: Path, reference: Path | None, impressions: int = 1000, model: str = "navigational",
                 repeats: int = 3, learners: list[str] | None = None, seed: int = 0) -> dict[str, Any]:
    """Every figure of ``ltr bench --clicks``, per learner: ltr's and (with ``reference``) the
    reference code's CPU microseconds per impression, and their ratio."""
    train, test = write_data(tmp / "data")
    cache = tmp / "cache"
    short = max(1, impressions // 10)
    chosen = {k: v for k, v in CLICK_LEARNERS.items() if learners is None or k in learners}
    result: dict[str, Any] = {"impressions": impressions, "short_impressions": short, "model": model,
                              "repeats": repeats, "reference": None if reference is None else str(reference),
                              "goal": GOAL, "learners": {}}
    for name, (spec, ref_name) in chosen.items():
        configs = {n: click_config(tmp / f"{name}-{n}.yaml", train, cache, name, spec, model, n, seed)
                   for n in (short, impressions)}

        def cpu_of(rounds: int, name: str = name, configs: dict[int, Path] = configs) -> float:
            out = tmp / "out" / f"{name}-{rounds}"
            return child_cpu(_ltr("run", str(configs[rounds]), "-q", "--kernels", "compiled", "--out", str(out)), f"'ltr run' of {name}")

        cpu_of(short)  # fills the data cache and the kernel cache: not timed
        per = ltr_per_impression(cpu_of, impressions, short, repeats)
        ref = None
        if reference is not None:
            ref = run_reference(reference_argv(reference, train, test, ref_name, model, impressions, seed))
        ref_per = None if ref is None else float(ref["cpu_per_impression"])
        result["learners"][name] = {
            "reference_learner": ref_name,
            "ltr_us": None if per is None else round(per * 1e6, 2),
            "reference_us": None if ref_per is None else round(ref_per * 1e6, 1),
            "ratio": round(ref_per / per, 1) if per and ref_per else None}
    return result


def run_clicks_bench(reference: Path | None, impressions: int = 1000, model: str = "navigational",
                     repeats: int = 3, learners: list[str] | None = None) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="ltr-bench-clicks-") as tmp:
        return bench_clicks(Path(tmp), reference, impressions, model, repeats, learners)


def format_clicks_table(r: dict[str, Any]) -> str:
    """The per-learner table; without a reference, its note and no reference columns."""
    lines = [f"clicks ({r['model']} clicks, uniform query sampling, 10 shown; generated MSLR-shaped data; "
             f"CPU per impression: ltr (a {r['impressions']:,}-impression run - a {r['short_impressions']:,} one, "
             f"best of {r['repeats']}) vs the reference code's impression loop)"]
    if r["reference"] is None:
        lines.append(f"  {NOTE}")
        lines.append("  learner        ltr us/impression")
        for name, row in r["learners"].items():
            lines.append(f"  {name:12s} {_num(row['ltr_us'], '12.2f')}")
        return "\n".join(lines) + "\n"
    lines.append(f"  reference: {r['reference']}")
    lines.append(f"  learner      reference       ltr us/impression   reference us/impression   "
                 f"reference / ltr (goal {r['goal']:g}x)")
    for name, row in r["learners"].items():
        ratio = row["ratio"]
        verdict = "" if ratio is None else ("  meets" if ratio >= r["goal"] else "  MISSES")
        lines.append(f"  {name:12s} {row['reference_learner']:12s} {_num(row['ltr_us'], '12.2f')}        "
                     f"{_num(row['reference_us'], '14.1f')}            {_num(ratio, '8.1f', 'x')}{verdict}")
    lines.append("  (noise: ltr's long and short runs did not differ by a positive amount)")
    return "\n".join(lines) + "\n"


def _num(x: float | None, spec: str, unit: str = "") -> str:
    return "noise".rjust(len(format(0.0, spec))) if x is None else f"{x:{spec}}{unit}"
