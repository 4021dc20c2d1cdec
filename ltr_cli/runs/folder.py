"""A run's folder: its lock while it is computed, what a killed attempt left behind, what a
finished run recorded, and the one write path of its results (shared by the online and the
batch runs), from the run's plan."""

from __future__ import annotations

import datetime
import json
import os
import platform
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli import __version__
from ltr_cli.data.identity import same_content
from ltr_cli.errors import LtrError
from ltr_cli.names import NAME_HELP, is_name
from ltr_cli.runs.locks import LockUnavailable, RunLock, RunLocked
from ltr_cli.runs.plan import PlannedRun
from ltr_cli.results.folders import read_run, write_run
from ltr_cli.results.models import OWN_KINDS


@dataclass
class RunOutcome:
    learner: str
    path: Path
    summary: dict[str, Any]


#: a run id as a folder name: ``<learner>[-seed<S>]-<hash>``, plain ASCII, one name's 255 bytes
_RUN_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,254}", re.ASCII)


def run_path(out_root: Path, experiment: str, run_id: str) -> Path:
    """Where a run's folder goes, ``out_root/experiment/run_id``; refuses names that are not
    plain names and an experiment folder that leads outside ``out_root`` (a symbolic link
    elsewhere)."""
    if not is_name(experiment):
        raise LtrError(f"experiment {experiment!r}: must be {NAME_HELP}")
    if not _RUN_ID.fullmatch(run_id):  # <learner>[-seed<S>]-<hash>: longer than a name may be
        raise LtrError(f"run id {run_id!r}: not a plain folder name (ASCII letters, digits, '.', '_', '-')")
    out_root = Path(out_root)
    root = out_root.resolve()
    resolved = (root / experiment / run_id).resolve()
    if not (root / experiment).resolve().is_relative_to(root) or not resolved.is_relative_to(root):
        raise LtrError(f"{out_root / experiment / run_id}: leads outside the results folder {out_root} "
                       f"(to {resolved}); refusing to write there: remove that link or choose another --out")
    return out_root / experiment / run_id


def _versions() -> dict[str, str]:
    from importlib.metadata import version  # (pandas's own __version__ would import it)

    import pyarrow

    blas: dict[str, Any] = {}
    try:
        config: Any = np.show_config(mode="dicts")
        blas = dict(config.get("Build Dependencies", {}).get("blas", {}))
    except Exception:  # the layout of numpy's build info is not a stable API
        pass
    return {
        "ltr_cli": __version__,
        "python": platform.python_version(),
        "numpy": np.__version__,
        "pandas": version("pandas"),
        "pyarrow": pyarrow.__version__,
        "platform": platform.platform(),
        "blas": {k: blas.get(k) for k in ("name", "version")},
        # thread counts can change floating-point reduction order in BLAS
        "environment": {k: os.environ.get(k) for k in (
            "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "PYTHONHASHSEED",
            # compiled kernels or the reference path: equal to rounding, not bit for bit
            "LTR_KERNELS", "LTR_BLOCKS")},
    }


@contextmanager
def owning(run_dir: Path) -> Iterator[None]:
    """Hold the run's lock (so no other worker writes ``run_dir``) and clear what a killed
    earlier attempt left behind; one-line error if a live process holds the lock. An
    experiment folder created here is removed again if the run leaves it empty (a failed
    run leaves no trace)."""
    new_folder = not run_dir.parent.exists()
    lock = RunLock(run_dir.parent / f".{run_dir.name}.lock")
    try:
        lock.acquire()
    except RunLocked as exc:
        raise LtrError(f"{run_dir}: another process is computing this run ({exc}); wait for it "
                       "(its lock is released when that process ends, even if it is killed)") from None
    except LockUnavailable as exc:
        raise LtrError(f"{run_dir}: cannot lock the run ({exc})") from None
    try:
        remove_stale_temporaries(run_dir)
        yield
    finally:
        lock.release()
        if new_folder:
            try:
                run_dir.parent.rmdir()  # only if empty
            except OSError:
                pass


def clear_leftover_lock(run_dir: Path) -> None:
    """Remove the lock file a killed process left beside a complete run (``--resume`` skips
    the run without computing it, so nothing else would): taken without waiting and
    released, which unlinks it. A lock some live process holds is left alone."""
    path = run_dir.parent / f".{run_dir.name}.lock"
    if not os.path.lexists(path):
        _clear_leftover_checkpoints(run_dir)
        return
    lock = RunLock(path)
    try:
        lock.acquire(wait=0)
    except (RunLocked, LockUnavailable):
        return
    try:
        _clear_leftover_checkpoints(run_dir)
    finally:
        lock.release()


