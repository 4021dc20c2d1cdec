"""``ltr bench --startup``: what a researcher waits for before and around the first round,
as whole processes measured side by side in one invocation.

* imports: ``python -c 'import numpy, pandas, pyarrow'``, the floor any run pays;
* fixed cost: a one-round ``ltr run`` of the demo config on a one-query stream (so no
  cost grows with the data), kernel cache warm; target: at most 2x the imports;
* the demo, ``ltr run configs/simulated_separable.yaml``, cold (an empty kernel cache and
  an empty HOME in a temporary directory) and warm (the same directories again); target:
  cold at most 3x warm. ``ltr plot`` of its results is timed beside it.

Each figure is the best of several processes (the least disturbed): the imports and the
one-round run 5 each, taken in alternation so both sides of their ratio see the same load;
the demo 3 times, each cold run with fresh directories and followed by its warm run. The machine's load average is printed
with the ratios: the ratios, taken side by side, are what compares across machines.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from ltr_cli.bench.processes import timed_process
from ltr_cli.errors import LtrError

DEMO = Path(__file__).resolve().parents[2] / "configs" / "simulated_separable.yaml"
FIXED_TARGET = 2.0
COLD_TARGET = 3.0
IMPORTS = "import numpy, pandas, pyarrow"


def _process(argv: list[str], env: dict[str, str]) -> float:
    """Seconds of one whole process (:func:`~ltr_cli.bench.processes.timed_process`)."""
    return timed_process(argv, env, f"bench --startup: '{' '.join(argv[2:5])}'")


def _ltr(*args: str) -> list[str]:
    return [sys.executable, "-m", "ltr_cli", *args]


def _fresh_env(root: Path) -> dict[str, str]:
    """The environment of a first run on a new account: HOME and the kernel cache empty
    directories under ``root``; no XDG cache, no LTR_KERNELS (the run plans its path)."""
    home, cache = root / "home", root / "numba-cache"
    home.mkdir(mode=0o700)
    cache.mkdir(mode=0o700)
    env = {k: v for k, v in os.environ.items() if k not in ("XDG_CACHE_HOME", "LTR_KERNELS", "NUMBA_CACHE_DIR")}
    return {**env, "HOME": str(home), "NUMBA_CACHE_DIR": str(cache)}


def run_startup_bench(quick: bool = False, config: Path | None = None) -> dict[str, Any]:
    """The figures (seconds, ratios, targets). ``quick``: one process each and a 50-query
    demo, no plot (a smoke test of the bench itself, not a measurement)."""
    config = config or DEMO
    if not config.is_file():
        raise LtrError(f"bench --startup: the demo config {config} is not there; run the bench from a "
                       "checkout of the repository")
    repeats = 1 if quick else 3
    pairs = 1 if quick else 5  # imports and a one-round run: cheap, so more of them
    demo_set = ["--set", "dataset.queries=50"] if quick else []
    out: dict[str, Any] = {"repeats": repeats, "pairs": pairs, "quick": quick, "load_average": _load()}
    with tempfile.TemporaryDirectory(prefix="ltr-bench-startup-") as tmp:
        root = Path(tmp)
        warm_env = {k: v for k, v in os.environ.items() if k != "LTR_KERNELS"}  # this account's kernel cache
        one = ["--set", "dataset.queries=1", "--set", "protocol.max_rounds=1"]
        imports, fixed, colds, warms, plots = [], [], [], [], []
        for i in range(pairs):  # in alternation: both sides of a ratio see the same load
            imports.append(_process([sys.executable, "-c", IMPORTS], warm_env))
            fixed.append(_process(_ltr("run", str(config), "-q", "--out", str(root / f"one{i}"), *one), warm_env))
        for i in range(repeats):
            (root / f"cold{i}").mkdir()
            env = _fresh_env(root / f"cold{i}")
            target = root / f"cold{i}" / "results"
            colds.append(_process(_ltr("run", str(config), "-q", "--out", str(target), *demo_set), env))
            again = root / f"cold{i}" / "again"
            warms.append(_process(_ltr("run", str(config), "-q", "--out", str(again), *demo_set), env))
            if not quick:
                plots.append(_process(_ltr("plot", str(again / "simulated_separable"), "--out",
                                           str(root / f"cold{i}" / "figures")), env))
    imports_s, fixed_s = min(imports), min(fixed)
    out.update(imports_s=round(imports_s, 3), one_round_s=round(fixed_s, 3), fixed_ratio=round(fixed_s / imports_s, 2),
               fixed_target=FIXED_TARGET, demo_cold_s=round(min(colds), 3), demo_warm_s=round(min(warms), 3),
               cold_ratio=round(min(colds) / min(warms), 2), cold_target=COLD_TARGET,
               plot_s=round(min(plots), 3) if plots else None, load_average_after=_load())
    return out


def _load() -> str:
    try:
        return " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "n/a"


def format_startup_table(r: dict[str, Any]) -> str:
    ok = {True: "meets", False: "MISSES"}
    lines = [
        f"start-up (whole processes, best of {r['pairs']} (imports, one round: in alternation) and "
        f"{r['repeats']} (demo){', quick: not a measurement' if r['quick'] else ''}; "
        f"load average {r['load_average']} before, {r['load_average_after']} after)",
        f"  {repr(IMPORTS).join(['python -c ', '']):46s} {r['imports_s']:7.3f} s",
        f"  ltr run, one round, warm                       {r['one_round_s']:7.3f} s",
        f"  fixed cost: one round / imports                {r['fixed_ratio']:7.2f}x   "
        f"({ok[r['fixed_ratio'] <= r['fixed_target']]} the target {r['fixed_target']:g}x)",
        f"  demo ltr run, cold (empty kernel cache, HOME)  {r['demo_cold_s']:7.3f} s",
        f"  demo ltr run, warm                             {r['demo_warm_s']:7.3f} s",
        f"  first run: cold / warm                         {r['cold_ratio']:7.2f}x   "
        f"({ok[r['cold_ratio'] <= r['cold_target']]} the target {r['cold_target']:g}x)",
    ]
    if r.get("plot_s") is not None:
        lines.append(f"  demo ltr plot                                  {r['plot_s']:7.3f} s")
    return "\n".join(lines)
