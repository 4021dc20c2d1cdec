"""A neural scorer driven one query at a time, as an online learner drives it.

* Parameters: one flat float64 vector ``theta`` (P,), the scorer's parameter pytree
  flattened in its tree order (dict keys sorted; each array in C order). The learner
  keeps ``theta`` as a linear learner keeps its weights, so a checkpoint stores it as one
  named array; :meth:`QueryScorer.named` gives the ``params/<path>`` arrays of a model
  file (:class:`~ltr_cli.neural.model.NeuralModel`).
* :meth:`QueryScorer.scores`: the scores (m,) float64 of a query's rows ``X (m, d)``.
* :meth:`QueryScorer.vjp`: the gradient (P,) float64 of ``sum_k c_k s_k`` for
  per-document coefficients ``c (m,)`` (zero for documents that get none), the
  coefficients held fixed: the vector-Jacobian product of the scores, which is how a
  click learner's pairwise gradient flows through the scorer.

Each query is padded to its bucket (:func:`~ltr_cli.neural.batching.bucket`) as
``[1, L, d]`` float32, so jit compiles one program per bucket and never one per query
length. The scorer runs in inference mode (no dropout, no input noise): the settings that
would switch them on are refused by :func:`check_online`. ``theta`` goes to JAX rounded to
float32 and its gradient comes back in float64; on the CPU the same ``theta`` and ``X``
give the same bytes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ltr_cli.errors import LtrError
from ltr_cli.neural.batching import bucket, one_query

# scorer keys that switch on randomness while training; an online learner scores without it
RANDOM_KEYS = ("dropout", "input_dropout", "noise")


def check_online(block: dict[str, Any], who: str = "an online learner") -> None:
    """ValueError naming the key when a normalised ``scorer:`` block asks for dropout or
    input noise (an online learner's scorer is deterministic; ``who`` names the learner)."""
    for key in RANDOM_KEYS:
        value = block.get(key)
        if isinstance(value, (int, float)) and value != 0:
            raise ValueError(f"scorer.{key} is {value}; {who} scores without dropout or noise: "
                             f"set scorer.{key}: 0")


def checked_block(block: dict[str, Any] | None, who: str, per_document: bool = False) -> dict[str, Any] | None:
    """A learner's ``scorer:`` block normalised and checked (None stays None): deterministic
    (:func:`check_online`), and, with ``per_document``, a scorer that scores each document
    from its own features; ValueError naming the key otherwise. When JAX is absent the kind
    cannot be built, so ``per_document`` is left unchecked: ``ltr run`` reports the missing
    extra before anything runs."""
    if block is None:
        return None
    from ltr_cli.neural import scorers

    normal = scorers.normalized(block)
    if per_document:
        try:
            built = scorers.build(normal, 1)
        except LtrError:
            built = None
        if built is not None and not built.per_document:
            raise ValueError(f"scorer.kind {normal['kind']}: {who} scores documents one by one; give a scorer "
                             "that scores each document from its own features (mlp, linear)")
    check_online(normal, who)
    return normal


class QueryScorer:
    """The scorer of a normalised ``scorer:`` block (one output) for ``d`` features;
    ``theta0`` is its initialisation drawn from ``seed``."""

    def __init__(self, block: dict[str, Any], d: int, seed: int):
        from ltr_cli.neural import scorers
        from ltr_cli.neural.jaxenv import jax

        j = jax()  # first: JAX starts under this tool's flags
        from jax.flatten_util import ravel_pytree

        self.block, self.d = block, d
        scorer = scorers.build(block, 1)
        self.per_document = scorer.per_document
        flat, _ = ravel_pytree(scorer.init(j.random.PRNGKey(seed), d))
        self.theta0 = np.asarray(flat, dtype=np.float64)
        self._scores, self._vjp, self._unravel = _programs(block, d)

    @property
    def size(self) -> int:
        """P, the number of parameters."""
        return int(self.theta0.shape[0])

    def _padded(self, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        if X.ndim != 2 or X.shape[1] != self.d:
            raise ValueError(f"expected rows of {self.d} features, got shape {X.shape}")
        return one_query(np.asarray(X, dtype=np.float32), bucket(X.shape[0]))

    def scores(self, theta: np.ndarray, X: np.ndarray) -> np.ndarray:
        """The scores (m,) float64 of the rows ``X (m, d)`` under ``theta``."""
        Xp, mask = self._padded(X)
        out = self._scores(theta.astype(np.float32), Xp, mask)
        return np.asarray(out, dtype=np.float64)[0, :X.shape[0]]

    def vjp(self, theta: np.ndarray, X: np.ndarray, coef: np.ndarray) -> np.ndarray:
        """The gradient (P,) float64 of ``coef @ scores(theta, X)`` with respect to theta."""
        Xp, mask = self._padded(X)
        c = np.zeros(mask.shape, dtype=np.float32)
        c[0, :X.shape[0]] = coef
        return np.asarray(self._vjp(theta.astype(np.float32), Xp, mask, c), dtype=np.float64)

    def __deepcopy__(self, memo: dict[int, Any]) -> QueryScorer:
        return self  # immutable: its parameters live in the caller's theta

    def theta_of(self, arrays: dict[str, np.ndarray]) -> np.ndarray:
        """The flat ``theta`` (P,) float64 of named arrays (:meth:`named`'s inverse)."""
        order = self.named(self.theta0)
        return np.concatenate([np.asarray(arrays[name], dtype=np.float64).reshape(-1) for name in order])

    def named(self, theta: np.ndarray) -> dict[str, np.ndarray]:
        """``params/<path>`` -> float32 array of ``theta``, as a model file names them."""
        from ltr_cli.neural.arrays import named

        tree = self._unravel(np.asarray(theta, dtype=np.float32))
        return {k: np.array(v, dtype=np.float32) for k, v in named(tree, "params").items()}


_PROGRAMS: dict[str, tuple[Any, Any, Any]] = {}


def _programs(block: dict[str, Any], d: int) -> tuple[Any, Any, Any]:
    """The jitted ``scores(theta, X, mask)`` and ``vjp(theta, X, mask, coef)`` of an
    architecture and its ``unravel(theta) -> params``, one per architecture and width per
    process (so every learner built on it reuses the compiled programs)."""
    import json

    key = json.dumps([block, d], sort_keys=True)
    if key not in _PROGRAMS:
        from ltr_cli.neural import scorers
        from ltr_cli.neural.jaxenv import jax

        j = jax()
        from jax.flatten_util import ravel_pytree

        jnp = j.numpy
        scorer = scorers.build(block, 1)
        shapes = j.eval_shape(lambda k: scorer.init(k, d), j.random.PRNGKey(0))
        _, unravel = ravel_pytree(j.tree_util.tree_map(lambda a: jnp.zeros(a.shape, a.dtype), shapes))

        def scores(theta: Any, X: Any, mask: Any) -> Any:
            return scorer.ranking(scorer.apply(unravel(theta), X, mask))

        def vjp(theta: Any, X: Any, mask: Any, coef: Any) -> Any:
            return j.grad(lambda t: jnp.sum(scores(t, X, mask) * coef))(theta)

        _PROGRAMS[key] = (j.jit(scores), j.jit(vjp), unravel)
    return _PROGRAMS[key]
