"""Ranking surrogates as pure functions ``(scores, labels) -> (value, grad_scores)``.

Learners chain ``grad_w = X.T @ grad_scores``. :data:`SURROGATES` maps the names used in
configs to functions of ``(scores, labels, **params)``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ltr_cli.surrogates.listwise import kl_value_and_grad, listnet_value_and_grad, smoothdcg_value_and_grad
from ltr_cli.surrogates.pairwise import (
    label_preferences,
    ordinal_value_and_grad,
    preference_value_and_grad,
    ranksvm_value_and_grad,
)
from ltr_cli.surrogates.pointwise import squared_value_and_grad

Surrogate = Callable[..., tuple[float, np.ndarray]]


def _preference_from_labels(scores, labels, cost="uniform"):
    pairs, costs = label_preferences(labels, cost)
    return preference_value_and_grad(scores, pairs, costs)


SURROGATES: dict[str, Surrogate] = {
    "squared": squared_value_and_grad,
    "ranksvm": ranksvm_value_and_grad,
    "ordinal": ordinal_value_and_grad,
    "preference": _preference_from_labels,
    "listnet": listnet_value_and_grad,
    "kl": kl_value_and_grad,
    "smoothdcg": smoothdcg_value_and_grad,
}
