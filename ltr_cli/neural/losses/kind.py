"""The declaration of a ranking loss: :class:`LossKind`, and its parameters checked.

A loss is a pure JAX function ``fn(scores, labels, mask, **params) -> scalar``; its
parameters and their defaults are the keyword parameters of ``fn`` after the first three (a
parameter without a default is required). The kind says what else a caller needs: its
aliases, allRank's function it equals, the values a parameter may take, and how many outputs
per document the scorer must give (one, except for ``ordinal``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from ltr_cli.errors import LtrError

_EMPTY: Mapping[str, tuple[Any, ...]] = MappingProxyType({})


@dataclass(frozen=True)
class LossKind:
    """One ranking loss.

    ``fn(scores, labels, mask, **params)``: ``scores`` float ``[Q, L]`` (``[Q, L, n]`` when
    ``outputs`` names a parameter), ``labels`` ``[Q, L]``, ``mask`` bool ``[Q, L]``; returns the
    batch's loss (a JAX scalar in the scores' dtype). ``summary``: one line for listings.
    ``aliases``: other names it is found by. ``allrank``: allRank's function it equals (None:
    beyond allRank). ``smooth``: differentiable almost everywhere with an informative gradient
    (False: hinges and maxima, a subgradient). ``choices``: the values a parameter may take.
    ``outputs``: the parameter giving the number of outputs per document (None: one score);
    ``rank_scores(outputs [Q, L, n]) -> [Q, L]``: how such outputs become ranking scores.
    ``labels``: ``graded`` (>= 0) or ``unit`` (in [0, 1]). ``check(params)``: raises
    ``ValueError`` with the reason for a value ``choices`` cannot express.
    """

    name: str
    fn: Callable[..., Any]
    summary: str
    aliases: tuple[str, ...] = ()
    allrank: str | None = None
    smooth: bool = True
    choices: Mapping[str, tuple[Any, ...]] = field(default_factory=lambda: _EMPTY)
    outputs: str | None = None
    rank_scores: Callable[[Any], Any] | None = None
    labels: str = "graded"
    check: Callable[[dict[str, Any]], None] | None = None

    @property
    def names(self) -> tuple[str, ...]:
        """The name and the aliases."""
        return (self.name, *self.aliases)

    def _signature(self) -> list[inspect.Parameter]:
        return list(inspect.signature(self.fn).parameters.values())[3:]

    @property
    def defaults(self) -> dict[str, Any]:
        """Parameter -> default, the required ones (no default) left out."""
        return {p.name: p.default for p in self._signature() if p.default is not inspect.Parameter.empty}

    @property
    def required(self) -> tuple[str, ...]:
        """The parameters without a default."""
        return tuple(p.name for p in self._signature() if p.default is inspect.Parameter.empty)

    @property
    def parameters(self) -> tuple[str, ...]:
        return tuple(p.name for p in self._signature())

    def bind(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Every parameter's value: ``params`` over the defaults, checked. An unknown or
        missing parameter, or a value outside its choices, is a one-line :class:`LtrError`."""
        allowed = self.parameters
        unknown = sorted(set(params) - set(allowed))
        if unknown:
            raise LtrError(f"loss {self.name}: unknown parameter {unknown[0]!r}; its parameters are "
                           f"{', '.join(allowed) if allowed else '(none)'}")
        missing = [p for p in self.required if p not in params]
        if missing:
            raise LtrError(f"loss {self.name}: parameter {missing[0]!r} is required (give {missing[0]}=...)")
        bound = {**self.defaults, **params}
        for key, values in self.choices.items():
            if bound[key] not in values:
                raise LtrError(f"loss {self.name}: {key}={bound[key]!r} is not one of "
                               f"{', '.join(repr(v) for v in values)}")
        if self.check is not None:
            try:
                self.check(bound)
            except (TypeError, ValueError) as exc:
                raise LtrError(f"loss {self.name}: {exc}") from None
        return bound

    def n_outputs(self, params: Mapping[str, Any]) -> int:
        """How many outputs per document the scorer gives this loss (1 but for ``ordinal``)."""
        return 1 if self.outputs is None else int(self.bind(params)[self.outputs])


def positive_int_or_none(*names: str) -> Callable[[dict[str, Any]], None]:
    """A ``check`` for parameters that are a positive integer or None (a cut-off ``k``)."""
    def check(params: dict[str, Any]) -> None:
        for name in names:
            v = params[name]
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ValueError(f"{name}={v!r} must be a positive integer or None")
    return check


def positive(*names: str) -> Callable[[dict[str, Any]], None]:
    """A ``check`` for parameters that are numbers > 0."""
    def check(params: dict[str, Any]) -> None:
        for name in names:
            v = params[name]
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
                raise ValueError(f"{name}={v!r} must be a number > 0")
    return check


def all_of(*checks: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    def check(params: dict[str, Any]) -> None:
        for c in checks:
            c(params)
    return check
