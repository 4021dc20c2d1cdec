"""Filling the kernel cache ahead of any run (``ltr kernels build``).

A first compiled run on a new machine spends most of its time compiling. :func:`build`
does that work once, outside any run: for every compiled block family declared in the
entry-point group ``ltr_cli.families`` (plugins' included) and for the per-round kernels
(``rounds``), it runs the registered online learners' declared ``examples`` that use it
on a small generated file, on the compiled path, once with float64 rows and once with
float32 rows (``dataset.storage``). A run calls its kernels with the very signatures a
real run uses, so what it compiles is what later runs load: the family's block kernel,
the round measures, the ranking and update kernels, the SVMlight scanner. ``evaluation``
is ``ltr eval``'s work (:func:`~ltr_cli.results.file_eval.evaluate_file`) under every
convention. Results go to a temporary folder, removed afterwards.

What was compiled is counted as the kernel cache's new files (the compile-ahead children
of a run compile in processes of their own); a second build compiles nothing.
:func:`status` says, without importing numba, which families the cache holds.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ltr_cli.errors import LtrError
from ltr_cli.runs.kernel_plan import ROUNDS

STORAGES = ("float64", "float32")
QUERIES = 12  # queries of the generated file: enough for a block of rounds, a held-out pass


@dataclass
class Target:
    """One family to build: its name and the examples (name -> learner config) that run it."""

    family: str
    learners: dict[str, dict[str, Any]] = field(default_factory=dict)


EVALUATION = "evaluation"  # ltr eval's kernels (the score-file scanner, the stacked measures)
EVALUATION_KERNEL = "ltr_cli.kernels.evaluation:evaluate_queries"
EVALUATION_METRICS = ("err@10", "rr", "ndcg@10", "ap")  # beside each convention's own columns


def families() -> list[str]:
    """Every declared block family (entry-point group ``ltr_cli.families``), then ``rounds``
    and ``evaluation``."""
    from ltr_cli import plugins

    return [*plugins.declared("families"), ROUNDS, EVALUATION]


def status() -> dict[str, bool]:
    """Family -> whether the kernel cache holds its kernel (numba is not imported)."""
    from ltr_cli.kernels.numba_cache import cached_function
    from ltr_cli.runs.kernel_plan import uncached_families

    names = families()
    missing = set(uncached_families([name for name in names if name != EVALUATION]))
    from ltr_cli.kernels import ahead

    evaluation = ahead.available(EVALUATION_KERNEL) or cached_function(EVALUATION_KERNEL)
    return {name: evaluation if name == EVALUATION else name not in missing for name in names}


def targets(only: list[str] | None = None, work: Path | None = None) -> list[Target]:
    """The families to build (``only``: those named; an unknown name is a one-line error),
    each with the learner examples whose runs use it; a family no example uses is listed
    with none (it cannot be built here). Planning writes a small file in a temporary folder
    in ``work`` (default: the system's temporary directory)."""
    from ltr_cli.learners.examples import examples

    names = families()
    for name in only or []:
        if name not in names:
            raise LtrError(f"--family {name}: no block family of that name; the families are {', '.join(names)}")
    chosen = [name for name in names if not only or name in only]
    out = {name: Target(name) for name in chosen}
    if EVALUATION in out:
        out[EVALUATION].learners = {f"ltr eval --convention {c}": {} for c in _conventions()}
    every = examples(feedback="labels")  # the click learners have no compiled block family
    with tempfile.TemporaryDirectory(prefix="ltr-kernels-plan-", dir=work) as tmp:
        for per_round in (False, True):  # logging regret, a learner runs round by round
            spec = _spec(Path(tmp), every, "float64", per_round)
            for name, family in _families_of(spec).items():
                if family in out and (family == ROUNDS) == per_round:
                    out[family].learners[name] = every[name]
    return list(out.values())


def _conventions() -> list[str]:
    from ltr_cli.measures.conventions import CONVENTIONS

    return list(CONVENTIONS)


def _evaluate(folder: Path) -> None:
    """``ltr eval``'s work on a small generated file and a score file, under every
    convention, its default columns and then :data:`EVALUATION_METRICS`."""
    import numpy as np

    from ltr_cli.data.svmlight import ReaderOptions
    from ltr_cli.results.file_eval import evaluate_file
    from ltr_cli.learners.examples import write_data

    data = folder / "eval.txt"
    if not data.exists():
        write_data(data, QUERIES)
        lines = sum(1 for line in data.read_text().splitlines() if line.strip())
        scores = np.random.default_rng(0).integers(0, 4, size=lines) / 2.0  # ties too
        (folder / "eval.scores").write_text("".join(f"{v}\n" for v in scores))
    for convention in _conventions():
        for metrics in (None, list(EVALUATION_METRICS)):
            with warnings.catch_warnings():  # labels outside a convention's gain table: said by ltr eval
                warnings.simplefilter("ignore")
                evaluate_file(data, folder / "eval.scores", ReaderOptions(), convention, metrics=metrics)


def _families_of(spec: Any) -> dict[str, str]:
    """Example name -> the family its run uses (as ``ltr run`` plans it)."""
    from ltr_cli.runs.kernel_plan import _family
    from ltr_cli.runs.plan import plan_experiment

    found: dict[str, str] = {}
    for stream in plan_experiment(spec):
        for run in stream:
            family = _family(run)
            if family is not None:
                found[run.learner] = family
    return found


def _spec(folder: Path, learners: dict[str, dict[str, Any]], storage: str, per_round: bool = False) -> Any:
    """A validated config running ``learners`` for one pass over a small generated file
    (with a held-out file) with rows stored as ``storage``; ``per_round``: logging their
    regret (they then run round by round, on the per-round kernels)."""
    from ltr_cli.config.experiment import load_config
    from ltr_cli.learners.examples import FEATURES, write_data

    data = folder / "train.txt"
    if not data.exists():
        write_data(data, QUERIES)
        write_data(folder / "heldout.txt", 4, seed=1)
    body = "\n".join(f"  {name}: {json.dumps(spec)}" for name, spec in learners.items())
    config = folder / f"build-{storage}{'-rounds' if per_round else ''}.yaml"
    config.write_text(f"""experiment: kernels
seed: 0
dataset: {{kind: files, features: {FEATURES}, files: [{data}], storage: {storage}}}
protocol: {{passes: 1, log_regret: {'true' if per_round else 'false'}}}
heldout: {{file: {folder / 'heldout.txt'}, every: 5}}
metrics: {{names: [ndcg@10, ap], ties: input-order, no_relevant: one}}
learners:
{body}
""")
    return load_config(config)


def cache_files() -> set[tuple[str, int]]:
    """The kernel cache's compiled files (path, size): new ones after a build were compiled by it."""
    from ltr_cli.kernels import numba_cache

    numba_cache.ensure()
    root = Path(os.environ.get("NUMBA_CACHE_DIR", ""))
    if not root.is_dir():
        return set()
    return {(str(p), p.stat().st_size) for p in root.rglob("*.nbc")}


@dataclass
class Built:
    """What building one family did: the files compiled into the cache, and the seconds."""

    family: str
    compiled: int
    seconds: float


def build(chosen: list[Target], say: Callable[[str], None], storages: list[str] | None = None,
          work: Path | None = None) -> list[Built]:
    """Run each target's examples on the compiled path (float64, then float32 rows; or only
    ``storages``); one line per family through ``say``. The scratch files go to a temporary
    folder in ``work`` (default: the system's temporary directory), removed afterwards."""
    from ltr_cli.kernels import ahead
    from ltr_cli.runs.kernel_plan import ahead_families
    from ltr_cli.runs.runner import run_experiment

    done: list[Built] = []
    with tempfile.TemporaryDirectory(prefix="ltr-kernels-build-", dir=work) as tmp:
        folder = Path(tmp)
        built_ahead = set(ahead_families([t.family for t in chosen if t.family != EVALUATION]))
        if ahead.available(EVALUATION_KERNEL):
            built_ahead.add(EVALUATION)
        for target in chosen:
            if target.family in built_ahead:
                say(f"ltr: kernels: {target.family}: built ahead of time; nothing to compile")
                done.append(Built(target.family, 0, 0.0))
                continue
            if not target.learners:
                say(f"ltr: kernels: {target.family}: no registered learner example uses it; skipped")
                continue
            say(f"ltr: kernels: {target.family}: building ({', '.join(target.learners)}) ...")
            before, start = cache_files(), time.perf_counter()
            for storage in () if target.family == EVALUATION else (storages or STORAGES):
                spec = _spec(folder, target.learners, storage, target.family == ROUNDS)
                with contextlib.redirect_stderr(io.StringIO()):  # the examples' own warnings (NaN weights)
                    run_experiment(spec, out=folder / "results" / target.family / storage, quiet=True,
                                   kernels_mode="compiled")
            if target.family == EVALUATION:
                _evaluate(folder)
            new = len(cache_files() - before)
            seconds = time.perf_counter() - start
            done.append(Built(target.family, new, seconds))
            say(f"ltr: kernels: {target.family}: " + (f"compiled {new} kernel file{'s' if new != 1 else ''}"
                                                      if new else "nothing to compile (cached)")
                + f" in {seconds:.1f} s")
    return done
