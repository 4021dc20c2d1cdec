"""RankNet (Burges et al. 2005) as allRank computes it, and its label-difference weightings.

Over every pair of real documents (i, j) of a slate with ``y_i > y_j``, the logistic loss
``w_ij * log(1 + exp(-(s_i - s_j)))``, averaged over all such pairs of the batch (allRank's
``BCEWithLogitsLoss`` mean: the weights multiply, they do not normalise). ``w_ij`` is 1,
``|y_i - y_j|`` (``weight_by_diff``) or ``|y_i^2 - y_j^2|`` (``weight_by_diff_powed``;
``weight_by_diff`` wins when both are set, as in allRank). A batch without such a pair gives 0
(torch's mean of nothing is NaN). Shapes ``[Q, L]``.
"""

from __future__ import annotations

from typing import Any

from ltr_cli.neural.losses.kind import LossKind

_FLAGS = {"weight_by_diff": (False, True), "weight_by_diff_powed": (False, True)}


def ranknet(scores: Any, labels: Any, mask: Any, weight_by_diff: bool = False,
            weight_by_diff_powed: bool = False) -> Any:
    """allRank's ``rankNet``: the mean logistic loss over the batch's ordered pairs."""
    import jax
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import safe_mean, slates

    b = slates(scores, labels, mask)
    y, s = b.labels, b.scores
    diff = y[:, :, None] - y[:, None, :]
    pairs = b.mask[:, :, None] & b.mask[:, None, :] & (diff > 0)
    loss = jax.nn.softplus(-(s[:, :, None] - s[:, None, :]))
    if weight_by_diff:
        loss = loss * jnp.abs(diff)
    elif weight_by_diff_powed:
        loss = loss * jnp.abs(y[:, :, None] ** 2 - y[:, None, :] ** 2)
    return safe_mean(loss, pairs)


def ranknet_weightbygtdiff(scores: Any, labels: Any, mask: Any) -> Any:
    """allRank's ``rankNet_weightByGTDiff``: ``ranknet`` with ``weight_by_diff=True``."""
    return ranknet(scores, labels, mask, weight_by_diff=True)


def ranknet_weightbygtdiff_pow(scores: Any, labels: Any, mask: Any) -> Any:
    """allRank's ``rankNet_weightByGTDiff_pow``: ``ranknet`` with ``weight_by_diff_powed=True``."""
    return ranknet(scores, labels, mask, weight_by_diff_powed=True)


RANKNET = LossKind(
    "ranknet", ranknet, "RankNet: mean logistic loss over ordered pairs, optionally label-difference weighted",
    aliases=("rank_net",), allrank="rankNet", choices=_FLAGS)
RANKNET_DIFF = LossKind(
    "ranknet_weightbygtdiff", ranknet_weightbygtdiff, "RankNet with pairs weighted by |y_i - y_j|",
    aliases=("ranknet_diff",), allrank="rankNet_weightByGTDiff")
RANKNET_DIFF_POW = LossKind(
    "ranknet_weightbygtdiff_pow", ranknet_weightbygtdiff_pow, "RankNet with pairs weighted by |y_i^2 - y_j^2|",
    aliases=("ranknet_diff_pow",), allrank="rankNet_weightByGTDiff_pow")
