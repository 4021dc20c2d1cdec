"""Pointwise losses: allRank's ``pointwise_rmse`` and ``bce`` (sigmoid cross entropy).

* ``pointwise_rmse``: per slate ``sqrt(mean_i (y_i - no_of_levels * s_i)^2)`` over the real
  documents, averaged over the batch. allRank's configs put a sigmoid on the scorer's output
  for it; here the scores are taken as they come (what allRank's loss receives).
* ``bce``: ``-(y log sigmoid(s) + (1 - y) log sigmoid(-s))`` summed over the real documents
  and divided by the number of slates with a real document. The scores are logits: allRank's
  ``bce`` takes probabilities (its model ends in a sigmoid), so it equals allRank's ``bce`` of
  ``sigmoid(scores)`` wherever that sigmoid does not round to 0 or 1 (|s| below about 16 in
  float32, 36 in float64), where torch's log is cut at -100 and this one stays exact.
  Labels lie in [0, 1].

Shapes ``[Q, L]``.
"""

from __future__ import annotations

from typing import Any

from ltr_cli.neural.losses.kind import LossKind, positive


def pointwise_rmse(scores: Any, labels: Any, mask: Any, no_of_levels: float) -> Any:
    """allRank's ``pointwise_rmse``: the batch mean of each slate's root mean squared error of
    ``no_of_levels * scores`` against the labels (its gradient is 0 where the error is 0)."""
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import batch_mean, slates

    b = slates(scores, labels, mask)
    err = jnp.where(b.mask, b.labels - no_of_levels * b.scores, 0.0)
    count = jnp.maximum(jnp.sum(b.mask, axis=-1), 1).astype(err.dtype)
    mse = jnp.sum(err * err, axis=-1) / count
    positive_mse = mse > 0
    rmse = jnp.where(positive_mse, jnp.sqrt(jnp.where(positive_mse, mse, 1.0)), 0.0)
    return batch_mean(rmse, b.present)


def bce(scores: Any, labels: Any, mask: Any) -> Any:
    """Sigmoid cross entropy of logits against labels in [0, 1] (allRank's ``bce`` of
    ``sigmoid(scores)``): the sum over real documents over the number of non-empty slates."""
    import jax
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import slates

    b = slates(scores, labels, mask)
    ce = -(b.labels * jax.nn.log_sigmoid(b.scores) + (1.0 - b.labels) * jax.nn.log_sigmoid(-b.scores))
    total = jnp.sum(jnp.where(b.mask, ce, 0.0))
    return total / jnp.maximum(jnp.sum(b.present), 1).astype(total.dtype)


POINTWISE_RMSE = LossKind(
    "pointwise_rmse", pointwise_rmse, "per-slate RMSE of no_of_levels * score against the label",
    aliases=("rmse",), allrank="pointwise_rmse", check=positive("no_of_levels"))
BCE = LossKind(
    "bce", bce, "sigmoid cross entropy of the scores (logits) against labels in [0, 1]",
    aliases=("sigmoid_cross_entropy", "sigmoid_ce"), allrank="bce", labels="unit")
