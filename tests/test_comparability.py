"""Paper comparisons: a run's data and protocol against the paper's setup decide whether
``ltr report`` shows a difference from the paper's number."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from ltr_cli.reports.comparability import perceptron_verdict


def _run(rounds=30_000, files=None, passes=1, shuffle=False, keep=1.0, no_relevant="one", ties="reverse-input",
         dataset="mslr-web10k"):
    files = files if files is not None else [{"path": f"Fold{i}/train.txt", "xxh3_128": f"d{i}"} for i in range(1, 6)]
    return SimpleNamespace(
        summary={"dataset": dataset, "rounds": rounds, "role": "slam-ndcg"},
        config={"protocol": {"passes": passes, "shuffle": shuffle, "keep_probability": keep},
                "metrics": {"no_relevant": no_relevant, "ties": ties}},
        manifest={"dataset": {"fingerprint": {"files": files}}})


def test_the_papers_setup_is_comparable():
    v = perceptron_verdict([_run(rounds=29_995)])
    assert v is not None and v.comparable and v.text() == "comparable"
    v = perceptron_verdict([_run(), _run()])
    assert v.comparable and "mean of 2 seeds" in v.text()


@pytest.mark.parametrize("kwargs,says", [
    ({"rounds": 1_075}, "1,075 rounds (paper: about 30,000)"),
    ({"passes": 5}, "passes 5 (paper: 1)"),
    ({"shuffle": True}, "shuffle True (paper: False)"),
    ({"keep": 0.8}, "keep-probability 0.8 (paper: 1.0)"),
    ({"ties": "input-order"}, "ties input-order"),
    ({"files": [{"path": f"Fold{i}/train.txt", "xxh3_128": "same"} for i in range(1, 6)]},
     "4 of its data files are copies of another"),
    ({"files": [{"path": "train.txt", "xxh3_128": "x"}]}, "1 data file(s) (paper: 5)"),
])
def test_each_difference_is_named(kwargs, says):
    v = perceptron_verdict([_run(**kwargs)])
    assert v is not None and not v.comparable
    assert says in v.text() and "the paper: one pass over Fold1..Fold5" in v.text()


def test_no_setup_no_verdict():
    assert perceptron_verdict([_run(dataset="shaped:mslr-web10k")]) is None


def _batch(folds=5, convention="letor3", queries=106, documents=16_140, normalize="none", digests=None):
    digests = digests or [f"d{i}" for i in range(15)]
    return SimpleNamespace(
        summary={"dataset": "letor3-ohsumed", "folds": list(range(1, folds + 1)), "convention": convention,
                 "test_queries": queries, "test_documents": documents, "role": "SVMmap"},
        config={"dataset": {"normalize": normalize}},
        manifest={"dataset": {"fingerprint": {"files": [{"xxh3_128": d} for d in digests]}}})


def test_batch_runs_against_the_letor_protocol():
    from ltr_cli.reports.comparability import direct_optimisation_verdict

    assert direct_optimisation_verdict(_batch()).comparable
    for kwargs, says in (({"folds": 3}, "3 fold(s) (paper: 5)"), ({"convention": "paper"}, "convention paper"),
                         ({"queries": 40}, "40 queries over the test folds (the dataset has 106)"),
                         ({"normalize": "zscore"}, "normalize zscore"),
                         ({"digests": ["x"] * 15}, "14 of its data files are copies")):
        v = direct_optimisation_verdict(_batch(**kwargs))
        assert not v.comparable and says in v.text(), (kwargs, v.text())
