"""Deterministic NeuralSort (Grover et al. 2019) and Sinkhorn scaling, as allRank's
``deterministic_neural_sort`` and ``sinkhorn_scaling`` compute them, for NeuralNDCG.

A relaxed permutation matrix ``P [Q, L, L]`` has one row per rank (row a: rank a + 1) and one
column per document. For a slate of r real documents, rows 0..r-1 are its real ranks and the
rest padding; a real row is ``softmax_b((s_b (r + 1 - 2(a + 1)) - sum_c |s_b - s_c|) / tau)``
over the real documents, a padding row is uniform over the padded documents. allRank masks
rows by the document mask, which is the same thing when padding sits at the end of the slate
(as allRank pads); masking rows by rank keeps it right wherever the padding is.

Sinkhorn scaling alternately divides the columns and the rows by their sums (at least
``1e-10``), at most ``max_iter`` times, stopping after the first iteration where every row
and column sum of the whole batch is within ``tol`` of 1 (the check is over the batch, as in
allRank). The stop is a flag inside a fixed-length scan, so reverse-mode differentiation
sees exactly the iterations taken.
"""

from __future__ import annotations

from typing import Any

SINKHORN_EPS = 1e-10


def rank_padding(mask: Any) -> Any:
    """``[Q, L]`` bool: True at the rows (ranks) beyond each slate's number of real documents."""
    import jax.numpy as jnp

    count = jnp.sum(mask, axis=-1)
    return jnp.arange(mask.shape[-1])[None, :] >= count[:, None]


def neural_sort(scores: Any, mask: Any, tau: float) -> Any:
    """The deterministic NeuralSort matrix ``[Q, L, L]`` (module docstring) of ``scores [Q, L]``
    with ``mask [Q, L]`` (every slate has a real document)."""
    import jax
    import jax.numpy as jnp

    n = scores.shape[-1]
    s = jnp.where(mask, scores, 0.0)
    both = mask[:, :, None] & mask[:, None, :]
    spread = jnp.sum(jnp.where(both, jnp.abs(s[:, :, None] - s[:, None, :]), 0.0), axis=-1)  # [Q, L]: per document
    count = jnp.sum(mask, axis=-1).astype(s.dtype)
    rows = jnp.arange(n, dtype=s.dtype)
    pad_rows = rank_padding(mask)
    scaling = jnp.where(pad_rows, 0.0, count[:, None] + 1.0 - 2.0 * (rows[None, :] + 1.0))  # [Q, L]: per rank
    p_max = scaling[:, :, None] * s[:, None, :] - spread[:, None, :]
    off = pad_rows[:, :, None] | ~mask[:, None, :]
    pad_block = pad_rows[:, :, None] & ~mask[:, None, :]
    p_max = jnp.where(pad_block, 1.0, jnp.where(off, -jnp.inf, p_max))
    return jax.nn.softmax(p_max / tau, axis=-1)


def sinkhorn(P: Any, mask: Any, tol: float = 1e-6, max_iter: int = 50) -> Any:
    """``P [Q, L, L]`` scaled towards a doubly stochastic matrix (module docstring); entries in
    a padding row or a padded document's column are 0 on return."""
    import jax
    import jax.numpy as jnp

    pad_rows = rank_padding(mask)
    off = pad_rows[:, :, None] | ~mask[:, None, :]
    pad_block = pad_rows[:, :, None] & ~mask[:, None, :]
    mat = jnp.where(pad_block, 1.0, jnp.where(off, 0.0, P))

    def step(carry: Any, _: Any) -> Any:
        mat, done = carry
        new = mat / jnp.maximum(jnp.sum(mat, axis=1, keepdims=True), SINKHORN_EPS)
        new = new / jnp.maximum(jnp.sum(new, axis=2, keepdims=True), SINKHORN_EPS)
        converged = (jnp.max(jnp.abs(jnp.sum(new, axis=2) - 1.0)) < tol) & \
            (jnp.max(jnp.abs(jnp.sum(new, axis=1) - 1.0)) < tol)
        return (jnp.where(done, mat, new), done | converged), None

    (mat, _), _ = jax.lax.scan(step, (mat, jnp.asarray(False)), None, length=max_iter)
    return jnp.where(off, 0.0, mat)
