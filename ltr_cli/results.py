"""Run directories: ``<output>/<experiment>/<run-id>/``.

Files of a finished run:

* ``config.yaml`` - the fully resolved experiment config, reduced to this run's learner;
* ``rounds.parquet`` - one row per round (see :mod:`ltr_cli.protocols.online`), or per
  fold for a batch (``cv:``) run;
* ``summary.json`` - final and last-ten averages per metric, counts, timings;
* ``manifest.json`` - versions, seed, dataset fingerprint, every convention used;
* ``models.json`` (batch runs) - the model selected in each fold, for ``ltr score``.

A run is written into a hidden temporary sibling directory and renamed into place when
all four files are complete, so an interrupted run never leaves a directory that looks
finished. ``manifest.json`` is written last and marks completeness.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from ltr_cli.errors import ResultsError

RUN_FILES = ("config.yaml", "rounds.parquet", "summary.json", "manifest.json")


def _dump_json(obj: Any, path: Path) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def write_run(
    run_dir: Path,
    config: dict[str, Any],
    rounds: pd.DataFrame,
    summary: dict[str, Any],
    manifest: dict[str, Any],
    extra: dict[str, str] | None = None,
) -> Path:
    """Atomically create (or replace) ``run_dir`` with the four run files (and any
    ``extra`` text files, e.g. a batch run's ``models.json``)."""
    run_dir = Path(run_dir)
    try:
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{run_dir.name}.tmp-", dir=run_dir.parent))
    except OSError as exc:
        raise ResultsError(f"{run_dir.parent}: cannot create the results folder ({exc.strerror})") from None
    try:
        (tmp / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
        rounds.to_parquet(tmp / "rounds.parquet", index=False)
        for name, text in (extra or {}).items():
            (tmp / name).write_text(text)
        _dump_json(summary, tmp / "summary.json")
        _dump_json(manifest, tmp / "manifest.json")
        for name in RUN_FILES:
            with open(tmp / name, "rb") as fh:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o755)
        old = None
        if run_dir.exists():
            old = run_dir.with_name(f".{run_dir.name}.old-{os.getpid()}")
            os.replace(run_dir, old)
        os.replace(tmp, run_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return run_dir


@dataclass
class Run:
    """A finished run read back from disk."""

    path: Path
    config: dict[str, Any]
    summary: dict[str, Any]
    manifest: dict[str, Any]
    rounds: pd.DataFrame

    @property
    def label(self) -> str:
        return str(self.manifest.get("learner_label") or self.path.name)

    @property
    def marks(self) -> list[str]:
        """What a reader of a plot or table must know about this run: weights that became
        NaN (the authors' numerics) and SmoothDCG's step direction."""
        out = []
        nonfinite = self.summary.get("nonfinite_round")
        if isinstance(nonfinite, int) and not isinstance(nonfinite, bool):
            out.append(f"NaN weights from round {nonfinite}")
        direction = (self.manifest.get("learner_conventions") or {}).get("direction")
        if direction == "descend-gain":
            out.append("descends DCG, as the paper")
        elif direction == "ascend-gain":
            out.append("ascends DCG, corrected")
        return out

    @property
    def experiment(self) -> str:
        return str(self.config.get("experiment", self.path.parent.name))


def group_seeds(runs: list[Run]) -> dict[tuple[str, str, str], list[Run]]:
    """Runs that differ only in their seed, keyed by (experiment, learner, config id).

    Runs of the same learner with other settings (e.g. a ``--set`` override) form their
    own group. Two runs with the same key and the same seed are refused: averaging a
    duplicate would count one seed twice.
    """
    groups: dict[tuple[str, str, str], list[Run]] = {}
    for run in runs:
        s = run.summary
        key = (run.experiment, str(s.get("learner", run.path.name)), str(s.get("config_id", run.path.name)))
        groups.setdefault(key, []).append(run)
    for (_, learner, _), members in groups.items():
        seeds = [m.summary.get("seed") for m in members]
        dup = {x for x in seeds if seeds.count(x) > 1}
        if dup:
            paths = [str(m.path) for m in members if m.summary.get("seed") in dup]
            raise ResultsError(
                f"runs {', '.join(paths)} are the same learner {learner!r} with the same settings "
                f"and seed {sorted(dup)[0]}; keep one of them"
            )
    return groups


def is_complete(run_dir: Path) -> bool:
    return all((run_dir / f).is_file() for f in RUN_FILES)


def find_runs(paths: list[Path]) -> list[Path]:
    """Complete run directories at or below each path (hidden temp dirs skipped)."""
    found: list[Path] = []
    for p in paths:
        p = Path(p)
        if not p.exists():
            raise ResultsError(f"{p}: no such results directory (run 'ltr run CONFIG' first)")
        if (p / "manifest.json").is_file():
            candidates = [p]
        else:
            candidates = sorted(m.parent for m in p.rglob("manifest.json"))
        for c in candidates:
            if any(part.startswith(".") and part not in (".", "..") for part in c.relative_to(p).parts):
                continue
            if is_complete(c) and c not in found:
                found.append(c)
    return found


def read_run(run_dir: Path) -> Run:
    run_dir = Path(run_dir)
    if not is_complete(run_dir):
        missing = [f for f in RUN_FILES if not (run_dir / f).is_file()]
        raise ResultsError(f"{run_dir}: incomplete run (missing {', '.join(missing)})")
    try:
        run = Run(
            path=run_dir,
            config=yaml.safe_load((run_dir / "config.yaml").read_text()),
            summary=json.loads((run_dir / "summary.json").read_text()),
            manifest=json.loads((run_dir / "manifest.json").read_text()),
            rounds=pd.read_parquet(run_dir / "rounds.parquet"),
        )
    except (OSError, ValueError, yaml.YAMLError) as exc:
        raise ResultsError(f"{run_dir}: unreadable run files ({exc})".replace("\n", " ")) from None
    for name in ("config", "summary", "manifest"):
        if not isinstance(getattr(run, name), dict):
            raise ResultsError(f"{run_dir}: {name} file is not a mapping; the run is damaged, re-run it")
    if "t" not in run.rounds.columns and "fold" not in run.rounds.columns:
        raise ResultsError(f"{run_dir}: rounds.parquet has neither 't' nor 'fold'; the run is damaged, re-run it")
    return run
