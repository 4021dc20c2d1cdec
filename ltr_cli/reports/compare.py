"""``ltr compare``: paired significance tests between the learners of finished runs.

What is paired:

* batch (``cv:``) runs: the test queries, pooled over the folds; a query's value is what it
  adds to its fold's mean in the per-fold test table (``test_queries.parquet``), and a pair
  is the same query of the same fold under two learners;
* online runs: the seeds; a seed's value is the report's headline, the mean of the
  time-averaged curve over the last ten rounds (``last10``), and a pair is one seed under
  two learners. With ``on="heldout"`` (or the metric ``heldout_<metric>``; runs with a
  ``heldout:`` set, e.g. click runs' offline NDCG), a seed's value is the metric's last
  held-out evaluation, the report's ``heldout_last``; with ``on="cumulative"`` (click runs)
  the discounted cumulative online value, the report's ``discounted_cumulative``.

A learner is what ``ltr report`` shows as one row: the runs of one learner with the same
settings (its seeds), named by the learner and, when it was run with several settings, by
the settings that differ. Learners are compared within one experiment, every pair of them; a
batch learner run with several seeds has each query's value averaged over its seeds. Only
values that are numbers on both sides form pairs.

Pairs are formed only on the same data, as the runs' manifests record it
(:func:`data_parts`): a batch run's files of each fold (their content digests, by role), an
online run's data files (or generator) for each seed. Two learners whose runs read other
data in a fold (or a seed) they share are not paired at all: the row has no p-value and its
note says why (a ``--set dataset...`` or ``--data`` run beside the config's own). Folds (or
seeds) only one of the two has are left out of the pairs, and the note names them.
"""

from __future__ import annotations

import json
from collections.abc import Hashable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ltr_cli.errors import LtrError
from ltr_cli.measures.registry import parse_metric
from ltr_cli.reports.captions import conventions_line, run_convention
from ltr_cli.reports.click_runs import HELDOUT, discounted_cumulative, final_heldout
from ltr_cli.reports.run_labels import differing_settings, with_settings
from ltr_cli.reports.significance import ADJUSTMENTS, ALPHA, Paired, adjust, paired_test
from ltr_cli.results.folders import Run, group_seeds

BATCH = "batch-cv"
ONLINE = "online"
RERUN = "re-run it to record per-query values"


@dataclass
class Learner:
    """One row of the report: its group key (experiment, learner, config id), the name
    shown, and its value on each unit (``(fold, qid, occurrence)`` or a seed); ``values``
    None: a batch run without per-query values, read with ``strict=False``."""

    key: tuple[str, str, str]
    name: str
    values: dict[Hashable, float] | None = field(default_factory=dict)
    #: the data each part (a batch run's fold, an online run's seed) was computed on: a
    #: digest of its identity (:func:`data_parts`); None: its runs disagree on that part
    data: dict[Hashable, str | None] = field(default_factory=dict)

    @property
    def experiment(self) -> str:
        return self.key[0]


#: what a unit's value is: ``test`` a batch run's test query, ``online`` a seed's last10
#: (the time-averaged online curve over the last ten rounds), ``heldout`` a seed's last
#: held-out evaluation, ``cumulative`` a click run's discounted cumulative online value
ON = ("test", "online", "heldout", "cumulative")


@dataclass
class Row:
    experiment: str
    a: str
    b: str
    result: Paired
    #: p adjusted for the number of comparisons (``Comparison.adjustment``)
    p_adjusted: float | None = None

    @property
    def p_holm(self) -> float | None:
        return self.p_adjusted

    def significant(self, alpha: float) -> str | None:
        """The name of the learner significantly better than the other (adjusted p below
        ``alpha``, higher mean), or None."""
        if self.p_adjusted is None or self.p_adjusted >= alpha or not self.result.mean_difference:
            return None
        return self.a if self.result.mean_difference > 0 else self.b


@dataclass
class Comparison:
    metric: str
    test: str
    protocol: str
    rows: list[Row]
    on: str = "test"
    adjustment: str = "holm"
    alpha: float = ALPHA
    #: every learner compared, with its values (the table's means and intervals)
    found: list[Learner] = field(default_factory=list)
    #: the line naming the runs' conventions with their rules (``Convention: ...``)
    convention: str | None = None


def metric_name(metric: str) -> str:
    """A metric's one spelling (``map`` is ``ap``; ``heldout_map`` is ``heldout_ap``), or a
    one-line error."""
    prefix = HELDOUT if metric.startswith(HELDOUT) else ""
    try:
        return prefix + parse_metric(metric.removeprefix(prefix)).name
    except ValueError as exc:
        raise LtrError(f"--metric: {exc}; 'ltr list' shows the metrics") from None


