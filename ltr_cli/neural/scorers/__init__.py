"""Neural scorers: what a scorer is, and the registry of the kinds the entry-point group
``ltr_cli.scorers`` declares (built-ins: ``linear``, ``mlp``, ``attention``, ``dasalc``).

A :class:`ScorerKind` is a declaration: its name (a config's ``scorer: {kind: NAME}``), a
one-line summary, the pydantic model of its settings (every other key of the ``scorer:``
block) and ``build(settings, outputs) -> Scorer``. A :class:`Scorer` is a pair of pure
functions over plain parameter dicts (no mutable state, so parameters save as named
arrays and the same scorer serves batch training, online learners and counterfactual
learners alike):

* ``init(key, d) -> params``: a pytree of float32 arrays for ``d`` input features;
* ``apply(params, X, mask, *, train=False, key=None, positions=None)``: ``X`` ``[Q, L, d]``
  float32, ``mask`` ``[Q, L]`` bool (True: a real document) -> the scores ``[Q, L]`` (or
  ``[Q, L, outputs]`` when a loss wants several outputs per document, such as
  ``ordinal``: threshold logits; :meth:`Scorer.ranking` sums their sigmoids into the
  ranking score, as allRank's ``score`` sums its sigmoid outputs). ``train`` switches dropout and input noise on, drawn from ``key``;
  ``positions`` ``[Q, L]`` int are the documents' original places in their query, read
  by a positional encoding only (default: 0, 1, ... along the slate).

Padded documents are zeroed before the first layer, and a scorer that mixes documents
(attention) masks them out, so what a padded row holds never changes a real document's
score. ``per_document``: a document's score depends on its own features only, so a long
query may be scored in pieces. ``floats(d, L)``: about how many floats the forward pass
keeps per document of a slate of ``L`` (the memory bound of :mod:`ltr_cli.neural.batching`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import Field, ValidationError, field_validator

from ltr_cli import plugins
from ltr_cli.core.schema import Strict
from ltr_cli.errors import LtrError
from ltr_cli.neural.scorers.layers import ACTIVATIONS, check_activation

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


class ScorerSettings(Strict):
    """The keys every scorer takes besides its own."""

    output_activation: str = Field("none", description="activation of the output layer (allRank's "
                                   "post_model.output_activation): " + ", ".join(ACTIVATIONS))

    @field_validator("output_activation")
    @classmethod
    def _activation(cls, name: str) -> str:
        return check_activation(name)


@dataclass(frozen=True)
class Scorer:
    """A built scorer: pure ``init`` and ``forward`` (see the module docstring)."""

    init: Callable[[Any, int], dict[str, Any]]
    forward: Callable[..., Any]  # (params, X, mask, train, key, positions) -> [Q, L, outputs]
    outputs: int
    output_activation: str
    per_document: bool
    floats: Callable[[int, int], float]

    def apply(self, params: dict[str, Any], X: Any, mask: Any, *, train: bool = False, key: Any = None,
              positions: Any = None) -> Any:
        """Scores ``[Q, L]`` (``[Q, L, outputs]`` when ``outputs > 1``) of a padded batch."""
        from ltr_cli.neural.jaxenv import jax
        from ltr_cli.neural.scorers.layers import activation, masked_input

        jnp = jax().numpy
        if positions is None:
            positions = jnp.broadcast_to(jnp.arange(X.shape[1], dtype=jnp.int32), X.shape[:2])
        out = self.forward(params, masked_input(X, mask), mask, train, key, positions)
        out = activation(self.output_activation)(out)
        return out[..., 0] if self.outputs == 1 else out

    def ranking(self, out: Any) -> Any:
        """The ranking scores ``[Q, L]`` of :meth:`apply`'s output. Several outputs per
        document are grade thresholds (the ordinal loss's: output k is P(label >= k), or its
        logit); their ranking score is the expected grade, the sum of the probabilities:
        the outputs themselves after a sigmoid output activation, else their sigmoids."""
        if out.ndim == 2:
            return out
        if self.output_activation == "sigmoid":
            return out.sum(-1)
        from ltr_cli.neural.jaxenv import jax

        return jax().nn.sigmoid(out).sum(-1)


@dataclass(frozen=True)
class ScorerKind:
    """One scorer kind: ``build(settings, outputs) -> Scorer``; ``settings`` validates the
    ``scorer:`` block's keys besides ``kind``."""

    name: str
    summary: str
    settings: type[ScorerSettings]
    build: Callable[[Any, int], Scorer]


@plugins.registrar("scorers")
def _register(obj: Any, name: str, source: str) -> None:
    """An entry point of ``ltr_cli.scorers`` names a :class:`ScorerKind` of its own name."""
    if not isinstance(obj, ScorerKind):
        raise TypeError(f"expected a ScorerKind, got {type(obj).__name__}")
    if obj.name != name:
        raise ValueError(f"the entry point {name!r} names the scorer kind {obj.name!r}; name them alike")
    if not (isinstance(obj.settings, type) and issubclass(obj.settings, ScorerSettings)) or not callable(obj.build):
        raise ValueError("a ScorerKind needs settings (a ScorerSettings model) and a build function")


@plugins.name_check("scorers")
def _check_name(name: str) -> str | None:
    return None if _NAME.match(name) else f"scorer kind {name!r} is not a lower-case name ([a-z][a-z0-9_]*)"


def names() -> list[str]:
    """Every declared scorer kind (nothing imported)."""
    return list(plugins.declared("scorers"))


def kinds() -> dict[str, ScorerKind]:
    """Every usable scorer kind, imported (for listings): name -> kind; a plugin that fails
    to load is left out (skipped with one line)."""
    return plugins.load_group("scorers")


def resolve(name: str) -> ScorerKind:
    """The scorer kind ``name``; one-line LtrError naming the kinds when there is none."""
    obj = plugins.load("scorers", name) if isinstance(name, str) else None
    if not isinstance(obj, ScorerKind):
        usable = ", ".join(kinds())  # a plugin that failed to load is no kind to offer
        raise LtrError(f"unknown scorer kind {name!r}; the kinds are {usable}")
    return obj


def settings_of(block: Any) -> tuple[ScorerKind, ScorerSettings]:
    """A ``scorer:`` block (``{kind: NAME, ...}``) validated: its kind and settings.
    ValueError naming the key for a block that is not one."""
    if not isinstance(block, dict) or "kind" not in block:
        raise ValueError(f"expected {{kind: NAME, ...}} with NAME one of {', '.join(kinds())}")
    try:
        kind = resolve(block["kind"])
    except LtrError as exc:
        raise ValueError(str(exc)) from None
    rest = {k: v for k, v in block.items() if k != "kind"}
    try:
        return kind, kind.settings.model_validate(rest)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        message = str(err["msg"]).removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            keys = ", ".join(k for k in kind.settings.model_fields)
            message = f"scorer kind {kind.name} has no key {where!r}; its keys are {keys}"
            raise ValueError(message) from None
        raise ValueError(f"{where}: {message}" if where else message) from None


def normalized(block: Any) -> dict[str, Any]:
    """A ``scorer:`` block with every key of its kind, defaults filled in."""
    kind, settings = settings_of(block)
    return {"kind": kind.name, **settings.model_dump(mode="json")}


def build(block: dict[str, Any], outputs: int = 1) -> Scorer:
    """The :class:`Scorer` of a ``scorer:`` block, with ``outputs`` scores per document."""
    kind, settings = settings_of(block)
    return kind.build(settings, outputs)


__all__ = ["Scorer", "ScorerKind", "ScorerSettings", "build", "kinds", "names", "normalized", "resolve", "settings_of"]
