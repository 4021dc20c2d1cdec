"""NeuralNDCG (Pobrotyn and Bialobrzeski 2021) as allRank computes it, and its transposed form.

``P``: the slate's deterministic NeuralSort matrix at ``temperature`` after Sinkhorn scaling
(:mod:`ltr_cli.neural.losses.neuralsort`); gains ``g = 2^y - 1`` (``powered_relevancies``)
or ``y``; discounts ``d_a = 1 / log2(a + 1)`` for ranks a = 1..L, in float32 as allRank
takes them.

* ``neuralndcg``: per slate ``sum_{a <= k} d_a (P g)_a / (IDCG@k + 1e-10)`` (the relaxed
  ranking's DCG over the ideal DCG with the same gains);
* ``neuralndcg_transposed``: per slate ``sum_b g_b (P^T d)_b / (IDCG@k + 1e-10)``, each
  document's gain times its expected discount (``d_a = 0`` beyond k). As in allRank, its IDCG
  takes the gains ``2^y - 1`` even when ``powered_relevancies`` is False.

The loss is minus the mean over the slates whose IDCG is not 0 (0 when there is none).
``stochastic`` NeuralSort (Gumbel noise) is not built: ``stochastic`` must be False, and
``n_samples``, ``beta`` and ``log_scores`` (its parameters) are accepted and unused, as in
allRank's deterministic path. ``neuralndcg`` scales with allRank's fixed ``tol=1e-6`` and
``max_iter=50``; ``neuralndcg_transposed`` takes them as parameters. allRank's NeuralNDCG runs
in float32 only (it fails on float64 input); this one runs in either. Shapes ``[Q, L]``.
"""

from __future__ import annotations

from typing import Any

from ltr_cli.neural.losses.kind import LossKind, all_of, positive, positive_int_or_none

IDCG_EPS = 1e-10  # allRank's DEFAULT_EPS


def _idcg(labels: Any, cut: int, powered: bool, discounts: Any) -> Any:
    import jax.numpy as jnp

    ideal = -jnp.sort(-labels, axis=-1)
    gains = 2.0 ** ideal - 1.0 if powered else ideal
    return jnp.sum((gains * discounts)[:, :cut], axis=-1)


def _mean_ndcg(dcg: Any, idcg: Any) -> Any:
    import jax.numpy as jnp

    empty = idcg == 0.0
    ndcg = jnp.where(empty, 0.0, dcg / (idcg + IDCG_EPS))
    count = jnp.sum(~empty)
    return jnp.where(count == 0, 0.0, -jnp.sum(ndcg) / jnp.maximum(count, 1).astype(ndcg.dtype))


def _relaxed(scores: Any, labels: Any, mask: Any, temperature: float, tol: float, max_iter: int) -> Any:
    from ltr_cli.neural.losses.neuralsort import neural_sort, sinkhorn
    from ltr_cli.neural.losses.slates import inverse_discounts32, slates

    import jax.numpy as jnp

    b = slates(scores, labels, mask)
    P = sinkhorn(neural_sort(b.scores, b.full, temperature), b.full, tol=tol, max_iter=max_iter)
    discounts = jnp.asarray(inverse_discounts32(b.scores.shape[-1])).astype(b.scores.dtype)
    return b, P, discounts


def neuralndcg(scores: Any, labels: Any, mask: Any, temperature: float = 1.0, powered_relevancies: bool = True,
               k: int | None = None, stochastic: bool = False, n_samples: int = 32, beta: float = 0.1,
               log_scores: bool = True) -> Any:
    """allRank's ``neuralNDCG`` (deterministic; module docstring)."""
    import jax.numpy as jnp

    b, P, discounts = _relaxed(scores, labels, mask, temperature, 1e-6, 50)
    n = b.scores.shape[-1]
    cut = n if k is None else min(k, n)
    gains = 2.0 ** b.labels - 1.0 if powered_relevancies else b.labels
    relaxed_gains = jnp.einsum("qab,qb->qa", P, gains)
    dcg = jnp.sum((relaxed_gains * discounts[None, :])[:, :cut], axis=-1)
    return _mean_ndcg(dcg, _idcg(b.labels, cut, powered_relevancies, discounts))


def neuralndcg_transposed(scores: Any, labels: Any, mask: Any, temperature: float = 1.0,
                          powered_relevancies: bool = True, k: int | None = None, stochastic: bool = False,
                          n_samples: int = 32, beta: float = 0.1, log_scores: bool = True, max_iter: int = 50,
                          tol: float = 1e-6) -> Any:
    """allRank's ``neuralNDCG_transposed`` (deterministic; module docstring)."""
    import jax.numpy as jnp

    b, P, discounts = _relaxed(scores, labels, mask, temperature, tol, max_iter)
    n = b.scores.shape[-1]
    cut = n if k is None else min(k, n)
    discounts_k = jnp.where(jnp.arange(n) < cut, discounts, 0.0)
    expected = jnp.einsum("qab,a->qb", P, discounts_k)
    gains = 2.0 ** b.labels - 1.0 if powered_relevancies else b.labels
    dcg = jnp.sum(gains * expected, axis=-1)
    return _mean_ndcg(dcg, _idcg(b.labels, cut, True, discounts))


def _deterministic(params: dict[str, Any]) -> None:
    if params["stochastic"] is not False:
        raise ValueError("stochastic NeuralSort is not built here; use stochastic=False")
    if "max_iter" in params and (isinstance(params["max_iter"], bool) or not isinstance(params["max_iter"], int)
                                 or params["max_iter"] < 1):
        raise ValueError(f"max_iter={params['max_iter']!r} must be a positive integer")


_CHOICES = {"powered_relevancies": (True, False)}
NEURALNDCG = LossKind(
    "neuralndcg", neuralndcg, "NeuralNDCG: NDCG of the NeuralSort + Sinkhorn relaxed ranking",
    aliases=("neural_ndcg",), allrank="neuralNDCG", choices=_CHOICES,
    check=all_of(_deterministic, positive_int_or_none("k"), positive("temperature")))
NEURALNDCG_TRANSPOSED = LossKind(
    "neuralndcg_transposed", neuralndcg_transposed,
    "NeuralNDCG transposed: each document's gain times its expected discount under the relaxed ranking",
    aliases=("neural_ndcg_transposed",), allrank="neuralNDCG_transposed", choices=_CHOICES,
    check=all_of(_deterministic, positive_int_or_none("k"), positive("temperature", "tol")))
