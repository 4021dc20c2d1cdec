"""``ltr bench``: speed and memory as ratios measured side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ltr_cli.errors import LtrError


def bench(
    queries: Annotated[int, typer.Option("--queries", min=5, help="queries per generated file")] = 200,
    rounds: Annotated[int, typer.Option("--rounds", min=10, help="rounds per learner for the per-round cost")] = 2000,
    e2e_queries: Annotated[int, typer.Option("--e2e-queries", min=1, help="queries per MSLR subset for the end-to-end run (2000 = MSLR-WEB10K's 30,000 rounds)")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    batch: Annotated[bool, typer.Option("--batch", help="the batch solvers and ltr eval instead (RankSVM vs scikit-learn's pairwise LinearSVC, SVMmap, PermuRank, ltr eval vs pytrec_eval)")] = False,
    eval_queries: Annotated[int, typer.Option("--eval-queries", min=1, help="--batch: queries of the ltr eval comparison (about 116 documents each)")] = 20000,
    online: Annotated[bool, typer.Option("--online", help="online runs end to end instead: every learner's per-round cost as whole ltr processes (vs the two-matvec floor and its Python reference path), a 16-rate sweep vs one run, four learners vs one, checkpoint overhead")] = False,
    data: Annotated[Path | None, typer.Option("--data", metavar="<path>", exists=True, dir_okay=False, help="--online: measure on this SVMlight file in MSLR-WEB's layout (136 features, qids) instead of generated data")] = None,
    startup: Annotated[bool, typer.Option("--startup", help="start-up instead: a one-round ltr run vs importing numpy, pandas and pyarrow (target 2x), the demo with an empty kernel cache and HOME vs warm (target 3x), ltr plot")] = False,
    quick: Annotated[bool, typer.Option("--quick", help="--startup: one process each on a smaller demo (checks the bench runs; not a measurement)")] = False,
) -> None:
    """Measure parse speed (vs scikit-learn), cached reload (vs cold parse), per-round cost
    (vs two matrix-vector passes), end-to-end 'ltr run' time (cold, cached) and peak
    memory growth, as ratios measured side by side in one run; --batch: the batch
    solvers and 'ltr eval' instead."""
    from ltr_cli.bench.command import format_table, main_json, run_bench

    if data is not None and not online:
        raise LtrError("--data measures online runs on a file: add --online")
    if quick and not startup:
        raise LtrError("--quick is a smaller --startup bench: add --startup")
    if startup:
        from ltr_cli.bench.startup import format_startup_table, run_startup_bench

        found = run_startup_bench(quick=quick)
        typer.echo(main_json(found) if as_json else format_startup_table(found), nl=as_json)
        return
    if online:
        from ltr_cli.bench.online import format_online_table, run_online_bench

        found = run_online_bench(queries=max(queries, 50), data=data)
        typer.echo(main_json(found) if as_json else format_online_table(found), nl=as_json)
        return
    if batch:
        from ltr_cli.bench.batch import format_batch_table, run_batch_bench

        found = run_batch_bench(eval_queries=eval_queries)
        typer.echo(main_json(found) if as_json else format_batch_table(found), nl=as_json)
        return
    result = run_bench(queries, rounds, e2e_queries)
    typer.echo(main_json(result) if as_json else format_table(result), nl=as_json)
