"""``ltr list``: learners, datasets, metrics, neural losses and scorers, formats and plugins, with where each
comes from."""

from __future__ import annotations

import json
from typing import Annotated

import typer

from ltr_cli.core.convention_table import CONVENTION_NAMES


def list_(
    as_json: Annotated[bool, typer.Option("--json", help="machine-readable output")] = False,
) -> None:
    """List learners, datasets, metrics, neural losses and scorers, data formats and plugins (with where each comes
    from)."""
    from ltr_cli import plugins
    from ltr_cli.data.formats import formats
    from ltr_cli.data.registry import DATASETS
    from ltr_cli.learners.online import family  # noqa: F401 - the registry of ltr_cli.families
    from ltr_cli.learners.registry import learner_help
    from ltr_cli.measures.registry import metric_help
    from ltr_cli.neural.losses import kinds as loss_kinds  # also the registry of ltr_cli.losses
    from ltr_cli.neural.scorers import resolve as scorer_kind  # also the registry of ltr_cli.scorers

    data = {
        "learners": learner_help(),
        "datasets": {k: f"{d.title}: {d.n_features} features, labels {d.labels}, qid from {d.qid_source}"
                     for k, d in DATASETS.items()},
        "generated": {"separable": "perceptron paper's separable set (variant authors|paper)",
                      "shaped": "queries shaped like a registry dataset (like: NAME)"},
        "metrics": metric_help(),
        "losses": {k.name: k.summary + (f" (also {', '.join(k.aliases)})" if k.aliases else "")
                   for k in loss_kinds().values()},
        "scorers": {name: scorer_kind(name).summary for name in plugins.load_group("scorers")},
        "conventions": list(CONVENTION_NAMES),
        "formats": {name: f"{fmt.description} [{', '.join(fmt.suffixes)}]" for name, fmt in formats().items()},
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
