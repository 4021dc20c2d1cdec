"""ListNet (Cao et al. 2007) as allRank computes it, graded and binary.

* ``listnet``: the top-one cross entropy ``-sum_i softmax(y)_i log(softmax(s)_i + eps)``
  per slate, averaged over the batch (allRank's ``listNet``: the eps inside the log).
* ``binary_listnet``: ``-sum_i (y_i / sum_j y_j) log(softmax(s)_i + eps)`` (allRank's
  ``binary_listNet``: the labels normalised by their sum, not by a softmax; a slate without
  a relevant document gives 0).

Shapes ``[Q, L]``; padded positions take no probability mass on either side.
"""

from __future__ import annotations

from typing import Any

from ltr_cli.neural.losses.kind import LossKind

DEFAULT_EPS = 1e-10


def listnet(scores: Any, labels: Any, mask: Any, eps: float = DEFAULT_EPS) -> Any:
    """allRank's ``listNet`` over a padded batch: the batch mean of each slate's top-one
    cross entropy between ``softmax(labels)`` and ``softmax(scores) + eps``."""
    import jax
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import batch_mean, slates

    b = slates(scores, labels, mask)
    p_scores = jax.nn.softmax(jnp.where(b.full, b.scores, -jnp.inf), axis=-1)
    p_labels = jax.nn.softmax(jnp.where(b.full, b.labels, -jnp.inf), axis=-1)
    per_slate = -jnp.sum(p_labels * jnp.log(p_scores + eps), axis=-1)
    return batch_mean(per_slate, b.present)


def binary_listnet(scores: Any, labels: Any, mask: Any, eps: float = DEFAULT_EPS) -> Any:
    """allRank's ``binary_listNet``: the labels divided by their sum (1 when it is 0) in
    place of their softmax."""
    import jax
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import batch_mean, slates

    b = slates(scores, labels, mask)
    total = jnp.sum(b.labels, axis=-1, keepdims=True)
    target = b.labels / jnp.where(total == 0.0, 1.0, total)
    p_scores = jax.nn.softmax(jnp.where(b.full, b.scores, -jnp.inf), axis=-1)
    per_slate = -jnp.sum(target * jnp.log(p_scores + eps), axis=-1)
    return batch_mean(per_slate, b.present)


LISTNET = LossKind(
    "listnet", listnet, "ListNet: top-one cross entropy of softmax(labels) and softmax(scores)",
    aliases=("list_net",), allrank="listNet")
BINARY_LISTNET = LossKind(
    "binary_listnet", binary_listnet, "ListNet with labels normalised by their sum (binary relevance)",
    aliases=("binary_list_net",), allrank="binary_listNet")
