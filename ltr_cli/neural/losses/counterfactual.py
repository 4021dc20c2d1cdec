"""A ranking loss linear in its labels, for training on counterfactual estimates of
relevance (``type: neural`` with ``clicks:``; :mod:`ltr_cli.clicklog.docwise`).

``softmax_ce``: ``-sum_i y_i log softmax(s)_i`` per slate, averaged over the batch (the
labels used as they are: not normalised, not passed through a softmax, and possibly
negative, as a doubly-robust or affine estimate can be). Because the loss is linear in
``y``, its expectation over the click logs is the loss of the expected labels: an unbiased
estimate of relevance gives an unbiased estimate of the loss on the true relevance (ListNet's
``softmax(y)`` and LambdaLoss's gains are not linear, so their expectation is not). It is
the log-likelihood of a Plackett-Luce policy's first place, weighted by relevance.

Shapes ``[Q, L]``; padded positions take no probability mass.
"""

from __future__ import annotations

from typing import Any

from ltr_cli.neural.losses.kind import LossKind


def softmax_ce(scores: Any, labels: Any, mask: Any) -> Any:
    """The batch mean of each slate's ``-sum_i labels_i log softmax(scores)_i``."""
    import jax
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import batch_mean, slates

    b = slates(scores, labels, mask)
    log_p = jax.nn.log_softmax(jnp.where(b.full, b.scores, -jnp.inf), axis=-1)
    per_slate = -jnp.sum(jnp.where(b.mask, b.labels * log_p, 0.0), axis=-1)
    return batch_mean(per_slate, b.present)


SOFTMAX_CE = LossKind(
    "softmax_ce", softmax_ce, "softmax cross entropy with the labels as weights, -sum y_i log softmax(s)_i: "
    "linear in the labels (counterfactual click estimates)", aliases=("softmax_cross_entropy",))
