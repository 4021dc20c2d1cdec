"""``ltr bench``: speed and memory as ratios measured side by side."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ltr_cli import console
from ltr_cli.errors import LtrError


def bench(
    queries: Annotated[int, typer.Option("--queries", min=5, help="queries per generated file")] = 200,
    rounds: Annotated[int, typer.Option("--rounds", min=10, help="rounds per learner for the per-round cost")] = 2000,
    e2e_queries: Annotated[int, typer.Option("--e2e-queries", min=1, help="queries per MSLR subset for the end-to-end run (2000 = MSLR-WEB10K's 30,000 rounds)")] = 100,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON")] = False,
    batch: Annotated[bool, typer.Option("--batch", help="the batch solvers and ltr eval instead (RankSVM vs scikit-learn's pairwise LinearSVC, SVMmap, PermuRank, ltr eval vs pytrec_eval)")] = False,
    eval_queries: Annotated[int, typer.Option("--eval-queries", min=1, help="--batch: queries of the ltr eval comparison (about 116 documents each)")] = 20000,
    online: Annotated[bool, typer.Option("--online", help="online runs end to end instead: every learner's per-round cost as whole ltr processes (vs the two-matvec floor and its Python reference path), a 16-rate sweep vs one run, four learners vs one, checkpoint overhead")] = False,
    letor2: Annotated[bool, typer.Option("--letor2", help="--batch: only the LETOR 2.0 figure: the three configs/letor2_*.yaml, every learner's full CV grid on generated folds of the real sizes, wall seconds per dataset and learner and the total against the 10-minute budget")] = False,
    letor2_scale: Annotated[float, typer.Option("--letor2-scale", min=0.01, max=1.0, help="--batch: the LETOR 2.0 figure's data size, a fraction of the real numbers of queries and documents per query (0.2 for a quick check)")] = 1.0,
    letor2_learner: Annotated[list[str] | None, typer.Option("--letor2-learner", metavar="NAME", help="--batch: time only this learner of the LETOR 2.0 configs (repeatable)")] = None,
    letor2_skip: Annotated[list[str] | None, typer.Option("--letor2-skip", metavar="NAME", help="--batch: leave this learner out of the LETOR 2.0 figure (repeatable)")] = None,
    letor2_dataset: Annotated[list[str] | None, typer.Option("--letor2-dataset", metavar="NAME", help="--batch: time only this dataset of the LETOR 2.0 figure: letor2-ohsumed, letor2-td2003 or letor2-td2004 (repeatable)")] = None,
    click_sessions: Annotated[list[int] | None, typer.Option("--click-sessions", metavar="N", min=1, max=100_000_000, help="--batch: sessions of the click-log figure (simulate, write, sum the IPS pairs, fit IPS-RankSVM on 600 MSLR-shaped queries; repeatable; default 100000)")] = None,
    configs: Annotated[Path | None, typer.Option("--configs", metavar="<dir>", exists=True, file_okay=False, help="--batch: the folder holding letor2_*.yaml (default: the repository's configs/)")] = None,
    data: Annotated[Path | None, typer.Option("--data", metavar="<path>", exists=True, dir_okay=False, help="--online: measure on this SVMlight file in MSLR-WEB's layout (136 features, qids) instead of generated data")] = None,
    startup: Annotated[bool, typer.Option("--startup", help="start-up instead: a one-round ltr run vs importing numpy, pandas and pyarrow (target 2x; on the compiled path, in CPU: 1.5x), the demo and configs/mslr_slam.yaml on a 9,000-query MSLR-shaped file with an empty kernel cache and HOME vs warm (target 3x wall, 1.5x CPU), ltr plot, the authors' job under Octave if installed")] = False,
    quick: Annotated[bool, typer.Option("--quick", help="--startup: one process each on a smaller demo (checks the bench runs; not a measurement)")] = False,
    authors_code: Annotated[Path | None, typer.Option("--authors-code", metavar="<dir>", help="--startup: a checkout of the perceptron paper's authors' code (sougatachaudhuri/Online_Ranking_Project): time their 43-query MSLR job under GNU Octave against ltr's (target 10x; needs --authors-data)")] = None,
    authors_data: Annotated[Path | None, typer.Option("--authors-data", metavar="<file>", help="--startup: the data of the authors' job, the first 5,000 lines (43 queries) of MSLR-WEB10K Fold1 train.txt")] = None,
    authors_only: Annotated[bool, typer.Option("--authors-only", help="--startup: only the authors' job against ltr's, not the other start-up figures")] = False,
    clicks: Annotated[bool, typer.Option("--clicks", help="the click-driven learners instead (pdgd, p-dbgd, td-dbgd, p-mgd): CPU per impression of ltr run vs the click literature's reference code on the same generated data, and their ratio (goal 20x)")] = False,
    reference: Annotated[Path | None, typer.Option("--reference", metavar="<dir>", file_okay=False, help="--clicks: a checkout of HarrieO/OnlineLearningToRank to time (default: $LTR_CLICKS_REFERENCE); --neural: an allRank checkout (default: $LTR_ALLRANK); without either its column is skipped")] = None,
    impressions: Annotated[int, typer.Option("--impressions", min=20, help="--clicks: impressions per timed run")] = 1000,
    click_model: Annotated[str, typer.Option("--click-model", metavar="perfect|navigational|informational", help="--clicks: the click model of the timed runs")] = "navigational",
    neural: Annotated[bool, typer.Option("--neural", help="neural training instead: documents per second of an epoch of the MLP 136-128-1 and the NeuralNDCG paper's Transformer (ListNet) on generated MSLR-shaped data, against the float32 matmul FLOP floor and allRank's own loop (--reference), the first epoch's compile time and the peak memory of one epoch on a WEB30K-sized fold")] = False,
    reference_python: Annotated[str | None, typer.Option("--reference-python", metavar="<python>", help="--neural: a Python with torch, scikit-learn and attrs that runs allRank (default: $LTR_ALLRANK_PYTHON, else this Python)")] = None,
    neural_queries: Annotated[int, typer.Option("--neural-queries", min=2, help="--neural: generated training queries of the speed figures (about 120 documents each)")] = 1000,
    neural_docs: Annotated[int, typer.Option("--neural-docs", min=100, help="--neural: documents of the fold of the memory figure (WEB30K's training fold: 2,270,000)")] = 2_270_000,
    neural_model: Annotated[list[str] | None, typer.Option("--neural-model", metavar="mlp|transformer", help="--neural: time only this model (repeatable; default both)")] = None,
    neural_epochs: Annotated[int, typer.Option("--neural-epochs", min=1, max=100, help="--neural: epochs of ltr's timed runs (the first compiles)")] = 3,
) -> None:
    """Measure parse speed (vs scikit-learn), cached reload (vs cold parse), per-round cost
    (vs two matrix-vector passes), end-to-end 'ltr run' time (cold, cached) and peak
    memory growth, as ratios measured side by side in one run; --batch: the batch
    solvers and 'ltr eval' instead, and the LETOR 2.0 configs' full CV grids against their
    10-minute budget (--letor2: only that figure; --letor2-scale 0.2: on smaller data);
    --clicks: the click-driven learners' CPU per impression against the reference code;
    --neural: neural training's documents per second against its FLOP floor and allRank."""
    from ltr_cli.bench.command import format_table, main_json, run_bench

    if data is not None and not online:
        raise LtrError("--data measures online runs on a file: add --online")
    if quick and not startup:
        raise LtrError("--quick is a smaller --startup bench: add --startup")
    if (authors_code is not None or authors_data is not None or authors_only) and not startup:
        raise LtrError("--authors-code, --authors-data and --authors-only time the authors' job in the start-up "
                       "bench: add --startup")
    if (reference_python is not None or neural_queries != 1000 or neural_docs != 2_270_000 or neural_epochs != 3
            or neural_model) and not neural:
        raise LtrError("--reference-python, --neural-queries, --neural-docs, --neural-model and --neural-epochs time neural training: "
                       "add --neural")
    if neural:
        from ltr_cli.bench.neural import find_reference as find_allrank
        from ltr_cli.bench.neural import format_neural_table, run_neural_bench
        from ltr_cli.bench.neural_child import MODELS

        chosen = tuple(dict.fromkeys(neural_model or MODELS))
        unknown = [m for m in chosen if m not in MODELS]
        if unknown:
            raise LtrError(f"--neural-model {unknown[0]!r}: give {' or '.join(MODELS)}")
        found = run_neural_bench(find_allrank(reference, reference_python), neural_queries, neural_docs, neural_epochs,
                                 chosen)
        typer.echo(main_json(found) if as_json else format_neural_table(found), nl=as_json)
        return
    if (reference is not None or impressions != 1000 or click_model != "navigational") and not clicks:
        raise LtrError("--reference, --impressions and --click-model time the click learners: add --clicks "
                       "(--reference also names allRank for --neural)")
    if clicks:
        from ltr_cli.bench.clicks import find_reference, format_clicks_table, run_clicks_bench

        if click_model not in ("perfect", "navigational", "informational"):
            raise LtrError(f"--click-model {click_model!r}: give perfect, navigational or informational")
        found = run_clicks_bench(find_reference(reference), impressions=impressions, model=click_model)
        typer.echo(main_json(found) if as_json else format_clicks_table(found), nl=as_json)
        return
    if startup:
        from ltr_cli.bench.authors import authors_figures, check_inputs, format_authors_lines
        from ltr_cli.bench.startup import format_startup_table, run_startup_bench

        authors = check_inputs(authors_code, authors_data)
        if authors_only:
            if authors is None:
                raise LtrError("--authors-only times the authors' job: give --authors-code DIR and --authors-data FILE")
            found = {"octave": authors_figures(authors, quick)}
            typer.echo(main_json(found) if as_json else "\n".join(format_authors_lines(found["octave"])))
            return
        found = run_startup_bench(quick=quick, authors=authors)
        typer.echo(main_json(found) if as_json else format_startup_table(found), nl=as_json)
        return
    if online:
        from ltr_cli.bench.online import format_online_table, run_online_bench

        found = run_online_bench(queries=max(queries, 50), data=data)
        typer.echo(main_json(found) if as_json else format_online_table(found), nl=as_json)
        return
    if letor2 and not batch:
        raise LtrError("--letor2 is a part of the batch figures: add --batch")
    if batch:
        from ltr_cli.bench.batch import format_batch_table, run_batch_bench
        from ltr_cli.bench.letor2 import format_letor2_table, run_letor2_bench

        found = {} if letor2 else run_batch_bench(eval_queries=eval_queries,
                                                  click_sessions=click_sessions or [100_000])
        found["letor2"] = run_letor2_bench(letor2_scale, configs, letor2_learner, letor2_skip, letor2_dataset,
                                           log=None if as_json else console.note)
        text = (format_batch_table(found) if not letor2 else "") + format_letor2_table(found["letor2"])
        typer.echo(main_json(found) if as_json else text, nl=as_json)
        return
    result = run_bench(queries, rounds, e2e_queries)
    typer.echo(main_json(result) if as_json else format_table(result), nl=as_json)
