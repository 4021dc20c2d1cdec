"""``ltr list``: learners, datasets, metrics, neural losses, formats, click models,
interleaving methods, estimators and plugins, with where each comes from."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer


def list_(
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """List learners, datasets, metrics, neural losses, data formats, click models,
    interleaving methods, estimators and plugins, each with its definition (and where it
    comes from)."""
    from ltr_cli import plugins
    from ltr_cli.clicklog.estimators import ESTIMATORS
    from ltr_cli.clicks.base import CLICK_MODELS
    from ltr_cli.data.formats import formats
    from ltr_cli.interleaving.methods import METHODS
    from ltr_cli.data.registry import DATASETS
    from ltr_cli.learners.online import family  # noqa: F401 - the registry of ltr_cli.families
    from ltr_cli.learners.presets import PRESETS
    from ltr_cli.learners.registry import learner_help
    from ltr_cli.measures.conventions import CONVENTIONS
    from ltr_cli.measures.registry import metric_help
    from ltr_cli.neural import scorers
    from ltr_cli.neural.losses import kinds as loss_kinds  # also the registry of ltr_cli.losses

    data = {
        "learners": learner_help(),
        "presets": {name: p.summary() for name, p in PRESETS.items()},
        "datasets": {k: f"{d.title}: {d.n_features} features, labels {d.labels}, qid from {d.qid_source}"
                     for k, d in DATASETS.items()},
        "generated": {"separable": "perceptron paper's separable set (variant authors|paper)",
                      "shaped": "queries shaped like a registry dataset (like: NAME)"},
        "metrics": metric_help(),
        "conventions": {name: f"{conv.summary()}; {conv.source}" for name, conv in CONVENTIONS.items()},
        "losses": {k.name: k.summary + (f" (also {', '.join(k.aliases)})" if k.aliases else "")
                   for k in loss_kinds().values()},
        "scorers": {name: kind.summary for name, kind in scorers.kinds().items()},
        "formats": {name: f"{fmt.description} [{', '.join(fmt.suffixes)}]" for name, fmt in formats().items()},
        "click_models": CLICK_MODELS.help(),
        "interleaving": {name: f"{text} ({_rankers(METHODS[name])})" for name, text in METHODS.help().items()},
        "estimators": ESTIMATORS.help(),
        "plugins": {f"{p.group}:{p.name}": f"{p.value} (from {p.distribution})"
                    for group in plugins.GROUPS for p in plugins.loaded(group)},
        "broken_plugins": {f"{p.group}:{p.name}": f"{p.value} (from {p.distribution}): {p.error}"
                           for group in plugins.GROUPS for p in plugins.broken(group)},
    }
    if as_json:
        typer.echo(json.dumps(data, indent=2))
        return
    for section, items in data.items():
        if not items and section in ("plugins", "broken_plugins"):
            continue
        typer.echo(f"{section}:")
        if isinstance(items, dict):
            for k, v in items.items():
                typer.echo(f"  {k:18s} {v}")
        else:
            typer.echo("  " + ", ".join(items))


def _rankers(kind: Any) -> str:
    """What an interleaving method compares: two rankers, k of them, or both."""
    return " and ".join(w for w, yes in (("2 rankers", kind.interleaves), ("k >= 2 at once", kind.multileaves))
                        if yes)
