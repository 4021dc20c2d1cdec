"""The perceptron paper's SLAM surrogates as losses on any scorer, over padded batches: the
JAX form of :mod:`ltr_cli.surrogates.slam` (the numpy reference they are tested against).

Per slate, with weights ``v`` and hinge terms
``c_i = max(0, max_{j: y_j < y_i} (margin_ij + s_j - s_i))`` over the real documents
(``margin_ij = delta``, ``margin="constant"``, or ``delta (y_i - y_j)``,
``"label-difference"``):

* ``slam``: ``sum_i v_i c_i`` (Eq. 9). ``measure="ndcg"``: v^NDCG (Eq. 11; ``k`` gives
  v^NDCG@k, Eq. 24), documents of a level ordered by score (``weights="paper"``), by position
  (``"paper-fixed"``, convex) or each weight the mean over its level (``"level-averaged"``,
  the authors' code); ``measure="ap"``: v^AP (Eq. 10) on ``y > threshold``, the labels
  binarised there too.
* ``max_pair``: ``max_i c_i`` (Alg. 3, Eq. 27) on the labels as given.

The weights are held constant under differentiation, and a hinge at exactly 0 has gradient 0,
so ``jax.grad`` gives the reference's subgradient (Eq. 13 / 29). Which maximiser wins among
equal candidates follows ``ties``: ``first-index`` (smallest position) or ``authors-code``
(higher level, then the later position), as the reference. The batch value is the mean over
the slates with a real document. Shapes ``[Q, L]``.
"""

from __future__ import annotations

from typing import Any

from ltr_cli.neural.losses.kind import LossKind, all_of, positive, positive_int_or_none

_TIES = ("first-index", "authors-code")


def hinge_terms(scores: Any, labels: Any, mask: Any, margin: str, delta: float, ties: str) -> Any:
    """``c [Q, L]`` (0 where a document has no less relevant one) and the maximisers
    ``k [Q, L]``, the gradient reaching ``s_i`` and ``s_{k_i}`` only."""
    import jax.numpy as jnp

    s, y = scores, labels
    n = s.shape[-1]
    if margin == "constant":
        a, b = s, delta - s
    else:
        a, b = s - delta * y, delta * y - s
    cand = mask[:, None, :] & mask[:, :, None] & (y[:, None, :] < y[:, :, None])  # [Q, i, j]
    A = jnp.where(cand, a[:, None, :], -jnp.inf)
    best = jnp.max(A, axis=-1, keepdims=True)
    tied = cand & (A == best)
    if ties == "first-index":
        k = jnp.argmax(tied, axis=-1)
    else:
        top = jnp.max(jnp.where(tied, y[:, None, :], -jnp.inf), axis=-1, keepdims=True)
        tied = tied & (y[:, None, :] == top)
        k = n - 1 - jnp.argmax(tied[..., ::-1], axis=-1)
    has_lower = jnp.any(cand, axis=-1)
    x = b + jnp.take_along_axis(a, k, axis=-1)
    return jnp.where(has_lower & (x > 0), x, 0.0), k


def slam_weights(scores: Any, labels: Any, mask: Any, measure: str, k: int | None, weights: str,
                 threshold: float) -> Any:
    """The weight vectors ``v [Q, L]`` (0 at padded positions; module docstring)."""
    import jax
    import jax.numpy as jnp

    y = labels
    n = y.shape[-1]
    if measure == "ap":
        rel = mask & (y > threshold)
        r = jnp.sum(rel, axis=-1, keepdims=True)
        return jnp.where(rel, 1.0 / jnp.maximum(r, 1).astype(y.dtype), 0.0)
    idx = jnp.broadcast_to(jnp.arange(n), y.shape)
    s = jax.lax.stop_gradient(scores) if weights == "paper" else jnp.zeros_like(y)
    order = jnp.lexsort((idx, -s, -y, (~mask).astype(jnp.int32)), axis=-1)
    pos = jnp.argsort(order, axis=-1)  # each document's place, real documents first
    discount = 1.0 / jnp.log2(pos.astype(y.dtype) + 2.0)
    count = jnp.sum(mask, axis=-1, keepdims=True)
    cut = count if k is None else jnp.minimum(count, k)
    contrib = jnp.where(mask & (pos < cut), jnp.maximum(2.0 ** y - 1.0, 0.0) * discount, 0.0)
    z = jnp.sum(contrib, axis=-1, keepdims=True)
    v = jnp.where(z > 0, contrib / jnp.where(z > 0, z, 1.0), 0.0)
    if weights == "level-averaged":
        same = mask[:, :, None] & mask[:, None, :] & (y[:, :, None] == y[:, None, :])
        v = jnp.where(mask, jnp.sum(jnp.where(same, v[:, None, :], 0.0), axis=-1)
                      / jnp.maximum(jnp.sum(same, axis=-1), 1).astype(y.dtype), 0.0)
    return jax.lax.stop_gradient(v)


def slam(scores: Any, labels: Any, mask: Any, measure: str = "ndcg", k: int | None = None, weights: str = "paper",
         threshold: float = 0.0, margin: str = "constant", delta: float = 1.0, ties: str = "first-index") -> Any:
    """SLAM (Eq. 9) with the perceptron paper's weights (module docstring)."""
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import batch_mean, slates

    b = slates(scores, labels, mask)
    v = slam_weights(b.scores, b.labels, b.mask, measure, k, weights, threshold)
    y = (b.labels > threshold).astype(b.labels.dtype) if measure == "ap" else b.labels
    c, _ = hinge_terms(b.scores, y, b.mask, margin, delta, ties)
    return batch_mean(jnp.sum(v * c, axis=-1), b.present)


def max_pair(scores: Any, labels: Any, mask: Any, margin: str = "constant", delta: float = 1.0,
             ties: str = "first-index") -> Any:
    """Alg. 3's surrogate ``max_i c_i`` (Eq. 27): the largest violated pair per slate."""
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import batch_mean, slates

    b = slates(scores, labels, mask)
    c, _ = hinge_terms(b.scores, b.labels, b.mask, margin, delta, ties)
    n = c.shape[-1]
    best = jnp.max(c, axis=-1, keepdims=True)
    tied = b.mask & (c == best)
    if ties == "first-index":
        i = jnp.argmax(tied, axis=-1)
    else:
        top = jnp.max(jnp.where(tied, b.labels, -jnp.inf), axis=-1, keepdims=True)
        i = n - 1 - jnp.argmax((tied & (b.labels == top))[..., ::-1], axis=-1)
    return batch_mean(jnp.take_along_axis(c, i[:, None], axis=-1)[:, 0], b.present)


_COMMON = {"margin": ("constant", "label-difference"), "ties": _TIES}
SLAM = LossKind(
    "slam", slam, "SLAM (perceptron paper, Eq. 9): NDCG- or AP-weighted hinges against the worst less relevant document",
    aliases=("slam_surrogate",), smooth=False,
    choices={**_COMMON, "measure": ("ndcg", "ap"), "weights": ("paper", "paper-fixed", "level-averaged")},
    check=all_of(positive_int_or_none("k"), positive("delta")))
MAX_PAIR = LossKind(
    "max_pair", max_pair, "the largest violated pair's hinge (perceptron paper, Alg. 3, Eq. 27)",
    aliases=("slam_max_pair",), smooth=False, choices=_COMMON, check=positive("delta"))
