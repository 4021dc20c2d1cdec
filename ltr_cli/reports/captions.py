"""What a figure says about its data and its curves in words: titles that never claim a
dataset the run did not read in full, short legend labels, and the caption file written
beside every figure (``<figure>.caption.txt``) with the details a legend has no room for.

A run read a registry dataset in full when it saw (at least 99% of) as many queries as the
registry says the dataset's split has (online runs: distinct query ids over every file,
with the last queries a file dropped unused; batch runs: the test folds' queries). A partial read is titled
``<dataset> sample (<read> of <all> queries)``; a run of files the registry does not know is
titled by its file names; data ``ltr data synth`` generated (or a ``kind: shaped``
generator) is titled ``generated, shaped like <dataset> (<read> queries)``; other generated
data and full reads keep the config's description.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ltr_cli.data.provenance import generated_data
from ltr_cli.names import count
from ltr_cli.outputs import write_file

#: the names the papers' figures give the registry's datasets
SHORT_NAMES = {"mslr-web10k": "MSLR-WEB10K", "mslr-web30k": "MSLR-WEB30K", "yahoo-set1": "Yahoo! LTR set 1",
               "yahoo-set2": "Yahoo! LTR set 2", "yandex-imat2009": "Yandex IMAT 2009"}
_FILE_PREFIX = re.compile(r"^\d+:")  # several files: qids are prefixed '<file #>:'
_MAX_TITLE = 60
#: a read of this share of the registry's queries is the dataset: a keep-probability below
#: 1 leaves a few queries unseen in every pass (Yahoo!'s 4 passes at 0.8: about 0.2%)
FULL_SHARE = 0.99


@dataclass
class Curve:
    """One legend entry: its short ``label`` and the details the caption file gives."""

    label: str
    details: list[str] = field(default_factory=list)

    def line(self) -> str:
        return f"{self.label}: {'; '.join(self.details)}" if self.details else self.label


def _dataset(run: Any) -> tuple[str, Any]:
    from ltr_cli.data.registry import DATASETS

    name = str(run.summary.get("dataset", ""))
    return name, DATASETS.get(name)


def queries_read(run: Any) -> int | None:
    """The queries one run read: distinct query ids of an online run (file prefixes
    removed, the unused last queries of its files added), a batch run's test queries."""
    if "qid" in run.rounds.columns:
        ids = {_FILE_PREFIX.sub("", str(q)) for q in run.rounds["qid"].dropna().unique()}
        dropped = run.summary.get("dropped_last_queries")  # counted in every pass
        protocol = run.config.get("protocol") if isinstance(run.config, dict) else None
        passes = protocol.get("passes") if isinstance(protocol, dict) else None
        per_pass = dropped // passes if isinstance(passes, int) and passes > 0 and isinstance(dropped, int) else 0
        return len(ids) + (per_pass if not isinstance(dropped, bool) else 0)
    test = run.summary.get("test_queries")
    return test if isinstance(test, int) and not isinstance(test, bool) else None


def _files(run: Any) -> list[str]:
    dataset = run.config.get("dataset") if isinstance(run.config, dict) else None
    if isinstance(dataset, dict) and dataset.get("kind") == "files" and isinstance(dataset.get("files"), list):
        return [Path(str(f)).name for f in dataset["files"]]
    return []


@dataclass(frozen=True)
class DataRead:
    """What runs read, decided once for figures and tables: ``kind`` ``generated`` (data
    shaped like the dataset ``name``, a registry title), ``sample`` (a partial read of the
    registry dataset ``name``: ``read`` of its ``total`` queries), ``full`` (all of it),
    ``files`` (files the registry does not know, ``name`` their names) or ``unknown``
    (other generated data)."""

    kind: str
    name: str = ""
    read: int | None = None
    total: int | None = None
    files: tuple[str, ...] = ()


def data_read(runs: list[Any]) -> DataRead:
    """What ``runs`` read (:class:`DataRead`): generated data (files ``ltr data synth`` marked,
    or a ``kind: shaped`` generator), else a registry dataset read in full (at least
    :data:`FULL_SHARE` of its queries) or in part, else the files the registry does not know."""
    if not runs:
        return DataRead("unknown")
    read = [q for q in (queries_read(r) for r in runs) if q is not None]
    most = max(read) if read else None
    shaped = generated_data(getattr(runs[0], "manifest", None))
    if shaped is not None:
        return DataRead("generated", shaped, most)
    name, info = _dataset(runs[0])
    if info is not None:
        total = getattr(info, "queries", None)
        if most is not None and isinstance(total, int) and most < FULL_SHARE * total:
            return DataRead("sample", name, most, total)
        return DataRead("full", name, most, total if isinstance(total, int) else None)
    files = _files(runs[0])
    if files:
        return DataRead("files", name, most, files=tuple(files))
    return DataRead("unknown", name)


