"""``ltr theory``: the papers' checkable theoretical items, computed."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ltr_cli.cli.boundary import command

theory_app = typer.Typer(help="The papers' theoretical examples and constructions, computed.",
                         no_args_is_help=True, rich_markup_mode=None)


def _vector(values: list[float], digits: int = 4) -> str:
    return "(" + ", ".join(f"{v:.{digits}f}" for v in values) + ")"


@command(theory_app, "topk-calibration")
def topk_calibration(
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Theorem 5.2's example (top-k paper, Table 1): two strategies with the same E[R] (top-1
    feedback cannot tell them apart) whose E[G(R)/Z_m(R)] sort differently. G(R) = 2^R - 1,
    Z_m(R) the ideal DCG with discount 1/log2(1+i); for R = 000, 0/0 is taken as 0."""
    from ltr_cli.learners.online.topk_theory import calibration_example

    out = calibration_example()
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    typer.echo(f"{out['source']}: m = 3, binary relevance, {out['gain']},")
    typer.echo(f"  {out['normaliser']}; {out['zero_vector']}")
    typer.echo(f"{'relevance vector':18s}" + "".join(f"{v:>6s}" for v in out["relevance_vectors"]))
    names = {"p": "p", "p_tilde": "p~"}
    for key, s in out["strategies"].items():
        typer.echo(f"{names[key]:18s}" + "".join(f"{x:6.2f}" for x in s["probabilities"]))
    typer.echo("")
    typer.echo(f"{'':4s}{'E[R]':22s}{'E[G(R)/Z_m(R)]':28s}argsort (documents, best first)")
    for key, s in out["strategies"].items():
        orders = " or ".join(str(a) for a in s["argsorts"])
        typer.echo(f"{names[key]:4s}{_vector(s['expected_relevance'], 2):22s}"
                   f"{_vector(s['expected_normalised_gain']):28s}{orders}")
    typer.echo("")
    typer.echo(f"same E[R] under p and p~ (top-1 feedback cannot tell them apart): "
               f"{'yes' if out['same_top1_feedback'] else 'no'}")
    typer.echo(f"argsorts differ (the calibrated minimisers rank differently): "
               f"{'yes' if out['argsorts_differ'] else 'no'}")
    match = all(out["matches_paper"].values())
    typer.echo(f"paper's printed values (4 decimals) and argsorts: {'match' if match else 'DIFFER'}")
