"""Whether a run can be compared with a paper's printed number: its data and protocol
against the paper's setup (:data:`ltr_cli.reports.paper_numbers.PERCEPTRON_SETUPS`).

The verdict lists every difference: a dataset that is not the registry dataset, fold files
that are copies of each other or too few, rounds outside 10% of the paper's T, passes,
shuffling, keep-probability and the metric conventions. Averaging several seeds is noted,
not counted against the run (the paper reports one run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ltr_cli.reports.paper_numbers import PERCEPTRON_SETUPS, ROUNDS_TOLERANCE


@dataclass
class Verdict:
    comparable: bool
    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def text(self) -> str:
        if self.comparable:
            return "comparable" + (f" ({'; '.join(self.notes)})" if self.notes else "")
        return "not comparable: " + "; ".join(self.differences)


def _files(run: Any) -> list[dict[str, Any]]:
    dataset = run.manifest.get("dataset") if isinstance(run.manifest, dict) else None
    fingerprint = dataset.get("fingerprint") if isinstance(dataset, dict) else None
    files = fingerprint.get("files") if isinstance(fingerprint, dict) else None
    return [f for f in files if isinstance(f, dict)] if isinstance(files, list) else []


def perceptron_verdict(seeds: list[Any]) -> Verdict | None:
    """The verdict for one learner's runs (its seeds) against the perceptron paper's setup
    for their dataset; None when the paper has no setup (and no number) for it."""
    run = seeds[0]
    dataset = str(run.summary.get("dataset", ""))
    setup = PERCEPTRON_SETUPS.get(dataset)
    if setup is None:
        return None
    diffs: list[str] = []
    files = _files(run)
    digests = [f.get("xxh3_128") for f in files]
    if len(files) != setup["files"]:
        diffs.append(f"{len(files)} data file(s) (paper: {setup['files']})")
    if len(set(digests)) < len(digests):
        diffs.append(f"{len(digests) - len(set(digests))} of its data files are copies of another")
    rounds = run.summary.get("rounds")
    if not isinstance(rounds, int) or abs(rounds - setup["rounds"]) > ROUNDS_TOLERANCE * setup["rounds"]:
        diffs.append(f"{rounds:,} rounds (paper: about {setup['rounds']:,})" if isinstance(rounds, int)
                     else "rounds unknown")
    protocol = run.config.get("protocol", {}) if isinstance(run.config, dict) else {}
    protocol = protocol if isinstance(protocol, dict) else {}
    for key, say in (("passes", "passes"), ("shuffle", "shuffle"), ("keep_probability", "keep-probability")):
        value = protocol.get(key, {"passes": 1, "shuffle": False, "keep_probability": 1.0}[key])
        if value != setup[key]:
            diffs.append(f"{say} {value} (paper: {setup[key]})")
    metrics = run.config.get("metrics", {}) if isinstance(run.config, dict) else {}
    metrics = metrics if isinstance(metrics, dict) else {}
    for key in ("no_relevant", "ties"):
        if metrics.get(key) != setup[key]:
            diffs.append(f"{key.replace('_', '-')} {metrics.get(key)} (paper's code: {setup[key]})")
    notes = [f"mean of {len(seeds)} seeds; the paper reports one run"] if len(seeds) > 1 else []
    if diffs:
        diffs.append(f"the paper: {setup['what']}")
    return Verdict(not diffs, diffs, notes)


def direct_optimisation_verdict(run: Any) -> Verdict | None:
    """A batch run against the direct-optimisation paper's LETOR protocol; None when the
    paper has no number for its dataset."""
    from ltr_cli.reports.paper_numbers import DIRECT_OPTIMISATION_PAPER, DIRECT_OPTIMISATION_SETUP as setup

    dataset = str(run.summary.get("dataset", ""))
    if not any(key[0] == dataset for key in DIRECT_OPTIMISATION_PAPER):
        return None
    diffs: list[str] = []
    folds = run.summary.get("folds", [])
    if not isinstance(folds, list) or len(folds) != setup["folds"]:
        diffs.append(f"{len(folds) if isinstance(folds, list) else 0} fold(s) (paper: {setup['folds']})")
    digests = [f.get("xxh3_128") for f in _files(run)]
    if len(set(digests)) < len(digests):
        diffs.append(f"{len(digests) - len(set(digests))} of its data files are copies of another")
    from ltr_cli.data.registry import DATASETS

    info = DATASETS.get(dataset)
    for key, known in (("queries", getattr(info, "queries", None)), ("documents", getattr(info, "documents", None))):
        have = run.summary.get(f"test_{key}")
        if known is not None and isinstance(have, int) and have != known and len(folds) == setup["folds"]:
            diffs.append(f"{have:,} {key} over the test folds (the dataset has {known:,})")
    if run.summary.get("convention") != setup["convention"]:
        diffs.append(f"convention {run.summary.get('convention')} (paper: {setup['convention']})")
    config = run.config if isinstance(run.config, dict) else {}
    normalize = (config.get("dataset") or {}).get("normalize", "none") if isinstance(config.get("dataset"), dict) \
        else "none"
    if normalize != setup["normalize"]:
        diffs.append(f"normalize {normalize} (the paper's files are already QueryLevelNorm)")
    if diffs:
        diffs.append(f"the paper: {setup['what']}")
    return Verdict(not diffs, diffs)
