"""Every declared loss (and every LambdaLoss scheme) on the slates that break naive code: one
document, no relevant document, no document at all, all labels tied, and a batch where no
slate has a relevant document: finite values and finite gradients, 0 at padded positions;
and every allRank loss named as the rule says (allRank's function name in lower case)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("jax")

from ltr_cli.neural.losses import kinds, resolve  # noqa: E402
from tests.neural_checks import value_grad64  # noqa: E402

REQUIRED = {"pointwise_rmse": {"no_of_levels": 4}, "ordinal": {"n": 4}}
SCHEMES = ["ndcgLoss1_scheme", "ndcgLoss2_scheme", "ndcgLoss2PP_scheme", "lambdaRank_scheme", "rankNet_scheme",
           "rankNetWeightedByGTDiff_scheme", "rankNetWeightedByGTDiffPowed_scheme"]
CASES = [(name, REQUIRED.get(name, {})) for name in kinds()]
CASES += [("lambdaloss", {"weighing_scheme": s}) for s in SCHEMES]
CASES += [("lambdaloss", {"weighing_scheme": s, "reduction": "mean", "k": 2}) for s in SCHEMES]


def _awkward(outputs: int):
    rng = np.random.default_rng(0)
    shape = (5, 6) if outputs == 1 else (5, 6, outputs)
    scores = rng.normal(size=shape)
    labels = np.array([[2, 0, 0, 0, 0, 0],   # one document
                       [0, 0, 0, 0, 0, 0],   # no relevant document
                       [1, 3, 0, 2, 0, 0],   # no document at all
                       [1, 1, 1, 1, 1, 1],   # every label tied, no padding
                       [0, 1, 0, 1, 1, 0]], dtype=float)
    mask = np.array([[1, 0, 0, 0, 0, 0], [1, 1, 1, 1, 0, 0], [0, 0, 0, 0, 0, 0],
                     [1, 1, 1, 1, 1, 1], [1, 1, 1, 0, 0, 0]], dtype=bool)
    return scores, labels, mask


@pytest.mark.parametrize("name, params", CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_awkward_slates_give_finite_values_and_gradients(name, params):
    kind = resolve(name)
    s, y, m = _awkward(kind.n_outputs(params))
    if kind.labels == "unit":
        y = np.minimum(y, 1.0)
    pad = ~m if s.ndim == 2 else np.repeat(~m[..., None], s.shape[-1], axis=-1)
    for labels in (y, np.zeros_like(y)):
        v, g = value_grad64(name, s, labels, m, **params)
        assert np.isfinite(v) and np.all(np.isfinite(g)), (name, v)
        assert np.all(g[pad] == 0.0)


def test_allranks_losses_take_allranks_names_in_lower_case():
    for name, kind in kinds().items():
        if kind.allrank is not None:
            assert name == kind.allrank.lower(), name
            assert resolve(kind.allrank) is kind
