"""The observers around an online round: the finiteness watch and held-out evaluations."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from ltr_cli.errors import LtrError
from ltr_cli.protocols.observers import FiniteWeights, HeldoutEvaluations
from ltr_cli.core.round_log import RoundLog


def _learner(numerics: str) -> Any:
    return SimpleNamespace(weights=np.zeros(3), numerics=numerics)


def test_weights_that_leave_the_reals_stop_the_run_naming_the_round_and_qid():
    learner = _learner("stable")
    watch = FiniteWeights(learner, "alg2")
    watch.after_update(1, "q1", True)
    learner.weights = np.array([0.0, np.nan, 1.0])
    watch.after_update(2, "q2", False)  # no update: not checked
    with pytest.raises(LtrError, match=r"round 3 \(qid q3\): the learner's weights became NaN"):
        watch.after_update(3, "q3", True)


def test_under_the_authors_numerics_the_first_nonfinite_round_is_kept_with_one_warning(capsys):
    learner = _learner("authors-code")
    watch = FiniteWeights(learner, "alg3", nonfinite_round=None)
    learner.weights = np.array([np.inf, 0.0, 0.0])
    watch.after_update(4, "q4", True)
    watch.after_update(5, "q5", True)
    assert watch.nonfinite_round == 4
    assert capsys.readouterr().err.count("weights became NaN or infinite in round 4") == 1


def test_heldout_evaluations_fill_only_the_due_rounds_rows():
    heldout = SimpleNamespace(columns=["heldout_ndcg@10"], due=lambda t: t % 2 == 0,
                              evaluate=lambda w, scorer=None: [float(w.sum())])
    learner = SimpleNamespace(weights=np.ones(3))
    log = RoundLog(["ndcg@10", "heldout_ndcg@10"])
    observer = HeldoutEvaluations(heldout, log, learner)  # type: ignore[arg-type]
    for t in (1, 2):
        log.append(t, 0, f"q{t}", 2, [0.5, np.nan], False, False, False, np.nan)
        observer.after_round(t, lambda: pytest.fail("no snapshot is taken"))
    column = log.columns["heldout_ndcg@10"]
    assert np.isnan(column[0]) and column[1] == 3.0
