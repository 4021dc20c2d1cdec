"""allRank's ordinal loss: n binary decisions per document, "is the label at least t?" for
t = 1..n, each a sigmoid cross entropy.

The scorer gives ``n`` outputs per document: ``scores [Q, L, n]`` are logits (allRank's model
ends in a sigmoid and its loss takes the probabilities: this equals allRank's ``ordinal`` of
``sigmoid(scores)`` wherever the sigmoid does not round to 0 or 1, as ``bce``). The loss is the
sum over real documents and thresholds of ``-(o log sigmoid(s) + (1 - o) log sigmoid(-s))``,
``o = [y >= t]``, over the number of real documents in the batch. A document's ranking
score is the sum of its n probabilities, the expected number of thresholds it passes (allRank's
``OutputLayer.score``): :func:`ordinal_scores`. Labels ``[Q, L]``, mask ``[Q, L]``.
"""

from __future__ import annotations

from typing import Any

from ltr_cli.neural.losses.kind import LossKind


def ordinal(scores: Any, labels: Any, mask: Any, n: int) -> Any:
    """allRank's ``ordinal`` with ``n`` thresholds on logits ``[Q, L, n]`` (module docstring)."""
    import jax
    import jax.numpy as jnp

    from ltr_cli.neural.losses.slates import slates

    b = slates(scores, labels, mask)
    thresholds = jnp.arange(1, n + 1, dtype=b.scores.dtype)
    passed = (b.labels[..., None] >= thresholds).astype(b.scores.dtype)
    ce = -(passed * jax.nn.log_sigmoid(b.scores) + (1.0 - passed) * jax.nn.log_sigmoid(-b.scores))
    total = jnp.sum(jnp.where(b.mask[..., None], ce, 0.0))
    return total / jnp.maximum(jnp.sum(b.mask), 1).astype(total.dtype)


def ordinal_scores(outputs: Any) -> Any:
    """Ranking scores ``[Q, L]`` from the ordinal outputs ``[Q, L, n]`` (logits): the sum of
    their sigmoids, the rule of :meth:`~ltr_cli.neural.scorers.Scorer.ranking` for any
    scorer with several outputs."""
    import jax

    return jax.nn.sigmoid(outputs).sum(axis=-1)


def _check(params: dict[str, Any]) -> None:
    n = params["n"]
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"n={n!r} must be a positive integer (the number of thresholds, the highest grade)")


ORDINAL = LossKind(
    "ordinal", ordinal, "ordinal: n sigmoid cross entropies per document, one per grade threshold",
    allrank="ordinal", outputs="n", rank_scores=ordinal_scores, check=_check)
