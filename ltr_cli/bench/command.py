"""``ltr bench``: speed and memory of this machine's run, as ratios measured side by side.

* parse: our reader vs ``sklearn.datasets.load_svmlight_file`` on the same generated
  MSLR-shaped (dense) and Yahoo-shaped (sparse) files (scikit-learn from the ``bench`` extra);
* synth: writing those files as ``ltr data synth`` does vs the same text formatted value by
  value in Python;
* per round: each online learner's rank + update time vs. the "floor", two float32
  matrix-vector passes (X w, X^T g) over the same rows;
* cache: reading every query back from the binary cache vs. the cold parse of the file;
* end to end: ``ltr run`` (a fresh process, start-up included) of the perceptron paper's
  three learners on MSLR-shaped Fold1-5 train files (the authors' protocol), with an empty
  cache and again with the cache built;
* memory: peak RSS of streaming a file and of streaming one 4x larger, in fresh processes,
  parsed and from the cache; and of whole ``ltr run --kernels compiled`` processes on files
  of 1x, 4x and 16x the queries (target: under 600 MB at every size).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.data.registry import get_dataset
from ltr_cli.learners.registry import bench_learners
from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader
from ltr_cli.data.synthetic import ShapeSpec, reference_svmlight_lines, shaped_queries, write_svmlight
from ltr_cli.protocols.online import feedback_size, reveal
from ltr_cli.core.children import PYTHON

LEARNERS: dict[str, dict[str, Any]] = bench_learners()


def _write(path: Path, dataset: str, queries: int, seed: int = 0) -> Path:
    info = get_dataset(dataset)
    write_svmlight(path, shaped_queries(info, ShapeSpec(queries, seed=seed)), qid_style="token",
                   sparse=info.sparse)
    return path


def _best_of(repeats: int, fn, *args: Any) -> float:
    """Shortest wall time of ``repeats`` calls ``fn(*args)`` (the least disturbed run)."""
    return min(_timed(fn, *args)[0] for _ in range(repeats))


def _timed(fn, *args: Any, **kwargs: Any) -> tuple[float, Any]:
    """(wall seconds, result) of ``fn(*args, **kwargs)``."""
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return time.perf_counter() - start, result


def bench_parse(tmp: Path, queries: int, repeats: int = 3) -> dict[str, Any]:
    """MB/s of both readers on the same files, each the best of ``repeats`` parses (after
    loading our compiled scanner once: that one-time cost per process is reported as
    ``scanner_load_s``)."""
    warm = _write(tmp / "warm.txt", "mslr-web10k", 1)
    start = time.perf_counter()
    for dtype in (np.float64, np.float32):
        list(SVMLightReader(warm, ReaderOptions(n_features=136)).dense_queries(dtype))
    out: dict[str, Any] = {"scanner_load_s": round(time.perf_counter() - start, 3), "repeats": repeats}
    for label, dataset in (("dense_mslr", "mslr-web10k"), ("sparse_yahoo", "yahoo-set1")):
        info = get_dataset(dataset)
        path = tmp / f"{label}.txt"
        synth = bench_synth(path, info, queries, repeats)
        size_mb = path.stat().st_size / 1e6
        options = ReaderOptions(n_features=info.n_features)
        runs = [_timed(_count_documents, path, options) for _ in range(repeats)]
        ours, docs = min(runs)
        row = {"megabytes": round(size_mb, 2), "documents": docs, "ours_mb_per_s": round(size_mb / ours, 1)}
        row.update(synth)
        row.update(bench_cache(tmp / f"cache-{label}", path, info.n_features, repeats))
        try:
            from sklearn.datasets import load_svmlight_file

            theirs = _best_of(repeats, partial(load_svmlight_file, str(path), n_features=info.n_features,
                                               zero_based=False, query_id=True))
            row.update(sklearn_mb_per_s=round(size_mb / theirs, 1), speedup_vs_sklearn=round(theirs / ours, 2))
        except ImportError:
            row["sklearn"] = "not installed (pip install -e '.[bench]')"
        out[label] = row
    return out


def bench_synth(path: Path, info: Any, queries: int, repeats: int = 3) -> dict[str, Any]:
    """Writing ``queries`` generated queries to ``path`` as ``ltr data synth`` does (best of
    ``repeats``) vs one write of the same text formatted value by value in Python."""
    qs = list(shaped_queries(info, ShapeSpec(queries, seed=0)))
    ours = _best_of(repeats, lambda: write_svmlight(path, iter(qs), qid_style="token", sparse=info.sparse))
    size_mb = path.stat().st_size / 1e6

    def python_lines() -> None:
        with open(path.with_name(path.name + ".python"), "w", encoding="ascii") as fh:
            fh.writelines(reference_svmlight_lines(qs, qid_style="token", sparse=info.sparse))

    theirs, _ = _timed(python_lines)
    return {"synth_mb_per_s": round(size_mb / ours, 1), "synth_speedup_vs_python": round(theirs / ours, 2)}


def _count_documents(path: Path, options: ReaderOptions) -> int:
    return sum(q.m for q in SVMLightReader(path, options))


def _touch(queries) -> float:
    """Consume queries, reading every value (so a memory map is really paged in).

    The read is a max, not a sum: numpy's float32 sum is pairwise and not vectorised, so it
    costs about twice the memory read it is meant to force and would measure the consumer,
    not the reader or the cache. Both sides of the cached-vs-cold ratio use this."""
    return sum(float(q.X.max()) + float(q.y.max()) for q in queries)


def bench_cache(cache_dir: Path, path: Path, n_features: int, repeats: int = 3) -> dict[str, Any]:
    """Cold parse (touching every value), cache build, and reload from the cache (open and
    validate, then touch every value); parse and reload each the best of ``repeats``."""
    from ltr_cli.data.cache import open_cached

    options = ReaderOptions(n_features=n_features)
    cold = _best_of(repeats, lambda: _touch(SVMLightReader(path, options).dense_queries(np.float32)))
    build, _ = _timed(open_cached, path, options, cache_dir, "float32")
    cached = _best_of(repeats, lambda: _touch(open_cached(path, options, cache_dir, "float32").queries()))

    def whole() -> float:  # as the compiled round loop reads a cache: one map, every block verified
        X, y = open_cached(path, options, cache_dir, "float32").arrays()
        return float(X.max()) + float(y.max())

    mapped = _best_of(repeats, whole)
    return {"cold_parse_s": round(cold, 4), "cache_build_s": round(build, 4), "cached_reload_s": round(cached, 4),
            "cached_speedup": round(cold / cached, 1), "mapped_reload_s": round(mapped, 4),
            "mapped_speedup": round(cold / mapped, 1)}


def bench_rounds(queries: int, rounds: int, repeats: int = 3) -> dict[str, Any]:
    """Per-round cost of each learner and of the floor, each the best of ``repeats`` runs
    of the same ``rounds`` rounds (a fresh learner every run, so every run does the same
    work)."""
    from ltr_cli.config.experiment import parse_config

    info = get_dataset("mslr-web10k")
    qs = list(shaped_queries(info, ShapeSpec(queries, seed=1)))
    X32 = [q.X.astype(np.float32) for q in qs]
    w = np.random.default_rng(0).normal(size=info.n_features).astype(np.float32)

    def floor_rounds() -> None:
        for i in range(rounds):
            X = X32[i % len(qs)]
            s = X @ w
            _ = X.T @ s

    floor = _best_of(repeats, floor_rounds) / rounds
    out: dict[str, Any] = {"floor_us_per_round": round(floor * 1e6, 2), "repeats": repeats, "learners": {}}
    for name, spec in LEARNERS.items():
        lspec = parse_config({"experiment": "bench", "dataset": {"kind": "separable"},
                              "learners": {name: spec}}).learners[name]

        def fresh(lspec=lspec) -> Any:  # a new generator every time: every run does the same work
            return lspec.build(info.n_features, "reverse-input", np.random.default_rng(1), rounds)

        # a throwaway learner first: loading (or compiling) its kernels is a once-per-process
        # cost, reported apart from the per-round time
        warmup, _ = _timed(_rounds, fresh(), qs, X32, min(rounds, 20))
        per = min(_timed(_rounds, fresh(), qs, X32, rounds)[0] for _ in range(repeats)) / rounds
        out["learners"][name] = {"us_per_round": round(per * 1e6, 1), "ratio_to_floor": round(per / floor, 1),
                                 "warmup_ms": round(warmup * 1e3, 1)}
    return out


def _rounds(learner: Any, qs: list, X32: list[np.ndarray], rounds: int) -> None:
    """rank + reveal + update, on the same float32 rows as the floor (the reader's and the
    cache's dtype), so the ratio compares work, not the bytes of a wider dtype. As in
    :func:`ltr_cli.protocols.online.run_online`, the feedback size is looked up once."""
    rng = np.random.default_rng(0)
    k = feedback_size(learner, "auto")
    for i in range(rounds):
        j = i % len(qs)
        X = X32[j]
        ranking = learner.rank(X, rng)
        learner.update(X, reveal(learner, ranking, qs[j].y, k))


_RSS = """
import sys
from pathlib import Path
from ltr_cli.data.cache import open_cached
from ltr_cli.data.svmlight import ReaderOptions, SVMLightReader
options = ReaderOptions(n_features=136)
if sys.argv[2] == "parse":
    queries = SVMLightReader(sys.argv[1], options).dense_queries()
else:
    queries = open_cached(Path(sys.argv[1]), options, Path(sys.argv[3]), "float32").queries()
total = sum(float(q.X.sum()) for q in queries)
# VmHWM, not ru_maxrss: Linux carries the parent's ru_maxrss across fork + exec
print(next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:")))
"""


_RUN_RSS = """
import atexit, runpy, sys
def peak():  # VmHWM, not ru_maxrss: Linux carries the parent's ru_maxrss across fork + exec
    kb = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmHWM:"))
    sys.stderr.write(f"\\nbench-peak-rss-kb {kb}\\n")
atexit.register(peak)
sys.argv = ["ltr", *sys.argv[1:]]
runpy.run_module("ltr_cli", run_name="__main__", alter_sys=True)
"""

_RSS_CONFIG = """experiment: bench_rss
seed: 0
fidelity: authors-code
dataset: {{kind: files, features: 136, files: [{file}], storage: float64}}
protocol: {{passes: 1, checkpoint_every: 0}}
metrics: {{names: [ndcg@10, ap], no_relevant: one, ties: reverse-input}}
cache: {{dir: {cache}}}
learners:
  slam-ndcg: {{type: slam-perceptron, measure: ndcg, mistake: ndcg@10, weights: level-averaged,
              margin: label-difference, step: {{rule: inv-sqrt, eta: 1.0}}}}
  alg3: {{type: alg3, mistake: ndcg@10, margin: constant, step: {{rule: constant, eta: 1.0, loss_scaled: true}}}}
"""

RSS_FACTORS = (1, 4, 16)
RSS_TARGET_MB = 600


def run_peak_rss(argv: list[str]) -> float:
    """Peak RSS (MiB) of the whole ``ltr`` process ``argv`` (``ltr``'s arguments)."""
    done = subprocess.run([*PYTHON, "-c", _RUN_RSS, *argv], capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"bench: ltr {' '.join(argv[:2])} failed: {done.stderr.strip().splitlines()[-1:]}")
    kb = next(int(line.split()[1]) for line in reversed(done.stderr.splitlines())
              if line.startswith("bench-peak-rss-kb "))
    return round(kb / 1024, 1)


def bench_compiled_memory(tmp: Path, queries: int) -> dict[str, Any]:
    """Peak RSS of ``ltr run --kernels compiled`` (two perceptron learners, float64 rows,
    one pass) on MSLR-shaped files of 1x, 4x and 16x ``queries``, each a fresh process
    reading the file's built cache; after one unmeasured run that loads (or compiles) the
    kernels."""
    from ltr_cli.data.cache import open_cached

    out: dict[str, Any] = {}
    for i, factor in enumerate((RSS_FACTORS[0], *RSS_FACTORS)):
        path = _rss_file(tmp, queries, factor)
        cache = tmp / "rss-run-cache"
        open_cached(path, ReaderOptions(n_features=136), cache, "float64")
        config = tmp / f"rss-run-{factor}.yaml"
        config.write_text(_RSS_CONFIG.format(file=path, cache=cache))
        mib = run_peak_rss(["run", str(config), "-q", "--kernels", "compiled", "--out", str(tmp / f"rss-run{i}")])
        if i:  # the first run only warms the kernels
            cached = next(cache.glob(f"{path.name}-*/X.bin"))
            out[f"file_{factor}x"] = {"megabytes": round(path.stat().st_size / 1e6, 1),
                                      "cache_megabytes": round(cached.stat().st_size / 1e6, 1), "peak_rss_mb": mib}
    first, last = out[f"file_{RSS_FACTORS[0]}x"], out[f"file_{RSS_FACTORS[-1]}x"]
    out["peak_rss_growth"] = round(last["peak_rss_mb"] / first["peak_rss_mb"] - 1, 3)
    return out


def _rss_file(tmp: Path, queries: int, factor: int) -> Path:
    path = tmp / f"rss{factor}.txt"
    if not path.exists():
        _write(path, "mslr-web10k", queries * factor, seed=factor)
    return path


def bench_memory(tmp: Path, queries: int) -> dict[str, Any]:
    """Peak RSS of a fresh process streaming a file (parsed; from its built cache) and
    one 4x larger; and of compiled ``ltr run``s at 1x, 4x and 16x (:func:`bench_compiled_memory`)."""
    from ltr_cli.data.cache import open_cached

    out: dict[str, Any] = {}
    for mode in ("parse", "cached"):
        sizes = {}
        for factor in (1, 4):
            path = _rss_file(tmp, queries, factor)
            cache_dir = tmp / "rss-cache"
            if mode == "cached":
                open_cached(path, ReaderOptions(n_features=136), cache_dir, "float32")
            kb = int(subprocess.run([*PYTHON, "-c", _RSS, str(path), mode, str(cache_dir)],
                                    capture_output=True, text=True, check=True).stdout.strip())
            sizes[factor] = {"megabytes": round(path.stat().st_size / 1e6, 1), "peak_rss_mb": round(kb / 1024, 1)}
        growth = sizes[4]["peak_rss_mb"] / sizes[1]["peak_rss_mb"] - 1
        out[mode] = {"file_1x": sizes[1], "file_4x": sizes[4], "peak_rss_growth": round(growth, 3)}
    out["compiled_run"] = bench_compiled_memory(tmp, queries)
    return out


# MSLR-WEB10K's folds rotate five subsets: Fold k trains on S_k, S_k+1, S_k+2 (mod 5)
_FOLD_PARTS = {k: [(k - 1 + j) % 5 for j in range(3)] for k in range(1, 6)}

_E2E_CONFIG = """
experiment: bench_e2e
seed: 0
fidelity: authors-code
dataset: {{kind: registry, name: mslr-web10k, root: {root}, split: train, folds: [1, 2, 3, 4, 5], storage: float32}}
protocol: {{passes: 1, checkpoint_every: 0}}
metrics: {{names: [ndcg@10, ap], no_relevant: one, ties: reverse-input}}
cache: {{dir: {cache}}}
learners:
  slam-ndcg: {{type: slam-perceptron, measure: ndcg, mistake: ndcg@10, weights: level-averaged,
              margin: label-difference, step: {{rule: inv-sqrt, eta: 1.0}}}}
  slam-ap: {{type: slam-perceptron, measure: ap, mistake: ndcg@10, weights: level-averaged,
            margin: label-difference, step: {{rule: inv-sqrt, eta: 1.0}}}}
  alg3: {{type: alg3, mistake: ndcg@10, margin: label-difference,
         step: {{rule: constant, eta: 1.0, loss_scaled: true}}}}
"""


def write_mslr_folds(root: Path, queries_per_part: int, seed: int = 0) -> dict[str, Any]:
    """MSLR-shaped ``Fold1..5/train.txt`` under ``root``: five subsets of
    ``queries_per_part`` queries (distinct qids), each train file three of them."""
    from dataclasses import replace as dc_replace

    info = get_dataset("mslr-web10k")
    root.mkdir(parents=True, exist_ok=True)
    parts = []
    for k in range(5):
        part = root / f"S{k + 1}.txt"
        first = k * queries_per_part
        write_svmlight(part, (dc_replace(q, qid=str(first + int(q.qid)))
                              for q in shaped_queries(info, ShapeSpec(queries_per_part, seed=seed + k))),
                       qid_style="token")
        parts.append(part)
    total = 0
    for fold, members in _FOLD_PARTS.items():
        target = root / f"Fold{fold}" / "train.txt"
        target.parent.mkdir(parents=True, exist_ok=True)
        with open(target, "wb") as out:
            out.writelines(parts[j].read_bytes() for j in members)
        total += target.stat().st_size
    for part in parts:
        part.unlink()
    return {"rounds": 15 * queries_per_part, "train_megabytes": round(total / 1e6, 1)}


def bench_end_to_end(tmp: Path, queries_per_part: int) -> dict[str, Any]:
    """``ltr run`` of the three perceptron-paper learners, cold (empty cache) and cached."""
    root = tmp / "mslr"
    facts = write_mslr_folds(root, queries_per_part)
    config = tmp / "e2e.yaml"
    config.write_text(_E2E_CONFIG.format(root=root, cache=tmp / "e2e-cache"))
    out: dict[str, Any] = dict(facts)
    for label in ("cold", "cached"):
        wall, _ = _timed(subprocess.run, [*PYTHON, "-m", "ltr_cli", "run", str(config), "--quiet",
                                          "--out", str(tmp / f"e2e-{label}")], check=True, capture_output=True)
        out[f"{label}_s"] = round(wall, 2)
    out["integrity"] = _integrity_cost(config, tmp / "e2e-cache", out)
    return out


def _no_rebuild(message: str) -> None:
    raise RuntimeError(f"bench: the run's cache was not reused ({message})")


def _integrity_cost(config: Path, cache_dir: Path, timings: dict[str, Any]) -> dict[str, Any]:
    """Time of the integrity work of the runs above, redone in this process: for the
    cached run, opening and validating the five caches (stat keys, meta checks, label and
    index digests) plus hashing every block of X.bin once (what reading a pass verifies);
    for the cold run, also the full content digest of the source files."""
    from ltr_cli.config.experiment import load_config
    from ltr_cli.data.cache import open_cached
    from ltr_cli.data.identity import content_digest
    from ltr_cli.data.sources import FileSource, open_source

    source = open_source(load_config(config).dataset, 0, cache_dir)
    assert isinstance(source, FileSource)
    units = source.units()

    def check_all() -> None:
        for unit in units:
            cached = open_cached(source.files[unit], source.unit_options(unit), cache_dir, "float32",
                                 log=_no_rebuild)
            cached.verify()

    cached_s, _ = _timed(check_all)
    source_s, _ = _timed(lambda: [content_digest(f) for f in source.files])
    return {"cached_checks_s": round(cached_s, 3), "source_digest_s": round(source_s, 3),
            "share_of_cached_run": round(cached_s / timings["cached_s"], 3),
            "share_of_cold_run": round((cached_s + source_s) / timings["cold_s"], 3)}


def run_bench(queries: int = 200, rounds: int = 2000, e2e_queries: int = 100) -> dict[str, Any]:
    """Every section; ``e2e_queries`` queries per MSLR subset (2,000 is MSLR-WEB10K's size:
    5 x 3 x 2,000 = 30,000 rounds)."""
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        return {"parse": bench_parse(t, queries), "per_round": bench_rounds(min(queries, 200), rounds),
                "memory": bench_memory(t, queries), "end_to_end": bench_end_to_end(t, e2e_queries)}


def format_table(result: dict[str, Any]) -> str:
    lines = ["parse (MB/s)                 ours    sklearn  speed-up   cached reload vs cold parse"]
    for label, row in result["parse"].items():
        if not isinstance(row, dict):  # scanner_load_s, repeats
            continue
        theirs = (f"{row['sklearn_mb_per_s']:7.1f}  {row['speedup_vs_sklearn']:6.2f}x" if "sklearn_mb_per_s" in row
                  else "    n/a      n/a ")  # scikit-learn not installed: said below
        lines.append(f"  {label:24s} {row['ours_mb_per_s']:7.1f}  {theirs}   {row['cached_reload_s']:.3f} s vs "
                     f"{row['cold_parse_s']:.3f} s = {row['cached_speedup']:.1f}x query by query; "
                     f"{row['mapped_reload_s']:.3f} s = {row['mapped_speedup']:.1f}x as the round loop maps it")
    lines.append(f"  (best of {result['parse']['repeats']} runs each; one-time load of the compiled scanner "
                 f"per process: {result['parse']['scanner_load_s']} s)")
    lines.append("writing them (ltr data synth)  MB/s   vs formatting each value in Python")
    for label, row in result["parse"].items():
        if isinstance(row, dict) and "synth_mb_per_s" in row:
            lines.append(f"  {label:24s} {row['synth_mb_per_s']:7.1f}  {row['synth_speedup_vs_python']:6.2f}x")
    if any(isinstance(r, dict) and "sklearn" in r for r in result["parse"].values()):
        lines.append("  sklearn: not installed (pip install -e '.[bench]'), so no speed-up is measured")
    pr = result["per_round"]
    lines.append(f"per round (us, best of {pr['repeats']})  floor (2 float32 matvecs) = {pr['floor_us_per_round']}")
    for name, row in pr["learners"].items():
        lines.append(f"  {name:24s} {row['us_per_round']:9.1f}  {row['ratio_to_floor']:7.1f}x floor")
    for mode, m in result["memory"].items():
        if mode == "compiled_run":
            files = {key[5:]: row for key, row in m.items() if key.startswith("file_")}
            sizes = "; ".join(f"{factor} file ({row['megabytes']} MB, cache {row['cache_megabytes']} MB): "
                              f"{row['peak_rss_mb']} MB" for factor, row in files.items())
            worst = max(row["peak_rss_mb"] for row in files.values())
            lines.append(f"peak RSS of ltr run, compiled path: {sizes}; growth {m['peak_rss_growth']:+.1%} "
                         f"({'under' if worst < RSS_TARGET_MB else 'OVER'} the {RSS_TARGET_MB} MB target)")
            continue
        lines.append(f"peak RSS streaming ({mode}) {m['file_1x']['megabytes']} MB: {m['file_1x']['peak_rss_mb']} MB; "
                     f"4x file ({m['file_4x']['megabytes']} MB): {m['file_4x']['peak_rss_mb']} MB; "
                     f"growth {m['peak_rss_growth']:+.1%}")
    e = result["end_to_end"]
    lines.append(f"end to end: ltr run, 3 perceptron learners x {e['rounds']} rounds on {e['train_megabytes']} MB of "
                 f"MSLR-shaped Fold1-5 train files: cold {e['cold_s']} s, cached {e['cached_s']} s")
    i = e["integrity"]
    lines.append(f"  integrity checks: cached run {i['cached_checks_s']} s = {i['share_of_cached_run']:.1%} of it "
                 f"(cache validation + every X block hashed); cold run +{i['source_digest_s']} s source digest = "
                 f"{i['share_of_cold_run']:.1%} of it")
    return "\n".join(lines) + "\n"


def main_json(result: dict[str, Any]) -> str:
    return json.dumps(result, indent=2)
