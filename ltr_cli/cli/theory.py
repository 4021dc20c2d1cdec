"""``ltr theory``: the papers' checkable theoretical items, computed."""

from __future__ import annotations

import json
import math
from typing import Annotated, Any, Optional

import typer

from ltr_cli.cli.boundary import command
from ltr_cli.errors import LtrError

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


def _learner_builder(learner: str, settings: list[str], features: int, ties: str, rounds: int) -> Any:
    """``build(seed)``: a fresh learner of type ``learner`` with the ``--set`` settings, its
    own generator seeded with ``seed``; a one-line error for an unknown or batch type or a
    setting its config model refuses."""
    import numpy as np
    from pydantic import ValidationError

    from ltr_cli.config.errors import format_validation
    from ltr_cli.config.experiment import apply_overrides
    from ltr_cli.learners import registry

    if learner not in registry.REGISTRY:
        raise LtrError(f"--learner {learner!r}: unknown learner type; the online types are "
                       f"{', '.join(registry.ONLINE_TYPES)}")
    if registry.REGISTRY[learner].kind != "online":
        raise LtrError(f"--learner {learner!r} is a batch learner; Theorem 9 is about online learners "
                       f"({', '.join(registry.ONLINE_TYPES)})")
    if getattr(registry.REGISTRY[learner], "feedback_kind", "labels") == "clicks":
        raise LtrError(f"--learner {learner!r} learns from clicks; Theorem 9's adversary reveals labels to a "
                       "deterministic learner (the click learners randomise their shown lists)")
    raw = apply_overrides({"type": learner}, settings, "--set")
    if raw.get("type") != learner:
        raise LtrError("--set type=...: give the learner type with --learner")
    cls = registry.REGISTRY[learner]
    try:
        spec: Any = cls.model_validate(raw)
    except ValidationError as exc:
        raise format_validation("--set", exc, cls) from None
    return lambda seed: spec.build(features, ties, np.random.default_rng(seed), rounds, "paper")