def resolve_on(metric: str, on: str | None, protocol: str) -> tuple[str, str]:
    """``(metric, on)``: the metric without a ``heldout_`` prefix (which means ``--on
    heldout``) and what a unit's value is (:data:`ON`; default: ``test`` for batch runs,
    ``online`` for online runs); a value that does not fit the runs is a one-line error."""
    if metric.startswith(HELDOUT):
        if on not in (None, "heldout"):
            raise LtrError(f"--metric {metric} is a held-out metric; it does not combine with --on {on}")
        metric, on = metric.removeprefix(HELDOUT), "heldout"
    on = on or ("test" if protocol == BATCH else "online")
    if protocol == BATCH and on != "test":
        raise LtrError(f"--on {on}: batch (cv:) runs are compared on their test queries; give --on test")
    if protocol != BATCH and on == "test":
        raise LtrError("--on test: online runs have no test queries; give --on online (the report's last10), "
                       "heldout (the last held-out evaluation) or cumulative (click runs' discounted cumulative value)")
    return metric, on


def protocol_of(runs: list[Run]) -> str:
    """``batch-cv`` or ``online``; runs of both kinds are refused."""
    kinds = {BATCH if r.summary.get("protocol") == BATCH else ONLINE for r in runs}
    if len(kinds) > 1:
        raise LtrError("the results hold both batch (cv:) and online runs, which pair different units "
                       "(test queries, seeds); compare the folders of one kind at a time")
    return kinds.pop()


def learners(runs: list[Run], metric: str, strict: bool = True,
             tables: dict[Path, Any] | None = None, on: str | None = None) -> list[Learner]:
    """Every learner of ``runs`` with its values of ``metric`` (a canonical name; ``heldout_``
    before it: the last held-out evaluation), in the report's order; ``on``: what an online
    seed's value is (:data:`ON`, default ``online``). A run without the metric is a
    one-line error, and so is a batch run without per-query values unless ``strict`` is
    False (its learner's values are None). ``tables``: the per-query tables read so far, by
    run folder (filled in)."""
    if on == "heldout" and not metric.startswith(HELDOUT):
        metric = HELDOUT + metric
    groups = sorted(group_seeds(runs).items())
    names = _names([(key, members) for key, members in groups])
    out = []
    for (key, members), name in zip(groups, names):
        members = sorted(members, key=lambda r: r.path.name)
        batch = members[0].summary.get("protocol") == BATCH
        values = _query_values(members, metric, strict, {} if tables is None else tables) if batch \
            else _cumulative_values(members, metric) if on == "cumulative" else _seed_values(members, metric)
        data: dict[Hashable, str | None] = {}
        for run in members:
            for part, digest in data_parts(run).items():
                data[part] = digest if data.get(part, digest) == digest else None
        out.append(Learner(key, name, values, data))
    return out


def _content(entry: dict[str, Any]) -> dict[str, Any]:
    """A file's identity without where it lies (path, stat key): its content."""
    return {k: v for k, v in entry.items() if k not in ("path", "stat", "used_as")}


def _digest(value: Any) -> str:
    import hashlib

    return hashlib.sha256(json.dumps(value, sort_keys=True, default=str).encode()).hexdigest()


def data_parts(run: Run) -> dict[Hashable, str]:
    """The data identity of each part of a run, as its manifest records it: per fold of a
    batch run, the content (size, digest) of the files it read in each role; for an
    online run, one part, its seed: the content of its data files in reading order (or
    its generator's parameters). A run without a recorded identity has one part, ``None``:
    its data is unknown and pairs with nothing."""
    dataset = run.manifest.get("dataset") if isinstance(run.manifest, dict) else None
    fingerprint = dataset.get("fingerprint") if isinstance(dataset, dict) else None
    files = fingerprint.get("files") if isinstance(fingerprint, dict) else None
    batch = run.summary.get("protocol") == BATCH
    if not isinstance(fingerprint, dict):
        return {}
    if batch and isinstance(files, list) and all(isinstance(f, dict) and isinstance(f.get("used_as"), list)
                                                 for f in files):
        by_fold: dict[Hashable, list[Any]] = {}
        for f in files:
            for use in f["used_as"]:
                if isinstance(use, dict):
                    by_fold.setdefault(fold_number(use.get("fold")), []).append([str(use.get("role")), _content(f)])
        return {fold: _digest(sorted(parts, key=lambda p: json.dumps(p, sort_keys=True, default=str)))
                for fold, parts in by_fold.items()}
    content = ([_content(f) for f in files if isinstance(f, dict)] if isinstance(files, list)
               else {k: v for k, v in fingerprint.items()})
    digest = _digest(content)
    if batch:  # recorded before files named their folds: the whole fingerprint for every fold
        folds = run.summary.get("folds")
        return {fold_number(f): digest for f in folds} if isinstance(folds, list) else {}
    return {run.summary.get("seed"): digest}


