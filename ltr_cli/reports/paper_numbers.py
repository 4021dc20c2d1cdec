"""Numbers the papers print, to show beside measured ones (``ltr report``).

Perceptron paper, Section 8: averages over the last ten iterations of the time-averaged
curves, Algorithm 2 vs. online ListNet (REPRODUCTION-NOTES.md). The text calls SLAM
"slightly worse" on Yahoo while quoting it higher; the numbers are reported as printed.
Yandex is described only as "overlapping", so it has no number here.
"""

from __future__ import annotations

from typing import Any

from ltr_cli.measures.registry import canonical_name
from ltr_cli.names import setting_value

# (dataset, role, metric) -> value
PERCEPTRON_PAPER: dict[tuple[str, str, str], float] = {
    ("mslr-web10k", "slam-ndcg", "ndcg@10"): 0.25,
    ("mslr-web10k", "listnet", "ndcg@10"): 0.22,
    ("mslr-web10k", "slam-ap", "ap"): 0.49,
    ("mslr-web10k", "listnet", "ap"): 0.37,
    ("yahoo-set1", "slam-ndcg", "ndcg@10"): 0.75,
    ("yahoo-set1", "listnet", "ndcg@10"): 0.74,
    ("yahoo-set1", "slam-ap", "ap"): 0.875,
    ("yahoo-set1", "listnet", "ap"): 0.87,
}


#: the values of a config's ``paper:`` key
PAPERS = ("perceptron", "top-k", "direct-optimisation", "ranking-losses", "neuralndcg", "context-aware", "neural-vs-gbdt")


def config_paper(config: Any) -> str | None:
    """The paper a run's config says it reproduces (its ``paper:`` key), or None."""
    paper = config.get("paper") if isinstance(config, dict) else None
    return paper if paper in PAPERS else None


def paper_value(paper: str | None, dataset: str, role: str, metric: str,
                protocol: dict[str, Any] | None = None) -> float | None:
    """The number ``paper`` prints for a dataset, learner role, metric and protocol, if it
    gives one: only the perceptron paper prints online numbers (the top-k paper's are in a
    figure). Looked up by paper first, so a learner that two papers run (ListNet) never
    borrows the other paper's number, and by protocol (``protocol``: the run's config
    ``protocol:`` block; passes, keep-probability, shuffling), so a run under another
    protocol (the top-k paper's 10 passes over Yahoo) is never judged against it. Generated
    data shaped like a dataset (``shaped:NAME``) is not matched: its numbers are not
    comparable with the paper's."""
    if paper != "perceptron" or other_protocol(dataset, protocol):
        return None
    return PERCEPTRON_PAPER.get((dataset, role, canonical_name(metric)))


def printed_elsewhere(dataset: str, role: str, metric: str, protocol: dict[str, Any] | None = None) -> str | None:
    """The paper that prints a number for this dataset, role, metric and protocol, for a
    run whose config names no paper (so the report can say which ``paper:`` to set)."""
    if other_protocol(dataset, protocol):
        return None
    return "perceptron" if (dataset, role, canonical_name(metric)) in PERCEPTRON_PAPER else None


#: the protocol keys a perceptron-paper number is looked up by, with the config's defaults
PROTOCOL_KEYS = {"passes": 1, "keep_probability": 1.0, "shuffle": False}


def run_protocol(config: Any) -> dict[str, Any]:
    """A run's protocol as the lookup keys it (:data:`PROTOCOL_KEYS`, defaults filled in)."""
    block = config.get("protocol") if isinstance(config, dict) else None
    block = block if isinstance(block, dict) else {}
    return {key: block.get(key, default) for key, default in PROTOCOL_KEYS.items()}


def other_protocol(dataset: str, protocol: dict[str, Any] | None) -> list[str]:
    """How ``protocol`` differs from the one behind the perceptron paper's numbers for
    ``dataset`` (``passes 10 (paper: 4)``, ...); [] when it is the same, or when either is
    not known (``protocol`` None)."""
    setup = PERCEPTRON_SETUPS.get(dataset)
    if setup is None or protocol is None:
        return []
    said = {"passes": "passes", "keep_probability": "keep-probability", "shuffle": "shuffle"}
    return [f"{said[key]} {setting_value(protocol.get(key, default))} (paper: {setting_value(setup[key])})"
            for key, default in PROTOCOL_KEYS.items() if protocol.get(key, default) != setup[key]]


