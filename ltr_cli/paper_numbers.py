"""Numbers the papers print, to show beside measured ones (``ltr report``).

Perceptron paper, Section 8: averages over the last ten iterations of the time-averaged
curves, Algorithm 2 vs. online ListNet (REPRODUCTION-NOTES.md). The text calls SLAM
"slightly worse" on Yahoo while quoting it higher; the numbers are reported as printed.
Yandex is described only as "overlapping", so it has no number here.
"""

from __future__ import annotations

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


def paper_value(dataset: str, role: str, metric: str) -> float | None:
    """The printed number for a dataset, learner role and metric, if the paper gives one.

    Generated data shaped like a dataset (``shaped:NAME``) is not matched: its numbers are
    not comparable with the paper's.
    """
    return PERCEPTRON_PAPER.get((dataset, role, metric))
