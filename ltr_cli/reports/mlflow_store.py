"""Writing planned runs (:mod:`ltr_cli.reports.export_mlflow`) into an MLflow tracking store
through MLflow's own client, imported only here and only when an export runs.

The default store is local: ``sqlite:///<results>/.mlflow/mlflow.db``, its artifacts in
``<results>/.mlflow/artifacts/``, no server involved. (The folder is hidden so the copies
of ``manifest.json`` it holds are never taken for run folders.) MLflow's usage telemetry is
switched off before MLflow is imported: nothing leaves the machine unless the user gives a
remote ``--tracking-uri``.

Idempotent: each MLflow run carries the tag ``ltr.key`` (experiment/run id) and
``ltr.fingerprint``; an export skips a run whose key is already there, finished, with the
same fingerprint, and replaces (deletes, then logs anew) one whose files changed or whose
earlier export was interrupted, so the store never holds two runs of one run folder.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ltr_cli.errors import LtrError
from ltr_cli.reports.export_mlflow import RunExport

INSTALL_HINT = "mlflow is not installed; pip install 'ltr-cli[mlflow]'"
STORE_DIR = ".mlflow"
COMPLETE = "ltr.export"  # tag set last: the run's export finished
BATCH = 1000  # MLflow's most metrics in one log_batch call
PARAM_BATCH = 100  # and params


def default_tracking_uri(results: Path) -> tuple[str, Path]:
    """The local store under ``results`` and its folder (artifacts in ``artifacts/``);
    refuses a planted link (:func:`check_store`)."""
    store = Path(results) / STORE_DIR
    check_store(Path(results), store)
    return f"sqlite:///{store.resolve() / 'mlflow.db'}", store.resolve()


def _refuse(path: Path, what: str) -> LtrError:
    return LtrError(f"{path}: {what} on the path of the MLflow store under the results folder; refusing to "
                    "write through it: remove it, or give --tracking-uri")


def check_store(results: Path, store: Path) -> None:
    """The default store must keep every write inside ``results/.mlflow``: a results folder
    is untrusted input, so ``results`` itself, ``.mlflow`` and everything under it (the
    database and the files SQLite writes beside it, the artifact folders and all that
    MLflow will write in them) must be real folders and plain files: no symbolic link
    (dangling or not), no FIFO or device, no file with a second (hard) link."""
    if results.is_symlink():
        raise _refuse(results, f"the results folder is a symbolic link (to {os.readlink(results)})")
    if store.is_symlink():
        raise _refuse(store, f"a symbolic link (to {os.readlink(store)})")
    if not store.exists():
        return
    if not store.is_dir():
        raise _refuse(store, "not a folder")
    pending = [store]
    while pending:
        with os.scandir(pending.pop()) as entries:
            for entry in entries:
                path = Path(entry.path)
                if entry.is_symlink():
                    raise _refuse(path, f"a symbolic link (to {os.readlink(path)})")
                if entry.is_dir(follow_symlinks=False):
                    pending.append(path)
                elif not entry.is_file(follow_symlinks=False):
                    raise _refuse(path, "neither a file nor a folder")
                elif entry.stat(follow_symlinks=False).st_nlink > 1:
                    raise _refuse(path, "a file with another (hard) link")


def local_artifact_root(uri: str) -> Path | None:
    """Where a local store given as ``--tracking-uri`` keeps artifacts (beside a sqlite
    file; a file store keeps its own); None for a server, which decides."""
    prefix = "sqlite:///"  # then the database file's path: absolute after a fourth slash
    if uri.startswith(prefix):
        path = uri[len(prefix):].split("?", 1)[0]
        if path and path != ":memory:":
            return Path(path).resolve().parent / "mlartifacts"
    return None


def load_mlflow() -> Any:
    """MLflow's client class, telemetry off; the install hint when MLflow is missing."""
    os.environ["MLFLOW_DISABLE_TELEMETRY"] = "true"
    os.environ["DO_NOT_TRACK"] = "true"
    try:
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise LtrError(INSTALL_HINT) from None
    for name in ("mlflow", "alembic"):  # the store's set-up notes ("Creating initial tables")
        logging.getLogger(name).setLevel(logging.WARNING)
    return MlflowClient


def require_store(uri: str) -> None:
    """What a store needs beyond MLflow's client: a sqlite store, SQLAlchemy and Alembic
    (mlflow-skinny alone has no database store)."""
    if uri.startswith("sqlite:"):
        for module in ("sqlalchemy", "alembic"):
            if importlib.util.find_spec(module) is None:
                raise LtrError(f"{module} is not installed (MLflow's sqlite store needs it); "
                               "pip install 'ltr-cli[mlflow]'")


