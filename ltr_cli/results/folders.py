"""Run directories: ``<output>/<experiment>/<run-id>/``.

Files of a finished run:

* ``config.yaml`` - the fully resolved experiment config, reduced to this run's learner;
* ``rounds.parquet`` - one row per round (see :mod:`ltr_cli.protocols.online`), or per
  fold for a batch (``cv:``) run;
* ``summary.json`` - final and last-ten averages per metric, counts, timings;
* ``manifest.json`` - versions, seed, dataset fingerprint, every convention used;
* ``models.json`` (batch runs) - the model selected in each fold, for ``ltr score``;
* ``test_queries.parquet`` (batch runs) - one row per test query of each fold (``fold``,
  ``qid``) and one column per test metric: the value the query adds to its fold's mean in
  ``rounds.parquet`` (NaN where the convention leaves it out), for paired tests. Runs
  written before it existed lack it (:func:`read_test_queries` returns None).

A run is written into a hidden temporary sibling directory and renamed into place when
all four files are complete, so an interrupted run never leaves a directory that looks
finished. ``manifest.json`` is written last and marks completeness.

Run folders are read back by ``ltr plot``, ``ltr report`` and ``ltr run --resume``, and
may come from someone else: :func:`read_run` validates every file before anything uses
it (:mod:`ltr_cli.results.run_files`: :class:`~ltr_cli.results.run_files.OnlineSummary`,
``BatchSummary``, ``ManifestFile``, ``ConfigFile`` and ``check_rounds``), so a damaged or crafted run folder is one
line naming the file and what is wrong, never a traceback, and names that end up in file
names (experiment, learner, metric columns) obey the same rule as in configs.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ltr_cli.core.yamlio import dump_yaml
from ltr_cli.errors import ResultsError
from ltr_cli.measures.registry import canonical_column, canonical_name
from ltr_cli.pathnames import tried
from ltr_cli.results.run_files import (BatchSummary, ConfigFile, ManifestFile, OnlineSummary, check_summary_matches,
                                       damaged, read_config, read_json, read_rounds, validate_file)

if TYPE_CHECKING:  # pandas is imported where a table is read: writing an online run needs only pyarrow
    import pandas as pd

RUN_FILES = ("config.yaml", "rounds.parquet", "summary.json", "manifest.json")
TEST_QUERIES = "test_queries.parquet"  # a batch run's per-query test values (results/query_values.py)


def _dump_json(obj: Any, path: Path) -> None:
    path.write_text(json.dumps(obj, indent=2, sort_keys=False, default=str) + "\n")


def write_run(
    run_dir: Path,
    config: dict[str, Any],
    rounds: Any,
    summary: dict[str, Any],
    manifest: dict[str, Any],
    extra: dict[str, str | bytes] | None = None,
    tables: dict[str, Any] | None = None,
) -> Path:
    """Atomically create (or replace) ``run_dir`` with the four run files (and any
    ``extra`` text files, e.g. a batch run's ``models.json``, and ``tables``, e.g. its
    ``test_queries.parquet``). ``rounds`` and ``tables``: pandas DataFrames or pyarrow
    Tables."""
    run_dir = Path(run_dir)
    try:
        run_dir.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{run_dir.name}.tmp-", dir=run_dir.parent))
    except OSError as exc:
        raise ResultsError(f"{run_dir.parent}: cannot create the results folder ({exc.strerror})") from None
    try:
        (tmp / "config.yaml").write_text(dump_yaml(config))
        _write_parquet(rounds, tmp / "rounds.parquet")
        for name, text in (extra or {}).items():
            (tmp / name).write_bytes(text) if isinstance(text, bytes) else (tmp / name).write_text(text)
        for name, table in (tables or {}).items():
            _write_parquet(table, tmp / name)
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


def _write_parquet(table: Any, path: Path) -> None:
    """A pandas DataFrame (without its index) or a pyarrow Table, as Parquet."""
    if hasattr(table, "to_parquet"):
        return table.to_parquet(path, index=False)
    import pyarrow.parquet as pq

    pq.write_table(table, path)


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
        return str(self.config["experiment"])  # validated by read_run


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
                f"and seed {sorted(dup, key=str)[0]}; keep one of them"
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
            raise ResultsError(f"{p}: no such results directory (tried {tried(p)}; run 'ltr run CONFIG' first)")
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
    """A finished run, every file validated (one-line :class:`ResultsError` otherwise)."""
    run_dir = Path(run_dir)
    if not is_complete(run_dir):
        missing = [f for f in RUN_FILES if not (run_dir / f).is_file()]
        raise ResultsError(f"{run_dir}: incomplete run (missing {', '.join(missing)})")
    config = read_config(run_dir / "config.yaml")
    validate_file(ConfigFile, config, run_dir / "config.yaml")
    summary = read_json(run_dir / "summary.json", "summary")
    batch = summary.get("protocol") == "batch-cv"
    validate_file(BatchSummary if batch else OnlineSummary, summary, run_dir / "summary.json")
    manifest = read_json(run_dir / "manifest.json", "manifest")
    validate_file(ManifestFile, manifest, run_dir / "manifest.json")
    rounds = read_rounds(run_dir / "rounds.parquet")
    if batch == ("t" in rounds.columns):
        raise damaged(run_dir / "rounds.parquet", "does not match summary.json (online vs batch run)")
    check_summary_matches(summary, rounds, run_dir / "rounds.parquet")
    # metrics by their one spelling, whatever version wrote the folder (``map`` is ``ap``)
    rounds = rounds.rename(columns=canonical_column)
    summary["metrics"] = {canonical_name(k): v for k, v in (summary.get("metrics") or {}).items()}
    return Run(path=run_dir, config=config, summary=summary, manifest=manifest, rounds=rounds)