def fold_number(value: Any) -> Hashable:
    return value if isinstance(value, int) and not isinstance(value, bool) else None if value is None else str(value)


def _names(groups: list[tuple[tuple[str, str, str], list[Run]]]) -> list[str]:
    """The learner's name, with the settings that differ when one experiment has it with
    several settings."""
    by_learner: dict[tuple[str, str], list[int]] = {}
    for i, (key, _) in enumerate(groups):
        by_learner.setdefault(key[:2], []).append(i)
    names = [key[1] for key, _ in groups]
    for idx in by_learner.values():
        if len(idx) > 1:
            for i, differ in zip(idx, differing_settings([groups[i][1][0].config for i in idx])):
                names[i] = with_settings(names[i], differ)
    return names


def _seed_values(members: list[Run], metric: str) -> dict[Hashable, float]:
    if metric.startswith(HELDOUT):
        return _heldout_values(members, metric)
    values: dict[Hashable, float] = {}
    for run in members:
        stats = run.summary.get("metrics", {})
        if metric not in stats:
            raise LtrError(f"{run.path}: no metric {metric!r} (it has {', '.join(stats) or 'none'})")
        value = (stats[metric] or {}).get("last10_mean_of_time_average")
        if isinstance(value, float) and np.isfinite(value):
            values[run.summary.get("seed")] = value
    return values


def _cumulative_values(members: list[Run], metric: str) -> dict[Hashable, float]:
    """Each seed's discounted cumulative online value of ``metric`` (click runs)."""
    values: dict[Hashable, float] = {}
    for run in members:
        if metric not in run.summary.get("metrics", {}):
            raise LtrError(f"{run.path}: no metric {metric!r} (it has {', '.join(run.summary.get('metrics', {})) or 'none'})")
        value = discounted_cumulative(run, metric)
        if value is None:
            raise LtrError(f"{run.path}: no discounted cumulative value of {metric} (not a click run); "
                           "--on online or heldout")
        values[run.summary.get("seed")] = value
    return values


def _heldout_values(members: list[Run], column: str) -> dict[Hashable, float]:
    """Each seed's last held-out value of ``column`` (``heldout_<metric>``)."""
    values: dict[Hashable, float] = {}
    for run in members:
        heldout = run.summary.get("heldout")
        last = heldout.get("last") if isinstance(heldout, dict) else None
        if not isinstance(last, dict) or column not in last:
            have = ", ".join(map(str, last)) if isinstance(last, dict) else ""
            raise LtrError(f"{run.path}: no held-out metric {column!r} (it has "
                           f"{have or 'none: its config has no heldout: set'})")
        value = final_heldout(run, column.removeprefix(HELDOUT))
        if value is not None:
            values[run.summary.get("seed")] = value
    return values


def _query_values(members: list[Run], metric: str, strict: bool,
                  tables: dict[Path, Any]) -> dict[Hashable, float] | None:
    from ltr_cli.results.query_values import fold_key, read_test_queries

    pooled: dict[Hashable, list[float]] = {}
    for run in members:
        if run.path not in tables:
            tables[run.path] = read_test_queries(run)
        table = tables[run.path]
        if table is None and not strict:
            return None
        if table is None:
            raise LtrError(f"{run.path}: no per-query test values (written by an older version); {RERUN}")
        if metric not in table.columns[2:]:
            raise LtrError(f"{run.path}: no test metric {metric!r} (it has {', '.join(table.columns[2:])})")
        folds = [fold_key(f) for f in table["fold"]]
        occurrence = table.groupby(["fold", "qid"], dropna=False).cumcount().tolist()
        for key, value in zip(zip(folds, table["qid"].tolist(), occurrence), table[metric].tolist()):
            if np.isfinite(value):
                pooled.setdefault(key, []).append(float(value))
    return {k: float(np.mean(v)) for k, v in pooled.items()}