@dataclass
class Outcome:
    exported: list[str] = field(default_factory=list)
    replaced: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)


def _mlflow_error(exc: Exception, uri: str) -> LtrError:
    text = " ".join(str(exc).split())
    if "MLFLOW_ALLOW_FILE_STORE" in text:
        return LtrError(f"{uri}: MLflow keeps its file store (mlruns folders) in maintenance mode and refuses "
                        "to write it; give a database store such as sqlite:///PATH/mlflow.db (the default is "
                        "one under RESULTS), or set MLFLOW_ALLOW_FILE_STORE=true")
    if len(text) > 300:
        text = text[:297] + "..."
    return LtrError(f"{uri}: the MLflow tracking store refused the export ({type(exc).__name__}: {text})")


def _experiment_id(client: Any, name: str, artifacts: Path | None, contained: bool) -> str:
    found = client.get_experiment_by_name(name)
    if found is not None:
        if contained and artifacts is not None and found.artifact_location != (artifacts / name).as_uri():
            # a database received with the results folder may send artifacts anywhere
            raise LtrError(f"{artifacts.parent}: the MLflow store's experiment {name} keeps its artifacts at "
                           f"{found.artifact_location}, outside {artifacts}; refusing to write there: remove "
                           "the store, or give --tracking-uri")
        if found.lifecycle_stage == "deleted":
            client.restore_experiment(found.experiment_id)
        return str(found.experiment_id)
    location = (artifacts / name).as_uri() if artifacts is not None else None
    return str(client.create_experiment(name, artifact_location=location))


def _existing(client: Any, experiment_id: str) -> dict[str, list[Any]]:
    """The experiment's active runs by ``ltr.key``."""
    out: dict[str, list[Any]] = {}
    token = None
    while True:
        page = client.search_runs([experiment_id], max_results=1000, page_token=token)
        for run in page:
            key = run.data.tags.get("ltr.key")
            if key:
                out.setdefault(key, []).append(run)
        token = page.token
        if not token:
            return out


def _log(client: Any, run_export: RunExport, experiment_id: str) -> None:
    from mlflow.entities import Metric, Param

    tags = dict(run_export.tags, **{"ltr.fingerprint": run_export.fingerprint})
    run = client.create_run(experiment_id, start_time=run_export.start_ms, tags=tags, run_name=run_export.name)
    rid = run.info.run_id
    stamp = run_export.end_ms or run.info.start_time
    params = [Param(k, v) for k, v in run_export.params.items()]
    for i in range(0, len(params), PARAM_BATCH):
        client.log_batch(rid, params=params[i:i + PARAM_BATCH])
    metrics = [Metric(p.key, p.value, stamp, p.step) for p in run_export.metrics]
    for i in range(0, len(metrics), BATCH):
        client.log_batch(rid, metrics=metrics[i:i + BATCH])
    for path in run_export.artifacts:
        client.log_artifact(rid, str(path))
    client.set_tag(rid, COMPLETE, "complete")
    client.set_terminated(rid, "FINISHED", end_time=run_export.end_ms)


def export(exports: list[RunExport], uri: str, artifacts: Path | None, say: Any = None,
           contained: bool = False) -> Outcome:
    """Write ``exports`` to the store at ``uri``; what was exported, replaced, left as it was.
    ``contained``: the default store, whose experiments must keep artifacts in ``artifacts``."""
    client_class = load_mlflow()
    outcome = Outcome()
    try:
        client = client_class(tracking_uri=uri)
        ids: dict[str, str] = {}
        existing: dict[str, dict[str, list[Any]]] = {}
        for item in exports:
            if item.experiment not in ids:
                ids[item.experiment] = _experiment_id(client, item.experiment, artifacts, contained)
                existing[item.experiment] = _existing(client, ids[item.experiment])
            before = existing[item.experiment].get(item.key, [])
            if len(before) == 1 and before[0].data.tags.get("ltr.fingerprint") == item.fingerprint \
                    and before[0].data.tags.get(COMPLETE) == "complete" and before[0].info.status == "FINISHED":
                outcome.unchanged.append(item.key)
                continue
            for old in before:
                client.delete_run(old.info.run_id)
            _log(client, item, ids[item.experiment])
            (outcome.replaced if before else outcome.exported).append(item.key)
            if say is not None:
                say(f"{'replaced' if before else 'exported'} {item.key}")
    except LtrError:
        raise
    except Exception as exc:  # noqa: BLE001 - MlflowException, SQLAlchemy's and HTTP errors alike
        if isinstance(exc, OSError) and exc.filename:
            raise
        raise _mlflow_error(exc, uri) from None
    return outcome