# Direct-optimisation paper, Table 2 (MAP) and Table 3 (NDCG@3), measured on the LETOR of
# 2007 (LETOR 2.0; Section 5.1: OHSUMED with 25 features, TD2003 and TD2004 with 44):
# (dataset, method, metric) -> value, rows by the method names the paper prints (a batch
# learner's paper role)
_TABLES = {
    "SVMmap": ((0.4456, 0.4669), (0.2554, 0.4014), (0.3804, 0.4586)),
    "AdaRank": ((0.4419, 0.4803), (0.1373, 0.2912), (0.3308, 0.4017)),
    "PermuRank": ((0.4495, 0.4764), (0.2768, 0.3823), (0.3636, 0.4467)),
    "RankSVM": ((0.4469, 0.4649), (0.2564, 0.3787), (0.3505, 0.4092)),
    "RankBoost": ((0.4403, 0.4726), (0.2125, 0.2704), (0.3835, 0.4640)),
}
DIRECT_OPTIMISATION_PAPER: dict[tuple[str, str, str], float] = {
    (dataset, method.lower(), metric): values[i][j]
    for method, values in _TABLES.items()
    for i, dataset in enumerate(("letor2-ohsumed", "letor2-td2003", "letor2-td2004"))
    for j, metric in enumerate(("ap", "ndcg@3"))
}
# LETOR 3.0 (December 2008) re-sampled the documents of these collections and changed their
# features (45 and 64): a run on it is named against the version the paper's numbers are for
PAPER_DATA_VERSION = {"letor3-ohsumed": "letor2-ohsumed", "letor3-td2003": "letor2-td2003",
                      "letor3-td2004": "letor2-td2004"}


def in_batch_paper(method: str) -> bool:
    """Whether the direct-optimisation paper's tables have a row for ``method`` (a batch
    learner's paper role, any case); the baselines run beside them (LambdaMART,
    Coordinate Ascent) have none."""
    return method.lower() in {m.lower() for m in _TABLES}


def batch_paper_value(dataset: str, method: str, metric: str, paper: str | None = "direct-optimisation") -> float | None:
    """Table 2 (MAP, metric ``ap``; ``map`` is read as ``ap``) / Table 3 (``ndcg@3``) of the
    direct-optimisation paper; ``method``
    is the paper's name for it, in any case (runs recorded before roles were the paper's
    names record it in lower case). Only the LETOR 2.0 datasets have numbers; a LETOR 3.0
    run gets none (:data:`PAPER_DATA_VERSION`), and so does a run whose config names another
    paper (``paper``)."""
    if paper != "direct-optimisation":
        return None
    return DIRECT_OPTIMISATION_PAPER.get((dataset, method.lower(), canonical_name(metric)))


# The setups behind those numbers (REPRODUCTION-NOTES.md, "Perceptron paper, Figures 2-3"):
# what a run must match before its difference from the paper means anything.
PERCEPTRON_SETUPS: dict[str, dict[str, Any]] = {
    "mslr-web10k": {
        "what": "one pass over Fold1..Fold5/train.txt in file order (T about 30,000)",
        "files": 5, "rounds": 30_000, "passes": 1, "shuffle": False, "keep_probability": 1.0,
        "no_relevant": "one", "ties": "reverse-input",
    },
    "yahoo-set1": {
        "what": "4 passes over set1.train, each query kept with probability 0.8 (T about 63,800)",
        "files": 1, "rounds": 63_800, "passes": 4, "shuffle": False, "keep_probability": 0.8,
        "no_relevant": "one", "ties": "reverse-input",
    },
}
ROUNDS_TOLERANCE = 0.1  # a run's rounds may differ from the paper's T by this share

# The direct-optimisation paper's LETOR protocol: LETOR 2.0's five folds, each fit on train,
# selected on vali, evaluated on test; scored here with LETOR 3.0's script conventions
# (LETOR 2.0's own evaluation script is not documented in this project)
DIRECT_OPTIMISATION_SETUP: dict[str, Any] = {
    "what": "5-fold CV on LETOR 2.0's Fold1..Fold5 as shipped, evaluated with LETOR's script "
            "conventions (letor3)",
    "folds": 5, "convention": "letor3", "normalize": "none",
}
