"""``ltr clicks``: a click model's exact law on a shown list, and seeded samples of it."""

from __future__ import annotations

import json
from typing import Annotated, Any, Optional

import typer

from ltr_cli.cli.boundary import command
from ltr_cli.errors import LtrError

clicks_app = typer.Typer(help="Click models: the exact law of the clicks on a shown list, and samples.",
                         no_args_is_help=True, rich_markup_mode=None)

ModelOpt = Annotated[str, typer.Option(
    "--model", metavar="NAME", help="perfect, navigational, informational, almost-random, random (cascades), "
    "pbm, examine-stop, ultra-pbm, trust-bias; or a custom table in YAML flow style, e.g. '{click: [0.1, 0.9], stop: [0.2, 0.5]}' "
    "(see docs/clicks.md)")]
LabelsOpt = Annotated[str, typer.Option(
    "--labels", metavar="L1,L2,...", help="the shown documents' labels, position 1 first, e.g. 4,0,2,1 "
    "(at most 20)")]
GradesOpt = Annotated[Optional[int], typer.Option(
    "--grades", metavar="2|3|5", help="the named table for labels of 2, 3 or 5 grades (default: 5; "
    "a custom table: its length)")]
StopOpt = Annotated[Optional[str], typer.Option(
    "--stop", metavar="after-click|any-position", help="a cascade's stop rule: only after a click (default), "
    "or at any position, clicked or not, as the reference code draws it")]
EtaOpt = Annotated[Optional[float], typer.Option(
    "--eta", metavar="X", help="pbm and examine-stop: examination (1/rank)^X; ultra-pbm and trust-bias: "
    "ULTRA's examination table^X (default 1)")]
JsonOpt = Annotated[bool, typer.Option("--json", help="print JSON")]


def _model_and_labels(model: str, labels: str, grades: int | None, stop: str | None,
                      eta: float | None) -> tuple[Any, list[int]]:
    from ltr_cli.clicks.spec import build_model, parse_labels

    shown = parse_labels(labels)
    return build_model(model, grades, stop, eta), shown


def _print(rec: dict[str, Any], as_json: bool, exact: bool) -> None:
    from ltr_cli.clicks.records import render

    if as_json:
        typer.echo(json.dumps(rec, indent=2))
    else:
        typer.echo("\n".join(render(rec, exact)))


@command(clicks_app, "probabilities")
def probabilities(model: ModelOpt, labels: LabelsOpt, grades: GradesOpt = None, stop: StopOpt = None,
                  eta: EtaOpt = None, as_json: JsonOpt = False) -> None:
    """The exact law of the clicks on the shown list, by enumeration of its 2^n click
    patterns: P(click) at each position (marginal) and the probability of each click
    pattern (a 0/1 string, position 1 first; patterns of probability 0 are left out and
    counted in zero_patterns)."""
    from ltr_cli.clicks.records import exact_record

    built, shown = _model_and_labels(model, labels, grades, stop, eta)
    _print(exact_record(built, shown), as_json, exact=True)


@command(clicks_app, "sample")
def sample(model: ModelOpt, labels: LabelsOpt, grades: GradesOpt = None, stop: StopOpt = None,
           eta: EtaOpt = None,
           draws: Annotated[int, typer.Option("--draws", metavar="N", min=1,
                                              help="how many users to simulate (at most 10^8)")] = 10_000,
           seed: Annotated[int, typer.Option("--seed", metavar="S", min=0,
                                             help="seed of numpy's default generator")] = 0,
           as_json: JsonOpt = False) -> None:
    """Simulated clicks on the shown list: the click frequency at each position and the
    frequency of each click pattern seen. The same seed gives the same output."""
    from ltr_cli.clicks.records import MAX_DRAWS, sample_record

    if draws > MAX_DRAWS:
        raise LtrError(f"--draws {draws}: at most {MAX_DRAWS} per command")
    built, shown = _model_and_labels(model, labels, grades, stop, eta)
    _print(sample_record(built, shown, seed, draws), as_json, exact=False)