@command(theory_app, "lower-bound")
def lower_bound(
    learner: Annotated[str, typer.Option("--learner", metavar="TYPE", help="online learner type (ltr list), deterministic")],
    margin: Annotated[float, typer.Option("--margin", help="gamma, the margin the data are separable with")],
    radius: Annotated[float, typer.Option("--radius", help="R_X, the largest document norm")] = 1.0,
    features: Annotated[Optional[int], typer.Option("--features", min=1, help="d (default: the least the theorem allows, ceil(R_X^2/gamma^2))")] = None,
    docs: Annotated[int, typer.Option("--docs", min=2, help="m, documents per query")] = 3,
    set_: Annotated[Optional[list[str]], typer.Option("--set", metavar="KEY=VALUE", help="a learner setting, as in a config's learner entry: --set step.eta=0.5 (repeatable)")] = None,
    ties: Annotated[str, typer.Option("--ties", help="input-order | reverse-input: how the learner ranks tied scores")] = "input-order",
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """Theorem 9 (perceptron paper): play the adversary of Eq. 25 against a deterministic
    online learner for T = floor(R_X^2/gamma^2) - 1 rounds. The relevance of round i depends
    on the learner's ranking (document 1 first: document 2 relevant, else document 1), so
    every round is a mistake: NDCG induced loss >= 1 - 1/log2(3), AP >= 1/2. The paper's w*
    separates the data with margin gamma. The theorem holds for deterministic algorithms
    only: a learner that randomises (random, RTop-kF exploring) is refused."""
    from fractions import Fraction

    from ltr_cli.learners.online.theory import lower_bound_problem, lower_bound_rounds
    from ltr_cli.protocols.adversary import play

    if ties not in ("input-order", "reverse-input"):
        raise LtrError(f"--ties {ties!r}: expected input-order or reverse-input (random ties make the learner "
                       "randomise)")
    problem = lower_bound_problem(radius, margin, features, docs)  # finite, normal, T within the game
    if problem is not None:
        raise LtrError(f"--radius {radius:g} --margin {margin:g}: {problem}")
    if features is None:
        features = max(math.ceil((Fraction(repr(radius)) / Fraction(repr(margin))) ** 2), 1)
    build = _learner_builder(learner, set_ or [], features, ties, lower_bound_rounds(radius, margin))
    game = play(build, radius, margin, features, docs)
    if not game.deterministic:
        assert game.differs is not None
        raise LtrError(f"--learner {learner}: it randomises its rankings (with seed {game.differs[0]} it ranked "
                       f"otherwise in round {game.differs[1]}); Theorem 9 is about deterministic algorithms"
                       + ("; RTop-kF explores with probability gamma (--set gamma_scale=0 turns that off)"
                          if learner == "rtopkf" else ""))
    out = game.report()
    out["learner"] = {"type": learner, "settings": set_ or [], "ties": ties}
    if as_json:
        typer.echo(json.dumps(out, indent=2))
        return
    _print_game(out)


def _print_game(out: dict[str, Any]) -> None:
    T, sep, bound, cum = out["rounds"], out["separable"], out["bound"], out["cumulative"]
    typer.echo(f"{out['theorem']}: R_X = {out['R_X']:g}, gamma = {out['gamma']:g}, d = {out['features']}, "
               f"m = {out['docs']}: T = floor(R_X^2/gamma^2) - 1 = {T} rounds")
    typer.echo(f"learner: {out['learner']['type']} {' '.join(out['learner']['settings'])}".rstrip()
               + f" (deterministic: {out['deterministic_check']})")
    typer.echo(f"{'round':>6s} {'relevant':>8s}  {'shown ranking':16s} {'NDCG loss':>9s} {'AP loss':>8s}")
    per = out["per_round"]
    for i in range(T):
        typer.echo(f"{i + 1:6d} {per['relevant'][i]:8d}  {' '.join(map(str, per['ranking'][i])):16s} "
                   f"{per['ndcg_loss'][i]:9.4f} {per['ap_loss'][i]:8.4f}")
    yes = {True: "yes", False: "NO"}
    typer.echo(f"cumulative NDCG loss {cum['ndcg_loss']:.4f} >= T (1 - 1/log2 3) = {bound['ndcg']:.4f}: "
               f"{yes[out['meets_bound']['ndcg']]}")
    typer.echo(f"cumulative AP loss {cum['ap_loss']:.4f} >= T / 2 = {bound['ap']:.4f}: "
               f"{yes[out['meets_bound']['ap']]}")
    typer.echo(f"every round a mistake: {yes[out['every_round_a_mistake']]}; every round's loss at least its "
               f"floor: {yes[out['every_round_meets_its_floor']]}")
    typer.echo(f"separable: w* (proof of Theorem 9) has norm {sep['w_star_norm']:.4f} <= 1: {yes[sep['unit_ball']]}; "
               f"margin {sep['min_margin']:.6g} .. {sep['max_margin']:.6g}, gamma = {out['gamma']:g} on every round: "
               f"{yes[sep['margin_is_gamma']]}")


@command(theory_app, "bounds")
def bounds(
    gap: Annotated[float, typer.Option("--gap", help="the measure gap E(pi*) - E(pi), in (0, 1]")] = 0.5,
    out: Annotated[Optional[str], typer.Option("--out", help="folder for type_two_bounds.png/.pdf (default: plots)")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="the curves' values instead of a figure")] = False,
) -> None:
    """Figure 1 of the direct-optimisation paper: the loss (6) of a pair of permutations and
    its type two upper bounds (exponential, logistic, hinge = Eq. 7, SVMmap's = Eq. 9) as
    functions of the score difference F(pi*) - F(pi)."""
    from pathlib import Path

    from ltr_cli.learners.batch.type_two_bounds import curves

    if not (0 < gap <= 1):
        raise LtrError(f"--gap {gap:g}: the measure gap E(pi*) - E(pi) must be in (0, 1]")
    values = curves(gap)
    at_least = all(bool((values[name] >= values["loss"]).all()) for name in values if name not in ("x", "loss"))
    if as_json:
        typer.echo(json.dumps({"gap": gap, "every_bound_at_least_the_loss": at_least,
                               **{k: [round(float(v), 12) for v in arr] for k, arr in values.items()}}))
        return
    from ltr_cli.reports.bound_curves import plot_bounds

    for path in plot_bounds(values, gap, Path(out) if out else Path("plots")):
        typer.echo(str(path))
    typer.echo(f"every bound >= the loss on the grid: {'yes' if at_least else 'NO'}", err=True)
