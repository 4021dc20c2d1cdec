"""``ltr bench --online``: what online runs cost end to end, as ratios measured side by side.

Everything runs ``ltr run`` / ``ltr sweep`` as a separate process on generated MSLR-shaped
data, or on a file in MSLR-WEB's layout given with ``--data`` (one file, cached before
anything is timed), and times the whole process:

* per learner: the per-round cost ``(CPU time of a long run - CPU time of a short run) /
  (extra rounds)``, both on the compiled path (``--kernels compiled``), so process start,
  imports and kernel loading cancel out; beside the
  floor (two float64 matrix-vector products per round, ``X w`` and ``X^T g``, over the same
  queries, measured in this process's CPU time), beside the same learner on its Python
  reference path
  (``LTR_KERNELS=0``: numpy and the reference surrogates), and beside the kernel-level
  figure of ``ltr bench`` (kernel calls on preloaded arrays);
* a 16-rate sweep of one learner against one run of it, on a 30,000-round stream (its points
  share the stream, so they run as one pass), in one process and with ``--jobs 2``;
* the four learners of ``configs/mslr_slam.yaml`` in one run against one of them alone;
* the checkpoint overhead at the default interval (the runs' own ``wall_seconds``), with the
  checkpoint of every 1,000 rounds beside it.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.data.registry import get_dataset
from ltr_cli.data.synthetic import ShapeSpec, shaped_queries, write_svmlight
from ltr_cli.bench.processes import measured_process, timed_process
from ltr_cli.learners.registry import bench_learners
from ltr_cli.core.yamlio import dump_yaml
from ltr_cli.core.children import PYTHON

MSLR_SLAM_LEARNERS = {
    "slam-ndcg": {"type": "slam-perceptron", "measure": "ndcg", "mistake": "ndcg@10", "weights": "level-averaged",
                  "margin": "label-difference", "maximiser_ties": "authors-code"},
    "slam-ap": {"type": "slam-perceptron", "measure": "ap", "mistake": "ndcg@10", "weights": "level-averaged",
                "margin": "label-difference", "maximiser_ties": "authors-code"},
    "alg3": {"type": "alg3", "mistake": "ndcg@10", "maximiser_ties": "authors-code",
             "step": {"rule": "constant", "eta": 1.0, "loss_scaled": True}},
    "listnet": {"type": "listnet", "numerics": "authors-code"},
}


def _config(path: Path, data: Path, cache: Path, learners: dict[str, Any], passes: int, every: int = 0,
            sweep: dict[str, list[Any]] | None = None) -> Path:
    raw: dict[str, Any] = {
        "experiment": "bench", "seed": 0,
        "dataset": {"kind": "files", "name": "mslr-web10k", "files": [str(data)]},
        "protocol": {"passes": passes, "checkpoint_every": every},
        "metrics": {"names": ["ndcg@10", "ap"], "ties": "reverse-input", "no_relevant": "one"},
        "cache": {"dir": str(cache)}, "learners": learners}
    if sweep:
        raw["sweep"] = sweep
    path.write_text(dump_yaml(raw))
    return path


def _process(args: list[str], env: dict[str, str] | None = None) -> float:
    """Wall seconds of one whole ``ltr`` process (:func:`~ltr_cli.bench.processes.timed_process`)."""
    return timed_process([*PYTHON, "-m", "ltr_cli", *args], {**os.environ, **(env or {})},
                         f"bench --online: 'ltr {' '.join(args[:2])}'")


def _cpu_process(args: list[str], env: dict[str, str] | None = None) -> float:
    """CPU seconds (user + system) of one whole ``ltr`` process
    (:func:`~ltr_cli.bench.processes.measured_process`): on a shared machine other
    processes' load stretches wall time, much less the process's own CPU time."""
    return measured_process([*PYTHON, "-m", "ltr_cli", *args], {**os.environ, **(env or {})},
                            f"bench --online: 'ltr {' '.join(args[:2])}'")[1]


def _best(n: int, fn: Any) -> float:
    return min(fn() for _ in range(n))


def _floor(data: list[tuple[np.ndarray, np.ndarray]], rounds: int) -> float:
    """CPU seconds per round of two float64 matrix-vector products (score, gradient)."""
    w = np.random.default_rng(0).normal(size=data[0][0].shape[1])

    def run() -> float:
        start = time.process_time()
        for i in range(rounds):
            X = data[i % len(data)][0]
            s = X @ w
            _ = X.T @ s
        return time.process_time() - start

    return _best(3, run) / rounds


def _queries(data: Path | None, tmp: Path, queries: int) -> tuple[Path, list[Any], str]:
    """The measured file and its queries: ``data`` (an MSLR-WEB-layout file, read with the
    project's reader) or ``queries`` generated MSLR-shaped ones written to ``tmp``."""
    info = get_dataset("mslr-web10k")
    if data is not None:
        from ltr_cli.data.options import ReaderOptions
        from ltr_cli.data.svmlight import SVMLightReader

        # read as the timed runs read it (a registry dataset: qid: tokens)
        options = ReaderOptions(n_features=info.n_features, qid_source="token")
        return data, list(SVMLightReader(data, options)), str(data)
    qs = list(shaped_queries(info, ShapeSpec(queries, seed=3)))
    path = tmp / "mslr.txt"
    write_svmlight(path, iter(qs), qid_style="token")
    return path, qs, "MSLR-shaped"


def _per_round(timed: Any, long_passes: int, repeats: int, rounds_per_pass: int) -> float | None:
    """CPU seconds per round of (long run - one-pass run) / extra rounds, whole processes, each
    the best of ``repeats`` taken in alternation (a slow spell of the machine hits both);
    None when the difference is lost in the noise (not positive)."""
    long_s, short_s = float("inf"), float("inf")
    for _ in range(repeats):
        long_s = min(long_s, timed(long_passes))
        short_s = min(short_s, timed(1))
    per = (long_s - short_s) / ((long_passes - 1) * rounds_per_pass)
    return per if per > 0 else None


def bench_online(tmp: Path, queries: int = 300, long_rounds: int = 30_000, repeats: int = 3,
                 learners: list[str] | None = None, data: Path | None = None,
                 learner_rounds: int = 100_000) -> dict[str, Any]:
    """Every figure of ``ltr bench --online``. Per learner, the long run has about
    ``learner_rounds`` rounds; the sweep, four-learner and checkpoint figures use streams of
    about ``long_rounds``."""
    data, qs, source = _queries(data, tmp, queries)
    queries = len(qs)
    cache = tmp / "cache"
    out_dir = tmp / "out"
    pairs = [(q.X, q.y) for q in qs]
    # the floor is measured again before each learner's runs and the lowest taken: on a
    # shared machine one measurement can fall in a busy spell (a high floor flatters the ratios)
    floors = [_floor(pairs, 3000)]
    _process(["data", "cache", str(data), "--dataset", "mslr-web10k", "--cache-dir", str(cache)])
    result: dict[str, Any] = {"queries": queries, "docs_per_query": round(float(np.mean([q.m for q in qs])), 1),
                              "source": source, "repeats": repeats, "learners": {}}
    chosen = {k: v for k, v in bench_learners().items() if learners is None or k in learners}
    from ltr_cli.bench.command import bench_rounds

    kernel_level = bench_rounds(min(queries, 200), 2000)["learners"]  # ltr bench's own figure
    for name, spec in chosen.items():
        long_passes = max(2, round(learner_rounds / queries))
        ref_passes = max(2, round(3_000 / queries))  # the reference path takes about 0.1 ms a round
        cfgs = {p: _config(tmp / f"{name}-{p}.yaml", data, cache, {name: spec}, p)
                for p in (1, long_passes, ref_passes)}

        def timed(passes: int, env: dict[str, str] | None = None, cfgs: dict[int, Path] = cfgs,
                  name: str = name) -> float:
            # the path forced, long and short runs alike: left to the planner, a one-pass run
            # takes the reference path and its long run's kernel loading would count as rounds
            target = out_dir / f"{name}-{passes}-{bool(env)}"
            path = "reference" if env else "compiled"
            return _cpu_process(["run", str(cfgs[passes]), "-q", "--kernels", path, "--out", str(target)], env)

        floors.append(_floor(pairs, 3000))
        per = _per_round(timed, long_passes, repeats, queries)
        ref = _per_round(lambda p, timed=timed: timed(p, {"LTR_KERNELS": "0"}), ref_passes, repeats, queries)
        result["learners"][name] = {
            "rounds": long_passes * queries,
            "us_per_round": None if per is None else round(per * 1e6, 2),
            "reference_us_per_round": None if ref is None else round(ref * 1e6, 1),
            "speedup_vs_reference": round(ref / per, 1) if per and ref else None,
            "kernel_level_us": (kernel_level.get(name) or {}).get("us_per_round")}
    floor = min(floors)
    result["floor_us_per_round"] = round(floor * 1e6, 2)
    for row in result["learners"].values():
        per_us = row["us_per_round"]
        row["ratio_to_floor"] = None if per_us is None else round(per_us * 1e-6 / floor, 2)
    result["sweep"] = _bench_sweep(tmp, data, cache, queries, long_rounds, repeats)
    result["four_learners"] = _bench_four(tmp, data, cache, queries, repeats, long_rounds)
    result["checkpoints"] = _bench_checkpoints(tmp, data, cache, queries, long_rounds)
    return result


def _bench_sweep(tmp: Path, data: Path, cache: Path, queries: int, rounds: int, repeats: int) -> dict[str, Any]:
    """16 learning rates of SLAM-NDCG in one ``ltr sweep`` against one ``ltr run``, on a
    stream of about ``rounds`` rounds (each the best of ``repeats``)."""
    passes = max(1, round(rounds / queries))
    one = _config(tmp / "sweep-one.yaml", data, cache, {"slam": MSLR_SLAM_LEARNERS["slam-ndcg"]}, passes)
    rates = [float(x) for x in np.geomspace(0.01, 10.0, 16)]
    grid = _config(tmp / "sweep.yaml", data, cache, {"slam": MSLR_SLAM_LEARNERS["slam-ndcg"]}, passes,
                   sweep={"learners.slam.step.eta": rates})
    jobs = max(1, min(2, os.cpu_count() or 1))
    run_s = sweep_s = parallel_s = float("inf")
    for rep in range(repeats):  # in alternation, each into a fresh folder (a finished point is skipped)
        run_s = min(run_s, _process(["run", str(one), "-q", "--out", str(tmp / f"sweep-run-{rep}")]))
        sweep_s = min(sweep_s, _process(["sweep", str(grid), "-q", "--out", str(tmp / f"sweep-out-{rep}")]))
        parallel_s = min(parallel_s, _process(["sweep", str(grid), "-q", "--jobs", str(jobs), "--out",
                                               str(tmp / f"sweep-jobs-{rep}")]))
    return {"rounds": passes * queries, "points": len(rates), "run_s": round(run_s, 2), "sweep_s": round(sweep_s, 2),
            "ratio": round(sweep_s / run_s, 2), "jobs": jobs, "sweep_jobs_s": round(parallel_s, 2),
            "ratio_jobs": round(parallel_s / run_s, 2)}


def _bench_four(tmp: Path, data: Path, cache: Path, queries: int, repeats: int, rounds: int) -> dict[str, Any]:
    """The four learners of configs/mslr_slam.yaml in one run against SLAM-NDCG alone."""
    passes = max(1, round(rounds / queries))
    four = _config(tmp / "four.yaml", data, cache, MSLR_SLAM_LEARNERS, passes)
    one = _config(tmp / "one.yaml", data, cache, {"slam-ndcg": MSLR_SLAM_LEARNERS["slam-ndcg"]}, passes)
    four_s = _best(repeats, lambda: _process(["run", str(four), "-q", "--out", str(tmp / "four-out")]))
    one_s = _best(repeats, lambda: _process(["run", str(one), "-q", "--out", str(tmp / "one-out")]))
    return {"rounds": passes * queries, "four_s": round(four_s, 2), "one_s": round(one_s, 2),
            "ratio": round(four_s / one_s, 2)}


def _bench_checkpoints(tmp: Path, data: Path, cache: Path, queries: int, rounds: int) -> dict[str, Any]:
    """A run's own wall_seconds without checkpoints, with the default interval and with a
    save every 1,000 rounds (best of 3 each)."""
    from ltr_cli.config.experiment import ProtocolSpec

    default = ProtocolSpec().checkpoint_every
    passes = max(1, round(rounds / queries))
    walls = {}
    for every in (0, default, 1000):
        cfg = _config(tmp / f"ck-{every}.yaml", data, cache, {"slam": MSLR_SLAM_LEARNERS["slam-ndcg"]}, passes, every)
        best = None
        for rep in range(3):
            target = tmp / f"ck-{every}-{rep}"
            _process(["run", str(cfg), "-q", "--out", str(target)])
            (summary,) = target.glob("bench/*/summary.json")
            wall = json.loads(summary.read_text())["wall_seconds"]
            best = wall if best is None else min(best, wall)
        walls[every] = best
    return {"rounds": passes * queries, "default_every": default, "without_s": walls[0],
            "with_default_s": walls[default], "with_1000_s": walls[1000],
            "overhead_default": round(walls[default] / walls[0] - 1.0, 3) if walls[0] else None,
            "overhead_1000": round(walls[1000] / walls[0] - 1.0, 3) if walls[0] else None}


def run_online_bench(queries: int = 300, long_rounds: int = 30_000, learners: list[str] | None = None,
                     repeats: int = 3, data: Path | None = None, learner_rounds: int = 100_000) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        return bench_online(Path(tmp), queries, long_rounds, repeats, learners=learners, data=data,
                            learner_rounds=learner_rounds)


def format_online_table(r: dict[str, Any]) -> str:
    lines = [f"online, end to end (whole ltr processes; {r['source']}, {r['queries']} queries of "
             f"{r['docs_per_query']} documents, 136 features, float64)",
             f"  floor: two float64 matrix-vector products = {r['floor_us_per_round']} us of CPU per round "
             "(the lowest of its measurements, one before each learner's runs)",
             "  learner              CPU us/round   x floor   Python reference us/round (speed-up)   "
             "kernel calls on preloaded float32 rows (ltr bench)"]
    def num(x: float | None, spec: str, unit: str = "") -> str:
        return "noise" if x is None else f"{x:{spec}}{unit}"

    for name, row in r["learners"].items():
        lines.append(f"  {name:24s} {num(row['us_per_round'], '8.2f')}  {num(row['ratio_to_floor'], '7.2f', 'x')}   "
                     f"{num(row['reference_us_per_round'], '12.1f')} ({num(row['speedup_vs_reference'], '', 'x')})"
                     f"{'':18s}{row['kernel_level_us']}")
    lines.append("  (CPU us/round: (a run of about {:,} rounds - a one-pass run) / extra rounds, user + system "
                 "time, best of {} each; noise: the difference was not positive)".format(
                     max(row["rounds"] for row in r["learners"].values()) if r["learners"] else 0, r["repeats"]))
    s, f, c = r["sweep"], r["four_learners"], r["checkpoints"]
    lines.append(f"  {s['points']}-rate sweep vs one run, {s['rounds']:,} rounds: {s['sweep_s']} s vs {s['run_s']} s "
                 f"= {s['ratio']}x (one process); with --jobs {s['jobs']}: {s['sweep_jobs_s']} s = {s['ratio_jobs']}x")
    lines.append(f"  the 4 learners of mslr_slam.yaml in one run vs SLAM-NDCG alone, {f['rounds']:,} rounds: "
                 f"{f['four_s']} s vs {f['one_s']} s = {f['ratio']}x")

    def pct(x: float | None) -> str:
        return "n/a" if x is None else f"{x:+.1%}"

    lines.append(f"  checkpoints, {c['rounds']:,} rounds of SLAM-NDCG ({c['without_s']} s without): default "
                 f"every {c['default_every']:,} rounds {c['with_default_s']} s = {pct(c['overhead_default'])}; every "
                 f"1,000 rounds {c['with_1000_s']} s = {pct(c['overhead_1000'])}")
    return "\n".join(lines) + "\n"