@dataclass
class Pairing:
    """Two learners' values on the units both have on the same data (``a``, ``b``), or
    ``refused``: why they are not paired; ``left_out``: the parts only one has."""

    a: np.ndarray
    b: np.ndarray
    refused: str = ""
    left_out: str = ""


def _part(unit: Hashable) -> Hashable:
    """The part a unit belongs to: a test query's fold (``(fold, qid, occurrence)``), a seed."""
    return fold_number(unit[0]) if isinstance(unit, tuple) else unit


def _parts_text(kind: str, parts: list[Hashable]) -> str:
    names = sorted((str(p) for p in parts), key=lambda t: (len(t), t))
    return f"{kind}{'s' * (len(names) != 1)} {', '.join(names)}"


def pair(a: Learner, b: Learner, kind: str = "fold") -> Pairing:
    """The two learners' values on the units both have, in a fixed order, when their runs
    read the same data in every part (fold or seed) both have; else no pairs and why.
    ``kind``: what a part is called (``fold``, ``seed``)."""
    assert a.values is not None and b.values is not None
    empty = np.zeros(0, dtype=np.float64)
    common = set(a.data) & set(b.data)
    differ = [p for p in common if a.data[p] is None or a.data[p] != b.data[p]]
    if bool(a.data) != bool(b.data):
        return Pairing(empty, empty, f"not paired: only {a.name if a.data else b.name} records the data it ran on "
                       "(the other run was written before runs recorded it); no test")
    if differ:
        where = f" in {_parts_text(kind, differ)}" if differ else ""
        return Pairing(empty, empty, f"not paired: {a.name} and {b.name} ran on different data{where} (their "
                       "manifests record other data files or generators); no test")
    only = {p: a.name for p in set(a.data) - common} | {p: b.name for p in set(b.data) - common}
    keys = sorted((k for k in set(a.values) & set(b.values) if not a.data or _part(k) in common), key=repr)
    left = ""
    if only:
        left = "; ".join(f"{_parts_text(kind, [p for p, w in only.items() if w == who])} left out (only {who} has "
                         f"{'them' if sum(w == who for w in only.values()) > 1 else 'it'})"
                         for who in dict.fromkeys(only.values()))
    return Pairing(np.array([a.values[k] for k in keys], dtype=np.float64),
                   np.array([b.values[k] for k in keys], dtype=np.float64), left_out=left)


def test_pair(a: Learner, b: Learner, test: str, kind: str) -> Paired:
    """``test`` of ``a`` against ``b`` on their pairs (:func:`pair`), with the pairing's
    note; no p-value when they ran on different data."""
    p = pair(a, b, kind)
    if p.refused:
        return Paired(test, 0, None, None, None, p.refused)
    result = paired_test(p.a, p.b, test=test)
    if p.left_out:
        result = replace(result, note="; ".join(n for n in (result.note, p.left_out) if n))
    return result


def compare(runs: list[Run], metric: str, test: str = "t", on: str | None = None, adjustment: str = "holm",
            alpha: float = ALPHA) -> Comparison:
    """Every pair of learners of each experiment, tested by ``test`` on ``metric`` (values
    :data:`ON` ``on``), with ``adjustment`` (:data:`~ltr_cli.reports.significance.ADJUSTMENTS`)
    over all the comparisons that have a p-value; ``alpha``: the level of the table's marks."""
    if adjustment not in ADJUSTMENTS:
        raise LtrError(f"--adjust {adjustment!r}: one of {', '.join(ADJUSTMENTS)}")
    protocol = protocol_of(runs)
    metric, on = resolve_on(metric_name(metric), on, protocol)
    found = learners(runs, metric, on=on)
    kind = "fold" if protocol == BATCH else "seed"
    rows = [Row(a.experiment, a.name, b.name, test_pair(a, b, test, kind))
            for i, a in enumerate(found) for b in found[i + 1:] if a.experiment == b.experiment]
    if not rows:
        shown = ", ".join(sorted({f"{x.experiment}: {x.name}" for x in found}))
        raise LtrError(f"nothing to compare: every experiment has one learner ({shown}); give the runs "
                       "of at least two learners of one experiment")
    for row, p in zip(rows, adjust([r.result.p for r in rows], adjustment)):
        row.p_adjusted = p
    shown = HELDOUT + metric if on == "heldout" else metric
    said = conventions_line([{"convention": run_convention(r), "experiment": r.experiment} for r in runs])
    return Comparison(shown, test, protocol, rows, on, adjustment, alpha, found, said)
