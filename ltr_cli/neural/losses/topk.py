"""The top-k paper's surrogates as losses on any scorer, over padded batches: the JAX form of
the full-information surrogates in :mod:`ltr_cli.surrogates` (the numpy references they are
tested against). Per slate, over the real documents:

* ``squared``: ``sum_i (s_i - y_i)^2`` (Cossock and Zhang);
* ``kl``: the un-normalised ListNet ``sum e^{y_i} y_i - sum e^{y_i} s_i - sum e^{y_i} + sum
  e^{s_i}``, scores and labels capped at 50 before ``exp``; as the reference, the gradient
  ``e^{s} - e^{y}`` saturates beyond the cap instead of vanishing;
* ``smoothdcg``: minus SmoothDCG@1 (Chapelle and Wu), ``-sum_i G(y_i) softmax(s / epsilon)_i``,
  ``G = 2^y - 1`` (non-convex);
* ``ranksvm``: the pairwise hinge ``sum_{y_i > y_j} max(0, delta - (s_i - s_j))`` (gradient 0
  at the kink, as the reference).

The batch value is the mean over the slates with a real document. Shapes ``[Q, L]``.
"""

from __future__ import annotations

from typing import Any

from ltr_cli.neural.losses.kind import LossKind, positive

EXP_CAP = 50.0  # as ltr_cli.surrogates.topk_estimators.EXP_CAP


def squared(scores: Any, labels: Any, mask: Any) -> Any:
    """The squared loss ``||s - y||^2`` per slate."""
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import batch_mean, slates

    b = slates(scores, labels, mask)
    diff = jnp.where(b.mask, b.scores - b.labels, 0.0)
    return batch_mean(jnp.sum(diff * diff, axis=-1), b.present)


def kl(scores: Any, labels: Any, mask: Any) -> Any:
    """The top-k paper's KL surrogate (module docstring)."""
    import jax
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import batch_mean, slates

    b = slates(scores, labels, mask)
    capped = b.scores + jax.lax.stop_gradient(jnp.minimum(b.scores, EXP_CAP) - b.scores)  # straight through
    ey = jnp.where(b.mask, jnp.exp(jnp.minimum(b.labels, EXP_CAP)), 0.0)
    es = jnp.where(b.mask, jnp.exp(capped), 0.0)
    per_slate = jnp.sum(ey * b.labels - ey * capped - ey + es, axis=-1)
    return batch_mean(per_slate, b.present)


def smoothdcg(scores: Any, labels: Any, mask: Any, epsilon: float = 0.01) -> Any:
    """Minus SmoothDCG@1 with smoothing ``epsilon``."""
    import jax
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import batch_mean, slates

    b = slates(scores, labels, mask)
    p = jax.nn.softmax(jnp.where(b.full, b.scores / epsilon, -jnp.inf), axis=-1)
    gains = jnp.where(b.mask, jnp.maximum(2.0 ** b.labels - 1.0, 0.0), 0.0)
    return batch_mean(-jnp.sum(p * gains, axis=-1), b.present)


def ranksvm(scores: Any, labels: Any, mask: Any, delta: float = 1.0) -> Any:
    """The pairwise hinge over the pairs with different labels."""
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import batch_mean, slates

    b = slates(scores, labels, mask)
    s, y = b.scores, b.labels
    pairs = b.mask[:, :, None] & b.mask[:, None, :] & (y[:, :, None] > y[:, None, :])
    x = delta - (s[:, :, None] - s[:, None, :])
    return batch_mean(jnp.sum(jnp.where(pairs & (x > 0), x, 0.0), axis=(-2, -1)), b.present)


SQUARED = LossKind("squared", squared, "the squared loss ||s - y||^2 per slate (top-k paper)",
                   aliases=("squared_loss",))
KL = LossKind("kl", kl, "the top-k paper's KL surrogate: un-normalised ListNet, exp capped at 50",
              aliases=("kl_surrogate",))
SMOOTHDCG = LossKind("smoothdcg", smoothdcg, "minus SmoothDCG@1: softmax(s / epsilon)-weighted gains (non-convex)",
                     aliases=("smooth_dcg",), check=positive("epsilon"))
RANKSVM = LossKind("ranksvm", ranksvm, "the pairwise hinge of RankSVM over pairs with different labels",
                   aliases=("rank_svm", "pairwise_hinge"), smooth=False, check=positive("delta"))
