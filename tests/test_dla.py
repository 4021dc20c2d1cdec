"""Linear DLA: the propensities it learns with the ranker, and its refusals."""

from __future__ import annotations

import numpy as np
import pytest

from ltr_cli.clicklog.signal import ClickSignal
from ltr_cli.learners.batch.click_data import fold_clicks
from ltr_cli.learners.batch.convergence import FitContext
from ltr_cli.learners.batch.dla import DLASpec, fit_dla
from ltr_cli.errors import LtrError

ULTRA_RELATIVE = [1, 0.897, 0.706, 0.500, 0.412, 0.294, 0.162, 0.147, 0.118, 0.088]


def _train(queries: int = 300, d: int = 20, seed: int = 0):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=d)
    out = []
    for _ in range(queries):
        X = rng.normal(size=(40, d))
        out.append((X, np.digitize(X @ w + 0.5 * rng.normal(size=40), [1, 2.5, 3.5, 4.5])))
    return out, w


def test_dla_recovers_the_position_propensities_of_a_randomised_log():
    train, w_true = _train()
    signal = ClickSignal.model_validate({"generate": {"model": "ultra-pbm", "sessions": 30_000, "policy": "shuffle"},
                                         "correction": "naive"})
    data = fold_clicks(signal, train, [str(i) for i in range(len(train))], 1)
    model = fit_dla(train, data, 100.0, rounds=8)
    assert np.allclose(model.info["propensity"], ULTRA_RELATIVE, atol=0.03)
    assert np.corrcoef(model.w, w_true)[0, 1] > 0.95
    # the naive softmax ranker (propensities held equal) learns no propensity
    flat = fit_dla(train, data, 100.0, rounds=1)
    assert not np.allclose(flat.info["propensity"], model.info["propensity"], atol=1e-3)


def test_dla_needs_raw_clicks_and_a_click_log():
    with pytest.raises(ValueError, match="DLA learns the propensities from the raw clicks"):
        DLASpec.model_validate({"type": "dla", "clicks": {"generate": {}}})
    spec = DLASpec.model_validate({"type": "dla", "clicks": {"generate": {}, "correction": "naive"}})
    train, _ = _train(3)
    with pytest.raises(LtrError, match="dla trains on a click log"):
        spec.fit(train, {"C": 1.0}, FitContext())
