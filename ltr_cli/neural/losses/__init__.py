"""Ranking losses on JAX, each equal to allRank's loss of the same name.

A loss is a module (or a family's module) holding pure functions ``fn(scores, labels, mask,
**params) -> scalar`` over a padded batch:

* ``scores``: float ``[Q, L]``, what the scorer gave (``[Q, L, n]`` for ``ordinal``);
* ``labels``: ``[Q, L]``, graded relevance >= 0 (allRank's ``y_true``);
* ``mask``: bool ``[Q, L]``, True for a real document, False for padding (allRank marks
  padding with ``y_true == -1``). Padded positions never change the value, nor the
  gradient at real positions; a slate with no real document is left out of the batch.

Each is declared by a :class:`~ltr_cli.neural.losses.kind.LossKind` under its name and
each alias in the entry-point group ``ltr_cli.losses`` (the built-ins in this package's
``pyproject.toml``); :func:`resolve` finds one by name (case-insensitively, so allRank's
``lambdaLoss`` is ``lambdaloss``). JAX is imported when a loss is computed, never here.
"""

from __future__ import annotations

from typing import Any

from ltr_cli import plugins
from ltr_cli.errors import LtrError
from ltr_cli.neural.losses.kind import LossKind

__all__ = ["LossKind", "kinds", "resolve"]


@plugins.registrar("losses")
def _register(obj: Any, name: str, source: str) -> None:
    """An entry point of ``ltr_cli.losses`` names a :class:`LossKind` by its name or one of
    its aliases."""
    if not isinstance(obj, LossKind):
        raise TypeError(f"expected a LossKind, got {type(obj).__name__}")
    if name not in obj.names:
        raise ValueError(f"the entry point {name!r} is neither the loss's name {obj.name!r} nor one of its "
                         f"aliases ({', '.join(obj.aliases) or 'none'})")
    if not callable(obj.fn) or not isinstance(obj.summary, str):
        raise ValueError("a LossKind needs a function and a summary line")


def kinds() -> dict[str, LossKind]:
    """Every usable loss by its name (aliases folded in), in name order."""
    out: dict[str, LossKind] = {}
    for obj in plugins.load_group("losses").values():
        out.setdefault(obj.name, obj)
    return dict(sorted(out.items()))


def _choices() -> str:
    return "; ".join(f"{k.name} ({', '.join(k.aliases)})" if k.aliases else k.name for k in kinds().values())


def resolve(name: str) -> LossKind:
    """The loss called ``name`` (its name or an alias, any case); an unknown name is a
    one-line :class:`LtrError` listing the losses."""
    key = str(name).strip().lower()
    kind = plugins.load("losses", key) if key and key in plugins.declared("losses") else None
    if kind is None:
        raise LtrError(f"unknown loss {name!r}; choose one of: {_choices()}")
    return kind
