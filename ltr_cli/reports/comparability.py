"""Whether a run can be compared with a paper's printed number: its data and protocol
against the paper's setup (:mod:`ltr_cli.reports.paper_numbers`).

The verdict lists every difference. Data files must be distinct where the protocol says
they differ, and only there (a group file, ``<file>.query`` or ``.group``, holds a data
file's query sizes and is not a data file: it is neither counted nor compared):

* an online run (perceptron paper) streams data files that all differ: MSLR's five
  training files are five different unions of its subsets, so two identical ones are one
  file read twice;
* a batch run (direct-optimisation paper) reads, in each fold, train, vali and test files
  that differ from each other. Between folds identical files are expected: LETOR (like
  MSLR) rotates five subsets over its five folds, so fold k+1's vali file is fold k's test
  file, and every training file holds subsets that other folds validate or test on.

Generated data (files ``ltr data synth`` marked, :mod:`ltr_cli.data.provenance`) is never
the paper's data: the verdict says so first. The other checks: the paper's number of files or folds, rounds within 10% of the paper's
T, passes, shuffling, keep-probability, the conventions, the dataset's query and document
counts, normalisation, and the data version (a LETOR 3.0 run against numbers the paper
measured on LETOR 2.0). Averaging several seeds is noted, not counted against the run (the
paper reports one run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from ltr_cli.data.identity import DIGEST
from ltr_cli.data.provenance import generated_data
from ltr_cli.names import count
from ltr_cli.reports.paper_numbers import PERCEPTRON_SETUPS, ROUNDS_TOLERANCE

_ROLES = ("train", "vali", "test")


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


def _is_group_file(entry: dict[str, Any]) -> bool:
    """A group file's entry: marked ``"group": true``; in runs recorded before entries
    were marked, named as LightGBM's and XGBoost's readers name them."""
    if "group" in entry:
        return entry["group"] is True
    return str(entry.get("path", "")).endswith((".query", ".group"))


def _data_files(run: Any) -> list[dict[str, Any]]:
    return [f for f in _files(run) if not _is_group_file(f)]


def perceptron_verdict(seeds: list[Any]) -> Verdict | None:
    """The verdict for one learner's runs (its seeds) against the perceptron paper's setup
    for their dataset; None when the paper has no setup (and no number) for it."""
    run = seeds[0]
    dataset = str(run.summary.get("dataset", ""))
    setup = PERCEPTRON_SETUPS.get(dataset)
    if setup is None:
        return None
    diffs: list[str] = _generated(run)
    files = _data_files(run)
    digests = [f.get(DIGEST) for f in files]
    if len(files) != setup["files"]:
        diffs.append(f"{count(len(files), 'data file')} (paper: {setup['files']})")
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


def _uses(run: Any, entry: dict[str, Any]) -> list[tuple[Any, str]]:
    """(fold, role) of each use of a batch run's file: as its fingerprint records it, or,
    for runs recorded before it did, the registry layout's path that the file's path ends in."""
    used = entry.get("used_as")
    if isinstance(used, list):
        return [(u.get("fold"), str(u.get("role"))) for u in used if isinstance(u, dict)]
    from ltr_cli.data.registry import DATASETS

    info = DATASETS.get(str(run.summary.get("dataset", "")))
    cv = run.config.get("cv") if isinstance(run.config, dict) else None
    splits = cv.get("splits") if isinstance(cv, dict) else None
    splits = splits if isinstance(splits, dict) else {role: role for role in _ROLES}
    folds = run.summary.get("folds")
    path = str(entry.get("path", "")).replace("\\", "/")
    if info is None or not isinstance(folds, list):
        return []
    return [(fold, role) for fold in folds for role, split in splits.items()
            if split in info.files and path.endswith("/" + info.files[split].replace("{fold}", str(fold)))]


def _copies_within_folds(run: Any) -> list[str]:
    """One difference per pair of roles that read the same bytes inside a fold (train, vali
    and test of one fold must differ), naming the folds; copies across folds are fine."""
    digests: dict[Any, dict[str, set[str]]] = {}
    for entry in _data_files(run):
        digest = entry.get(DIGEST)
        if isinstance(digest, str):
            for fold, role in _uses(run, entry):
                digests.setdefault(fold, {}).setdefault(role, set()).add(digest)
    found: dict[tuple[str, str], list[str]] = {}
    for fold, roles in digests.items():
        for a, b in combinations(_ROLES, 2):
            if roles.get(a, set()) & roles.get(b, set()):
                found.setdefault((a, b), []).append(str(fold))
    out = []
    for (a, b), folds in found.items():
        where = "" if folds == ["None"] else f"{'fold' if len(folds) == 1 else 'folds'} {', '.join(folds)}: "
        out.append(f"{where}the {b} file is a copy of the {a} file of the same fold")
    return out


def _generated(run: Any) -> list[str]:
    """The first difference of a run on generated data: it is not the paper's data at all."""
    shaped = generated_data(getattr(run, "manifest", None))
    return [f"generated data, shaped like {shaped} (not the dataset itself)"] \
        if shaped is not None else []


def _version(title: str) -> str:
    return title.split(" (")[0]


def direct_optimisation_verdict(run: Any) -> Verdict | None:
    """A batch run against the direct-optimisation paper's LETOR protocol; None when the
    paper has no number for its dataset or another version of it."""
    from ltr_cli.data.registry import DATASETS
    from ltr_cli.reports.paper_numbers import (
        DIRECT_OPTIMISATION_PAPER,
        DIRECT_OPTIMISATION_SETUP as setup,
        PAPER_DATA_VERSION,
    )

    dataset = str(run.summary.get("dataset", ""))
    papers = PAPER_DATA_VERSION.get(dataset, dataset)
    if not any(key[0] == papers for key in DIRECT_OPTIMISATION_PAPER):
        return None
    info = DATASETS.get(dataset)
    diffs: list[str] = _generated(run)
    if papers != dataset:
        used = DATASETS[papers]
        diffs.append(f"other data version: the paper used {_version(used.title)} ({used.n_features} features); "
                     f"this run: {_version(info.title) if info else dataset}"
                     + (f" ({info.n_features} features)" if info else ""))
    folds = run.summary.get("folds", [])
    if not isinstance(folds, list) or len(folds) != setup["folds"]:
        diffs.append(f"{count(len(folds) if isinstance(folds, list) else 0, 'fold')} (paper: {setup['folds']})")
    diffs += _copies_within_folds(run)
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
        diffs.append(f"normalize {normalize} (the paper describes no normalisation of LETOR's files)")
    if diffs:
        diffs.append(f"the paper: {setup['what']}")
    return Verdict(not diffs, diffs)
