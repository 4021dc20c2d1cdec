"""``ltr export``: finished runs written to experiment trackers (``ltr export mlflow``)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Optional

import typer

from ltr_cli.cli.boundary import command

export_app = typer.Typer(help="Write finished runs to an experiment tracker.", no_args_is_help=True,
                         rich_markup_mode=None)


@command(export_app, "mlflow")
def export_mlflow(
    results: Annotated[Path, typer.Argument(metavar="RESULTS", help="a results folder, an experiment's folder or one run's folder")],
    tracking_uri: Annotated[Optional[str], typer.Option(
        "--tracking-uri", metavar="URI",
        help="MLflow tracking store (default: sqlite:///RESULTS/.mlflow/mlflow.db, a local file; "
             "a server's http(s):// address sends the runs there)")] = None,
    every: Annotated[Optional[int], typer.Option(
        "--every", metavar="K", min=1,
        help="log every K-th round of online runs (default: every round up to 10000 rounds, "
             "else thinned to 10000 points per series)")] = None,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="print only the closing line")] = False,
) -> None:
    """Write finished runs to an MLflow tracking store (a local file by default).

    Each run folder becomes one MLflow run, in an MLflow experiment named after the
    experiment: its parameters, per-round (online) or per-fold (batch) metrics, summary,
    manifest, config, and the experiment's figures. Exporting again skips runs already there
    and replaces runs whose files changed. Needs the optional extra: pip install
    'ltr-cli[mlflow]'. See docs/tracking.md."""
    from ltr_cli.reports.export_mlflow import plan_export
    from ltr_cli.reports.mlflow_store import (default_tracking_uri, export, load_mlflow, local_artifact_root,
                                              require_store)

    load_mlflow()  # the install hint before any folder is read
    exports = plan_export(results, every)
    store: Path | None = None  # the default store's folder, made once the export can go ahead
    if tracking_uri is None:
        uri, store = default_tracking_uri(results)
        artifacts: Path | None = store / "artifacts"
    else:
        uri, artifacts = tracking_uri, local_artifact_root(tracking_uri)
    require_store(uri)
    if store is not None:
        store.mkdir(exist_ok=True)
    outcome = export(exports, uri, artifacts, say=None if quiet else lambda line: typer.echo(line, err=True),
                     contained=store is not None)
    typer.echo(f"{len(outcome.exported)} exported, {len(outcome.replaced)} replaced, "
               f"{len(outcome.unchanged)} unchanged: {uri}")
    if not quiet and uri.startswith(("sqlite:", "file:")):
        typer.echo(f"view them: mlflow ui --backend-store-uri {uri}", err=True)
