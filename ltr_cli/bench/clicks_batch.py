"""``ltr bench --batch``'s click-log figure: simulating a fold's click log (logging
RankSVM, ULTRA's position-based model at eta 1, the ranking policy), writing it to Parquet,
summing its IPS-weighted pairs and fitting IPS-RankSVM on them (C = 1), each timed, on
generated MSLR-shaped training queries."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.learners.batch.common import Queries


def bench_click_ranksvm(queries: Queries, sessions: int, clip: float = 10.0) -> dict[str, Any]:
    from ltr_cli.clicklog.logfile import write_log
    from ltr_cli.clicklog.pairs import click_pairs
    from ltr_cli.clicklog.signal import GenerateSpec
    from ltr_cli.learners.batch.click_data import ClickData, fold_log, true_propensity
    from ltr_cli.learners.batch.ranksvm import fit_click_ranksvm

    gen = GenerateSpec(model="ultra-pbm", eta=1.0, sessions=sessions)
    start = time.perf_counter()
    logged, meta = fold_log(queries, gen, 1)
    log_s = time.perf_counter() - start
    with tempfile.TemporaryDirectory() as tmp:
        start = time.perf_counter()
        write_log(Path(tmp) / "log.parquet", logged, [str(i) for i in range(len(queries))], meta)
        write_s = time.perf_counter() - start
    weights = np.minimum(1.0 / true_propensity(meta["model"], gen.shown, "bench"), clip)
    data = ClickData(logged, weights, "ips")
    start = time.perf_counter()
    pairs = click_pairs(logged, weights, max(len(y) for _, y in queries))
    pairs_s = time.perf_counter() - start
    start = time.perf_counter()
    model = fit_click_ranksvm(queries, data, 1.0, pairs=pairs)
    fit_s = time.perf_counter() - start
    return {"sessions": sessions, "rows": int(len(logged.session)), "clicks": int(logged.click.sum()),
            "pairs": int(len(pairs.query)), "log_s": round(log_s, 2), "write_s": round(write_s, 2),
            "pairs_s": round(pairs_s, 2), "fit_s": round(fit_s, 2),
            "iterations": model.info["convergence"]["iterations"]}


def format_click_rows(rows: list[dict[str, Any]], queries: int) -> list[str]:
    lines = [f"IPS-RankSVM on a click log ({queries} MSLR-shaped queries; ultra-pbm eta 1, top 10)",
             "  sessions       clicks   distinct pairs  log (s)  write (s)  pairs (s)  fit (s)  Newton its"]
    for r in rows:
        lines.append(f"  {r['sessions']:9d}  {r['clicks']:11d}  {r['pairs']:15d}  {r['log_s']:7.2f}  {r['write_s']:9.2f}"
                     f"  {r['pairs_s']:9.2f}  {r['fit_s']:7.2f}  {r['iterations']:10d}")
    return lines
