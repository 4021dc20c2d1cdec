"""The LambdaLoss framework (Wang et al. 2018) as allRank computes it, with every scheme.

Per slate, the documents sorted by score (best first, padding last) at positions 1..L, with
``G_i = (2^{y_i} - 1) / maxDCG`` (``maxDCG``: the ideal DCG over the first ``k`` positions,
at least ``eps``) and ``D_i = log2(1 + i)``; over the pairs (i, j) of real documents with
``y_i > y_j`` (every pair of real documents, i = j included, for ``ndcgLoss1_scheme``) both
within the first ``k`` positions::

    loss_ij = -log_b( max(eps, max(eps, sigmoid(sigma (s_i - s_j))) ** w_ij) )

with ``b`` 2 (``reduction_log="binary"``) or e (``"natural"``), summed over the batch's pairs
(``reduction="sum"``) or averaged (``"mean"``; a batch without a pair gives 0 where torch's
mean of nothing is NaN). The weight ``w_ij`` by ``weighing_scheme``:

* None: 1; ``rankNet_scheme``: 1;
* ``ndcgLoss1_scheme``: ``G_i / D_i``;
* ``ndcgLoss2_scheme``: ``|1/D_{|i-j|} - 1/D_{|i-j|+1}| |G_i - G_j|``;
* ``lambdaRank_scheme``: ``|1/D_i - 1/D_j| |G_i - G_j|``;
* ``ndcgLoss2PP_scheme``: ``mu`` ndcgLoss2 + lambdaRank;
* ``rankNetWeightedByGTDiff_scheme``: ``|y_i - y_j|``; ``rankNetWeightedByGTDiffPowed_scheme``:
  ``|y_i^2 - y_j^2|``.

As in allRank, ``D`` and the schemes' position terms are computed in float32 whatever the
scores' dtype. Documents with equal scores are ordered by position (torch's sort leaves that
order unspecified, so allRank's value with tied scores is not defined). Shapes ``[Q, L]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.neural.losses.kind import LossKind, all_of, positive, positive_int_or_none

DEFAULT_EPS = 1e-10
SCHEMES = (None, "ndcgLoss1_scheme", "ndcgLoss2_scheme", "ndcgLoss2PP_scheme", "lambdaRank_scheme",
           "rankNet_scheme", "rankNetWeightedByGTDiff_scheme", "rankNetWeightedByGTDiffPowed_scheme")


def position_terms32(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The schemes' position factors ``[n, n]`` in float32, as allRank computes them:
    ``|1/D_{|i-j|} - 1/D_{|i-j|+1}|`` (0 on the diagonal; ndcgLoss2) and ``|1/D_i - 1/D_j|``
    (lambdaRank)."""
    from ltr_cli.neural.losses.slates import log2_positions32

    inv = np.float32(1.0) / log2_positions32(n)
    idx = np.arange(n)
    delta = np.abs(idx[:, None] - idx[None, :])
    ndcg2 = np.abs(inv[delta - 1] - inv[delta]).astype(np.float32)
    ndcg2[idx, idx] = 0.0
    lambdarank = np.abs(inv[:, None] - inv[None, :]).astype(np.float32)
    return ndcg2, lambdarank


def _weights(scheme: str | None, G: Any, D: Any, t: Any, mu: float) -> Any:
    """``w_ij`` ``[Q, L, L]`` (or broadcastable) for ``scheme`` (module docstring)."""
    import jax.numpy as jnp

    if scheme is None or scheme == "rankNet_scheme":
        return 1.0
    if scheme == "ndcgLoss1_scheme":
        return (G / D)[:, :, None]
    if scheme == "rankNetWeightedByGTDiff_scheme":
        return jnp.abs(t[:, :, None] - t[:, None, :])
    if scheme == "rankNetWeightedByGTDiffPowed_scheme":
        return jnp.abs(t[:, :, None] ** 2 - t[:, None, :] ** 2)
    ndcg2, lambdarank = position_terms32(G.shape[-1])
    gdiff = jnp.abs(G[:, :, None] - G[:, None, :])
    if scheme == "ndcgLoss2_scheme":
        return jnp.asarray(ndcg2).astype(G.dtype)[None] * gdiff
    if scheme == "lambdaRank_scheme":
        return jnp.asarray(lambdarank).astype(G.dtype)[None] * gdiff
    return mu * (jnp.asarray(ndcg2).astype(G.dtype)[None] * gdiff) + jnp.asarray(lambdarank).astype(G.dtype)[None] * gdiff


def lambdaloss(scores: Any, labels: Any, mask: Any, eps: float = DEFAULT_EPS, weighing_scheme: str | None = None,
               k: int | None = None, sigma: float = 1.0, mu: float = 10.0, reduction: str = "sum",
               reduction_log: str = "binary") -> Any:
    """allRank's ``lambdaLoss`` (module docstring)."""
    import jax
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import log2_positions32, safe_mean, slates, sort_desc

    b = slates(scores, labels, mask)
    n = b.scores.shape[-1]
    dt = b.scores.dtype
    order = sort_desc(b.scores, b.mask)
    s = jnp.take_along_axis(b.scores, order, axis=-1)
    t = jnp.take_along_axis(b.labels, order, axis=-1)
    real = jnp.take_along_axis(b.mask, order, axis=-1)
    ideal = -jnp.sort(-b.labels, axis=-1)
    D = jnp.asarray(log2_positions32(n)).astype(dt)[None, :]
    cut = n if k is None else min(k, n)
    max_dcg = jnp.maximum(jnp.sum(((2.0 ** ideal - 1.0) / D)[:, :cut], axis=-1), eps)
    G = (2.0 ** t - 1.0) / max_dcg[:, None]
    pairs = real[:, :, None] & real[:, None, :]
    if weighing_scheme != "ndcgLoss1_scheme":
        pairs = pairs & (t[:, :, None] - t[:, None, :] > 0)
    top = jnp.arange(n) < cut
    pairs = pairs & top[None, :, None] & top[None, None, :]
    w = _weights(weighing_scheme, G, D, t, mu)
    diffs = jnp.clip(s[:, :, None] - s[:, None, :], -1e8, 1e8)
    probas = jnp.maximum(jnp.maximum(jax.nn.sigmoid(sigma * diffs), eps) ** w, eps)
    losses = jnp.log(probas) if reduction_log == "natural" else jnp.log2(probas)
    if reduction == "mean":
        return -safe_mean(losses, pairs)
    return -jnp.sum(jnp.where(pairs, losses, 0.0))


LAMBDALOSS = LossKind(
    "lambdaloss", lambdaloss, "LambdaLoss: weighted pairwise logistic loss (weighing_scheme: ndcgLoss2PP_scheme, ...)",
    aliases=("lambda", "lambda_loss"), allrank="lambdaLoss",
    choices={"weighing_scheme": SCHEMES, "reduction": ("sum", "mean"), "reduction_log": ("binary", "natural")},
    check=all_of(positive_int_or_none("k"), positive("sigma", "eps")))
