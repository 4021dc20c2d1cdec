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


def data_title(runs: list[Any], of_total: bool = False) -> tuple[str | None, bool]:
    """``(what the runs read, partial)``: ``"MSLR-WEB10K sample (43 queries)"`` (with
    ``of_total``: ``(43 of 10,000 queries)``) and True for a partial read of a registry
    dataset, the dataset's name for a full read, the file names for files the registry
    does not know; for generated data shaped like a dataset (files ``ltr data synth``
    marked, or a ``kind: shaped`` generator) ``"generated, shaped like LETOR 2.0 OHSUMED
    (100 queries)"`` and True, never the dataset's name; None for other generated data."""
    if not runs:
        return None, False
    shaped = generated_data(getattr(runs[0], "manifest", None))
    if shaped is not None:
        read = [q for q in (queries_read(r) for r in runs) if q is not None]
        return f"generated, shaped like {_short(shaped)}" + (f" ({max(read):,} queries)" if read else ""), True
    name, info = _dataset(runs[0])
    if info is not None:
        short = SHORT_NAMES.get(name, info.title)
        read = [q for q in (queries_read(r) for r in runs) if q is not None]
        total = getattr(info, "queries", None)
        if read and isinstance(total, int) and max(read) < FULL_SHARE * total:
            return f"{short} sample ({max(read):,}{f' of {total:,}' if of_total else ''} queries)", True
        return short, False
    files = _files(runs[0])
    if files:
        text = ", ".join(files)
        return (text if len(text) <= _MAX_TITLE else f"{files[0]} and {count(len(files) - 1, 'more file')}"), True
    return None, False


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
