"""ListMLE (Xia et al. 2008) as allRank computes it, with a seeded order among tied labels.

Per slate, the documents sorted by label, best first, give the Plackett-Luce negative
log-likelihood ``sum_i [log(eps + sum_{j >= i} exp(s_j - max s)) - (s_i - max s)]`` over the
real documents; the batch mean of it is the loss (allRank's ``listMLE``, eps inside the log).

Ties: allRank shuffles the slate's positions with torch's generator before sorting, so with
tied labels its value is random. Here the shuffle is a permutation of the L positions drawn
from ``seed`` (JAX's threefry; one permutation for the whole batch, as allRank draws one),
followed by a stable sort by label: the same inputs and seed give the same value. A training
loop that wants allRank's fresh order at every step passes a different seed each step.
Without ties the order, and the value, are allRank's. Shapes ``[Q, L]``.
"""

from __future__ import annotations

from typing import Any

from ltr_cli.neural.losses.kind import LossKind

DEFAULT_EPS = 1e-10


def tie_order(labels: Any, mask: Any, seed: int) -> Any:
    """Indices ``[Q, L]`` putting each slate's documents in ListMLE's order: labels
    descending, ties in the order of a permutation drawn from ``seed``, padding last."""
    import jax
    import jax.numpy as jnp

    length = labels.shape[-1]
    perm = jax.random.permutation(jax.random.key(seed), length)
    keys = jnp.where(mask, -labels, jnp.inf)[:, perm]
    return perm[jnp.argsort(keys, axis=-1, stable=True)]


def listmle(scores: Any, labels: Any, mask: Any, eps: float = DEFAULT_EPS, seed: int = 0) -> Any:
    """allRank's ``listMLE`` (module docstring: ``seed`` orders tied labels)."""
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import batch_mean, slates

    b = slates(scores, labels, mask)
    order = tie_order(b.labels, b.full, seed)
    s = jnp.take_along_axis(b.scores, order, axis=-1)
    real = jnp.take_along_axis(b.full, order, axis=-1)
    s = jnp.where(real, s, -jnp.inf)
    z = s - jnp.max(s, axis=-1, keepdims=True)
    tails = jnp.flip(jnp.cumsum(jnp.flip(jnp.exp(z), axis=-1), axis=-1), axis=-1)
    terms = jnp.where(real, jnp.log(tails + eps) - jnp.where(real, z, 0.0), 0.0)
    return batch_mean(jnp.sum(terms, axis=-1), b.present)


def _check(params: dict[str, Any]) -> None:
    if isinstance(params["seed"], bool) or not isinstance(params["seed"], int) or params["seed"] < 0:
        raise ValueError(f"seed={params['seed']!r} must be an integer >= 0")


LISTMLE = LossKind(
    "listmle", listmle, "ListMLE: Plackett-Luce likelihood of the label order (ties in a seeded order)",
    aliases=("list_mle",), allrank="listMLE", check=_check)
