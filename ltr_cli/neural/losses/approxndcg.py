"""ApproxNDCG (Qin et al. 2010) as allRank's ``approxNDCGLoss`` computes it.

Each document's rank is approximated by ``pi_i = 1 + sum_{j != i} max(eps, sigmoid(-alpha
(s_i - s_j)))`` over the slate's real documents; the loss is minus the batch mean of
``sum_i G_i / log2(1 + pi_i)``, ``G_i = (2^{y_i} - 1) / maxDCG`` with the ideal DCG over the
whole slate (at least ``eps``; its discounts in float32, as allRank takes them). No cut-off.
A slate without a relevant document counts with value 0. Shapes ``[Q, L]``.
"""

from __future__ import annotations

from typing import Any

from ltr_cli.neural.losses.kind import LossKind, positive

DEFAULT_EPS = 1e-10


def approxndcgloss(scores: Any, labels: Any, mask: Any, eps: float = DEFAULT_EPS, alpha: float = 1.0) -> Any:
    """allRank's ``approxNDCGLoss`` (module docstring)."""
    import jax
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import batch_mean, log2_positions32, slates

    b = slates(scores, labels, mask)
    n = b.scores.shape[-1]
    s, y = b.scores, b.labels
    D = jnp.asarray(log2_positions32(n)).astype(s.dtype)[None, :]
    ideal = -jnp.sort(-y, axis=-1)
    max_dcg = jnp.maximum(jnp.sum((2.0 ** ideal - 1.0) / D, axis=-1), eps)
    G = (2.0 ** y - 1.0) / max_dcg[:, None]
    pairs = b.mask[:, :, None] & b.mask[:, None, :] & ~jnp.eye(n, dtype=bool)[None]
    diffs = jnp.where(pairs, s[:, :, None] - s[:, None, :], 0.0)
    approx_pos = 1.0 + jnp.sum(jnp.where(pairs, jnp.maximum(jax.nn.sigmoid(-alpha * diffs), eps), 0.0), axis=-1)
    approx_ndcg = jnp.sum(G / jnp.log2(1.0 + approx_pos), axis=-1)
    return -batch_mean(approx_ndcg, b.present)


APPROXNDCG = LossKind(
    "approxndcgloss", approxndcgloss, "ApproxNDCG: NDCG with ranks approximated by sigmoids of score differences",
    aliases=("approxndcg", "approx_ndcg"), allrank="approxNDCGLoss", check=positive("alpha"))
