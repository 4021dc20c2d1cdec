"""``ltr report --baseline LEARNER``: the report's rows marked where a learner is
significantly better than the baseline, as the papers mark their tables.

The test is the paired t-test (two-sided, p < 0.05 after Holm's adjustment over every test
of the table, or Benjamini-Hochberg's, or none: ``--adjust``) on the report's own numbers: for an
online row, each seed's ``last10`` paired by seed (and for its ``heldout_last``, each
seed's last held-out evaluation); for a batch row, each test query's value
of a metric column, pooled over the folds and paired by query (``test_queries.parquet``),
only on the same data (:func:`ltr_cli.reports.compare.pair`: a row run on other data than
the baseline gets no test, and says so).
A row gets ``vs_baseline`` (the mean difference, p and the number of pairs; why there is no
test where there is none) and, in Markdown, :data:`MARK` beside each value that is
significantly better.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from ltr_cli.errors import LtrError
from ltr_cli.reports.compare import BATCH, RERUN, Learner, learners, test_pair
from ltr_cli.reports.significance import ADJUSTMENTS, ALPHA, Paired, adjust
from ltr_cli.results.folders import Run

MARK = "†"
COLUMN = "vs_baseline"


#: how ``--adjust`` names each adjustment in the legend and beside each p
ADJUSTED = {"holm": "Holm", "bh": "Benjamini-Hochberg", "none": "not adjusted"}


def legend(baseline: str, adjustment: str = "holm") -> str:
    how = ("not adjusted for the number of comparisons" if adjustment == "none" else
           f"{ADJUSTED[adjustment]}-adjusted over the table's tests")
    return (f"{MARK}: significantly better than {baseline} (paired t-test, two-sided, p < {ALPHA:g}, {how}; "
            "online rows over the seeds' last10, their heldout_last over "
            "the seeds' last held-out evaluations, batch rows over the "
            f"test queries pooled over the folds); `{COLUMN}`: the mean difference from {baseline}, p and the "
            "number of pairs (batch: of each marked metric); 'ltr compare' tests every pair of learners "
            "and prints the table with intervals (--format markdown, csv, latex).\n")


def _adjusted(results: list[Any], adjustment: str) -> list[Any]:
    """``results`` (tests, reasons or None) with each test's p adjusted over all the tests."""
    if adjustment not in ADJUSTMENTS:
        raise LtrError(f"--adjust {adjustment!r}: one of {', '.join(ADJUSTMENTS)}")
    tests = [r for r in results if isinstance(r, Paired)]
    ps = iter(adjust([t.p for t in tests], adjustment))
    return [replace(r, p=next(ps)) if isinstance(r, Paired) else r for r in results]


def _baselines(found: list[Learner], runs: list[Run], baseline: str) -> dict[str, Learner]:
    """Per experiment, the learner named ``baseline`` (its config name or its label), if
    it has one."""
    labels = {(r.experiment, str(r.summary.get("learner"))): r.label for r in runs}
    out: dict[str, Learner] = {}
    for x in found:
        if baseline in (x.key[1], labels.get(x.key[:2])):
            if x.experiment in out:
                raise LtrError(f"--baseline {baseline}: experiment {x.experiment} has it with several settings "
                               "(--latest or --config keeps one)")
            out[x.experiment] = x
    return out


def check_baseline(runs: list[Run], baseline: str) -> None:
    """A one-line error unless some run's learner is named ``baseline`` (its config name or
    its label)."""
    if not any(baseline in (str(r.summary.get("learner")), r.label) for r in runs):
        names = sorted({str(r.summary.get("learner")) for r in runs})
        raise LtrError(f"--baseline: no learner named {baseline!r} (learners: {', '.join(names)})")


class Marks:
    """The baseline comparisons of one kind of runs (online or batch)."""

    def __init__(self, runs: list[Run], baseline: str, metrics: list[str], on: str | None = None):
        self.baseline = baseline
        self.kind = "fold" if any(r.summary.get("protocol") == BATCH for r in runs) else "seed"
        tables: dict[Path, Any] = {}
        self.by_metric = {m: learners(runs, m, strict=False, tables=tables, on=on) for m in metrics}
        self.group = {(r.experiment, r.path.name): (r.experiment, str(r.summary.get("learner")),
                                                    str(r.summary.get("config_id"))) for r in runs}
        found = next(iter(self.by_metric.values()), [])
        self.base = _baselines(found, runs, baseline) if found else {}

    def test(self, row: dict[str, Any], metric: str) -> Paired | str | None:
        """The row's learner against the baseline on ``metric``: the test, a reason there
        is none, or None for the baseline itself and experiments without it."""
        key = self.group[(row["experiment"], str(row["runs"]).split()[0])]
        base = self.base.get(key[0])
        if base is None or base.key == key:
            return None
        mine = next(x for x in self.by_metric[metric] if x.key == key)
        other = next(x for x in self.by_metric[metric] if x.key == base.key)
        if mine.values is None or other.values is None:
            who = "this run" if mine.values is None else "the baseline"
            return f"no per-query values for {who}: {RERUN}"
        result = test_pair(mine, other, "t", self.kind)
        return result.note if result.p is None and result.note.startswith("not paired") else result

    def is_baseline(self, row: dict[str, Any]) -> bool:
        key = self.group[(row["experiment"], str(row["runs"]).split()[0])]
        base = self.base.get(key[0])
        return base is not None and base.key == key