def _clear_leftover_checkpoints(run_dir: Path) -> None:
    """A complete run's checkpoint (online) or fold checkpoint (batch) is what a kill
    between writing the run and deleting it left: the run no longer needs it, and a plain
    ``ltr run`` would otherwise stop on it again and again."""
    for name in (f".{run_dir.name}.checkpoint", f".{run_dir.name}.folds.json"):
        leftover = run_dir.parent / name
        if leftover.is_symlink() or leftover.is_file():
            leftover.unlink(missing_ok=True)


def finished_run(run: PlannedRun, run_dir: Path, identity: dict[str, Any], what: str) -> RunOutcome:
    """A complete run that ``--resume`` skips, as its outcome; the lock file a killed process
    left beside it is cleared (:func:`clear_leftover_lock`). One-line error if it recorded
    other data than ``identity`` (``what`` names it), or was computed by an earlier
    implementation of its learner (``LearnerConfig.implementation``; a manifest without the
    field is version 1): it is neither counted as done nor silently recomputed over (its
    numbers are another data's, or another algorithm's)."""
    done = read_run(run_dir)
    manifest, lspec = done.manifest, run.learner_spec
    dataset = manifest.get("dataset")
    recorded = dataset.get("fingerprint") if isinstance(dataset, dict) else None
    if not same_content(recorded, identity):
        raise LtrError(f"{run_dir}: this finished run was computed on other data than is now on "
                       f"disk ({what}); remove the run directory to recompute it, or use another "
                       "--out to keep both")
    conventions = manifest.get("learner_conventions")
    version = conventions.get("implementation", 1) if isinstance(conventions, dict) else 1
    if version != lspec.implementation:
        raise LtrError(f"{run_dir}: this finished run was computed by version {version} of "
                       f"{lspec.type_name()}'s algorithm, and this ltr runs version {lspec.implementation}; "
                       "remove the run directory to recompute it, or use another --out to keep both")
    clear_leftover_lock(run_dir)
    return RunOutcome(run.learner, run_dir, done.summary)


def remove_stale_temporaries(run_dir: Path) -> None:
    """Delete half-written files a killed process left for this run (temporary result
    directories, checkpoint temp files). Called only while holding the run's lock."""
    import shutil

    for leftover in run_dir.parent.glob(f".{run_dir.name}.tmp-*"):
        shutil.rmtree(leftover, ignore_errors=True)
    for leftover in run_dir.parent.glob(f".{run_dir.name}.checkpoint.tmp-*"):
        leftover.unlink(missing_ok=True)
    for leftover in run_dir.parent.glob(f".{run_dir.name}.old-*"):
        shutil.rmtree(leftover, ignore_errors=True)


def record_run(
    run: PlannedRun, run_dir: Path, table: Any, summary: dict[str, Any], manifest: dict[str, Any],
    timings: dict[str, Any], models: dict[str, Any], argv: list[str] | None, tables: dict[str, Any] | None = None,
) -> RunOutcome:
    """The one write path of a run: summary, manifest, resolved config (``config.yaml``: the
    run's learner only), the table (``rounds.parquet``), ``models.json`` (with a LambdaMART
    fold's model text in a file of its own beside it) and any other ``tables`` (a batch
    run's ``test_queries.parquet``), written atomically into ``run_dir``."""
    name, lspec = run.learner, run.learner_spec
    summary = {"experiment": run.experiment, "learner": name, "seed": run.seed, "config_id": run.config_id,
               "label": lspec.default_label(), "role": lspec.paper_role(), **summary}
    manifest = {"run_id": run.run_id, "experiment": run.experiment, "learner": name,
                "learner_label": summary["label"], "seed": run.seed, "versions": _versions(),
                "command": argv or sys.argv, **manifest, "timings": timings,
                "finished_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
    model_files: dict[str, str | bytes] = {}
    if any(isinstance(m, dict) and m.get("kind") not in OWN_KINDS for m in models.values()):  # LightGBM's, neural
        from ltr_cli.results import gbdt, neural_files

        models, texts = gbdt.save_model_files(models)
        models, arrays = neural_files.save_model_files(models)
        model_files = {**texts, **arrays}
    try:  # a saved model is numbers a later run reads back: never NaN or Infinity
        saved = json.dumps(models, indent=1, allow_nan=False)
    except ValueError:
        raise LtrError(f"{name}: the fitted model holds a number that is not finite (NaN or infinity); nothing "
                       "was written") from None
    path = write_run(run_dir, run.resolved(), table, summary, manifest,
                     extra={"models.json": saved, **model_files}, tables=tables)
    return RunOutcome(name, path, summary)
