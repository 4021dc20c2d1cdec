"""The building blocks the scorers share, as pure JAX functions of plain parameter dicts.

Shapes: ``x`` is ``[Q, L, n]`` (Q slates of L documents, n units), ``mask`` ``[Q, L]`` bool
(True: a real document). Parameters are dicts of float32 arrays with fixed names (``w``,
``b``, ``g``), so a model saves as named arrays.

* :func:`dense_init`: allRank's initialisation, Glorot-uniform weights (``xavier_uniform_``
  on every weight matrix) and PyTorch's default bias, uniform in ``+-1/sqrt(fan_in)``.
* :func:`layer_norm`: PyTorch's ``nn.LayerNorm`` (biased variance, ``eps`` under the root);
  :func:`allrank_norm`: allRank's Transformer ``LayerNorm`` (unbiased standard deviation,
  ``eps`` added to it).
* :func:`attention`: multi-head scaled dot-product self-attention in which a padded
  document is never attended to: its logits are masked out before the softmax and its
  values zeroed, so what a padded row holds cannot reach a real document's output.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from ltr_cli.neural.jaxenv import jax

Params = dict[str, Any]

ACTIVATIONS = ("none", "relu", "tanh", "sigmoid", "gelu", "elu", "leaky_relu", "selu")


def check_activation(name: str) -> str:
    """Validator body: ``name`` is one of :data:`ACTIVATIONS`."""
    if name not in ACTIVATIONS:
        raise ValueError(f"activation {name!r} is not one of {', '.join(ACTIVATIONS)}")
    return name


def activation(name: str) -> Callable[[Any], Any]:
    """The activation function of a config name (``none``: the identity)."""
    nn = jax().nn
    table: dict[str, Callable[[Any], Any]] = {
        "none": lambda x: x, "relu": nn.relu, "tanh": jax().numpy.tanh, "sigmoid": nn.sigmoid,
        "gelu": lambda x: nn.gelu(x, approximate=False), "elu": nn.elu, "leaky_relu": nn.leaky_relu,
        "selu": nn.selu}
    return table[name]


def dense_init(key: Any, n_in: int, n_out: int) -> Params:
    """``{"w": [n_in, n_out], "b": [n_out]}``: Glorot-uniform weights, PyTorch's bias."""
    j = jax()
    kw, kb = j.random.split(key)
    limit = math.sqrt(6.0 / (n_in + n_out))
    bound = 1.0 / math.sqrt(n_in)
    return {"w": j.random.uniform(kw, (n_in, n_out), minval=-limit, maxval=limit),
            "b": j.random.uniform(kb, (n_out,), minval=-bound, maxval=bound)}


def dense(p: Params, x: Any) -> Any:
    """``x @ w + b`` over the last axis, as one matrix product of the rows ``[-1, n_in]``
    (XLA on the CPU takes the weights' gradient of a product of more axes through a
    transposed copy, several times slower)."""
    w = p["w"]
    return (x.reshape(-1, x.shape[-1]) @ w).reshape(*x.shape[:-1], w.shape[-1]) + p["b"]


def norm_init(n: int) -> Params:
    """A layer norm's gain 1 and bias 0."""
    jnp = jax().numpy
    return {"g": jnp.ones((n,), jnp.float32), "b": jnp.zeros((n,), jnp.float32)}


def layer_norm(p: Params, x: Any, eps: float = 1e-5) -> Any:
    """PyTorch's ``nn.LayerNorm`` over the last axis: ``(x - mean) / sqrt(var + eps)``."""
    jnp = jax().numpy
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return p["g"] * (x - mean) / jnp.sqrt(var + eps) + p["b"]


def allrank_norm(p: Params, x: Any, eps: float = 1e-6) -> Any:
    """allRank's Transformer ``LayerNorm``: ``(x - mean) / (std + eps)``, ``std`` unbiased
    (a width of 1 has std 0 here, where PyTorch's unbiased std is NaN)."""
    jnp = jax().numpy
    n = x.shape[-1]
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).sum(-1, keepdims=True) / max(n - 1, 1)
    return p["g"] * (x - mean) / (jnp.sqrt(var) + eps) + p["b"]


def dropout(key: Any, x: Any, rate: float, train: bool) -> Any:
    """Inverted dropout while training (each unit kept with probability ``1 - rate`` and
    scaled by its inverse); the identity otherwise or at rate 0."""
    if not train or rate <= 0.0:
        return x
    j = jax()
    keep = j.random.bernoulli(key, 1.0 - rate, x.shape)
    return j.numpy.where(keep, x / (1.0 - rate), 0.0)


def keys(key: Any, n: int) -> list[Any]:
    """``n`` independent keys from ``key`` (None: ``n`` Nones, for evaluation)."""
    if key is None:
        return [None] * n
    return list(jax().random.split(key, n))


def attention_init(key: Any, width: int, heads: int, head_size: int, out: int) -> Params:
    """Query, key, value projections ``width -> heads * head_size`` and the output
    projection ``heads * head_size -> out``."""
    kq, kk, kv, ko = jax().random.split(key, 4)
    inner = heads * head_size
    return {"q": dense_init(kq, width, inner), "k": dense_init(kk, width, inner), "v": dense_init(kv, width, inner),
            "o": dense_init(ko, inner, out)}


def attention(p: Params, x: Any, mask: Any, heads: int, rate: float, train: bool, key: Any) -> Any:
    """Multi-head self-attention over each slate, ``[Q, L, width] -> [Q, L, out]``: logits
    ``q k^T / sqrt(head_size)``, a padded key's logit masked out (a slate with no real
    document attends uniformly, never NaN), the probabilities dropped out at ``rate``
    while training, values of padded documents zeroed."""
    j = jax()
    jnp = j.numpy
    Q, L, _ = x.shape
    inner = p["q"]["w"].shape[1]
    size = inner // heads

    def split(t: Any) -> Any:
        return t.reshape(Q, L, heads, size).transpose(0, 2, 1, 3)  # [Q, h, L, size]

    q, k = split(dense(p["q"], x)), split(dense(p["k"], x))
    v = split(jnp.where(mask[..., None], dense(p["v"], x), 0.0))
    logits = (q @ k.transpose(0, 1, 3, 2)) / math.sqrt(size)  # [Q, h, L, L]
    logits = jnp.where(mask[:, None, None, :], logits, jnp.finfo(logits.dtype).min)
    probs = j.nn.softmax(logits, axis=-1)
    probs = dropout(key, probs, rate, train)
    out = (probs @ v).transpose(0, 2, 1, 3).reshape(Q, L, inner)
    return dense(p["o"], out)


def masked_input(x: Any, mask: Any) -> Any:
    """``x`` with every padded document's features set to 0 (the batch convention, enforced
    so that no value a caller left in a padded row reaches a computation)."""
    return jax().numpy.where(mask[..., None], x, 0.0)