def _text(result: Paired, unit: str) -> str:
    """An online row's test: ``better: +0.0310, p=0.012, 5 seeds; p Holm`` (``better`` when
    marked; ``unit``: what a pair is, then what is said of p)."""
    if result.p is None:
        return f"no test ({result.note})"
    what, _, said = unit.partition("; ")
    return (f"{'better: ' if result.better() else ''}{result.mean_difference:+.4f}, p={result.p:.2g}, "
            f"{result.n} {what}{'s' * (result.n != 1)}" + (f"; {said}" if said else "") + _left_out([result]))


def _left_out(results: list[Any]) -> str:
    """``; folds 4, 5 left out (only ... has them)``: the parts a test could not pair."""
    notes = dict.fromkeys(part for r in results if isinstance(r, Paired)
                          for part in r.note.split("; ") if "left out" in part)
    return "".join(f"; {n}" for n in notes)


def mark_online(rows: list[dict[str, Any]], runs: list[Run], baseline: str, adjustment: str = "holm") -> None:
    """Online rows: ``vs_baseline`` and the mark beside ``last10``, tested on the seeds'
    last10; a row with a held-out value also gets its own test on the seeds' last held-out
    evaluations, its mark beside ``heldout_last`` (``heldout: ...`` in ``vs_baseline``).
    The p-values are adjusted over all of these tests (``adjustment``)."""
    metrics = sorted({str(r["metric"]) for r in rows})
    marks = Marks(runs, baseline, metrics)
    with_heldout = sorted({str(r["metric"]) for r in rows if r.get("heldout_last") is not None})
    heldout = Marks(runs, baseline, with_heldout, on="heldout") if with_heldout else None
    mine = [None if marks.is_baseline(row) else marks.test(row, str(row["metric"])) for row in rows]
    held = [heldout.test(row, str(row["metric"]))
            if heldout is not None and str(row["metric"]) in with_heldout and not marks.is_baseline(row) else None
            for row in rows]
    both = _adjusted(mine + held, adjustment)
    mine, held = both[:len(rows)], both[len(rows):]
    unit = f"seed; p {ADJUSTED[adjustment]}" if adjustment != "none" else "seed"
    for row, result, other in zip(rows, mine, held):
        if marks.is_baseline(row):
            row[COLUMN] = "baseline"
            continue
        row[COLUMN] = "" if result is None else result if isinstance(result, str) else _text(result, unit)
        marked = ["last10"] if isinstance(result, Paired) and result.better() else []
        if other is not None:
            row[COLUMN] += ("; " if row[COLUMN] else "") + "heldout: " + (
                other if isinstance(other, str) else _text(other, unit))
            if isinstance(other, Paired) and other.better():
                marked.append("heldout_last")
        if marked:
            row["marked"] = tuple(marked)


def mark_batch(rows: list[dict[str, Any]], runs: list[Run], baseline: str, metrics: list[str],
               column: dict[str, str], adjustment: str = "holm") -> None:
    """Batch rows: ``vs_baseline`` (the metrics with a mark, or why there is no test) and
    the mark beside each such metric column (``column``: metric -> its column name). The
    p-values are adjusted over every row's and metric's test (``adjustment``)."""
    marks = Marks(runs, baseline, metrics)
    tested = [(i, m) for i, row in enumerate(rows) if not marks.is_baseline(row) for m in metrics]
    found = _adjusted([marks.test(rows[i], m) for i, m in tested], adjustment)
    by_row: dict[int, dict[str, Any]] = {}
    for (i, m), result in zip(tested, found):
        by_row.setdefault(i, {})[m] = result
    said = "" if adjustment == "none" else f", p {ADJUSTED[adjustment]}"
    for i, row in enumerate(rows):
        if marks.is_baseline(row):
            row[COLUMN] = "baseline"
            continue
        results = by_row.get(i, {})
        reasons = {r for r in results.values() if isinstance(r, str)}
        better = {m: r for m, r in results.items() if isinstance(r, Paired) and r.better()}
        row["marked"] = tuple(column[m] for m in better)
        if reasons:
            row[COLUMN] = "; ".join(sorted(reasons))
        elif any(isinstance(r, Paired) for r in results.values()):
            n = max(r.n for r in results.values() if isinstance(r, Paired))
            row[COLUMN] = ("better on " + ", ".join(f"{m} ({r.mean_difference:+.4f}, p={r.p:.2g})"
                                                     for m, r in better.items())
                           if better else "no metric significantly better") + f"; {n} queries{said}" \
                + _left_out(list(results.values()))
        else:
            row[COLUMN] = ""
