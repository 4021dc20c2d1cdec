"""``ltr interleave``: two saved models compared online by interleaving, on a labelled file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Optional

import typer

from ltr_cli.cli.clicks import EtaOpt, JsonOpt, ModelOpt, StopOpt


def _method_help() -> str:
    """The built-in methods that compare two rankers, from the registry."""
    from ltr_cli import plugins
    from ltr_cli.interleaving.methods import METHODS

    two = [n for n in plugins.names("interleaving", built_in=True) if METHODS[n].interleaves]
    return (f"the interleaving method: {', '.join(two)} or a plugin's (ltr list gives each one's definition; "
            "probabilistic: softmax tau 3)")


_METHOD_HELP = _method_help()


def interleave(
    run_a: Annotated[Path, typer.Argument(metavar="RUN_A", help="a run directory (or its models.json): ranker A")],
    run_b: Annotated[Path, typer.Argument(metavar="RUN_B", help="a run directory (or its models.json): ranker B")],
    data_file: Annotated[Path, typer.Argument(metavar="DATA", help="labelled SVMlight/LETOR file; the clicks follow its labels")],
    model: ModelOpt,
    impressions: Annotated[int, typer.Option("--impressions", metavar="N",
                                             help="how many impressions (users) to simulate, 1 to 10^7")],
    method: Annotated[str, typer.Option("--method", metavar="NAME", help=_METHOD_HELP)] = "team-draft",
    seed: Annotated[int, typer.Option("--seed", metavar="S", min=0,
                                      help="seed of numpy's default generator (queries, lists, clicks)")] = 0,
    shown: Annotated[int, typer.Option("--shown", metavar="K", min=1, help="documents shown per impression")] = 10,
    grades: Annotated[Optional[int], typer.Option(
        "--grades", metavar="2|3|5", help="the named click table's grades (default: what DATA's labels call for: "
        "2 for labels 0-1, 3 for 0-2, 5 for 0-4)")] = None, stop: StopOpt = None, eta: EtaOpt = None,
    fold: Annotated[Optional[str], typer.Option("--fold", help="which fold's model of a batch run (default: the first)")] = None,
    index_base: Annotated[Optional[int], typer.Option(
        "--index-base", min=0, max=1,
        help="feature index base of DATA for both models (default: each model reads DATA as its run read the "
        "data it was trained on: index base, qid source and the other reader settings)")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Compare two saved models online: each impression draws a query uniformly (seeded),
    interleaves the two models' rankings, simulates clicks with the click model on the true
    labels and credits them. Prints wins (A preferred), losses, ties, a two-sided sign-test
    p-value, and whether that verdict agrees with the two models' offline NDCG@10 on the
    same file. Each model reads DATA as its own run read its training data."""
    from ltr_cli.interleaving.methods import build_method
    from ltr_cli.protocols.interleave import (build_clicks, check_impressions, interleave_runs, open_ranker,
                                              rank_by, render)

    check_impressions(impressions)
    chosen = build_method(method, rankers=2)
    ranked = [rank_by(open_ranker(name, run, fold, index_base), data_file)
              for name, run in (("RUN_A", run_a), ("RUN_B", run_b))]
    clicks = build_clicks(model, ranked[0], data_file, grades, stop, eta)
    rec = interleave_runs(ranked[0], ranked[1], chosen, clicks, impressions, shown, seed, data_file)
    typer.echo(json.dumps(rec, indent=2) if as_json else "\n".join(render(rec)))