def data_title(runs: list[Any], of_total: bool = False) -> tuple[str | None, bool]:
    """``(what the runs read, partial)`` for a figure (:func:`data_read`):
    ``"MSLR-WEB10K sample (43 queries)"`` (with ``of_total``: ``(43 of 10,000 queries)``)
    and True for a partial read of a registry dataset, the dataset's name for a full read,
    the file names for files the registry does not know; for generated data shaped like a
    dataset ``"generated, shaped like LETOR 2.0 OHSUMED (100 queries)"`` and True, never the
    dataset's name; None for other generated data."""
    from ltr_cli.data.registry import DATASETS

    seen = data_read(runs)
    if seen.kind == "generated":
        return f"generated, shaped like {_short(seen.name)}" + (f" ({seen.read:,} queries)" if seen.read else ""), True
    if seen.kind in ("sample", "full"):
        short = SHORT_NAMES.get(seen.name, DATASETS[seen.name].title)
        if seen.kind == "sample":
            return f"{short} sample ({seen.read:,}{f' of {seen.total:,}' if of_total else ''} queries)", True
        return short, False
    if seen.kind == "files":
        text = ", ".join(seen.files)
        return (text if len(text) <= _MAX_TITLE else f"{seen.files[0]} and {count(len(seen.files) - 1, 'more file')}"), True
    return None, False


def table_dataset(runs: list[Any]) -> str:
    """A table's dataset cell for ``runs`` (:func:`data_read`, as the figures decide it): the
    registry name, ``mslr-web10k sample (43 of 10,000 queries)`` for a partial read,
    ``generated, shaped like <dataset>`` for generated data, else the name the runs record."""
    seen = data_read(runs)
    if seen.kind == "generated":
        return f"generated, shaped like {seen.name}"
    if seen.kind == "sample":
        return f"{seen.name} sample ({seen.read:,} of {seen.total:,} queries)"
    return seen.name or (str(runs[0].summary.get("dataset", "")) if runs else "")


def _short(title: str) -> str:
    """A registry dataset's title as the papers' figures name it (:data:`SHORT_NAMES`)."""
    from ltr_cli.data.registry import DATASETS

    name = next((n for n, info in DATASETS.items() if info.title == title), None)
    return SHORT_NAMES.get(name, title) if name is not None else title


def description(runs: list[Any]) -> str | None:
    for run in runs:
        text = (run.config or {}).get("description") if isinstance(run.config, dict) else None
        if isinstance(text, str) and text.strip():
            return text.strip()
    return None


def figure_title(runs: list[Any], experiment: str) -> str:
    """A one-figure title: the config's description (the shipped configs name the paper
    figure and the dataset there) when the data was generated or read in full, else what
    was read (a description may name the full dataset)."""
    data, partial = data_title(runs)
    if partial and data:
        return data
    return description(runs) or data or experiment


def panel_title(runs: list[Any], experiment: str, of_total: bool = False) -> str:
    """A panel's title, as the papers' panels are titled: the dataset (or the sample of it
    that was read); generated data: its description when short, else the experiment."""
    data, _ = data_title(runs, of_total)
    if data:
        return data
    text = description(runs)
    return text if text and len(text) <= _MAX_TITLE else experiment


def short_settings(settings: dict[str, Any]) -> dict[str, Any]:
    """Setting keys shortened to their last part (``step.eta`` -> ``eta``) where that
    stays unambiguous."""
    lasts = [k.rsplit(".", 1)[-1] for k in settings]
    return {(last if lasts.count(last) == 1 else key): v for key, last, v in zip(settings, lasts, settings.values())}


def write_caption(out_dir: Path, stem: str, heading: list[str], curves: list[Curve]) -> Path:
    """``<stem>.caption.txt``: the ``heading`` lines (what was read, the axes), then one
    line per curve, ``<legend label>: <details>``."""
    lines = [*heading, *(c.line() for c in curves)]
    text = "\n".join(lines) + "\n"

    def save(path: Path) -> None:
        path.write_text(text, encoding="utf-8")

    return write_file(out_dir, f"{stem}.caption.txt", save)


def run_convention(run: Any) -> str | None:
    """The convention a run's metrics were computed under, with its rules: ``paper (gain
    2^r-1, discount 1/log2(i+1), @k beyond the list: over the list, no relevant: 0)``. A
    batch run's ``cv.convention`` (its ``summary.json``) under the preset's no-relevant
    value; an online run's ``metrics.convention`` and ``metrics.no_relevant`` (its
    config). None when the run records none this version knows."""
    from ltr_cli.core.convention_table import NO_RELEVANT_POLICIES
    from ltr_cli.measures.conventions import CONVENTIONS

    summary = run.summary if isinstance(run.summary, dict) else {}
    if summary.get("protocol") == "batch-cv":
        name, policy = summary.get("convention"), None
    else:
        metrics = run.config.get("metrics") if isinstance(run.config, dict) else None
        metrics = metrics if isinstance(metrics, dict) else {}
        name, policy = metrics.get("convention", "paper"), metrics.get("no_relevant", "zero")
    if not isinstance(name, str) or name not in CONVENTIONS:
        return None
    return CONVENTIONS[name].title(policy if policy in NO_RELEVANT_POLICIES else None)


def conventions_line(rows: list[dict[str, Any]]) -> str | None:
    """One line naming the conventions of table rows (their ``convention`` and
    ``experiment``): ``Convention: paper (gain ...)``, or with several ``Conventions:
    letor3 (...) in exp_a; paper (...) in exp_b``; None when no row has one."""
    by: dict[str, list[str]] = {}
    for row in rows:
        text = row.get("convention")
        if isinstance(text, str) and text:
            seen = by.setdefault(text, [])
            experiment = str(row.get("experiment", ""))
            if experiment and experiment not in seen:
                seen.append(experiment)
    if not by:
        return None
    if len(by) == 1:
        return f"Convention: {next(iter(by))}."
    return "Conventions: " + "; ".join(f"{text} in {', '.join(where)}" for text, where in by.items()) + "."
